package archive

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"inspector/engine/session"
)

// A mitmproxy flow file (mitmdump -w, File ▸ Save) is a sequence of tnetstrings, one per
// flow. A tnetstring is SIZE ":" DATA TYPE: SIZE the decimal length of DATA, TYPE one of
//
//	,  bytes        ;  text (UTF-8)     #  integer     ^  float
//	!  true/false   ~  null (empty)     ]  list of tnetstrings   }  dict: key, value, …
//
// An HTTP flow's dict holds "type": "http", "request" (method, scheme, host, port, path,
// http_version, headers as [[name, value], …], content, timestamp_start/_end), "response"
// (status_code, reason, http_version, headers, content, timestamps), "error" ({msg}),
// "client_conn" and "server_conn" (peername [host, port], alpn, tls_version, sni) and
// "comment". Bodies are as they travelled (still content-encoded). Flows of other types
// (tcp, udp, dns) are skipped.

// maxFlow bounds one flow's tnetstring.
const maxFlow = 1 << 30

var errTruncated = errors.New("truncated")

// ReadMitmproxy reads a mitmproxy flow file from r.
func ReadMitmproxy(r io.Reader, add func(*session.Session) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	n, http := 0, 0
	for {
		if _, err := br.Peek(1); err == io.EOF {
			break
		}
		n++
		v, err := readTnet(br)
		if err != nil {
			return errorf(Mitmproxy, n, "%v", err)
		}
		flow, ok := v.(map[string]any)
		if !ok {
			return errorf(Mitmproxy, n, "a flow is a dict, this is a %T", v)
		}
		if t := str(flow["type"]); t != "" && t != "http" {
			continue
		}
		s, err := mitmSession(flow)
		if err != nil {
			return errorf(Mitmproxy, n, "%v", err)
		}
		http++
		if err := add(s); err != nil {
			return err
		}
	}
	if http == 0 {
		return errorf(Mitmproxy, 0, "no HTTP flows")
	}
	return nil
}

// readTnet reads one tnetstring from a stream.
func readTnet(br *bufio.Reader) (any, error) {
	size := 0
	digits := 0
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			return nil, fmt.Errorf("%w: the file ends inside a length", errTruncated)
		}
		if err != nil {
			return nil, err
		}
		if c == ':' {
			break
		}
		if c < '0' || c > '9' || digits == 12 {
			return nil, fmt.Errorf("not a tnetstring: bad length (byte %q)", c)
		}
		size = size*10 + int(c-'0')
		digits++
	}
	if digits == 0 {
		return nil, fmt.Errorf("not a tnetstring: empty length")
	}
	if size > maxFlow {
		return nil, fmt.Errorf("a flow of %d bytes: larger than %d MiB", size, maxFlow>>20)
	}
	data := make([]byte, size+1)
	if got, err := io.ReadFull(br, data); err != nil {
		return nil, fmt.Errorf("%w: %d bytes announced, the file ends after %d", errTruncated, size+1, got)
	}
	return parseTnetValue(data[:size], data[size])
}

// parseTnet parses one tnetstring at the start of b and returns the rest.
func parseTnet(b []byte) (any, []byte, error) {
	i := 0
	size := 0
	for ; i < len(b) && b[i] != ':'; i++ {
		if b[i] < '0' || b[i] > '9' || i == 12 {
			return nil, nil, fmt.Errorf("bad length")
		}
		size = size*10 + int(b[i]-'0')
	}
	if i == 0 || i == len(b) {
		return nil, nil, fmt.Errorf("%w: no length", errTruncated)
	}
	b = b[i+1:]
	if size+1 > len(b) {
		return nil, nil, fmt.Errorf("%w: %d bytes announced, %d left", errTruncated, size+1, len(b))
	}
	v, err := parseTnetValue(b[:size], b[size])
	return v, b[size+1:], err
}

func parseTnetValue(data []byte, typ byte) (any, error) {
	switch typ {
	case ',':
		return data, nil
	case ';':
		return string(data), nil
	case '#':
		n, err := strconv.ParseInt(string(data), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad integer %q", data)
		}
		return n, nil
	case '^':
		f, err := strconv.ParseFloat(string(data), 64)
		if err != nil {
			return nil, fmt.Errorf("bad float %q", data)
		}
		return f, nil
	case '!':
		switch string(data) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("bad boolean %q", data)
	case '~':
		if len(data) != 0 {
			return nil, fmt.Errorf("null with data")
		}
		return nil, nil
	case ']':
		var l []any
		for len(data) > 0 {
			v, rest, err := parseTnet(data)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
			data = rest
		}
		return l, nil
	case '}':
		m := map[string]any{}
		for len(data) > 0 {
			k, rest, err := parseTnet(data)
			if err != nil {
				return nil, err
			}
			ks, ok := k.([]byte)
			if !ok {
				s, ok2 := k.(string)
				if !ok2 {
					return nil, fmt.Errorf("a dict key is a %T", k)
				}
				ks = []byte(s)
			}
			if len(rest) == 0 {
				return nil, fmt.Errorf("%w: key %q has no value", errTruncated, ks)
			}
			v, rest2, err := parseTnet(rest)
			if err != nil {
				return nil, err
			}
			m[string(ks)] = v
			data = rest2
		}
		return m, nil
	}
	return nil, fmt.Errorf("unknown tnetstring type %q", typ)
}

