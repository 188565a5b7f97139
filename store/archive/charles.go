package archive

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"inspector/engine/session"
)

// A Charles JSON session (.chlsj, File ▸ Export Session… ▸ JSON Session File) is a JSON
// array with one object per request:
//
//	{"status": "COMPLETE", "method": "GET", "protocolVersion": "HTTP/1.1",
//	 "scheme": "https", "host": "example.com", "actualPort": 443, "path": "/a", "query": "q=1",
//	 "tunnel": false, "clientAddress": "/127.0.0.1", "clientPort": 50000, "remoteAddress": "example.com/93.184.216.34",
//	 "times": {"start": "2024-01-02T03:04:05.678+01:00", "requestBegin": …, "requestComplete": …,
//	           "responseBegin": …, "end": …},
//	 "request":  {"header": {"firstLine": "GET /a?q=1 HTTP/1.1", "headers": [{"name": "Host", "value": "example.com"}]},
//	              "body": {"text": "…", "charset": "UTF-8", "decoded": true} | {"encoding": "base64", "encoded": "…"}},
//	 "response": {"status": 200, "header": {"firstLine": "HTTP/1.1 200 OK", "headers": […]}, "body": {…}}}
//
// A body marked "decoded" is the text after Charles undid its Content-Encoding; it is
// stored decoded, without that header.

type chlsSession struct {
	Status          string         `json:"status"`
	Method          string         `json:"method"`
	ProtocolVersion string         `json:"protocolVersion"`
	Scheme          string         `json:"scheme"`
	Host            string         `json:"host"`
	Port            int            `json:"actualPort"`
	Path            string         `json:"path"`
	Query           *string        `json:"query"`
	Tunnel          bool           `json:"tunnel"`
	ClientAddress   string         `json:"clientAddress"`
	ClientPort      int            `json:"clientPort"`
	RemoteAddress   string         `json:"remoteAddress"`
	Times           map[string]any `json:"times"`
	Request         *chlsMessage   `json:"request"`
	Response        *chlsMessage   `json:"response"`
	ErrorMessage    string         `json:"errorMessage"`
}

