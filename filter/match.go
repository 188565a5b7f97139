package filter

import (
	"bytes"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"inspector/content"
	"inspector/engine/session"
)

// node is one compiled part of an expression. Implementations are immutable.
type node interface {
	// match evaluates on a summary; s is the full session or nil (MatchSummary).
	match(sum *session.Summary, s *session.Session) bool
	needsSession() bool
	// format writes the canonical form.
	format(b *strings.Builder)
}

type andNode []node

func (n andNode) match(sum *session.Summary, s *session.Session) bool {
	for _, k := range n {
		if !k.match(sum, s) {
			return false
		}
	}
	return true
}

func (n andNode) needsSession() bool { return anyNeeds(n) }

func (n andNode) format(b *strings.Builder) {
	for i, k := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		formatOperand(b, k)
	}
}

type orNode []node

func (n orNode) match(sum *session.Summary, s *session.Session) bool {
	for _, k := range n {
		if k.match(sum, s) {
			return true
		}
	}
	return false
}

func (n orNode) needsSession() bool { return anyNeeds(n) }

func (n orNode) format(b *strings.Builder) {
	for i, k := range n {
		if i > 0 {
			b.WriteString(" OR ")
		}
		k.format(b) // AND binds tighter: no parentheses needed
	}
}

type notNode struct{ k node }

func (n notNode) match(sum *session.Summary, s *session.Session) bool { return !n.k.match(sum, s) }
func (n notNode) needsSession() bool                                  { return n.k.needsSession() }
func (n notNode) format(b *strings.Builder) {
	b.WriteByte('-')
	switch n.k.(type) {
	case andNode:
		b.WriteByte('(')
		n.k.format(b)
		b.WriteByte(')')
	default:
		formatOperand(b, n.k)
	}
}

// formatOperand writes k as an operand of AND (or of a negation): OR needs parentheses.
func formatOperand(b *strings.Builder, k node) {
	if _, ok := k.(orNode); ok {
		b.WriteByte('(')
		k.format(b)
		b.WriteByte(')')
		return
	}
	k.format(b)
}

func anyNeeds(ns []node) bool {
	for _, k := range ns {
		if k.needsSession() {
			return true
		}
	}
	return false
}

// term is one field:value (or bare word) with its compiled predicate.
type term struct {
	field string // "" for bare words
	value string // as written (unquoted)
	pred  func(sum *session.Summary, s *session.Session) bool
	// whole is body:'s and text:'s predicate over whole bodies (Expr.MatchWhole).
	whole func(sum *session.Summary, s *session.Session) bool
	needs bool
}

func (t *term) match(sum *session.Summary, s *session.Session) bool { return t.pred(sum, s) }
func (t *term) needsSession() bool                                  { return t.needs }
func (t *term) format(b *strings.Builder) {
	if t.field == "" {
		if plainBare(t.value) {
			b.WriteString(t.value)
		} else {
			writeQuoted(b, t.value)
		}
		return
	}
	b.WriteString(t.field)
	b.WriteByte(':')
	if plainValue(t.value) {
		b.WriteString(t.value)
	} else {
		writeQuoted(b, t.value)
	}
}

func writeQuoted(b *strings.Builder, v string) {
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		if v[i] == '"' || v[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	b.WriteByte('"')
}

// plainValue reports whether a field value can be written without quotes.
func plainValue(v string) bool {
	// "field://…" would lex as a pasted URL (a bare word), not as field:value.
	if v == "" || v[0] == '"' || strings.HasPrefix(v, "//") {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; isBlank(c) || c == ')' || c == '"' {
			return false
		}
	}
	return true
}

// plainBare reports whether a bare word can be written without quotes and still lex as
// a bare word.
func plainBare(v string) bool {
	if v == "" || v == "OR" || v == "AND" || v[0] == '-' || v[0] == '(' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; isBlank(c) || c == ')' || c == '"' || c == ':' {
			return false
		}
	}
	return true
}

