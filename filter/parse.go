package filter

import (
	"strings"
)

type tokKind int

const (
	tokTerm tokKind = iota
	tokOr
	tokAnd
	tokNot
	tokLParen
	tokRParen
)

type token struct {
	kind     tokKind
	pos      int    // start of the token
	field    string // lower-case field name; "" for a bare word or phrase
	value    string // unquoted value
	valuePos int    // start of the value (the opening quote when quoted)
	quoted   bool   // the value was quoted
}

func (t token) describe() string {
	switch t.kind {
	case tokOr:
		return "OR"
	case tokAnd:
		return "AND"
	case tokNot:
		return "'-'"
	case tokLParen:
		return "'('"
	case tokRParen:
		return "')'"
	}
	return "term"
}

// maxDepth bounds nesting of groups and negations.
const maxDepth = 100

type parser struct {
	src  string
	toks []token
	i    int
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// lex splits p.src into tokens.
func (p *parser) lex() error {
	s := p.src
	i := 0
	for {
		for i < len(s) && isBlank(s[i]) {
			i++
		}
		if i >= len(s) {
			return nil
		}
		switch c := s[i]; c {
		case '(':
			p.toks = append(p.toks, token{kind: tokLParen, pos: i})
			i++
			continue
		case ')':
			p.toks = append(p.toks, token{kind: tokRParen, pos: i})
			i++
			continue
		case '-':
			if i+1 >= len(s) || isBlank(s[i+1]) || s[i+1] == ')' {
				return &SyntaxError{Pos: i, Msg: "'-' must be followed directly by a term or a group to negate"}
			}
			p.toks = append(p.toks, token{kind: tokNot, pos: i})
			i++
			continue
		case '"':
			val, end, err := readQuoted(s, i)
			if err != nil {
				return err
			}
			p.toks = append(p.toks, token{kind: tokTerm, pos: i, value: val, valuePos: i, quoted: true})
			i = end
			continue
		}
		// An unquoted word, possibly field:value with a quoted value.
		start := i
		colon := -1
		for i < len(s) && !isBlank(s[i]) && s[i] != ')' {
			c := s[i]
			if c == ':' && colon < 0 {
				colon = i
			}
			if c == '"' {
				if colon >= 0 && colon == i-1 && colon > start && allLetters(s[start:colon]) {
					break // field:"quoted value"
				}
				return &SyntaxError{Pos: i, Msg: "a quote inside a word; put the quotes around the whole value"}
			}
			i++
		}
		word := s[start:i]
		if word == "OR" {
			p.toks = append(p.toks, token{kind: tokOr, pos: start})
			continue
		}
		if word == "AND" {
			p.toks = append(p.toks, token{kind: tokAnd, pos: start})
			continue
		}
		if colon < 0 || colon == start || !allLetters(s[start:colon]) ||
			strings.HasPrefix(s[colon+1:], "//") {
			p.toks = append(p.toks, token{kind: tokTerm, pos: start, value: word, valuePos: start})
			continue
		}
		field := strings.ToLower(s[start:colon])
		if !knownField(field) {
			return &SyntaxError{Pos: start, Msg: "unknown field \"" + s[start:colon] + ":\"" + suggest(field) +
				"; to search the URL for this text, put it in quotes"}
		}
		vpos := colon + 1
		var val string
		quoted := false
		if i < len(s) && s[i] == '"' {
			v, end, err := readQuoted(s, i)
			if err != nil {
				return err
			}
			val, i, quoted = v, end, true
		} else {
			val = s[vpos:i]
		}
		if val == "" {
			return &SyntaxError{Pos: vpos, Msg: "empty value for " + field + ": (example: " + field + ":" + exampleFor(field) + ")"}
		}
		p.toks = append(p.toks, token{kind: tokTerm, pos: start, field: field, value: val, valuePos: vpos, quoted: quoted})
	}
}

// allLetters reports whether s can be a field name: a letter, then letters or digits
// (ja4, ja3).
func allLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isLetter(s[i]) && (i == 0 || s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return len(s) > 0
}

// readQuoted reads a quoted string starting at s[i] == '"'. It returns the unescaped text
// and the offset just after the closing quote, which must be followed by a blank, ')' or
// the end.
func readQuoted(s string, i int) (string, int, error) {
	open := i
	var b strings.Builder
	i++
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\'):
			b.WriteByte(s[i+1])
			i += 2
		case c == '"':
			i++
			if i < len(s) && !isBlank(s[i]) && s[i] != ')' {
				return "", 0, &SyntaxError{Pos: i, Msg: "a closing quote must be followed by a blank or ')'"}
			}
			return b.String(), i, nil
		default:
			b.WriteByte(c)
			i++
		}
	}
	return "", 0, &SyntaxError{Pos: open, Msg: "unclosed quote"}
}

