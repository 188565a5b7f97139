package archive

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"inspector/engine/session"
)

// A .saz is a zip archive. Each session NN (a decimal number, zero-padded to the same
// width in one archive) is three entries:
//
//	raw/NN_c.txt  the request as sent: request line, headers, a blank line, the body
//	raw/NN_s.txt  the response as received, the same way
//	raw/NN_m.xml  <Session SID="…"><SessionTimers ClientConnected="…" …/><SessionFlags>
//	              <SessionFlag N="x-clientip" V="…"/>…</SessionFlags></Session>
//
// plus [Content_Types].xml and _index.htm at the top, which readers ignore.

type sazEntry struct {
	num     int
	c, s, m *zip.File
}

// ReadSAZ reads a Fiddler archive of size bytes from r.
func ReadSAZ(r io.ReaderAt, size int64, add func(*session.Session) error) error {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return errorf(SAZ, 0, "not a readable zip archive: %v", err)
	}
	byNum := map[int]*sazEntry{}
	for _, f := range zr.File {
		name := f.Name
		if !strings.HasPrefix(name, "raw/") || strings.HasSuffix(name, "/") {
			continue
		}
		base := name[len("raw/"):]
		var kind string
		for _, suf := range []string{"_c.txt", "_s.txt", "_m.xml"} {
			if strings.HasSuffix(base, suf) {
				kind, base = suf, strings.TrimSuffix(base, suf)
			}
		}
		n, err := strconv.Atoi(base)
		if kind == "" || err != nil || n <= 0 {
			continue // raw/NN_w.txt (WebSocket messages) and unknown files are not read
		}
		e := byNum[n]
		if e == nil {
			e = &sazEntry{num: n}
			byNum[n] = e
		}
		switch kind {
		case "_c.txt":
			e.c = f
		case "_s.txt":
			e.s = f
		case "_m.xml":
			e.m = f
		}
	}
	if len(byNum) == 0 {
		return errorf(SAZ, 0, "no sessions (no raw/NN_c.txt entries)")
	}
	entries := make([]*sazEntry, 0, len(byNum))
	for _, e := range byNum {
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].num < entries[j].num })
	for _, e := range entries {
		s, err := readSAZEntry(e)
		if err != nil {
			return errorf(SAZ, e.num, "%v", err)
		}
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
}

func readZipFile(f *zip.File) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", f.Name, err)
	}
	defer rc.Close()
	b, err := readAllMax(rc, MaxBody+1<<20)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", f.Name, err)
	}
	return b, nil
}

func readSAZEntry(e *sazEntry) (*session.Session, error) {
	if e.c == nil {
		return nil, fmt.Errorf("no request (raw/%d_c.txt is missing)", e.num)
	}
	if e.s == nil {
		return nil, fmt.Errorf("no response (%s has no _s.txt beside it)", e.c.Name)
	}
	cb, err := readZipFile(e.c)
	if err != nil {
		return nil, err
	}
	s := &session.Session{Flags: session.FlagImported}
	if err := parseRawRequest(cb, s); err != nil {
		return nil, fmt.Errorf("%s: %v", e.c.Name, err)
	}
	sb, err := readZipFile(e.s)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(sb)) == 0 {
		return nil, fmt.Errorf("no response (%s is empty)", e.s.Name)
	}
	if err := parseRawResponse(sb, s); err != nil {
		return nil, fmt.Errorf("%s: %v", e.s.Name, err)
	}
	if e.m != nil {
		mb, err := readZipFile(e.m)
		if err != nil {
			return nil, err
		}
		if err := parseSAZMeta(mb, s); err != nil {
			return nil, fmt.Errorf("%s: %v", e.m.Name, err)
		}
	}
	if s.Started.IsZero() {
		s.Started = s.Timings.RequestHeaders
	}
	return s, nil
}

// splitHead cuts a raw message into its head lines and body.
func splitHead(raw []byte) (first string, h http.Header, body []byte, err error) {
	br := bufio.NewReader(bytes.NewReader(raw))
	tp := textproto.NewReader(br)
	first, err = tp.ReadLine()
	if err != nil {
		return "", nil, nil, fmt.Errorf("no start line")
	}
	mh, err := tp.ReadMIMEHeader()
	if err != nil && err != io.EOF {
		return "", nil, nil, fmt.Errorf("headers: %v", err)
	}
	body, _ = io.ReadAll(br)
	h = http.Header(mh)
	if h == nil {
		h = http.Header{}
	}
	if strings.EqualFold(h.Get("Transfer-Encoding"), "chunked") && len(body) > 0 {
		dec, derr := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(body)))
		if derr != nil {
			return "", nil, nil, fmt.Errorf("chunked body: %v", derr)
		}
		body = dec
	}
	return first, h, body, nil
}

