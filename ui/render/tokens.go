package render

import (
	"strings"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
)

// TokenClass is the colour class of a piece of highlighted text.
type TokenClass uint8

// Token classes.
const (
	TokPlain   TokenClass = iota
	TokTag                // JSON keys, XML and HTML tag names
	TokAttr               // XML and HTML attribute names
	TokString             // string literals and attribute values
	TokNumber             // numbers
	TokKeyword            // true, false, null, keywords
	TokPunct              // punctuation
	TokComment            // comments
)

// Span is a run of text of one class.
type Span struct {
	Text  string
	Class TokenClass
}

// maxTokenLine bounds the line length that is highlighted; longer lines are one plain
// span (a wrapped row of a huge line is a fragment anyway).
const maxTokenLine = 2000

// MaxTokenLine is maxTokenLine for callers that highlight a wrapped row within its line.
const MaxTokenLine = maxTokenLine

// Tokens splits one line of text in language lang ("json", "xml", "html"; anything else
// is plain) into classed spans, with the chroma lexer of that language. The line is
// lexed alone: the body pane highlights only the rows on screen.
func Tokens(lang, line string) []Span {
	if lang == "" || line == "" || len(line) > maxTokenLine {
		return []Span{{Text: line}}
	}
	lx := lexers.Get(lang)
	if lx == nil {
		return []Span{{Text: line}}
	}
	it, err := chroma.Coalesce(lx).Tokenise(nil, line)
	if err != nil {
		return []Span{{Text: line}}
	}
	var out []Span
	for tok := it(); tok != chroma.EOF; tok = it() {
		if tok.Value == "" {
			continue
		}
		c := classOf(tok.Type)
		if n := len(out); n > 0 && out[n-1].Class == c {
			out[n-1].Text += tok.Value
			continue
		}
		out = append(out, Span{Text: tok.Value, Class: c})
	}
	// A string followed by ':' is a JSON key (the line was lexed outside its object).
	if lang == "json" {
		for i := range out {
			if out[i].Class != TokString {
				continue
			}
			for j := i + 1; j < len(out); j++ {
				if t := strings.TrimSpace(out[j].Text); t == "" {
					continue
				} else if strings.HasPrefix(t, ":") {
					out[i].Class = TokTag
				}
				break
			}
		}
	}
	// The lexers end a text with a newline the line did not have.
	if n := len(out); n > 0 {
		if t := out[n-1].Text; len(t) > 0 && t[len(t)-1] == '\n' && (len(line) == 0 || line[len(line)-1] != '\n') {
			out[n-1].Text = t[:len(t)-1]
			if out[n-1].Text == "" {
				out = out[:n-1]
			}
		}
	}
	return out
}

func classOf(t chroma.TokenType) TokenClass {
	switch {
	case t.InCategory(chroma.Comment):
		return TokComment
	case t == chroma.NameTag:
		return TokTag
	case t == chroma.NameAttribute:
		return TokAttr
	case t.InSubCategory(chroma.LiteralString):
		return TokString
	case t.InSubCategory(chroma.LiteralNumber):
		return TokNumber
	case t.InCategory(chroma.Keyword):
		return TokKeyword
	case t == chroma.Punctuation || t == chroma.Operator || t == chroma.Error:
		// A line lexed alone leaves the JSON lexer outside its object state, where it
		// calls ':' and ',' errors.
		return TokPunct
	}
	return TokPlain
}

// WarmTokens compiles the lexers of the highlighted languages (the first use of a chroma
// lexer compiles its rules: tens of milliseconds). Call it once off the UI goroutine.
func WarmTokens() {
	for _, lang := range []string{"json", "xml", "html"} {
		Tokens(lang, "<a b=\"1\">{\"k\": 1}</a>")
	}
}

// SliceSpans cuts the spans of a line to its bytes [from, to): the spans of one wrapped
// row, highlighted as part of its line.
func SliceSpans(spans []Span, from, to int) []Span {
	var out []Span
	at := 0
	for _, sp := range spans {
		s, e := at, at+len(sp.Text)
		at = e
		if e <= from || s >= to {
			continue
		}
		out = append(out, Span{Text: sp.Text[max(from, s)-s : min(to, e)-s], Class: sp.Class})
	}
	if len(out) == 0 {
		out = []Span{{}}
	}
	return out
}
