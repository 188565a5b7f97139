package render

import (
	"strings"
	"testing"
)

func TestLinesWrapAndFind(t *testing.T) {
	text := "abcdefghij\n\nhé hé hé hé\r\n" + strings.Repeat("x", 10_000)
	l := NewLines(text, 4, true)
	want := []string{"abcd", "efgh", "ij", "", "hé h", "é hé", " hé", "xxxx"}
	for i, w := range want {
		if got := l.Line(i); got != w {
			t.Fatalf("row %d = %q, want %q", i, got, w)
		}
	}
	if l.Len() != 7+2500 || l.Cols() != 4 || !l.Wrap() {
		t.Fatalf("rows = %d", l.Len())
	}
	off := strings.Index(text, "x")
	if r := l.RowOf(off + 9); r != 9 {
		t.Fatalf("RowOf = %d", r)
	}
	nw := NewLines(text, 4, false)
	if nw.Len() != 4 || nw.Line(0) != "abcdefghij" || len(nw.Line(3)) != maxRowBytes {
		t.Fatalf("unwrapped: %d rows, %q, %d", nw.Len(), nw.Line(0), len(nw.Line(3)))
	}
	if got := FindAll("Hello hello HELLO", "hello", 10); len(got) != 3 || got[2] != 12 {
		t.Fatalf("FindAll = %v", got)
	}
	if got := FindAll(strings.Repeat("ab", 100), "ab", 5); len(got) != 5 {
		t.Fatalf("FindAll cap = %d", len(got))
	}
	h := &HexLines{Data: []byte("0123456789abcdefXYZ\xde\xad")}
	if h.Len() != 2 || !strings.HasPrefix(h.Line(0), "00000000  30 31") || !strings.HasSuffix(h.Line(1), "|XYZ..|") {
		t.Fatalf("hex = %q / %q", h.Line(0), h.Line(1))
	}
	if rows := h.Find("de ad", 10); len(rows) != 1 || rows[0] != 1 {
		t.Fatalf("hex find = %v", rows)
	}
	if rows := h.Find("XYZ", 10); len(rows) != 1 || rows[0] != 1 {
		t.Fatalf("text find in hex = %v", rows)
	}
}

func TestPrettyHTML(t *testing.T) {
	in := `<!doctype html><html><head><title>T</title><script>if (a<b) {x()}</script></head><body><p>Hello <b>you</b></p><br><img src="x.png"/><pre>  keep
  this</pre></body></html>`
	got, ok := Pretty(KindHTML, "text/html", []byte(in))
	if !ok {
		t.Fatal("not pretty")
	}
	for _, want := range []string{"<!doctype html>\n<html>\n  <head>\n    <title>\n      T\n    </title>", "if (a<b) {x()}", "    <p>\n      Hello\n      <b>", "    <br>\n    <img src=\"x.png\"/>\n", "  keep\n  this"} {
		if !strings.Contains(got, want) {
			t.Fatalf("pretty HTML lacks %q:\n%s", want, got)
		}
	}
}

// TestLineOfAWrappedRow: a wrapped row is found in its whole line, with its range, so it
// is highlighted in context; a line past the bound is not looked for.
func TestLineOfAWrappedRow(t *testing.T) {
	text := "{\n  \"id\": \"0123456789abcdef0123456789abcdef\",\r\n  \"n\": 1\n}"
	l := NewLines(text, 20, true)
	var got []string
	for i := range l.Len() {
		line, from, to, ok := l.LineOf(i, 2000)
		if !ok {
			t.Fatalf("row %d not found in its line", i)
		}
		if line[from:to] != l.Line(i) {
			t.Fatalf("row %d: %q[%d:%d] is not %q", i, line, from, to, l.Line(i))
		}
		got = append(got, line)
	}
	if got[1] != `  "id": "0123456789abcdef0123456789abcdef",` || got[2] != got[1] {
		t.Fatalf("lines of the wrapped rows: %q", got)
	}
	long := NewLines(strings.Repeat("x", 5000), 100, true)
	if _, _, _, ok := long.LineOf(10, 2000); ok {
		t.Fatal("a 5,000-byte line was looked for with a 2,000-byte bound")
	}
}

// TestWrappedStringStaysAString: the spans of a wrapped row cut from its line's spans keep
// a string's class on the continuation row (its hex digits were numbers).
func TestWrappedStringStaysAString(t *testing.T) {
	line := `  "id": "0123456789abcdef0123456789abcdef",`
	spans := Tokens("json", line)
	row := SliceSpans(spans, 20, 40)
	var text strings.Builder
	for _, sp := range row {
		text.WriteString(sp.Text)
		if sp.Class != TokString && strings.TrimSpace(sp.Text) != "" {
			t.Fatalf("span %q of the continuation row is %v, not a string", sp.Text, sp.Class)
		}
	}
	if text.String() != line[20:40] {
		t.Fatalf("row text %q, want %q", text.String(), line[20:40])
	}
}
