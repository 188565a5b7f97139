package har

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"inspector/internal/textual"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	bodyc "inspector/content"
	"inspector/engine/session"
)

// MaxExportDecoded bounds the decoded size of one response body on export; a body that
// decodes to more (a compression bomb) is exported as transferred, base64, "_raw".
const MaxExportDecoded = 64 << 20

// Writer streams a HAR 1.2 document: the log header at NewWriter, one entry per Add, the
// closing brackets at Close. Memory use is one entry at a time.
//
// A Writer is not safe for concurrent use. It does not close the underlying io.Writer.
// After an error every later call returns that error.
type Writer struct {
	bw     *bufio.Writer
	buf    bytes.Buffer
	enc    *json.Encoder
	n      int
	closed bool
	err    error
}

// NewWriter writes the document header to w and returns a Writer for the entries.
// creatorVersion is the Inspector version written into log.creator.
func NewWriter(w io.Writer, creatorVersion string) (*Writer, error) {
	hw := &Writer{bw: bufio.NewWriterSize(w, 64<<10)}
	hw.enc = json.NewEncoder(&hw.buf)
	hw.enc.SetEscapeHTML(false)
	hw.enc.SetIndent("      ", "  ")
	name, _ := json.Marshal(Creator)
	ver, _ := json.Marshal(creatorVersion)
	_, err := hw.bw.WriteString("{\n  \"log\": {\n    \"version\": \"1.2\",\n    \"creator\": {\n      \"name\": " +
		string(name) + ",\n      \"version\": " + string(ver) + "\n    },\n    \"pages\": [],\n    \"entries\": [")
	if err != nil {
		return nil, err
	}
	return hw, nil
}

// Add writes one entry for s. s is only read.
func (w *Writer) Add(s *session.Session) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("har: Add after Close")
	}
	if s == nil {
		return errors.New("har: Add of a nil session")
	}
	w.buf.Reset()
	if err := w.enc.Encode(buildEntry(s)); err != nil {
		w.err = err
		return err
	}
	sep := ",\n      "
	if w.n == 0 {
		sep = "\n      "
	}
	w.bw.WriteString(sep)
	if _, err := w.bw.Write(bytes.TrimSuffix(w.buf.Bytes(), []byte("\n"))); err != nil {
		w.err = err
		return err
	}
	w.n++
	return nil
}

// Count returns the number of entries added so far (for progress reports).
func (w *Writer) Count() int { return w.n }

// Close writes the closing brackets and flushes. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return nil
	}
	w.closed = true
	tail := "\n    ]\n  }\n}\n"
	if w.n == 0 {
		tail = "]\n  }\n}\n"
	}
	if _, err := w.bw.WriteString(tail); err != nil {
		w.err = err
		return err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = err
		return err
	}
	return nil
}

// ms converts a duration to milliseconds rounded to microseconds, clamped at 0.
func ms(d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(d.Round(time.Microsecond)/time.Microsecond) / 1000
}

func span(from, to time.Time) float64 { return ms(to.Sub(from)) }

