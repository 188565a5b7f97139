// Package filter implements the filter language of PRODUCT.md, used by the UI filter bar,
// --filter, breakpoints and rules. It depends only on engine/session and the standard library.
//
// # Language
//
// An expression is a sequence of terms separated by blanks; all of them must match (AND).
// The word OR (upper case, unquoted) between two terms or groups matches when either side
// matches; AND binds tighter than OR, so `a b OR c` is `(a b) OR c`. An explicit AND (upper
// case) is accepted and means the same as a blank. Parentheses group. A leading `-` negates
// the term or group it is attached to (`-host:cdn.example`, `-(status:2xx OR status:3xx)`).
//
// A term is `field:value`, a bare word, or a "quoted phrase"; a bare word or phrase matches
// when the URL contains it (case-insensitive). Values may be quoted: `header:"x-a=b c"`.
// Inside quotes, `\"` is a quote and `\\` a backslash. An unquoted word ends at a blank or `)`.
// A word whose part before the first colon is letters only must name a known field, except
// when `//` follows the colon (a pasted URL such as `https://example.com/x` is a bare word).
//
// Fields (all comparisons of text are case-insensitive):
//
//	host:     glob on the host name (`*` any run, `?` one character). A pattern `*.example.com`
//	          also matches `example.com` itself. Without wildcards it is an exact match.
//	url:      substring of the full URL
//	path:     substring of the path and query
//	method:   equality
//	status:   `404`, `4xx`, `400-499`, `>=500`, `<300`; `0` or `none` for no response
//	type:     substring of the response Content-Type
//	proto:    `h1` (or `http/1.1`, `http1`), `h2` (`http/2`), `h3` (`http/3`); either leg matches
//	size:     request + response body bytes: `>10k`, `<1mb`, `>=100`, `=0`, `10k-20k`; the
//	          units b, k/kb/kib, m/mb/mib, g/gb/gib are 1024-based; no operator means `=`
//	dur:      duration: `>500ms`, `<2s`, `100ms-1s`; units ns, us, ms, s, m, h (default ms).
//	          Sessions without a known duration (still running, or failed before any
//	          response) match no dur: term.
//	header:   `name` present in the request or response headers or trailers, or `name=value`
//	          where value is a substring of one of that header's values
//	body:     substring of the request or response body, or of a WebSocket message. Bodies
//	          are decoded first by content (gzip, deflate, br, zstd, stacked; at most
//	          MaxSearchBody, 256 KiB, of decoded bytes per body and of all messages
//	          together; the remainder is not searched); other or damaged encodings are
//	          searched as they travelled; images and binary bodies are not searched
//	          (SearchableBody).
//	text:     substring of anything of the session: the URL, a header or trailer line
//	          ("Name: value"), a body or a message as body: searches them (SessionText)
//	gql:      GraphQL requests (POST JSON, single or batched, or GET ?query=): `query`,
//	          `mutation`, `subscription` match the operation type, any other value is a
//	          glob on the operation name (`gql:GetUser`, `gql:Get*`)
//	grpc:     gRPC, gRPC-Web and Connect calls: a glob on `package.Service/Method`, or on
//	          `Service/Method` with the short service name (`grpc:demo.v1.Greeter/*`,
//	          `grpc:*/SayHello`, `grpc:Greeter/SayHello`); a value without `/` names a
//	          service (`grpc:demo.v1.Greeter` is `grpc:demo.v1.Greeter/*`)
//	error:    `yes`/`no` (also `true`/`false`), or a failure phase name such as `tls`, `dns`
//	marked:   `yes`/`no`, or a mark value (equality)
//	id:       `42`, `10-20`, `>100`, `<=7`
//
// Errors are *SyntaxError values carrying the byte offset of the problem. An expression
// never silently becomes an empty match: an unknown field, an empty value, an unbalanced
// parenthesis or quote, a bad number or range and a dangling OR are all errors.
package filter

import (
	"fmt"
	"sort"
	"strings"

	"inspector/engine/session"
)

// SyntaxError is an invalid expression, with the byte offset of the problem.
type SyntaxError struct {
	Pos int    // byte offset into the expression, 0-based
	Msg string // what is wrong, e.g. `unknown field "stauts"`
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("filter: at %d: %s", e.Pos+1, e.Msg) }

// Expr is a compiled expression. It is immutable and safe for concurrent use.
type Expr struct {
	src          string
	root         node // nil: matches everything
	needsSession bool
}

// Parse compiles expr. The empty (or all-blank) expression matches everything.
// An invalid expression returns a *SyntaxError.
func Parse(expr string) (*Expr, error) {
	p := &parser{src: expr}
	if err := p.lex(); err != nil {
		return nil, err
	}
	e := &Expr{src: expr}
	if len(p.toks) == 0 {
		return e, nil
	}
	root, err := p.parseOr(0)
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		t := p.toks[p.i]
		if t.kind == tokRParen {
			return nil, &SyntaxError{Pos: t.pos, Msg: "unmatched ')'"}
		}
		return nil, &SyntaxError{Pos: t.pos, Msg: "unexpected " + t.describe()}
	}
	e.root = root
	e.needsSession = root.needsSession()
	return e, nil
}

