package codegen

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Lexers for the string literals and comments of each target language, written from the
// languages' lexical grammars (not from the generators). skeleton replaces every literal
// with S, so that what remains is the code a snippet runs: if a request's data ever ended
// up outside a literal, the skeleton would show it.

type lexRules struct {
	quotes   string // characters that open a literal
	prefixes string // letters that may prefix a literal (b'…')
	// inLiteral reports the length of the escape or character at s (s starts inside a
	// literal opened by q), or 0 when s closes the literal, or -1 when the literal cannot
	// continue there (a line break where none is allowed).
	inLiteral    func(s string, q rune) int
	lineComments []string
	blockComment [2]string
}

// backslashed: a backslash takes the next character along; a line break is an error
// unless multiline.
func backslashed(multiline bool, lineBreaks string) func(string, rune) int {
	return func(s string, q rune) int {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == '\\':
			if len(s) < 2 {
				return -1
			}
			_, m := utf8.DecodeRuneInString(s[1:])
			return 1 + m
		case r == q:
			return 0
		case !multiline && strings.ContainsRune(lineBreaks, r):
			return -1
		}
		return n
	}
}

var lexers = map[string]lexRules{
	"python": {quotes: `'"`, prefixes: "bBrRuUfF", inLiteral: backslashed(false, "\n\r"), lineComments: []string{"#"}},
	"httpx":  {quotes: `'"`, prefixes: "bBrRuUfF", inLiteral: backslashed(false, "\n\r"), lineComments: []string{"#"}},
	"fetch":  {quotes: `'"`, inLiteral: backslashed(false, "\n\r"), lineComments: []string{"//"}, blockComment: [2]string{"/*", "*/"}},
	"node":   {quotes: `'"`, inLiteral: backslashed(false, "\n\r"), lineComments: []string{"//"}, blockComment: [2]string{"/*", "*/"}},
	"go":     {quotes: `"`, inLiteral: backslashed(false, "\n\r"), lineComments: []string{"//"}, blockComment: [2]string{"/*", "*/"}},
	"java":   {quotes: `"`, inLiteral: backslashed(false, "\n\r"), lineComments: []string{"//"}, blockComment: [2]string{"/*", "*/"}},
	"csharp": {quotes: `"`, inLiteral: backslashed(false, "\n\r\u0085\u2028\u2029"), lineComments: []string{"//"}, blockComment: [2]string{"/*", "*/"}},
	"rust":   {quotes: `"`, prefixes: "b", inLiteral: backslashed(true, ""), lineComments: []string{"//"}, blockComment: [2]string{"/*", "*/"}},
	"php":    {quotes: `'"`, inLiteral: backslashed(true, ""), lineComments: []string{"//", "#"}, blockComment: [2]string{"/*", "*/"}},
	"powershell": {quotes: "'\u2018\u2019\u201a\u201b", lineComments: []string{"#"}, inLiteral: func(s string, _ rune) int {
		// any single quote of the four closes, unless doubled (with any of the four)
		r, n := utf8.DecodeRuneInString(s)
		if isPSQuote(r) {
			if r2, m := utf8.DecodeRuneInString(s[n:]); isPSQuote(r2) {
				return n + m
			}
			return 0
		}
		return n
	}},
}

func isPSQuote(r rune) bool { return r == '\'' || r >= 0x2018 && r <= 0x201b }

// javaUnicode applies Java's first translation step: \uXXXX (a backslash preceded by an
// even number of backslashes, then one or more u, then four hex digits) becomes the
// character.
func javaUnicode(s string) (string, error) {
	var b strings.Builder
	bs := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && bs%2 == 0 && i+1 < len(s) && s[i+1] == 'u' {
			j := i + 1
			for j < len(s) && s[j] == 'u' {
				j++
			}
			if j+4 > len(s) {
				return "", fmt.Errorf("bad unicode escape at %d", i)
			}
			v, err := strconv.ParseUint(s[j:j+4], 16, 16)
			if err != nil {
				return "", fmt.Errorf("bad unicode escape at %d", i)
			}
			b.WriteRune(rune(v))
			i = j + 3
			bs = 0
			continue
		}
		if c == '\\' {
			bs++
		} else {
			bs = 0
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// skeleton returns src with every literal replaced by S and comments kept, or an error
// when a literal or comment does not end.
func skeleton(lang, src string) (string, error) {
	lx := lexers[lang]
	if lang == "java" {
		var err error
		if src, err = javaUnicode(src); err != nil {
			return "", err
		}
	}
	var out strings.Builder
	for i := 0; i < len(src); {
		rest := src[i:]
		if c := lx.blockComment[0]; c != "" && strings.HasPrefix(rest, c) {
			end := strings.Index(rest[len(c):], lx.blockComment[1])
			if end < 0 {
				return "", fmt.Errorf("unterminated comment at %d", i)
			}
			n := len(c) + end + len(lx.blockComment[1])
			out.WriteString(rest[:n])
			i += n
			continue
		}
		lineComment := false
		for _, c := range lx.lineComments {
			if strings.HasPrefix(rest, c) {
				lineComment = true
			}
		}
		if lineComment {
			end := strings.IndexByte(rest, '\n')
			if end < 0 {
				end = len(rest)
			}
			out.WriteString(rest[:end])
			i += end
			continue
		}
		r, n := utf8.DecodeRuneInString(rest)
		if strings.ContainsRune(lx.quotes, r) {
			j := i + n
			for {
				if j >= len(src) {
					return "", fmt.Errorf("unterminated literal at %d", i)
				}
				m := lx.inLiteral(src[j:], r)
				if m < 0 {
					return "", fmt.Errorf("line break in a literal at %d", j)
				}
				if m == 0 {
					_, q := utf8.DecodeRuneInString(src[j:])
					j += q
					break
				}
				j += m
			}
			// a prefix letter right before belongs to the literal
			s := out.String()
			if len(s) > 0 && strings.IndexByte(lx.prefixes, s[len(s)-1]) >= 0 && (len(s) == 1 || !isIdent(s[len(s)-2])) {
				out.Reset()
				out.WriteString(s[:len(s)-1])
			}
			out.WriteString("S")
			i = j
			continue
		}
		out.WriteString(rest[:n])
		i += n
	}
	return out.String(), nil
}

func isIdent(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
