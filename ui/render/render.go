// Package render turns sessions into the text the detail pane shows: decoded and
// pretty-printed bodies, hex dumps, wire-like raw messages, cookies, query and form
// fields, timing phases and TLS details. It is plain Go (no Fyne) and every function is
// pure and safe for concurrent use, so the UI can run it off the UI goroutine.
package render

import (
	"encoding/hex"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"inspector/content"
	"inspector/engine/session"
)

// PreviewCap bounds the bytes any text or hex preview shows; the rest is one click (save)
// away, so a large body never freezes the UI.
const PreviewCap = 256 << 10

// DecodedCap bounds how many bytes a content-encoded body is inflated to.
const DecodedCap = 8 << 20

// ErrUnsupportedEncoding is returned by Decode for encodings this build cannot decode.
var ErrUnsupportedEncoding = content.ErrUnsupportedEncoding

// Decode undoes the Content-Encoding in h with content.Decode (gzip, x-gzip, deflate, br,
// zstd; a list is undone in reverse order). It returns data unchanged with an empty name
// when there is no encoding. At most DecodedCap bytes are produced; truncated says the
// output was cut there (or the capture ended early). On an error data comes back as is.
func Decode(h http.Header, data []byte) (out []byte, encoding string, truncated bool, err error) {
	out, encs, truncated, err := content.Decode(h, data, DecodedCap)
	return out, strings.Join(encs, ", "), truncated, err
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

// Classify picks the Kind of a decoded body from its Content-Type and bytes, with
// content.Detect (the one classifier); kinds this older set lacks map to the nearest one
// (JavaScript, CSS, SSE, forms, GraphQL to text or JSON; protobuf and gRPC to binary).
// Views of the richer kinds come from content.Views.
func Classify(contentType string, data []byte) Kind {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	switch content.Detect(h, data) {
	case content.KindEmpty:
		return KindEmpty
	case content.KindJSON, content.KindGraphQL:
		return KindJSON
	case content.KindXML:
		return KindXML
	case content.KindHTML:
		return KindHTML
	case content.KindImage:
		if content.MediaType(contentType) == "image/svg+xml" {
			return KindXML
		}
		return KindImage
	case content.KindJavaScript, content.KindCSS, content.KindText, content.KindSSE, content.KindForm:
		return KindText
	case content.KindMultipart:
		if looksText(data) {
			return KindText
		}
	}
	return KindBinary
}

func looksText(b []byte) bool { return content.LooksText(b) }

// Text converts a body to displayable text with content.Text: the charset from a BOM, the
// Content-Type parameter or an HTML/XML declaration, converted with golang.org/x/text.
func Text(contentType string, data []byte) string {
	s, _ := content.Text(contentType, data)
	return s
}

// Pretty returns the body formatted for reading: indented JSON or XML (content.IndentJSON,
// content.IndentXML), text as is; the second result is false when formatting failed and
// the text is shown unchanged.
func Pretty(kind Kind, contentType string, data []byte) (string, bool) {
	text := Text(contentType, data)
	switch kind {
	case KindJSON:
		return content.IndentJSON(text)
	case KindXML:
		s, err := content.IndentXML(text)
		if err != nil {
			return text, false
		}
		return s, true
	case KindHTML:
		s, err := indentHTML(data)
		if err != nil {
			return Text(contentType, data), false
		}
		return s, true
	}
	return text, true
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

func pairs(raw string) [][2]string { return content.FormFields(raw) }