func exampleFor(field string) string {
	for _, f := range fieldInfos {
		if f.Name == field {
			return f.Example
		}
	}
	return ""
}

// suggest proposes a known field close to a misspelt one.
func suggest(field string) string {
	best, bestD := "", 3
	for _, f := range fieldInfos {
		if d := editDistance(field, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	}
	if best == "" {
		return " (fields: " + strings.Join(Fields(), ", ") + ")"
	}
	return " (did you mean \"" + best + ":\"?)"
}

func editDistance(a, b string) int {
	if len(a) > 32 || len(b) > 32 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func (p *parser) peek() (token, bool) {
	if p.i < len(p.toks) {
		return p.toks[p.i], true
	}
	return token{}, false
}

func startsOperand(t token) bool {
	return t.kind == tokTerm || t.kind == tokNot || t.kind == tokLParen
}

// parseOr: and ( OR and )*
func (p *parser) parseOr(depth int) (node, error) {
	first, err := p.parseAnd(depth)
	if err != nil {
		return nil, err
	}
	kids := []node{first}
	for {
		t, ok := p.peek()
		if !ok || t.kind != tokOr {
			break
		}
		p.i++
		n, ok := p.peek()
		if !ok || !startsOperand(n) {
			return nil, &SyntaxError{Pos: t.pos, Msg: "OR needs a term or group on both sides"}
		}
		k, err := p.parseAnd(depth)
		if err != nil {
			return nil, err
		}
		kids = append(kids, k)
	}
	if len(kids) == 1 {
		return first, nil
	}
	return orNode(kids), nil
}

// parseAnd: unary ( [AND] unary )*
func (p *parser) parseAnd(depth int) (node, error) {
	var kids []node
	for {
		t, ok := p.peek()
		if !ok {
			break
		}
		if t.kind == tokAnd {
			p.i++
			n, ok := p.peek()
			if len(kids) == 0 || !ok || !startsOperand(n) {
				return nil, &SyntaxError{Pos: t.pos, Msg: "AND needs a term or group on both sides"}
			}
			continue
		}
		if !startsOperand(t) {
			break
		}
		k, err := p.parseUnary(depth)
		if err != nil {
			return nil, err
		}
		kids = append(kids, k)
	}
	if len(kids) == 0 {
		t, ok := p.peek()
		switch {
		case !ok:
			return nil, &SyntaxError{Pos: len(p.src), Msg: "expected a term"}
		case t.kind == tokOr:
			return nil, &SyntaxError{Pos: t.pos, Msg: "OR needs a term or group on both sides"}
		case t.kind == tokRParen:
			return nil, &SyntaxError{Pos: t.pos, Msg: "unmatched ')'"}
		default:
			return nil, &SyntaxError{Pos: t.pos, Msg: "unexpected " + t.describe()}
		}
	}
	if len(kids) == 1 {
		return kids[0], nil
	}
	return andNode(kids), nil
}

func (p *parser) parseUnary(depth int) (node, error) {
	t := p.toks[p.i]
	if depth >= maxDepth {
		return nil, &SyntaxError{Pos: t.pos, Msg: "expression nested too deeply"}
	}
	switch t.kind {
	case tokNot:
		p.i++
		n, ok := p.peek()
		if !ok || !(n.kind == tokTerm || n.kind == tokLParen || n.kind == tokNot) {
			return nil, &SyntaxError{Pos: t.pos, Msg: "'-' must be followed directly by a term or a group to negate"}
		}
		k, err := p.parseUnary(depth + 1)
		if err != nil {
			return nil, err
		}
		return notNode{k}, nil
	case tokLParen:
		p.i++
		if n, ok := p.peek(); ok && n.kind == tokRParen {
			return nil, &SyntaxError{Pos: t.pos, Msg: "empty parentheses"}
		}
		if _, ok := p.peek(); !ok {
			return nil, &SyntaxError{Pos: t.pos, Msg: "unclosed '('"}
		}
		k, err := p.parseOr(depth + 1)
		if err != nil {
			return nil, err
		}
		n, ok := p.peek()
		if !ok {
			return nil, &SyntaxError{Pos: t.pos, Msg: "unclosed '('"}
		}
		if n.kind != tokRParen {
			return nil, &SyntaxError{Pos: n.pos, Msg: "unexpected " + n.describe()}
		}
		p.i++
		return k, nil
	case tokTerm:
		p.i++
		return compileTerm(t)
	}
	return nil, &SyntaxError{Pos: t.pos, Msg: "unexpected " + t.describe()}
}