func firstSet(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// startOf is the instant startedDateTime stands for.
func startOf(s *session.Session) time.Time {
	return firstSet(s.Started, s.Timings.RequestHeaders)
}

// buildTimings derives HAR timings from the session instants; see the package comment.
// Phases are chained: each runs from the end of the previous one, so small gaps between
// the engine's instants count towards the next phase and the timings add up to the time
// from startedDateTime to the end of the response.
func buildTimings(s *session.Session) (*timings, float64) {
	T := &s.Timings
	S := startOf(s)
	t := &timings{DNS: -1, Connect: -1, SSL: -1}
	hasDNS := !T.DNSStart.IsZero() && !T.DNSDone.IsZero()
	hasConnect := !T.ConnectStart.IsZero() && !T.ConnectDone.IsZero()
	var cur time.Time
	switch {
	case hasDNS:
		cur = T.DNSStart
	case hasConnect:
		cur = T.ConnectStart
	default:
		cur = firstSet(T.RequestDone, T.RequestHeaders, S)
	}
	t.Blocked = span(S, cur)
	if hasDNS {
		t.DNS = span(cur, T.DNSDone)
		cur = T.DNSDone
	}
	if hasConnect {
		end := T.ConnectDone
		if !T.UpstreamTLSDone.IsZero() {
			end = T.UpstreamTLSDone
			t.SSL = span(T.ConnectDone, T.UpstreamTLSDone)
		}
		t.Connect = span(cur, end)
		cur = end
	}
	if !T.RequestSent.IsZero() {
		t.Send = span(cur, T.RequestSent)
		cur = T.RequestSent
	}
	if !T.FirstByte.IsZero() {
		t.Wait = span(cur, T.FirstByte)
		cur = T.FirstByte
	}
	if !T.ResponseDone.IsZero() {
		t.Receive = span(cur, T.ResponseDone)
	}
	total := t.Blocked + max(t.DNS, 0) + max(t.Connect, 0) + t.Send + t.Wait + t.Receive
	return t, float64(int64(total*1000+0.5)) / 1000
}

var protoToHAR = map[string]string{
	session.HTTP1: "HTTP/1.1", "http/1.0": "HTTP/1.0", session.HTTP2: "HTTP/2", session.HTTP3: "HTTP/3",
}

func httpVersion(p string) string {
	if v, ok := protoToHAR[p]; ok {
		return v
	}
	return p
}

func headerList(h http.Header) []nameValue {
	out := []nameValue{}
	if len(h) == 0 {
		return out
	}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		ci, cj := textproto.CanonicalMIMEHeaderKey(keys[i]), textproto.CanonicalMIMEHeaderKey(keys[j])
		if ci != cj {
			return ci < cj
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		ck := textproto.CanonicalMIMEHeaderKey(k)
		for _, v := range h[k] {
			out = append(out, nameValue{Name: ck, Value: v})
		}
	}
	return out
}

func sameSite(m http.SameSite) string {
	switch m {
	case http.SameSiteLaxMode:
		return "Lax"
	case http.SameSiteStrictMode:
		return "Strict"
	case http.SameSiteNoneMode:
		return "None"
	}
	return ""
}

func cookieList(cs []*http.Cookie) []cookie {
	out := make([]cookie, 0, len(cs))
	for _, c := range cs {
		hc := cookie{Name: c.Name, Value: c.Value, Path: c.Path, Domain: c.Domain,
			HTTPOnly: c.HttpOnly, Secure: c.Secure, SameSite: sameSite(c.SameSite)}
		if !c.Expires.IsZero() {
			hc.Expires = c.Expires.UTC().Format(time.RFC3339)
		}
		out = append(out, hc)
	}
	return out
}

// queryList splits a raw query into pairs in their order, unescaping what can be.
func queryList(rawURL string) []nameValue {
	out := []nameValue{}
	u, err := url.Parse(rawURL)
	if err != nil || u.RawQuery == "" {
		return out
	}
	return pairList(u.RawQuery)
}

func pairList(raw string) []nameValue {
	out := []nameValue{}
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if uv, err := url.QueryUnescape(v); err == nil {
			v = uv
		}
		out = append(out, nameValue{Name: k, Value: v})
	}
	return out
}

// isText reports whether b can be written as JSON text without loss or noise.
func isText(b []byte) bool { return textual.IsText(b) }

// encodings lists a Content-Encoding header's codings in the order applied.
func encodings(h http.Header) []string { return bodyc.Codings(h) }

// supportedCodings reports whether content.Decode and content.Encode handle every coding
// (gzip, deflate, br, zstd).
func supportedCodings(encs []string) bool { return bodyc.Supported(encs) }

// decodeAll undoes encs (applied in order) completely; ok is false when a coding is not
// supported, the data is damaged or truncated, or the result exceeds limit.
func decodeAll(data []byte, encs []string, limit int64) ([]byte, bool) {
	out, cut, err := bodyc.DecodeCodings(encs, data, int(limit))
	return out, err == nil && !cut
}

func buildEntry(s *session.Session) *entry {
	tm, total := buildTimings(s)
	e := &entry{
		StartedDateTime: startOf(s).UTC().Format(time.RFC3339Nano),
		Time:            total,
		Request:         buildRequest(&s.Request),
		Response:        buildResponse(s.Response),
		Timings:         tm,
		Comment:         s.Comment,
		ID:              uint64(s.ID),
		ClientProto:     s.Client.Proto,
		UpstreamProto:   s.Upstream.Proto,
		ClientAddress:   s.Client.Addr,
		ClientReused:    s.Client.Reused,
		UpstreamReused:  s.Upstream.Reused,
		ReplayOf:        uint64(s.ReplayOf),
		Mark:            s.Mark,
		Flags:           flagNames(s.Flags),
	}
	if s.Upstream.Addr != "" {
		host, _, err := net.SplitHostPort(s.Upstream.Addr)
		if err != nil {
			host = s.Upstream.Addr
		}
		e.ServerIPAddress = host
	}
	if s.Upstream.ConnID != 0 {
		e.Connection = strconv.FormatUint(s.Upstream.ConnID, 10)
	}
	if s.Client.ConnID != 0 {
		e.ClientConn = strconv.FormatUint(s.Client.ConnID, 10)
	}
	if s.Error != nil {
		if s.Response == nil {
			e.Response.Error = s.Error.Error()
		}
		e.Error = &harError{Phase: string(s.Error.Phase), Side: string(s.Error.Side), Proto: s.Error.Proto, Message: s.Error.Message}
	}
	if s.Client.TLS != nil || s.Upstream.TLS != nil {
		e.TLS = &harTLSPair{Client: tlsOut(s.Client.TLS), Upstream: tlsOut(s.Upstream.TLS)}
	}
	if f := s.Client.Fingerprint; f != nil {
		e.JA4, e.JA3, e.JA3Raw, e.H2FP = f.JA4, f.JA3, f.JA3Raw, f.H2
	}
	if f := s.Upstream.Fingerprint; f != nil {
		e.UpJA4, e.UpJA3, e.UpJA3Raw, e.UpH2FP, e.Mirror = f.JA4, f.JA3, f.JA3Raw, f.H2, f.Mirror
	}
	if s.Request.Body.Truncated || s.Response != nil && s.Response.Body.Truncated {
		e.Truncated = &truncated{Request: s.Request.Body.Truncated, Response: s.Response != nil && s.Response.Body.Truncated}
	}
	for _, in := range s.Interim {
		e.Interim = append(e.Interim, interim{Status: in.Status, Headers: headerList(in.Header), Time: in.At.UTC().Format(time.RFC3339Nano)})
	}
	for _, m := range s.Messages {
		wm := wsMessage{Type: "receive", Time: float64(m.Time.Round(time.Microsecond).UnixMicro()) / 1e6, Opcode: m.Opcode}
		if m.FromClient {
			wm.Type = "send"
		}
		if m.Opcode == 1 {
			wm.Data = string(m.Data)
		} else {
			wm.Data = base64.StdEncoding.EncodeToString(m.Data)
		}
		if m.Size != int64(len(m.Data)) {
			wm.Size = m.Size
		}
		e.WSMessages = append(e.WSMessages, wm)
	}
	return e
}

