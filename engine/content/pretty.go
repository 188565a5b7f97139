package content

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
)

// IndentJSON indents a JSON document (ok false, text unchanged, when it is not JSON).
// A stream of documents (NDJSON, or values one after another) is indented value by
// value, one after the other.
func IndentJSON(text string) (string, bool) {
	t := bytes.TrimSpace([]byte(text))
	var buf bytes.Buffer
	if err := json.Indent(&buf, t, "", "  "); err == nil {
		return buf.String(), true
	}
	if len(t) == 0 || t[0] != '{' && t[0] != '[' {
		return text, false
	}
	buf.Reset()
	d := json.NewDecoder(bytes.NewReader(t))
	for n := 0; ; n++ {
		var v json.RawMessage
		err := d.Decode(&v)
		if err == io.EOF && n > 1 {
			return buf.String(), true
		}
		if err != nil {
			return text, false
		}
		if n > 0 {
			buf.WriteByte('\n')
		}
		if err := json.Indent(&buf, v, "", "  "); err != nil {
			return text, false
		}
	}
}

// IndentXML re-indents an XML document token by token (lenient: HTML-ish XML passes).
func IndentXML(text string) (string, error) {
	d := xml.NewDecoder(bytes.NewReader([]byte(text)))
	d.Strict = false
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil } // already UTF-8
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
		if cd, ok := tok.(xml.CharData); ok && len(bytes.TrimSpace(cd)) == 0 {
			continue
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