// compileTerm turns a term token into a predicate, validating its value.
func compileTerm(t token) (node, error) {
	out := &term{field: t.field, value: t.value}
	v := t.value
	errAt := func(off int, msg string) error {
		pos := t.valuePos + off
		if t.quoted {
			pos = t.valuePos + 1 + off
		}
		return &SyntaxError{Pos: pos, Msg: msg}
	}
	switch t.field {
	case "", "url":
		n := newFold(v)
		out.pred = func(sum *session.Summary, _ *session.Session) bool { return n.in(sum.URL) }
	case "path":
		n := newFold(v)
		out.pred = func(sum *session.Summary, _ *session.Session) bool { return n.in(sum.Path) }
	case "type":
		n := newFold(v)
		out.pred = func(sum *session.Summary, _ *session.Session) bool { return n.in(sum.ContentType) }
	case "method":
		out.pred = func(sum *session.Summary, _ *session.Session) bool { return strings.EqualFold(sum.Method, v) }
	case "host":
		pat := strings.ToLower(v)
		alt := ""
		if strings.HasPrefix(pat, "*.") && len(pat) > 2 {
			alt = pat[2:]
		}
		out.pred = func(sum *session.Summary, _ *session.Session) bool {
			return globFold(pat, sum.Host) || alt != "" && globFold(alt, sum.Host)
		}
	case "status":
		r, err := parseStatus(v, errAt)
		if err != nil {
			return nil, err
		}
		out.pred = func(sum *session.Summary, _ *session.Session) bool { return r.has(float64(sum.Status)) }
	case "proto":
		p, ok := protoAliases[strings.ToLower(v)]
		if !ok {
			return nil, errAt(0, "unknown protocol \""+v+"\" (use h1, h2 or h3)")
		}
		out.pred = func(sum *session.Summary, _ *session.Session) bool {
			return strings.EqualFold(sum.ClientProto, p) || strings.EqualFold(sum.UpstreamProto, p)
		}
	case "size":
		r, err := parseCmp(v, errAt, parseSize)
		if err != nil {
			return nil, err
		}
		out.pred = func(sum *session.Summary, _ *session.Session) bool {
			return r.has(float64(sum.ReqBytes + sum.RespBytes))
		}
	case "dur":
		r, err := parseCmp(v, errAt, parseDur)
		if err != nil {
			return nil, err
		}
		out.pred = func(sum *session.Summary, _ *session.Session) bool {
			return sum.DurationMS > 0 && r.has(sum.DurationMS)
		}
	case "ja4", "ja3":
		pat, ja4 := strings.ToLower(v), t.field == "ja4"
		out.needs = true
		out.pred = func(_ *session.Summary, s *session.Session) bool {
			if s == nil {
				return false
			}
			for _, f := range [...]*session.Fingerprint{s.Client.Fingerprint, s.Upstream.Fingerprint} {
				if f == nil {
					continue
				}
				got := f.JA3
				if ja4 {
					got = f.JA4
				}
				if got != "" && globFold(pat, got) {
					return true
				}
			}
			return false
		}
	case "fp":
		var want bool
		switch strings.ToLower(v) {
		case "mismatch":
			want = true
		case "match":
		default:
			return nil, errAt(0, "fp: takes mismatch or match (fp:mismatch)")
		}
		out.needs = true
		out.pred = func(_ *session.Summary, s *session.Session) bool {
			if s == nil || s.Client.Fingerprint == nil || s.Upstream.Fingerprint == nil {
				return false
			}
			c, u := s.Client.Fingerprint, s.Upstream.Fingerprint
			if c.JA4 == "" || u.JA4 == "" {
				return false
			}
			differ := c.JA4 != u.JA4 || (c.H2 != "" && u.H2 != "" && c.H2 != u.H2)
			return differ == want
		}
	case "process":
		if v == "" {
			return nil, errAt(0, "process: needs a process name or glob (process:curl)")
		}
		pat := strings.ToLower(v)
		out.pred = func(sum *session.Summary, _ *session.Session) bool {
			if sum.Process == "" {
				return false
			}
			if globFold(pat, sum.Process) {
				return true
			}
			// Windows names end in .exe; process:curl finds curl.exe too.
			n := len(sum.Process)
			return n > 4 && strings.EqualFold(sum.Process[n-4:], ".exe") && globFold(pat, sum.Process[:n-4])
		}
	case "client":
		// Launched clients (inspector launch) are named "chromium-2 (launched)":
		// client:chromium finds every launched Chromium, client:chromium-2 one of them,
		// client:yes any launched client.
		if v == "" {
			return nil, errAt(0, "client: needs a launched client's name (client:chromium), or yes")
		}
		pat := strings.ToLower(v)
		out.pred = func(sum *session.Summary, _ *session.Session) bool {
			name, ok := strings.CutSuffix(sum.Process, " (launched)")
			if !ok {
				return false
			}
			if pat == "yes" || globFold(pat, name) {
				return true
			}
			i := strings.LastIndexByte(name, '-')
			return i > 0 && globFold(pat, name[:i])
		}
	case "pid":
		r, err := parseCmp(v, errAt, parseInt)
		if err != nil {
			return nil, err
		}
		out.pred = func(sum *session.Summary, _ *session.Session) bool { return sum.PID > 0 && r.has(float64(sum.PID)) }
	case "id":
		r, err := parseCmp(v, errAt, parseInt)
		if err != nil {
			return nil, err
		}
		out.pred = func(sum *session.Summary, _ *session.Session) bool { return r.has(float64(sum.ID)) }
	case "error":
		switch lv := strings.ToLower(v); {
		case lv == "yes" || lv == "true":
			out.pred = func(sum *session.Summary, _ *session.Session) bool { return sum.Error != "" }
		case lv == "no" || lv == "false":
			out.pred = func(sum *session.Summary, _ *session.Session) bool { return sum.Error == "" }
		case knownPhase(lv):
			ph := session.Phase(lv)
			out.pred = func(sum *session.Summary, _ *session.Session) bool {
				return sum.Error != "" && sum.ErrorPhase == ph
			}
		default:
			return nil, errAt(0, "error: takes yes, no or a phase ("+strings.Join(phaseNames(), ", ")+")")
		}
	case "marked":
		switch lv := strings.ToLower(v); lv {
		case "yes", "true":
			out.pred = func(sum *session.Summary, _ *session.Session) bool { return sum.Mark != "" }
		case "no", "false":
			out.pred = func(sum *session.Summary, _ *session.Session) bool { return sum.Mark == "" }
		default:
			out.pred = func(sum *session.Summary, _ *session.Session) bool { return strings.EqualFold(sum.Mark, v) }
		}
	case "header":
		name, val, hasVal := strings.Cut(v, "=")
		if name == "" {
			return nil, errAt(0, "header: needs a header name (header:name or header:name=value)")
		}
		vn := newFold(val)
		out.needs = true
		out.pred = func(_ *session.Summary, s *session.Session) bool {
			if s == nil {
				return false
			}
			hs := [4]http.Header{s.Request.Header, s.Request.Trailer}
			if s.Response != nil {
				hs[2], hs[3] = s.Response.Header, s.Response.Trailer
			}
			for _, h := range hs {
				for k, vs := range h {
					if !strings.EqualFold(k, name) {
						continue
					}
					if !hasVal {
						return true
					}
					for _, x := range vs {
						if vn.in(x) {
							return true
						}
					}
				}
			}
			return false
		}
	case "body":
		out.needs = true
		out.pred = bodyPred(newFold(v), MaxSearchBody)
		out.whole = bodyPred(newFold(v), MaxDecodedBody)
	case "text":
		out.needs = true
		out.pred = textPred(newFold(v), MaxSearchBody)
		out.whole = textPred(newFold(v), MaxDecodedBody)
	case "gql":
		out.needs = true
		out.pred = gqlPred(v)
	case "grpc":
		pat := strings.ToLower(strings.TrimPrefix(v, "/")) // globFold wants a lower-case pattern
		if !strings.Contains(pat, "/") {
			pat += "/*" // grpc:pkg.Service means any of its methods
		}
		out.needs = true
		out.pred = func(_ *session.Summary, s *session.Session) bool {
			m, ok := content.RPCMethod(s)
			if !ok {
				return false
			}
			if globFold(pat, m) {
				return true
			}
			// The service's short name matches too: Greeter/SayHello for demo.v1.Greeter.
			svc, meth, _ := strings.Cut(m, "/")
			if i := strings.LastIndexByte(svc, '.'); i >= 0 {
				return globFold(pat, svc[i+1:]+"/"+meth)
			}
			return false
		}
	case "llm":
		lv := strings.ToLower(v)
		out.needs = true
		out.pred = func(_ *session.Summary, s *session.Session) bool {
			c, ok := content.LLMCallOf(s)
			switch {
			case !ok:
				return lv == "no" || lv == "false"
			case lv == "yes" || lv == "true":
				return true
			case lv == "no" || lv == "false":
				return false
			}
			return globFold(lv, strings.ToLower(c.Model)) || globFold(lv, c.Provider)
		}
	case "tokens":
		r, err := parseCmp(v, errAt, parseInt)
		if err != nil {
			return nil, err
		}
		out.needs = true
		out.pred = func(_ *session.Summary, s *session.Session) bool {
			c, ok := content.LLMCallOf(s)
			return ok && c.HasUsage && r.has(float64(c.InputTokens+c.OutputTokens))
		}
	case "contract":
		var want bool
		switch strings.ToLower(v) {
		case "violation", "violations", "no":
			want = false
		case "ok", "conforms", "yes":
			want = true
		default:
			return nil, errAt(0, "contract: takes violation or ok")
		}
		out.needs = true
		out.pred = func(_ *session.Summary, s *session.Session) bool {
			checked, ok := checkContract(s)
			return checked && ok == want
		}
	default:
		return nil, &SyntaxError{Pos: t.pos, Msg: "unknown field \"" + t.field + ":\""}
	}
	return out, nil
}

