// Package render turns sessions into the text the detail pane shows: decoded and
// pretty-printed bodies, hex dumps, wire-like raw messages, cookies, query and form
// fields, timing phases and TLS details. It is plain Go (no Fyne) and every function is
// pure and safe for concurrent use, so the UI can run it off the UI goroutine.
package render

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"inspector/engine/session"
)

// PreviewCap bounds the bytes any text or hex preview shows; the rest is one click (save)
// away, so a large body never freezes the UI.
const PreviewCap = 256 << 10

// DecodedCap bounds how many bytes a content-encoded body is inflated to.
const DecodedCap = 8 << 20

// ErrUnsupportedEncoding is returned by Decode for encodings this build cannot decode.
var ErrUnsupportedEncoding = session.ErrUnsupportedEncoding

// Decode undoes the Content-Encoding in h (gzip, x-gzip, deflate; a list is undone in
// reverse order). It returns data unchanged with an empty name when there is no encoding.
// At most DecodedCap bytes are produced; truncated says the output was cut there. A body
// whose capture was cut short yields what decoded, without an error.
func Decode(h http.Header, data []byte) (out []byte, encoding string, truncated bool, err error) {
	out, encoding, err = session.DecodeBody(h, data, DecodedCap)
	switch {
	case err == nil:
		return out, encoding, false, nil
	case errors.Is(err, session.ErrDecodedTooLarge):
		return out, encoding, true, nil
	case errors.Is(err, io.ErrUnexpectedEOF) && len(out) > 0:
		return out, encoding, false, nil
	}
	return data, encoding, false, err
}

// Kind is how a body is best shown.
type Kind int

// Body kinds.
const (
	KindEmpty Kind = iota
	KindText
	KindJSON
	KindXML
	KindHTML
	KindImage
	KindBinary
)

func (k Kind) String() string {
	return [...]string{"empty", "text", "JSON", "XML", "HTML", "image", "binary"}[k]
}

// Classify picks the Kind of a decoded body from its Content-Type and bytes.
func Classify(contentType string, data []byte) Kind {
	if len(data) == 0 {
		return KindEmpty
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case strings.HasPrefix(mt, "image/") && mt != "image/svg+xml":
		return KindImage
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return KindJSON
	case mt == "text/html":
		return KindHTML
	case mt == "application/xml" || mt == "text/xml" || strings.HasSuffix(mt, "+xml"):
		return KindXML
	}
	if looksText(data) {
		t := bytes.TrimSpace(data)
		if len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t) {
			return KindJSON
		}
		return KindText
	}
	return KindBinary
}

func looksText(b []byte) bool {
	if len(b) > 4096 {
		b = b[:4096]
	}
	if !utf8.Valid(b) {
		// allow a cut rune at the end
		if len(b) < 4 || !utf8.Valid(b[:len(b)-3]) {
			return false
		}
	}
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' {
			return false
		}
	}
	return true
}

// Text converts a body to displayable text using the charset parameter of contentType
// (UTF-8 and ISO-8859-1/latin1 are understood; other charsets are shown as UTF-8).
func Text(contentType string, data []byte) string {
	_, params, _ := mime.ParseMediaType(contentType)
	switch strings.ToLower(params["charset"]) {
	case "iso-8859-1", "latin1", "latin-1", "windows-1252", "us-ascii":
		var sb strings.Builder
		for _, c := range data {
			sb.WriteRune(rune(c))
		}
		return sb.String()
	}
	return strings.ToValidUTF8(string(data), "\uFFFD")
}

// Pretty returns the body formatted for reading: indented JSON or XML, text as is; the
// second result is false when formatting failed and the text is shown unchanged.
func Pretty(kind Kind, contentType string, data []byte) (string, bool) {
	switch kind {
	case KindJSON:
		var buf bytes.Buffer
		if err := json.Indent(&buf, bytes.TrimSpace(data), "", "  "); err != nil {
			return Text(contentType, data), false
		}
		return buf.String(), true
	case KindXML:
		s, err := indentXML(data)
		if err != nil {
			return Text(contentType, data), false
		}
		return s, true
	case KindHTML:
		s, err := indentHTML(data)
		if err != nil {
			return Text(contentType, data), false
		}
		return s, true
	}
	return Text(contentType, data), true
}

func indentXML(data []byte) (string, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = false
	var buf bytes.Buffer
	e := xml.NewEncoder(&buf)
	e.Indent("", "  ")
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		if cd, ok := tok.(xml.CharData); ok {
			if len(bytes.TrimSpace(cd)) == 0 {
				continue
			}
		}
		if err := e.EncodeToken(xml.CopyToken(tok)); err != nil {
			return "", err
		}
	}
	if err := e.Flush(); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// Hex returns a hex dump of at most max bytes of data, noting how much was left out.
