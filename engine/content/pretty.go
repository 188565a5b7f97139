package content

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
)

// IndentJSON indents a JSON document (ok false, text unchanged, when it is not JSON).
// Newline-delimited JSON is indented line by line.
func IndentJSON(text string) (string, bool) {
	t := bytes.TrimSpace([]byte(text))
	var buf bytes.Buffer
	if err := json.Indent(&buf, t, "", "  "); err == nil {
		return buf.String(), true
	}
	// NDJSON: every non-empty line a document.
	lines := bytes.Split(t, []byte("\n"))
	if len(lines) < 2 {
		return text, false
	}
	buf.Reset()
	for _, l := range lines {
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		if err := json.Indent(&buf, l, "", "  "); err != nil {
			return text, false
		}
		buf.WriteByte('\n')
	}
	return buf.String(), true
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