type chlsMessage struct {
	Status int `json:"status"`
	Header *struct {
		FirstLine string `json:"firstLine"`
		Headers   []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"headers"`
	} `json:"header"`
	Body *struct {
		Text     *string `json:"text"`
		Encoding string  `json:"encoding"`
		Encoded  *string `json:"encoded"`
		Decoded  bool    `json:"decoded"`
	} `json:"body"`
}

// ReadCharles reads a Charles JSON session from r.
func ReadCharles(r io.Reader, add func(*session.Session) error) error {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 64<<10))
	tok, err := dec.Token()
	if err != nil {
		return errorf(Charles, 0, "not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return errorf(Charles, 0, "want a JSON array of sessions")
	}
	n := 0
	for dec.More() {
		n++
		var cs chlsSession
		if err := dec.Decode(&cs); err != nil {
			return errorf(Charles, n, "%v", err)
		}
		s, err := charlesSession(&cs)
		if err != nil {
			return errorf(Charles, n, "%v", err)
		}
		if err := add(s); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return errorf(Charles, n+1, "the array does not end: %v", err)
	}
	if n == 0 {
		return errorf(Charles, 0, "no sessions")
	}
	return nil
}

func charlesSession(cs *chlsSession) (*session.Session, error) {
	if cs.Method == "" || cs.Host == "" {
		return nil, fmt.Errorf("no method or host")
	}
	scheme := strings.ToLower(cs.Scheme)
	if scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("scheme %q: want http or https", cs.Scheme)
	}
	host := cs.Host
	if cs.Port != 0 && !(scheme == "https" && cs.Port == 443 || scheme == "http" && cs.Port == 80) {
		host = net.JoinHostPort(cs.Host, strconv.Itoa(cs.Port))
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	u := scheme + "://" + host + cs.Path
	if cs.Query != nil && *cs.Query != "" {
		u += "?" + *cs.Query
	}
	s := &session.Session{Flags: session.FlagImported}
	proto := cs.ProtocolVersion
	if proto == "" {
		proto = "HTTP/1.1"
	}
	s.Request = session.Request{Method: cs.Method, URL: u, Proto: proto, Header: http.Header{}}
	if cs.Tunnel || cs.Method == "CONNECT" {
		s.Flags |= session.FlagTunnel
	}
	if cs.Request != nil {
		h, body, err := charlesMessage(cs.Request)
		if err != nil {
			return nil, fmt.Errorf("request: %v", err)
		}
		s.Request.Header, s.Request.Body = h, body
	}
	if cs.Response == nil || cs.Response.Status == 0 {
		if s.Flags.Has(session.FlagTunnel) {
			return s, nil
		}
		if cs.ErrorMessage != "" {
			return nil, fmt.Errorf("no response (%s)", cs.ErrorMessage)
		}
		return nil, fmt.Errorf("no response")
	}
	h, body, err := charlesMessage(cs.Response)
	if err != nil {
		return nil, fmt.Errorf("response: %v", err)
	}
	resp := &session.Response{Status: cs.Response.Status, Proto: proto, Header: h, Body: body}
	if cs.Response.Header != nil {
		if p := strings.SplitN(cs.Response.Header.FirstLine, " ", 3); len(p) == 3 {
			resp.Proto, resp.Reason = p[0], p[2]
		}
	}
	s.Response = resp
	s.Client.Proto, s.Upstream.Proto = proto, proto
	if proto == "HTTP/1.1" || proto == "HTTP/1.0" {
		s.Client.Proto, s.Upstream.Proto = session.HTTP1, session.HTTP1
	} else if strings.HasPrefix(proto, "HTTP/2") {
		s.Client.Proto, s.Upstream.Proto = session.HTTP2, session.HTTP2
	}
	if ip := strings.TrimPrefix(cs.ClientAddress, "/"); ip != "" {
		s.Client.Addr = ip
		if cs.ClientPort != 0 {
			s.Client.Addr = net.JoinHostPort(ip, strconv.Itoa(cs.ClientPort))
		}
	}
	if _, ip, ok := strings.Cut(cs.RemoteAddress, "/"); ok && ip != "" && cs.Port != 0 {
		s.Upstream.Addr = net.JoinHostPort(ip, strconv.Itoa(cs.Port))
	}
	at := func(k string) time.Time {
		v, _ := cs.Times[k].(string)
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			if t2, err2 := time.Parse("2006-01-02T15:04:05.000-0700", v); err2 == nil {
				return t2
			}
			return time.Time{}
		}
		return t
	}
	s.Started = at("start")
	s.Timings.RequestHeaders = at("requestBegin")
	s.Timings.RequestDone = at("requestComplete")
	s.Timings.FirstByte = at("responseBegin")
	s.Timings.ResponseDone = at("end")
	if s.Started.IsZero() {
		s.Started = s.Timings.RequestHeaders
	}
	return s, nil
}

func charlesMessage(m *chlsMessage) (http.Header, session.Body, error) {
	h := http.Header{}
	if m.Header != nil {
		for _, f := range m.Header.Headers {
			if f.Name == "" {
				return nil, session.Body{}, fmt.Errorf("a header without a name")
			}
			h.Add(f.Name, f.Value)
		}
	}
	var data []byte
	if b := m.Body; b != nil {
		switch {
		case b.Encoded != nil:
			if b.Encoding != "" && !strings.EqualFold(b.Encoding, "base64") {
				return nil, session.Body{}, fmt.Errorf("body encoding %q: want base64", b.Encoding)
			}
			d, err := base64.StdEncoding.DecodeString(*b.Encoded)
			if err != nil {
				return nil, session.Body{}, fmt.Errorf("body: bad base64: %v", err)
			}
			data = d
		case b.Text != nil:
			data = []byte(*b.Text)
		}
		if len(data) > MaxBody {
			return nil, session.Body{}, fmt.Errorf("body larger than %d MiB", MaxBody>>20)
		}
		if b.Decoded {
			h.Del("Content-Encoding")
			if h.Get("Content-Length") != "" {
				h.Set("Content-Length", strconv.Itoa(len(data)))
			}
		}
	}
	return h, session.Body{Data: data, Size: int64(len(data))}, nil
}