// gqlPred matches GraphQL requests: query, mutation and subscription match the
// operation type; any other value is a glob on the operation name.
func gqlPred(v string) func(*session.Summary, *session.Session) bool {
	lv := strings.ToLower(v)
	byType := lv == "query" || lv == "mutation" || lv == "subscription"
	return func(_ *session.Summary, s *session.Session) bool {
		for _, op := range content.GraphQLOps(s) {
			if byType && op.Type == lv || !byType && globFold(lv, op.Name) {
				return true
			}
		}
		return false
	}
}

var protoAliases = map[string]string{
	"h1": session.HTTP1, "http1": session.HTTP1, "http/1": session.HTTP1, "http/1.1": session.HTTP1,
	"http/1.0": session.HTTP1, "h2": session.HTTP2, "http2": session.HTTP2, "http/2": session.HTTP2,
	"http/2.0": session.HTTP2, "h3": session.HTTP3, "http3": session.HTTP3, "http/3": session.HTTP3,
}

var phases = []session.Phase{
	session.PhaseClientTLS, session.PhaseRequest, session.PhaseDNS, session.PhaseDial,
	session.PhaseTLS, session.PhaseSend, session.PhaseResponse, session.PhaseBody,
	session.PhaseTunnel, session.PhaseWebSocket, session.PhaseHook,
}

