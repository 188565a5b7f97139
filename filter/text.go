package filter

import (
	"bytes"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"

	"inspector/content"
	"inspector/engine/session"
)

// MaxSearchBody bounds the decoded bytes body: and text: search per body (and over all
// WebSocket messages of a session together): the text a body index holds (the store's
// index.go) and the text the matcher reads are the same, so indexed searches are exact.
const MaxSearchBody = 256 << 10

// SearchableBody returns the part of a body that body: and text: search: the body with
// its Content-Encoding removed (content; damaged or unsupported encodings as they
// travelled), at most MaxSearchBody bytes of it, or nil when the body is an image or
// binary data (content.Detect) — those are not text to search.
func SearchableBody(data []byte, h http.Header) []byte {
	return searchableBody(data, h, MaxSearchBody)
}

// searchableBody is SearchableBody with a bound of limit decoded bytes.
func searchableBody(data []byte, h http.Header, limit int) []byte {
	if len(data) == 0 {
		return nil
	}
	out, _, _, _ := content.Decode(h, data, limit)
	if len(out) > limit {
		out = out[:limit]
	}
	// A definite Content-Type decides without reading the bytes (Detect would, e.g. to
	// tell GraphQL from other JSON, which does not matter here).
	if k, ok := content.KindOfType(content.MediaType(h.Get("Content-Type"))); ok && k != content.KindImage {
		return out
	}
	switch content.Detect(h, out) {
	case content.KindImage, content.KindBinary, content.KindEmpty:
		return nil
	}
	return out
}

// SearchableMessages calls fn with the WebSocket message data body: and text: search: the
// messages in order, MaxSearchBody bytes of them at most in all.
func SearchableMessages(msgs []session.Message, fn func([]byte) bool) bool {
	return searchableMessages(msgs, MaxSearchBody, fn)
}

func searchableMessages(msgs []session.Message, limit int, fn func([]byte) bool) bool {
	left := limit
	for i := range msgs {
		if left <= 0 {
			break
		}
		d := msgs[i].Data
		if len(d) > left {
			d = d[:left]
		}
		left -= len(d)
		if len(d) > 0 && fn(d) {
			return true
		}
	}
	return false
}

// SessionText calls fn with every piece of text that text: searches in s, in this order:
// the URL, each header and trailer line ("Name: value", request then response), the
// searchable request and response bodies (SearchableBody) and messages
// (SearchableMessages). It stops when fn returns true and reports whether it did. A body
// index built from these pieces finds every session text: or body: can match.
func SessionText(s *session.Session, fn func([]byte) bool) bool {
	return sessionText(s, MaxSearchBody, fn)
}

// sessionText is SessionText reading at most limit decoded bytes of each body.
func sessionText(s *session.Session, limit int, fn func([]byte) bool) bool {
	if s.Request.URL != "" && fn([]byte(s.Request.URL)) {
		return true
	}
	line := make([]byte, 0, 256)
	hs := [4]http.Header{s.Request.Header, s.Request.Trailer}
	if s.Response != nil {
		hs[2], hs[3] = s.Response.Header, s.Response.Trailer
	}
	for _, h := range hs {
		for _, k := range sortedKeys(h) {
			for _, v := range h[k] {
				line = append(append(append(line[:0], k...), ": "...), v...)
				if fn(line) {
					return true
				}
			}
		}
	}
	return sessionBodies(s, limit, fn)
}

// sessionBodies calls fn with the searchable bodies and messages of s (body:), at most
// limit decoded bytes of each body and of all messages.
func sessionBodies(s *session.Session, limit int, fn func([]byte) bool) bool {
	if b := searchableBody(s.Request.Body.Data, s.Request.Header, limit); b != nil && fn(b) {
		return true
	}
	if s.Response != nil {
		if b := searchableBody(s.Response.Body.Data, s.Response.Header, limit); b != nil && fn(b) {
			return true
		}
	}
	return searchableMessages(s.Messages, limit, fn)
}

// PastSearchBound reports whether s holds searchable text that body: and text: do not
// read: a decoded body, or all its messages together, longer than MaxSearchBody. Only
// such sessions can match MatchWhole where Match does not.
func PastSearchBound(s *session.Session) bool {
	past := func(data []byte, h http.Header) bool {
		return len(searchableBody(data, h, MaxSearchBody+1)) > MaxSearchBody
	}
	if past(s.Request.Body.Data, s.Request.Header) {
		return true
	}
	if s.Response != nil && past(s.Response.Body.Data, s.Response.Header) {
		return true
	}
	n := 0
	for i := range s.Messages {
		if n += len(s.Messages[i].Data); n > MaxSearchBody {
			return true
		}
	}
	return false
}

// MatchWhole is Match with body: and text: reading whole bodies (decoded, up to
// MaxDecodedBody bytes each) and every message, not only their first MaxSearchBody
// bytes: "search the rest" after an indexed search. No index narrows it; it reads what it
// is given.
func (e *Expr) MatchWhole(s *session.Session) bool {
	if e.root == nil {
		return true
	}
	sum := s.Summarize()
	return matchWhole(e.root, &sum, s)
}