// MustParse is Parse for expressions known to be valid (tests, constants); it panics on error.
func MustParse(expr string) *Expr {
	e, err := Parse(expr)
	if err != nil {
		panic(err)
	}
	return e
}

// String returns the source text, exactly as given to Parse.
func (e *Expr) String() string { return e.src }

// Canonical returns a normalized form of the expression: single blanks, explicit
// parentheses around every OR inside an AND or a negation, values quoted where needed.
// Parsing the canonical form gives an expression with the same meaning and the same
// canonical form. The empty expression's canonical form is "".
func (e *Expr) Canonical() string {
	if e.root == nil {
		return ""
	}
	var b strings.Builder
	e.root.format(&b)
	return b.String()
}

// NeedsSession reports whether the expression uses fields a Summary lacks (header:,
// body:), so callers must load the full session and use Match.
func (e *Expr) NeedsSession() bool { return e.needsSession }

// MatchSummary evaluates the expression on a list row. It is only meaningful when
// NeedsSession is false; header: and body: terms never match a Summary.
// It does not allocate for summary fields and is safe for concurrent use.
func (e *Expr) MatchSummary(s *session.Summary) bool {
	if e.root == nil {
		return true
	}
	return e.root.match(s, nil)
}

// Match evaluates the expression on a full session. s is only read.
func (e *Expr) Match(s *session.Session) bool {
	if e.root == nil {
		return true
	}
	sum := s.Summarize()
	return e.root.match(&sum, s)
}

// FieldInfo describes one field for help texts and autocompletion.
type FieldInfo struct {
	Name    string // without the colon
	Example string // a valid value
	Help    string
}

var fieldInfos = []FieldInfo{
	{"body", "token", "substring of the request or response body (gzip, deflate, br, zstd decoded)"},
	{"client", "chromium", "client started by inspector launch: chromium (every launch), chromium-2 (one), yes (any)"},
	{"contract", "violation", "against the loaded API contract (--contract, Tools > API contract): violation or ok"},
	{"dur", ">500ms", "duration: >500ms, <2s, 100ms-1s"},
	{"error", "yes", "failed exchanges: yes, no, or a phase (tls, dns, dial, ...)"},
	{"fp", "mismatch", "fingerprints of the two legs: mismatch (the origin saw another JA4 or HTTP/2 fingerprint than the client sent), match"},
	{"gql", "mutation", "GraphQL operation: query, mutation, subscription, or a name glob"},
	{"grpc", "*/SayHello", "gRPC/Connect method glob: package.Service/Method"},
	{"header", "content-type=json", "header present (name) or name=value substring"},
	{"host", "*.example.com", "host name glob (*.example.com includes example.com)"},
	{"id", ">100", "session id: 42, 10-20, >100"},
	{"ja3", "579ccef312d18482fc42e2b822ca2430", "JA3 (MD5) of either leg's ClientHello, or a glob"},
	{"ja4", "t13d1516h2_*", "JA4 of either leg's ClientHello, or a glob"},
	{"llm", "claude*", "LLM API calls (OpenAI, Anthropic, Gemini): yes, or a model or provider glob"},
	{"marked", "yes", "marked sessions: yes, no, or a mark value"},
	{"method", "POST", "request method"},
	{"path", "/api", "substring of path and query"},
	{"pid", "4242", "client process id: 4242, >1000, 100-200 (sessions with a known process)"},
	{"process", "curl", "client process name glob: curl, fire*, chrome.exe (\".exe\" optional)"},
	{"proto", "h2", "protocol on either leg: h1, h2, h3"},
	{"size", ">10k", "request+response body bytes: >10k, <1mb, =0 (1024-based units)"},
	{"status", "4xx", "response status: 404, 4xx, 400-499, none"},
	{"text", "token", "substring of the URL, a header line, a body or a WebSocket message"},
	{"tokens", ">1000", "LLM tokens, input + output, as the response reported: >1000, 100-500"},
	{"type", "json", "substring of the response content type"},
	{"url", "login", "substring of the URL"},
}

// Fields returns the field names the language knows, sorted, without colons.
func Fields() []string {
	out := make([]string, len(fieldInfos))
	for i, f := range fieldInfos {
		out[i] = f.Name
	}
	return out
}

// FieldInfos returns a description of every field, sorted by name. The slice is a copy.
func FieldInfos() []FieldInfo { return append([]FieldInfo(nil), fieldInfos...) }

func knownField(name string) bool {
	i := sort.Search(len(fieldInfos), func(i int) bool { return fieldInfos[i].Name >= name })
	return i < len(fieldInfos) && fieldInfos[i].Name == name
}