func knownPhase(p string) bool {
	for _, x := range phases {
		if string(x) == p {
			return true
		}
	}
	return false
}

func phaseNames() []string {
	out := make([]string, len(phases))
	for i, p := range phases {
		out[i] = string(p)
	}
	return out
}

// numRange is an interval of numbers; bounds are inclusive unless marked open.
type numRange struct {
	lo, hi         float64
	loOpen, hiOpen bool
}

func (r numRange) has(x float64) bool {
	if x < r.lo || x > r.hi || r.loOpen && x == r.lo || r.hiOpen && x == r.hi {
		return false
	}
	return true
}

type errAtFunc func(off int, msg string) error

// parseStatus: 404, 4xx, 400-499, >=500, 0, none.
func parseStatus(v string, errAt errAtFunc) (numRange, error) {
	lv := strings.ToLower(v)
	if lv == "none" {
		return numRange{lo: 0, hi: 0}, nil
	}
	if len(lv) == 3 && lv[0] >= '1' && lv[0] <= '9' && lv[1:] == "xx" {
		d := float64(lv[0]-'0') * 100
		return numRange{lo: d, hi: d + 99}, nil
	}
	r, err := parseCmp(v, errAt, parseInt)
	if err != nil {
		return r, err
	}
	if r.hi > 999 && !math.IsInf(r.hi, 1) || r.lo > 999 {
		return r, errAt(0, "a status code is at most 999")
	}
	if r.lo <= 0 && !(r.lo == 0 && r.hi == 0) && strings.ContainsAny(v[:1], "<>") {
		r.lo, r.loOpen = 1, false // comparisons mean responses: no response is not "< 300"
	}
	if math.IsInf(r.hi, 1) {
		r.hi = 999
	}
	return r, nil
}

type unitParser func(s string) (float64, string) // value, or "" and an error message

// parseCmp parses `>x`, `>=x`, `<x`, `<=x`, `=x`, `x`, `x-y` with the unit parser.
func parseCmp(v string, errAt errAtFunc, unit unitParser) (numRange, error) {
	op := ""
	for _, o := range []string{">=", "<=", ">", "<", "="} {
		if strings.HasPrefix(v, o) {
			op = o
			break
		}
	}
	rest := v[len(op):]
	if op == "" {
		if a, b, ok := strings.Cut(v, "-"); ok {
			lo, msg := unit(a)
			if msg != "" {
				return numRange{}, errAt(0, msg)
			}
			hi, msg := unit(b)
			if msg != "" {
				return numRange{}, errAt(len(a)+1, msg)
			}
			if lo > hi {
				return numRange{}, errAt(0, "range start "+a+" is greater than its end "+b)
			}
			return numRange{lo: lo, hi: hi}, nil
		}
	}
	x, msg := unit(rest)
	if msg != "" {
		return numRange{}, errAt(len(op), msg)
	}
	inf := math.Inf(1)
	switch op {
	case ">":
		return numRange{lo: x, hi: inf, loOpen: true}, nil
	case ">=":
		return numRange{lo: x, hi: inf}, nil
	case "<":
		return numRange{lo: math.Inf(-1), hi: x, hiOpen: true}, nil
	case "<=":
		return numRange{lo: math.Inf(-1), hi: x}, nil
	}
	return numRange{lo: x, hi: x}, nil
}

