package content

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// TestIndentXMLKeepsTheDocument: pretty XML is the same document re-indented: namespace
// declarations and prefixes stay where they were (the encoder wrote xmlns twice on <svg>
// and added it to <circle>), empty elements, comments, the declaration and escapes
// survive, and the result parses to the same tokens.
func TestIndentXMLKeepsTheDocument(t *testing.T) {
	in := `<?xml version="1.0" encoding="UTF-8"?><!-- logo --><svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="10"><g><circle cx="5" cy="5" r="4"/><use xlink:href="#a"/></g><text x="1">a &amp; b &lt; c</text><desc title="say &quot;hi&quot;"></desc></svg>`
	got, err := IndentXML(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `<?xml version="1.0" encoding="UTF-8"?>
<!-- logo -->
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="10">
  <g>
    <circle cx="5" cy="5" r="4"/>
    <use xlink:href="#a"/>
  </g>
  <text x="1">a &amp; b &lt; c</text>
  <desc title="say &quot;hi&quot;"/>
</svg>`
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if n := strings.Count(got, `xmlns="`); n != 1 {
		t.Fatalf("xmlns written %d times", n)
	}
	if a, b := tokens(t, in), tokens(t, got); a != b {
		t.Fatalf("the tokens differ:\n%s\n%s", a, b)
	}
}

// tokens lists a document's namespace-resolved tokens, whitespace-only text left out.
func tokens(t *testing.T, doc string) string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(doc))
	var sb strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return sb.String()
		}
		if err != nil {
			t.Fatalf("%v in:\n%s", err, doc)
		}
		if cd, ok := tok.(xml.CharData); ok && strings.TrimSpace(string(cd)) == "" {
			continue
		}
		sb.WriteString(strings.ReplaceAll(strings.TrimSpace(stringOf(tok)), "\n", " ") + "\n")
	}
}

func stringOf(tok xml.Token) string {
	switch t := tok.(type) {
	case xml.CharData:
		return "text " + string(t)
	case xml.Comment:
		return "comment " + string(t)
	case xml.ProcInst:
		return "pi " + t.Target + " " + string(t.Inst)
	case xml.StartElement:
		s := "start " + t.Name.Space + " " + t.Name.Local
		for _, a := range t.Attr {
			s += " " + a.Name.Space + ":" + a.Name.Local + "=" + a.Value
		}
		return s
	case xml.EndElement:
		return "end " + t.Name.Space + " " + t.Name.Local
	}
	return ""
}