func parseRawRequest(raw []byte, s *session.Session) error {
	first, h, body, err := splitHead(raw)
	if err != nil {
		return err
	}
	parts := strings.SplitN(first, " ", 3)
	if len(parts) != 3 || !strings.HasPrefix(parts[2], "HTTP/") || parts[0] == "" {
		return fmt.Errorf("request line %q: want METHOD URL HTTP/x", first)
	}
	method, target, proto := parts[0], parts[1], parts[2]
	s.Request = session.Request{Method: method, Proto: proto, Header: h,
		Body: session.Body{Data: body, Size: int64(len(body))}}
	switch {
	case method == "CONNECT":
		s.Request.URL = "https://" + target
		s.Flags |= session.FlagTunnel
	case strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://"):
		s.Request.URL = target
	case strings.HasPrefix(target, "/"):
		host := h.Get("Host")
		if host == "" {
			return fmt.Errorf("request line %q has a path but no Host header", first)
		}
		s.Request.URL = "http://" + host + target
	default:
		return fmt.Errorf("request target %q: want an absolute URL or a path", target)
	}
	if _, err := url.Parse(s.Request.URL); err != nil {
		return fmt.Errorf("URL: %v", err)
	}
	s.Client.Proto = session.HTTP1
	return nil
}

func parseRawResponse(raw []byte, s *session.Session) error {
	first, h, body, err := splitHead(raw)
	if err != nil {
		return err
	}
	parts := strings.SplitN(first, " ", 3)
	if len(parts) < 2 || !strings.HasPrefix(parts[0], "HTTP/") {
		return fmt.Errorf("status line %q: want HTTP/x CODE REASON", first)
	}
	code, err := strconv.Atoi(parts[1])
	if err != nil || code < 100 || code > 999 {
		return fmt.Errorf("status line %q: bad status code", first)
	}
	reason := ""
	if len(parts) == 3 {
		reason = parts[2]
	}
	s.Response = &session.Response{Status: code, Reason: reason, Proto: parts[0], Header: h,
		Body: session.Body{Data: body, Size: int64(len(body))}}
	s.Upstream.Proto = session.HTTP1
	return nil
}

type sazMeta struct {
	XMLName xml.Name `xml:"Session"`
	SID     string   `xml:"SID,attr"`
	Timers  struct {
		Attrs []xml.Attr `xml:",any,attr"`
	} `xml:"SessionTimers"`
	Flags []struct {
		N string `xml:"N,attr"`
		V string `xml:"V,attr"`
	} `xml:"SessionFlags>SessionFlag"`
}

func parseSAZMeta(b []byte, s *session.Session) error {
	var m sazMeta
	if err := xml.Unmarshal(b, &m); err != nil {
		return err
	}
	at := func(v string) time.Time {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil || t.Year() < 1971 {
			return time.Time{} // Fiddler writes 0001-01-01T00:00:00 for a phase that did not happen
		}
		return t
	}
	t := &s.Timings
	for _, a := range m.Timers.Attrs {
		v := at(a.Value)
		switch a.Name.Local {
		case "ClientConnected":
			t.ClientConnected = v
		case "ClientBeginRequest":
			s.Started = v
		case "GotRequestHeaders":
			t.RequestHeaders = v
		case "ClientDoneRequest":
			t.RequestDone = v
		case "ServerConnected":
			t.ConnectDone = v
		case "FiddlerBeginRequest":
			t.RequestSent = v
		case "ServerBeginResponse":
			t.FirstByte = v
		case "ServerDoneResponse":
			t.ResponseDone = v
		}
	}
	var cip, cport string
	for _, f := range m.Flags {
		switch strings.ToLower(f.N) {
		case "x-clientip":
			cip = strings.TrimPrefix(f.V, "::ffff:")
		case "x-clientport":
			cport = f.V
		case "x-hostip":
			s.Upstream.Addr = f.V
		case "x-processinfo":
			name, pid, _ := strings.Cut(f.V, ":")
			s.Client.Process = name
			s.Client.PID, _ = strconv.Atoi(pid)
		case "ui-comments":
			s.Comment = f.V
		}
	}
	if cip != "" {
		s.Client.Addr = cip
		if cport != "" {
			s.Client.Addr = net.JoinHostPort(cip, cport)
		}
	}
	return nil
}

// SAZWriter writes a Fiddler archive, one session at a time.
type SAZWriter struct {
	zw      *zip.Writer
	width   int
	n       int
	skipped int
}

// NewSAZWriter starts an archive on w for about total sessions (it sets the width of
// the entry numbers).
func NewSAZWriter(w io.Writer, total int) (*SAZWriter, error) {
	zw := zip.NewWriter(w)
	f, err := zw.Create("[Content_Types].xml")
	if err != nil {
		return nil, err
	}
	io.WriteString(f, `<?xml version="1.0" encoding="utf-8" ?>`+"\r\n"+
		`<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">`+
		`<Default Extension="htm" ContentType="text/html" /><Default Extension="xml" ContentType="application/xml" />`+
		`<Default Extension="txt" ContentType="text/plain" /></Types>`)
	return &SAZWriter{zw: zw, width: max(2, len(strconv.Itoa(total)))}, nil
}

