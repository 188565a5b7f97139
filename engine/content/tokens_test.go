package content

import (
	"strings"
	"testing"
)

func TestTokens(t *testing.T) {
	cases := []struct {
		lang, text string
		want       []Token // tokens that must appear
	}{
		{"json", `{"a": [1, true, "x"]}`, []Token{{ClassName, `"a"`}, {ClassNumber, "1"}, {ClassKeyword, "true"}, {ClassString, `"x"`}, {ClassPunctuation, "{"}}},
		{"javascript", "var x = 'a'; // note\n", []Token{{ClassKeyword, "var"}, {ClassString, "'a'"}, {ClassComment, "// note\n"}}},
		{"css", "a { width: 10px }", []Token{{ClassNumber, "10"}}},
		{"html", `<p class="x">hi</p>`, []Token{{ClassName, "p"}, {ClassString, `"x"`}}},
		{"xml", `<a b="1">t</a>`, []Token{{ClassString, `"1"`}}},
		{"graphql", "query Me { me { id } }", []Token{{ClassKeyword, "query"}}},
	}
	for _, c := range cases {
		ts := Tokens(c.lang, c.text)
		if JoinTokens(ts) != c.text {
			t.Errorf("%s: tokens do not join back to the text: %q", c.lang, ts)
		}
		for _, w := range c.want {
			found := false
			for _, tk := range ts {
				if tk == w {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: no token %+v in %q", c.lang, w, ts)
			}
		}
	}
	if ts := Tokens("cobol", "MOVE A"); len(ts) != 1 || ts[0].Class != ClassPlain {
		t.Errorf("unknown lang: %q", ts)
	}
	// A body past MaxTokenBytes: coloured up to a line boundary, then one plain token.
	big := strings.Repeat(`{"k": 12345}`+"\n", MaxTokenBytes/13+100)
	ts := Tokens("json", big)
	if JoinTokens(ts) != big || ts[len(ts)-1].Class != ClassPlain || len(ts[len(ts)-1].Text) < 100*13 {
		t.Errorf("big body: last token %d bytes", len(ts[len(ts)-1].Text))
	}
}

func BenchmarkTokensJSON(b *testing.B) {
	// 32 KiB: under MaxTokenTime, so this measures the lexer, not the time bound.
	text := strings.Repeat(`{"id": 1, "name": "value", "ok": true, "list": [1, 2, 3]}`+"\n", 560)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Tokens("json", text)
	}
}
