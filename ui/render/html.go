package render

import (
	"bytes"
	"io"
	"strings"

	"golang.org/x/net/html"
)

// voidElements have no end tag.
var voidElements = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true,
}

// rawElements keep their content as it is.
var rawElements = map[string]bool{"pre": true, "script": true, "style": true, "textarea": true}

// indentHTML re-indents an HTML document one element a line (x/net/html's tokenizer),
// keeping the text of pre, script, style and textarea as it is. Malformed markup is
// indented as far as the tokenizer reads it; it fails only on a read error.
func indentHTML(data []byte) (string, error) {
	z := html.NewTokenizer(bytes.NewReader(data))
	var b strings.Builder
	depth, raw := 0, 0
	line := func(s string) {
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteString(s)
		b.WriteByte('\n')
	}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if err := z.Err(); err != io.EOF {
				return "", err
			}
			return b.String(), nil
		case html.TextToken:
			t := string(z.Raw())
			if raw > 0 {
				b.WriteString(t)
				continue
			}
			if t = strings.TrimSpace(t); t != "" {
				for _, l := range strings.Split(t, "\n") {
					if l = strings.TrimSpace(l); l != "" {
						line(l)
					}
				}
			}
		case html.StartTagToken:
			name, _ := z.TagName()
			line(string(z.Raw()))
			if !voidElements[string(name)] {
				depth++
			}
			if rawElements[string(name)] {
				raw++
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if rawElements[string(name)] && raw > 0 {
				raw--
				if !strings.HasSuffix(b.String(), "\n") {
					b.WriteByte('\n')
				}
			}
			depth = max(depth-1, 0)
			line(string(z.Raw()))
		default: // self-closing, comment, doctype
			line(string(z.Raw()))
		}
	}
}
