package content

import (
	"bytes"
	"inspector/internal/textual"
	"mime"
	"regexp"
	"strings"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/unicode"
)

var xmlDeclEncoding = regexp.MustCompile(`^<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._:-]+)["']`)

// Charset picks the character encoding of a decoded text body, in the order browsers use:
// a byte-order mark, the Content-Type charset parameter, then for HTML a <meta charset>
// (or http-equiv) in the first 1024 bytes and for XML the declaration's encoding, then
// UTF-8 when the bytes are valid UTF-8 and windows-1252 when they are not. name is the
// WHATWG name ("utf-8", "shift_jis", …); certain is false for the last two guesses.
func Charset(contentType string, body []byte) (enc encoding.Encoding, name string, certain bool) {
	if e, n := bomEncoding(body); e != nil {
		return e, n, true
	}
	mt, params, _ := mime.ParseMediaType(contentType)
	if label := params["charset"]; label != "" {
		if e, err := htmlindex.Get(label); err == nil {
			n, _ := htmlindex.Name(e)
			return e, n, true
		}
	}
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml" || (mt == "" && sniffHTML(body)):
		// x/net's prescan: <meta charset>, <meta http-equiv>, then its own UTF-8 /
		// windows-1252 guess (all reported uncertain; only a meta is a declaration).
		e, n, _ := charset.DetermineEncoding(body, "text/html")
		if e == encoding.Nop {
			e = unicode.UTF8
		}
		return e, n, n != "utf-8" && n != "windows-1252"
	case strings.HasSuffix(mt, "xml") || (mt == "" && bytes.HasPrefix(body, []byte("<?xml"))):
		head := body
		if len(head) > 1024 {
			head = head[:1024]
		}
		if m := xmlDeclEncoding.FindSubmatch(head); m != nil {
			if e, err := htmlindex.Get(string(m[1])); err == nil {
				n, _ := htmlindex.Name(e)
				return e, n, true
			}
		}
	}
	if validUTF8Prefix(body) {
		return unicode.UTF8, "utf-8", false
	}
	e, _ := htmlindex.Get("windows-1252")
	return e, "windows-1252", false
}

func bomEncoding(b []byte) (encoding.Encoding, string) {
	switch {
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}):
		return unicode.UTF8BOM, "utf-8"
	case bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		return unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM), "utf-16be"
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}):
		return unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM), "utf-16le"
	}
	return nil, ""
}

// Text converts a decoded text body to UTF-8 with Charset; charsetName is the encoding
// used. Bytes invalid in that encoding become U+FFFD; nothing fails.
func Text(contentType string, body []byte) (text string, charsetName string) {
	enc, name, _ := Charset(contentType, body)
	if name == "utf-8" && enc == unicode.UTF8 {
		return strings.ToValidUTF8(string(body), "\uFFFD"), name
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD"), name
	}
	return strings.ToValidUTF8(string(out), "\uFFFD"), name
}

// validUTF8Prefix is textual.ValidUTF8Prefix: a short body ending in a lone lead byte is
// not UTF-8, a long one may have been cut by a capture cap.
func validUTF8Prefix(b []byte) bool { return textual.ValidUTF8Prefix(b) }
