package render

import (
	"strings"
	"testing"
)

func TestTokensJSONAndXML(t *testing.T) {
	sp := Tokens("json", `  "name": "Sample User", "n": 12, "ok": true,`)
	var text strings.Builder
	classes := map[string]TokenClass{}
	for _, s := range sp {
		text.WriteString(s.Text)
		classes[strings.TrimSpace(s.Text)] = s.Class
	}
	if text.String() != `  "name": "Sample User", "n": 12, "ok": true,` {
		t.Fatalf("spans do not rebuild the line: %q", text.String())
	}
	if classes[`"name"`] != TokTag || classes[`"Sample User"`] != TokString || classes["12"] != TokNumber || classes["true"] != TokKeyword {
		t.Fatalf("classes = %v", classes)
	}
	x := Tokens("xml", `<item id="7">text</item>`)
	var hasTag, hasAttr bool
	for _, s := range x {
		hasTag = hasTag || s.Class == TokTag
		hasAttr = hasAttr || s.Class == TokAttr
	}
	if !hasTag || !hasAttr {
		t.Fatalf("xml spans = %+v", x)
	}
	if p := Tokens("", "plain"); len(p) != 1 || p[0].Class != TokPlain {
		t.Fatalf("plain = %+v", p)
	}
	long := strings.Repeat("a", maxTokenLine+1)
	if p := Tokens("json", long); len(p) != 1 || p[0].Text != long {
		t.Fatal("a long line is not one plain span")
	}
}
