package content

import (
	"strings"
	"time"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
)

// Token classes for syntax colour.
const (
	ClassPlain       = "plain"
	ClassKeyword     = "keyword"
	ClassString      = "string"
	ClassNumber      = "number"
	ClassComment     = "comment"
	ClassName        = "name"
	ClassPunctuation = "punctuation"
)

// Token is a run of text of one syntax class.
type Token struct {
	Class string `json:"class"`
	Text  string `json:"text"`
}

// Limits of Tokens: the bytes coloured and the time spent; text past either is one
// plain token, so a large body never stalls the window.
const (
	MaxTokenBytes = 256 << 10
	MaxTokenTime  = 250 * time.Millisecond
)

var lexerNames = map[string]string{
	"json": "json", "xml": "xml", "html": "html", "javascript": "javascript", "css": "css",
	"graphql": "graphql", "protobuf": "protobuf",
}

// Tokens splits text into syntax-coloured tokens with the chroma lexer of lang ("json",
// "xml", "html", "javascript", "css", "graphql"). Unknown langs, and text past
// MaxTokenBytes or MaxTokenTime, come back as plain tokens; joining every Text gives text
// back unchanged.
func Tokens(lang, text string) []Token {
	name, ok := lexerNames[lang]
	var lx chroma.Lexer
	if ok {
		lx = lexers.Get(name)
	}
	if lx == nil || text == "" {
		if text == "" {
			return nil
		}
		return []Token{{ClassPlain, text}}
	}
	head, rest := text, ""
	if len(head) > MaxTokenBytes {
		cut := MaxTokenBytes
		for cut > 0 && !isBoundary(text[cut]) {
			cut--
		}
		head, rest = text[:cut], text[cut:]
	}
	it, err := chroma.Coalesce(lx).Tokenise(&chroma.TokeniseOptions{State: "root", EnsureLF: false}, head)
	if err != nil {
		return []Token{{ClassPlain, text}}
	}
	var out []Token
	done := 0
	deadline := time.Now().Add(MaxTokenTime)
	for t := it(); t != chroma.EOF; t = it() {
		if t.Value == "" {
			continue
		}
		if done+len(t.Value) > len(head) {
			break // a lexer that adds text (a final newline) never goes past head
		}
		c := classOf(t.Type)
		if n := len(out); n > 0 && out[n-1].Class == c {
			out[n-1].Text += t.Value
		} else {
			out = append(out, Token{c, t.Value})
		}
		done += len(t.Value)
		if len(out)%256 == 0 && time.Now().After(deadline) {
			break
		}
	}
	if tail := head[done:] + rest; tail != "" {
		out = append(out, Token{ClassPlain, tail})
	}
	return out
}

func isBoundary(c byte) bool { return c == '\n' }

func classOf(t chroma.TokenType) string {
	switch {
	case t.InCategory(chroma.Keyword):
		return ClassKeyword
	case t.InSubCategory(chroma.LiteralString):
		return ClassString
	case t.InSubCategory(chroma.LiteralNumber):
		return ClassNumber
	case t.InCategory(chroma.Comment):
		return ClassComment
	case t.InCategory(chroma.Name):
		return ClassName
	case t.InCategory(chroma.Punctuation), t.InCategory(chroma.Operator):
		return ClassPunctuation
	case t.InCategory(chroma.Literal):
		return ClassKeyword // true, false, null
	}
	return ClassPlain
}

// JoinTokens concatenates the texts of tokens (the inverse of Tokens).
func JoinTokens(ts []Token) string {
	var sb strings.Builder
	for _, t := range ts {
		sb.WriteString(t.Text)
	}
	return sb.String()
}