func Hex(data []byte, max int) string {
	if len(data) <= max {
		return hex.Dump(data)
	}
	return hex.Dump(data[:max]) + fmt.Sprintf("… %d more bytes not shown\n", len(data)-max)
}

// Cap cuts s to at most max bytes on a rune boundary, noting the cut.
func Cap(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n… %d more bytes not shown (save the body to see all)", len(s)-cut)
}

// Headers renders a header block "Name: value" one per line, names sorted.
func Headers(h http.Header) string {
	if len(h) == 0 {
		return ""
	}
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	var sb strings.Builder
	for _, k := range names {
		for _, v := range h[k] {
			sb.WriteString(k)
			sb.WriteString(": ")
			sb.WriteString(v)
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// HeaderRows returns name/value pairs sorted by name, for a table with copy buttons.
func HeaderRows(h http.Header) [][2]string {
	var rows [][2]string
	for k, vs := range h {
		for _, v := range vs {
			rows = append(rows, [2]string{k, v})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	return rows
}

// RawRequest renders the request the way it looks on an HTTP/1.1 wire, with the body as
// text when it is text (capped at PreviewCap) or a note when it is binary.
func RawRequest(r *session.Request) string {
	var sb strings.Builder
	target := r.URL
	if u, err := url.Parse(r.URL); err == nil && r.Method != http.MethodConnect {
		target = u.RequestURI()
	}
	proto := wireProto(r.Proto)
	fmt.Fprintf(&sb, "%s %s %s\n", r.Method, target, proto)
	if u, err := url.Parse(r.URL); err == nil && r.Header.Get("Host") == "" && u.Host != "" {
		fmt.Fprintf(&sb, "Host: %s\n", u.Host)
	}
	sb.WriteString(Headers(r.Header))
	sb.WriteByte('\n')
	sb.WriteString(rawBody(r.Header, r.Body))
	return sb.String()
}

// RawResponse renders the response the way it looks on an HTTP/1.1 wire.
func RawResponse(r *session.Response) string {
	if r == nil {
		return ""
	}
	var sb strings.Builder
	proto := wireProto(r.Proto)
	reason := r.Reason
	if reason == "" {
		reason = http.StatusText(r.Status)
	}
	fmt.Fprintf(&sb, "%s %d %s\n", proto, r.Status, reason)
	sb.WriteString(Headers(r.Header))
	sb.WriteByte('\n')
	sb.WriteString(rawBody(r.Header, r.Body))
	return sb.String()
}

func rawBody(h http.Header, b session.Body) string {
	if len(b.Data) == 0 {
		if b.Size > 0 {
			return fmt.Sprintf("[%d body bytes not captured]", b.Size)
		}
		return ""
	}
	if h.Get("Content-Encoding") == "" && looksText(b.Data) {
		s := Cap(Text(h.Get("Content-Type"), b.Data), PreviewCap)
		if b.Size > int64(len(b.Data)) {
			s += fmt.Sprintf("\n[truncated: %d of %d bytes captured]", len(b.Data), b.Size)
		}
		return s
	}
	return fmt.Sprintf("[%d bytes of binary or encoded body; see the Body tab]", b.Size)
}

// Cookies returns the cookies a request sends, as name/value pairs.
func RequestCookies(h http.Header) [][2]string {
	r := http.Request{Header: h}
	var out [][2]string
	for _, c := range r.Cookies() {
		out = append(out, [2]string{c.Name, c.Value})
	}
	return out
}

// ResponseCookies returns the Set-Cookie lines of a response, as name and the rest.
func ResponseCookies(h http.Header) [][2]string {
	r := http.Response{Header: h}
	var out [][2]string
	for _, c := range r.Cookies() {
		attrs := strings.TrimPrefix(c.String(), c.Name+"="+c.Value)
		out = append(out, [2]string{c.Name, c.Value + attrs})
	}
	return out
}

// QueryAndForm returns the URL query parameters and, for a urlencoded request body, the
// form fields, each as name/value pairs in their original order of names.
func QueryAndForm(r *session.Request) (query, form [][2]string) {
	if u, err := url.Parse(r.URL); err == nil {
		query = pairs(u.RawQuery)
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "application/x-www-form-urlencoded" && r.Header.Get("Content-Encoding") == "" {
		form = pairs(string(r.Body.Data))
	}
	return query, form
}

func pairs(raw string) [][2]string {
	var out [][2]string
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if uv, err := url.QueryUnescape(v); err == nil {
			v = uv
		}
		out = append(out, [2]string{k, v})
	}
	return out
}