// splitNum splits a leading decimal number from a unit suffix.
func splitNum(s string) (float64, string, string) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if s == "" {
		return 0, "", "expected a number"
	}
	if i == 0 {
		return 0, "", "expected a number, got \"" + s + "\""
	}
	x, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0, "", "bad number \"" + s[:i] + "\""
	}
	return x, strings.ToLower(s[i:]), ""
}

func parseInt(s string) (float64, string) {
	if s == "" {
		return 0, "expected a number"
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, "expected a whole number, got \"" + s + "\""
	}
	return float64(n), ""
}

func parseSize(s string) (float64, string) {
	x, u, msg := splitNum(s)
	if msg != "" {
		return 0, msg
	}
	var m float64
	switch u {
	case "", "b":
		m = 1
	case "k", "kb", "kib":
		m = 1 << 10
	case "m", "mb", "mib":
		m = 1 << 20
	case "g", "gb", "gib":
		m = 1 << 30
	default:
		return 0, "unknown size unit \"" + u + "\" (use b, k, m or g)"
	}
	return x * m, ""
}

// parseDur returns milliseconds.
func parseDur(s string) (float64, string) {
	x, u, msg := splitNum(s)
	if msg != "" {
		return 0, msg
	}
	var m float64
	switch u {
	case "", "ms":
		m = 1
	case "ns":
		m = 1e-6
	case "us", "µs":
		m = 1e-3
	case "s":
		m = 1e3
	case "m", "min":
		m = 60e3
	case "h":
		m = 3600e3
	default:
		return 0, "unknown duration unit \"" + u + "\" (use ms, s, m or h)"
	}
	return x * m, ""
}

// fold is a compiled case-insensitive substring needle.
type fold struct {
	lower string
	ascii bool
}

func newFold(s string) fold {
	l := strings.ToLower(s)
	ascii := true
	for i := 0; i < len(l); i++ {
		if l[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	return fold{lower: l, ascii: ascii}
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// in reports whether s contains the needle, ignoring case. It does not allocate for
// ASCII needles.
func (f fold) in(s string) bool {
	n := f.lower
	if n == "" {
		return true
	}
	if !f.ascii {
		return strings.Contains(strings.ToLower(s), n)
	}
	first := n[0]
	upper := first
	if first >= 'a' && first <= 'z' {
		upper = first - ('a' - 'A')
	}
outer:
	for i := 0; i+len(n) <= len(s); i++ {
		if c := s[i]; c != first && c != upper {
			continue
		}
		for j := 1; j < len(n); j++ {
			if lowerASCII(s[i+j]) != n[j] {
				continue outer
			}
		}
		return true
	}
	return false
}

func (f fold) inBytes(b []byte) bool {
	n := f.lower
	if n == "" {
		return true
	}
	if !f.ascii {
		return bytes.Contains(bytes.ToLower(b), []byte(n))
	}
outer:
	for i := 0; i+len(n) <= len(b); i++ {
		if lowerASCII(b[i]) != n[0] {
			continue
		}
		for j := 1; j < len(n); j++ {
			if lowerASCII(b[i+j]) != n[j] {
				continue outer
			}
		}
		return true
	}
	return false
}

// globFold matches s against a lower-case glob pattern with * and ?, ignoring ASCII case.
func globFold(pat, s string) bool {
	px, sx := 0, 0
	starP, starS := -1, 0
	for sx < len(s) {
		if px < len(pat) {
			switch c := pat[px]; {
			case c == '*':
				starP, starS = px, sx
				px++
				continue
			case c == '?' || c == lowerASCII(s[sx]):
				px++
				sx++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		px = starP + 1
		starS++
		sx = starS
	}
	for px < len(pat) && pat[px] == '*' {
		px++
	}
	return px == len(pat)
}

// MaxDecodedBody bounds the decoded bytes body: searches per body, so a compressed bomb
// cannot exhaust memory.
const MaxDecodedBody = 8 << 20

// decodedBody returns data with its Content-Encoding (gzip, deflate, br, zstd, stacked)
// removed by content.Decode, at most MaxDecodedBody bytes of it. Bodies with an
// unsupported or damaged encoding are returned as they are; a body whose capture was cut
// yields what decoded.
func decodedBody(data []byte, h http.Header) []byte {
	if len(data) == 0 {
		return data
	}
	out, _, _, _ := content.Decode(h, data, MaxDecodedBody)
	return out
}