// str reads a text or bytes value.
func str(v any) string {
	switch v := v.(type) {
	case []byte:
		return string(v)
	case string:
		return v
	}
	return ""
}

func num(v any) (float64, bool) {
	switch v := v.(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

func unixTime(v any) time.Time {
	f, ok := num(v)
	if !ok || f <= 0 {
		return time.Time{}
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9))
}

func mitmHeaders(v any) (http.Header, error) {
	h := http.Header{}
	if v == nil {
		return h, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("headers: want a list of [name, value]")
	}
	for _, f := range l {
		p, ok := f.([]any)
		if !ok || len(p) != 2 || str(p[0]) == "" {
			return nil, fmt.Errorf("headers: want [name, value] pairs")
		}
		h.Add(str(p[0]), str(p[1]))
	}
	return h, nil
}

func mitmAddr(v any) string {
	if l, ok := v.([]any); ok && len(l) >= 2 {
		if p, ok := num(l[1]); ok {
			return net.JoinHostPort(str(l[0]), strconv.Itoa(int(p)))
		}
	}
	return ""
}

func mitmSession(flow map[string]any) (*session.Session, error) {
	req, ok := flow["request"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("no request")
	}
	method, scheme, host := str(req["method"]), strings.ToLower(str(req["scheme"])), str(req["host"])
	if method == "" || host == "" || (scheme != "http" && scheme != "https") {
		return nil, fmt.Errorf("request: want method, host and an http or https scheme")
	}
	port, _ := num(req["port"])
	hostport := host
	if strings.Contains(host, ":") {
		hostport = "[" + host + "]"
	}
	if p := int(port); p != 0 && !(scheme == "https" && p == 443 || scheme == "http" && p == 80) {
		hostport = net.JoinHostPort(host, strconv.Itoa(p))
	}
	proto := str(req["http_version"])
	if proto == "" {
		proto = "HTTP/1.1"
	}
	h, err := mitmHeaders(req["headers"])
	if err != nil {
		return nil, fmt.Errorf("request %v", err)
	}
	body := []byte(str(req["content"]))
	if len(body) > MaxBody {
		return nil, fmt.Errorf("request body larger than %d MiB", MaxBody>>20)
	}
	s := &session.Session{Flags: session.FlagImported,
		Started: unixTime(req["timestamp_start"]),
		Request: session.Request{Method: method, URL: scheme + "://" + hostport + str(req["path"]), Proto: proto, Header: h,
			Body: session.Body{Data: body, Size: int64(len(body))}},
	}
	if tr, err := mitmHeaders(req["trailers"]); err == nil && len(tr) > 0 {
		s.Request.Trailer = tr
	}
	s.Timings.RequestHeaders = s.Started
	s.Timings.RequestDone = unixTime(req["timestamp_end"])
	s.Comment = str(flow["comment"])
	if cc, ok := flow["client_conn"].(map[string]any); ok {
		s.Client.Addr = mitmAddr(cc["peername"])
		if a := mitmAddr(cc["address"]); s.Client.Addr == "" {
			s.Client.Addr = a
		}
		s.Timings.ClientConnected = unixTime(cc["timestamp_start"])
	}
	if sc, ok := flow["server_conn"].(map[string]any); ok {
		s.Upstream.Addr = mitmAddr(sc["peername"])
		if s.Upstream.Addr == "" {
			s.Upstream.Addr = mitmAddr(sc["ip_address"])
		}
		s.Timings.ConnectDone = unixTime(sc["timestamp_tcp_setup"])
	}
	protoName := func(p string) string {
		switch {
		case strings.HasPrefix(p, "HTTP/2"):
			return session.HTTP2
		case strings.HasPrefix(p, "HTTP/3"):
			return session.HTTP3
		}
		return session.HTTP1
	}
	s.Client.Proto = protoName(proto)
	resp, _ := flow["response"].(map[string]any)
	if resp == nil {
		if e, ok := flow["error"].(map[string]any); ok && str(e["msg"]) != "" {
			s.Error = &session.Error{Phase: session.PhaseResponse, Side: session.SideUpstream, Message: str(e["msg"])}
			return s, nil
		}
		return nil, fmt.Errorf("no response and no error")
	}
	code, ok := num(resp["status_code"])
	if !ok || code < 100 || code > 999 {
		return nil, fmt.Errorf("response: bad status_code")
	}
	rh, err := mitmHeaders(resp["headers"])
	if err != nil {
		return nil, fmt.Errorf("response %v", err)
	}
	rb := []byte(str(resp["content"]))
	if len(rb) > MaxBody {
		return nil, fmt.Errorf("response body larger than %d MiB", MaxBody>>20)
	}
	rproto := str(resp["http_version"])
	if rproto == "" {
		rproto = proto
	}
	s.Response = &session.Response{Status: int(code), Reason: str(resp["reason"]), Proto: rproto, Header: rh,
		Body: session.Body{Data: rb, Size: int64(len(rb))}}
	if tr, err := mitmHeaders(resp["trailers"]); err == nil && len(tr) > 0 {
		s.Response.Trailer = tr
	}
	s.Upstream.Proto = protoName(rproto)
	s.Timings.FirstByte = unixTime(resp["timestamp_start"])
	s.Timings.ResponseDone = unixTime(resp["timestamp_end"])
	return s, nil
}