// Exported custom keys of cookie-less headers: none; the helpers below build the parts.

func buildRequest(r *session.Request) *request {
	out := &request{
		Method:      r.Method,
		URL:         r.URL,
		HTTPVersion: httpVersion(r.Proto),
		Cookies:     cookieList((&http.Request{Header: r.Header}).Cookies()),
		Headers:     headerList(r.Header),
		QueryString: queryList(r.URL),
		HeadersSize: -1,
		BodySize:    r.Body.Size,
	}
	if r.HeadSize > 0 {
		out.HeadersSize = r.HeadSize
	}
	if r.Body.Size > 0 || len(r.Body.Data) > 0 {
		pd := &postData{MimeType: r.Header.Get("Content-Type")}
		if isText(r.Body.Data) {
			pd.Text = string(r.Body.Data)
			mt, _, _ := strings.Cut(pd.MimeType, ";")
			if strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded") && len(encodings(r.Header)) == 0 {
				pd.Params = pairList(pd.Text)
				if len(pd.Params) == 0 {
					pd.Params = nil
				}
			}
		} else {
			pd.Text = base64.StdEncoding.EncodeToString(r.Body.Data)
			pd.Encoding = "base64"
		}
		out.PostData = pd
	}
	return out
}

func buildResponse(r *session.Response) *response {
	if r == nil {
		return &response{Cookies: []cookie{}, Headers: []nameValue{}, HeadersSize: -1, BodySize: -1}
	}
	out := &response{
		Status:      r.Status,
		StatusText:  r.Reason,
		HTTPVersion: httpVersion(r.Proto),
		Cookies:     cookieList((&http.Response{Header: r.Header}).Cookies()),
		Headers:     headerList(r.Header),
		RedirectURL: r.Header.Get("Location"),
		HeadersSize: -1,
		BodySize:    r.Body.Size,
	}
	if r.HeadSize > 0 {
		out.HeadersSize = r.HeadSize
	}
	c := content{MimeType: r.Header.Get("Content-Type"), Size: r.Body.Size}
	body := r.Body.Data
	if encs := encodings(r.Header); len(encs) > 0 {
		if dec, ok := decodeAll(body, encs, MaxExportDecoded); ok {
			body = dec
			c.ContentEncoding = strings.Join(encs, ", ")
			c.Size = int64(len(dec))
			if d := c.Size - r.Body.Size; d > 0 {
				c.Compression = d
			}
		} else {
			c.Raw = true
		}
	}
	if isText(body) {
		c.Text = string(body)
	} else {
		c.Text = base64.StdEncoding.EncodeToString(body)
		c.Encoding = "base64"
	}
	out.Content = c
	return out
}

func tlsOut(t *session.TLSInfo) *harTLS {
	if t == nil {
		return nil
	}
	return &harTLS{Version: t.Version, CipherSuite: t.CipherSuite, ServerName: t.ServerName,
		ALPN: t.ALPN, Resumed: t.Resumed, Certificates: t.Certificates}
}

var flagTable = []struct {
	f    session.Flags
	name string
}{
	{session.FlagTunnel, "tunnel"},
	{session.FlagWebSocket, "websocket"},
	{session.FlagReqTruncated, "requestTruncated"},
	{session.FlagRespTruncated, "responseTruncated"},
	{session.FlagHandshakeFailed, "handshakeFailed"},
	{session.FlagAnswered, "answered"},
}

// flagNames names the flags that describe the exchange. FlagImported is a property of a
// stored copy, not of the exchange, and is not exported (Read sets it on every session).
func flagNames(f session.Flags) []string {
	var out []string
	for _, ft := range flagTable {
		if f.Has(ft.f) {
			out = append(out, ft.name)
		}
	}
	return out
}

func flagsFromNames(names []string) session.Flags {
	var f session.Flags
	for _, n := range names {
		i := slices.IndexFunc(flagTable, func(ft struct {
			f    session.Flags
			name string
		}) bool {
			return ft.name == n
		})
		if i >= 0 {
			f |= flagTable[i].f
		}
	}
	return f
}
