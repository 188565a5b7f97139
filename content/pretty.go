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
// The tokens are written back as they were read (raw: prefixes and namespace
// declarations untouched), so the result is the same document: encoding/xml's encoder
// resolved namespaces and wrote xmlns again on every element (<svg xmlns=… xmlns=…>,
// <circle xmlns=…>), which is invalid XML when copied.
func IndentXML(text string) (string, error) {
	d := xml.NewDecoder(bytes.NewReader([]byte(text)))
	d.Strict = false
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil } // already UTF-8
	var buf bytes.Buffer
	depth := 0
	const (
		afterNothing = iota
		afterStart   // an element's start tag: its end makes it <e/>
		afterText    // text: the end tag follows on the same line
		afterOther
	)
	last := afterNothing
	newline := func() {
		if last != afterNothing {
			buf.WriteByte('\n')
			for range depth {
				buf.WriteString("  ")
			}
		}
	}
	for {
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			newline()
			buf.WriteByte('<')
			buf.WriteString(rawName(t.Name))
			for _, a := range t.Attr {
				buf.WriteByte(' ')
				buf.WriteString(rawName(a.Name))
				buf.WriteString(`="`)
				escapeAttr(&buf, a.Value)
				buf.WriteByte('"')
			}
			buf.WriteByte('>')
			depth++
			last = afterStart
		case xml.EndElement:
			depth = max(depth-1, 0)
			switch last {
			case afterStart:
				buf.Truncate(buf.Len() - 1)
				buf.WriteString("/>")
			case afterText:
				buf.WriteString("</" + rawName(t.Name) + ">")
			default:
				newline()
				buf.WriteString("</" + rawName(t.Name) + ">")
			}
			last = afterOther
		case xml.CharData:
			if len(bytes.TrimSpace(t)) == 0 {
				continue
			}
			if err := xml.EscapeText(&buf, t); err != nil {
				return "", err
			}
			last = afterText
		case xml.Comment:
			newline()
			buf.WriteString("<!--")
			buf.Write(t)
			buf.WriteString("-->")
			last = afterOther
		case xml.ProcInst:
			newline()
			buf.WriteString("<?" + t.Target)
			if len(t.Inst) > 0 {
				buf.WriteByte(' ')
				buf.Write(t.Inst)
			}
			buf.WriteString("?>")
			last = afterOther
		case xml.Directive:
			newline()
			buf.WriteString("<!")
			buf.Write(t)
			buf.WriteByte('>')
			last = afterOther
		}
	}
	return buf.String(), nil
}

// rawName is a name as written: prefix:local.
func rawName(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return n.Space + ":" + n.Local
}

// escapeAttr writes an attribute value escaped for double quotes.
func escapeAttr(buf *bytes.Buffer, v string) {
	for _, r := range v {
		switch r {
		case '&':
			buf.WriteString("&amp;")
		case '<':
			buf.WriteString("&lt;")
		case '>':
			buf.WriteString("&gt;")
		case '"':
			buf.WriteString("&quot;")
		case '\t':
			buf.WriteString("&#x9;")
		case '\n':
			buf.WriteString("&#xA;")
		case '\r':
			buf.WriteString("&#xD;")
		default:
			buf.WriteRune(r)
		}
	}
}