// Add writes one session. A session without a response is left out (Skipped counts
// them): an archive entry without one does not import.
func (w *SAZWriter) Add(s *session.Session) error {
	if s.Response == nil {
		w.skipped++
		return nil
	}
	w.n++
	num := fmt.Sprintf("%0*d", w.width, w.n)
	var b bytes.Buffer
	target := s.Request.URL
	if s.Flags.Has(session.FlagTunnel) && s.Request.Method == "CONNECT" {
		if u, err := url.Parse(target); err == nil {
			target = u.Host
		}
	}
	proto := s.Request.Proto
	if !strings.HasPrefix(proto, "HTTP/") {
		proto = "HTTP/1.1"
	}
	fmt.Fprintf(&b, "%s %s %s\r\n", s.Request.Method, target, proto)
	writeSAZHeader(&b, s.Request.Header, int64(len(s.Request.Body.Data)))
	b.Write(s.Request.Body.Data)
	if err := w.put("raw/"+num+"_c.txt", b.Bytes()); err != nil {
		return err
	}
	b.Reset()
	{
		r := s.Response
		proto := r.Proto
		if !strings.HasPrefix(proto, "HTTP/") {
			proto = "HTTP/1.1"
		}
		reason := r.Reason
		if reason == "" {
			reason = http.StatusText(r.Status)
		}
		fmt.Fprintf(&b, "%s %d %s\r\n", proto, r.Status, reason)
		writeSAZHeader(&b, r.Header, int64(len(r.Body.Data)))
		b.Write(r.Body.Data)
	}
	if err := w.put("raw/"+num+"_s.txt", b.Bytes()); err != nil {
		return err
	}
	b.Reset()
	ts := func(t time.Time) string {
		if t.IsZero() {
			return "0001-01-01T00:00:00"
		}
		return t.Format("2006-01-02T15:04:05.0000000-07:00")
	}
	t := s.Timings
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="utf-8"?>`+"\r\n"+`<Session SID="%d" BitFlags="0">`+"\r\n"+
		`  <SessionTimers ClientConnected="%s" ClientBeginRequest="%s" GotRequestHeaders="%s" ClientDoneRequest="%s" `+
		`ServerConnected="%s" FiddlerBeginRequest="%s" ServerBeginResponse="%s" ServerDoneResponse="%s" />`+"\r\n  <SessionFlags>\r\n",
		s.ID, ts(t.ClientConnected), ts(s.Started), ts(t.RequestHeaders), ts(t.RequestDone), ts(t.ConnectDone), ts(t.RequestSent),
		ts(t.FirstByte), ts(t.ResponseDone))
	flag := func(n, v string) {
		if v == "" {
			return
		}
		var esc bytes.Buffer
		xml.EscapeText(&esc, []byte(v))
		fmt.Fprintf(&b, "    <SessionFlag N=\"%s\" V=\"%s\" />\r\n", n, strings.ReplaceAll(esc.String(), `"`, "&quot;"))
	}
	if host, port, err := net.SplitHostPort(s.Client.Addr); err == nil {
		flag("x-clientip", host)
		flag("x-clientport", port)
	}
	flag("x-hostip", s.Upstream.Addr)
	if s.Client.Process != "" {
		flag("x-processinfo", s.Client.Process+":"+strconv.Itoa(s.Client.PID))
	}
	flag("ui-comments", s.Comment)
	b.WriteString("  </SessionFlags>\r\n</Session>")
	return w.put("raw/"+num+"_m.xml", b.Bytes())
}

func writeSAZHeader(b *bytes.Buffer, h http.Header, bodyLen int64) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// The body is written de-chunked: its framing header says so.
		if strings.EqualFold(k, "Transfer-Encoding") {
			continue
		}
		for _, v := range h[k] {
			fmt.Fprintf(b, "%s: %s\r\n", k, v)
		}
	}
	if len(h.Values("Transfer-Encoding")) > 0 && h.Get("Content-Length") == "" {
		fmt.Fprintf(b, "Content-Length: %d\r\n", bodyLen)
	}
	b.WriteString("\r\n")
}

func (w *SAZWriter) put(name string, data []byte) error {
	f, err := w.zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return err
}

// Count is the number of sessions written; Skipped those left out (no response).
func (w *SAZWriter) Count() int { return w.n }

// Skipped is the number of sessions left out for want of a response.
func (w *SAZWriter) Skipped() int { return w.skipped }

// Close writes the zip directory. It does not close the underlying writer.
func (w *SAZWriter) Close() error { return w.zw.Close() }