func matchWhole(n node, sum *session.Summary, s *session.Session) bool {
	switch n := n.(type) {
	case andNode:
		for _, k := range n {
			if !matchWhole(k, sum, s) {
				return false
			}
		}
		return true
	case orNode:
		for _, k := range n {
			if matchWhole(k, sum, s) {
				return true
			}
		}
		return false
	case notNode:
		return !matchWhole(n.k, sum, s)
	case *term:
		if n.whole != nil {
			return n.whole(sum, s)
		}
	}
	return n.match(sum, s)
}

func sortedKeys(h http.Header) []string {
	ks := make([]string, 0, len(h))
	for k := range h {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TextClauses returns what the text of every session the expression matches must
// contain, for a text index to narrow the candidates: a list of clauses, all of which
// hold, each a list of needles at least one of which occurs (ignoring ASCII case) in one
// piece of SessionText. Only body: and text: terms give needles; nil means the expression
// gives the index nothing to narrow by (a full scan is needed). Needles are lower-cased.
// The result never excludes a matching session: callers confirm candidates with Match.
func (e *Expr) TextClauses() [][]string {
	if e.root == nil {
		return nil
	}
	return textClauses(e.root)
}

func textClauses(n node) [][]string {
	switch n := n.(type) {
	case *term:
		if n.field == "body" || n.field == "text" {
			return [][]string{{strings.ToLower(n.value)}}
		}
	case andNode:
		var out [][]string
		for _, k := range n {
			out = append(out, textClauses(k)...)
		}
		return out
	case orNode:
		// Either side may match: one clause with a needle of each side (the side's
		// longest, the most selective), only if every side has one.
		var clause []string
		for _, k := range n {
			cs := textClauses(k)
			if len(cs) == 0 {
				return nil
			}
			best := ""
			for _, c := range cs {
				if len(c) == 1 && len(c[0]) > len(best) {
					best = c[0]
				}
			}
			if best != "" {
				clause = append(clause, best)
				continue
			}
			clause = append(clause, cs[0]...)
		}
		return [][]string{clause}
	}
	return nil // a negation, or a term the index knows nothing of
}

// textPred is the predicate of text: (URL, headers, bodies, messages).
func textPred(n fold, limit int) func(*session.Summary, *session.Session) bool {
	return func(_ *session.Summary, s *session.Session) bool {
		if s == nil {
			return false
		}
		return sessionText(s, limit, n.inBytes)
	}
}

// bodyPred is the predicate of body: (bodies and messages).
func bodyPred(n fold, limit int) func(*session.Summary, *session.Session) bool {
	return func(_ *session.Summary, s *session.Session) bool {
		if s == nil {
			return false
		}
		return sessionBodies(s, limit, n.inBytes)
	}
}

// Snippet is where a text: needle occurs in a session, for a search result row.
type Snippet struct {
	Part       string // "url", "header", "request body", "response body" or "message"
	Text       string // up to the width asked for around the match, valid UTF-8
	Start, End int    // the match within Text
}

// FindSnippet returns the first place needle occurs (ignoring case, as text: matches) in
// the pieces text: searches, in SessionText's order, with about width bytes of context;
// ok is false when it does not occur.
func FindSnippet(s *session.Session, needle string, width int) (sn Snippet, ok bool) {
	n := newFold(needle)
	if n.lower == "" {
		return sn, false
	}
	try := func(part string, p []byte) bool {
		i := n.index(p)
		if i < 0 {
			return false
		}
		end := i + len(n.lower)
		lo, hi := max(0, i-width/2), min(len(p), end+width/2)
		for lo > 0 && lo < len(p) && !utf8.RuneStart(p[lo]) {
			lo--
		}
		for hi < len(p) && !utf8.RuneStart(p[hi]) {
			hi++
		}
		sn = Snippet{Part: part, Text: string(p[lo:hi]), Start: i - lo, End: min(end, hi) - lo}
		return true
	}
	if try("url", []byte(s.Request.URL)) {
		return sn, true
	}
	hs := [4]http.Header{s.Request.Header, s.Request.Trailer}
	if s.Response != nil {
		hs[2], hs[3] = s.Response.Header, s.Response.Trailer
	}
	for _, h := range hs {
		for _, k := range sortedKeys(h) {
			for _, v := range h[k] {
				if try("header", []byte(k+": "+v)) {
					return sn, true
				}
			}
		}
	}
	if b := SearchableBody(s.Request.Body.Data, s.Request.Header); b != nil && try("request body", b) {
		return sn, true
	}
	if s.Response != nil {
		if b := SearchableBody(s.Response.Body.Data, s.Response.Header); b != nil && try("response body", b) {
			return sn, true
		}
	}
	found := SearchableMessages(s.Messages, func(d []byte) bool { return try("message", d) })
	return sn, found
}

// index is the byte offset of the needle in b (case-insensitive), or -1. For needles
// with non-ASCII letters the offset is in the lower-cased text, which may differ in
// length from b; the snippet is then approximate.
func (f fold) index(b []byte) int {
	if !f.ascii {
		i := bytes.Index(bytes.ToLower(b), []byte(f.lower))
		return min(i, max(len(b)-len(f.lower), -1))
	}
	n := f.lower
outer:
	for i := 0; i+len(n) <= len(b); i++ {
		for j := 0; j < len(n); j++ {
			if lowerASCII(b[i+j]) != n[j] {
				continue outer
			}
		}
		return i
	}
	return -1
}
