package redact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	bodyc "inspector/content"
	"inspector/engine/session"
)

// PlaceholderPrefix starts every placeholder: REDACTED-1, REDACTED-2, …
const PlaceholderPrefix = "REDACTED-"

// maxDecoded bounds a body decoded to be inspected.
const maxDecoded = 64 << 20

// maxSecrets bounds the table of secrets one Redactor remembers; past it, new secrets
// are still masked where a rule finds them, with a placeholder of their own each time.
const maxSecrets = 500_000

// minSweep is the shortest secret looked for outside the place a rule found it: a cookie
// "theme=dark" is masked in the Cookie header, but "dark" elsewhere is left alone.
const minSweep = 6

// Finding is one masked value, for a preview.
type Finding struct {
	// Where: "request header Authorization", "request URL query access_token",
	// "response body $.token", "request body form password", "JWT signature in request URL".
	Where       string `json:"where"`
	Rule        string `json:"rule"` // "default" or the user rule as written
	Placeholder string `json:"placeholder"`
	// Hint is a short, safe description of the original: its first characters and length.
	Hint string `json:"hint"`
}

// Options tune a Redactor.
type Options struct {
	// NoDefaults leaves the default rules out: only the user rules apply.
	NoDefaults bool
}

// Redactor masks sessions. It is safe for concurrent use; see the package comment.
type Redactor struct {
	rules    []*compiled
	defaults bool

	mu      sync.Mutex
	secrets map[string]string // original (and its URL-encoded form) → placeholder
	n       int
}

// New returns a Redactor with the default rules (unless opts.NoDefaults) and the user
// rules. An invalid rule is an error naming it.
func New(rules []Rule, opts Options) (*Redactor, error) {
	r := &Redactor{defaults: !opts.NoDefaults, secrets: map[string]string{}}
	for _, ru := range rules {
		c, err := compileRule(ru)
		if err != nil {
			return nil, err
		}
		r.rules = append(r.rules, c)
	}
	return r, nil
}

// Default is a Redactor with the default rules only.
func Default() *Redactor {
	r, _ := New(nil, Options{})
	return r
}

// Placeholders returns how many distinct secrets were masked so far.
func (r *Redactor) Placeholders() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *Redactor) placeholder(secret string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.secrets[secret]; ok {
		return p
	}
	r.n++
	p := PlaceholderPrefix + strconv.Itoa(r.n)
	if len(r.secrets) < maxSecrets {
		r.secrets[secret] = p
		if q := url.QueryEscape(secret); q != secret {
			if _, ok := r.secrets[q]; !ok {
				r.secrets[q] = p
			}
		}
	}
	return p
}

// known returns the placeholder of a secret already masked, if any.
func (r *Redactor) known(s string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.secrets[s]
	return p, ok
}

// Learn records the secrets of s without producing a copy, so that a later Session call
// masks them wherever they appear, even in a session before the one that revealed them.
// An export for sharing learns every session first, then masks each.
func (r *Redactor) Learn(s *session.Session) { r.Session(s) }

// Session returns a masked copy of s and what was masked. s is only read.
func (r *Redactor) Session(s *session.Session) (*session.Session, []Finding) {
	if s == nil {
		return nil, nil
	}
	c := s.Clone()
	j := r.newJob(s)
	c.Request.URL = j.url(c.Request.URL, "request URL")
	j.headers(c.Request.Header, "request header")
	j.headers(c.Request.Trailer, "request trailer")
	req := j.openBody(&c.Request.Body, c.Request.Header, "request body")
	var resp *bodyWork
	if c.Response != nil {
		j.headers(c.Response.Header, "response header")
		j.headers(c.Response.Trailer, "response trailer")
		resp = j.openBody(&c.Response.Body, c.Response.Header, "response body")
	}
	msgs := make([][]byte, len(c.Messages))
	for i := range c.Messages {
		m := &c.Messages[i]
		if m.Opcode != 1 || len(m.Data) == 0 {
			continue
		}
		where := "WebSocket message " + strconv.Itoa(i+1)
		msgs[i] = j.content(m.Data, "", where)
	}

	// Second step: regex rules, JWT signatures and every secret found anywhere in the
	// session, in every text of it.
	c.Request.URL = j.sweepString(c.Request.URL, "request URL")
	j.sweepHeaders(c.Request.Header, "request header")
	j.sweepHeaders(c.Request.Trailer, "request trailer")
	j.closeBody(req, &c.Request.Body, c.Request.Header)
	if c.Response != nil {
		j.sweepHeaders(c.Response.Header, "response header")
		j.sweepHeaders(c.Response.Trailer, "response trailer")
		j.closeBody(resp, &c.Response.Body, c.Response.Header)
	}
	for i := range c.Messages {
		if msgs[i] == nil {
			continue
		}
		where := "WebSocket message " + strconv.Itoa(i+1)
		if out := j.sweepBytes(msgs[i], where); !bytes.Equal(out, c.Messages[i].Data) {
			c.Messages[i].Data = out
			c.Messages[i].Size = int64(len(out))
		}
	}
	if c.Error != nil {
		c.Error.Message = j.sweepString(c.Error.Message, "error")
	}
	c.Comment = j.sweepString(c.Comment, "comment")
	return c, j.findings
}

// Request returns a masked copy of one request (for copy as code), with what was masked.
func (r *Redactor) Request(req *session.Request) (*session.Request, []Finding) {
	s, f := r.Session(&session.Session{Request: *req})
	return &s.Request, f
}

// Summary returns s with its URL and path masked.
func (r *Redactor) Summary(s session.Summary) session.Summary {
	j := r.newJob(nil)
	s.URL = j.sweepString(j.url(s.URL, "request URL"), "request URL")
	if u, err := url.Parse(s.URL); err == nil {
		s.Path = u.RequestURI()
	} else {
		s.Path = j.sweepString(j.url(s.Path, "request URL"), "request URL")
	}
	return s
}

// job is the masking of one session.
type job struct {
	r        *Redactor
	rules    []*compiled // the user rules that apply to this session
	whole    *compiled   // a filter rule matching this session: bodies masked whole
	findings []Finding
	seen     map[string]bool
	local    []string // secrets found in this session, for the sweep
}

func (r *Redactor) newJob(s *session.Session) *job {
	j := &job{r: r, seen: map[string]bool{}}
	for _, c := range r.rules {
		if c.cond != nil && (s == nil || !c.cond.Match(s)) {
			continue
		}
		if c.whole != nil {
			if s != nil && j.whole == nil && c.whole.Match(s) {
				j.whole = c
			}
			continue
		}
		j.rules = append(j.rules, c)
	}
	return j
}

func hint(s string) string {
	n := len([]rune(s))
	show := 3
	if n <= 8 {
		show = 1
	}
	rs := []rune(s)
	if show > n {
		show = n
	}
	return string(rs[:show]) + "… (" + strconv.Itoa(n) + " chars)"
}

// mask returns the placeholder for secret and records the finding.
func (j *job) mask(where, rule, secret string) string {
	if secret == "" || isPlaceholder(secret) {
		return secret
	}
	p := j.r.placeholder(secret)
	if len(secret) >= minSweep {
		j.local = append(j.local, secret)
		if q := url.QueryEscape(secret); q != secret {
			j.local = append(j.local, q)
		}
	}
	j.note(where, rule, p, hint(secret))
	return p
}

func (j *job) note(where, rule, p, h string) {
	if k := where + "\x00" + p; !j.seen[k] {
		j.seen[k] = true
		j.findings = append(j.findings, Finding{Where: where, Rule: rule, Placeholder: p, Hint: h})
	}
}

var placeholderRE = regexp.MustCompile(`^` + PlaceholderPrefix + `[0-9]+$`)

func isPlaceholder(s string) bool { return placeholderRE.MatchString(s) }

// headerRule returns the rule that masks a header's value whole, if any.
func (j *job) headerRule(name string) (string, bool) {
	ln := strings.ToLower(name)
	for _, c := range j.rules {
		if c.rule.Kind == Header && c.name == ln {
			return c.rule.String(), true
		}
	}
	if j.r.defaults && sensitiveHeader(name) {
		return "default", true
	}
	return "", false
}

func (j *job) paramRule(name string) (string, bool) {
	ln := strings.ToLower(name)
	for _, c := range j.rules {
		if c.rule.Kind == Param && c.name == ln {
			return c.rule.String(), true
		}
	}
	if j.r.defaults && sensitiveName(name) {
		return "default", true
	}
	return "", false
}

func (j *job) headers(h http.Header, where string) {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names) // placeholders numbered in a stable order
	for _, name := range names {
		vs := h[name]
		ln := strings.ToLower(name)
		for i, v := range vs {
			w := where + " " + name
			switch {
			case j.r.defaults && (ln == "authorization" || ln == "proxy-authorization"):
				scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
				if ok && !strings.ContainsAny(scheme, "=,") {
					vs[i] = scheme + " " + j.mask(w, "default", strings.TrimSpace(cred))
				} else {
					vs[i] = j.mask(w, "default", v)
				}
			case j.r.defaults && ln == "cookie":
				parts := strings.Split(v, ";")
				for k, p := range parts {
					n, val, ok := strings.Cut(p, "=")
					if ok && strings.TrimSpace(val) != "" {
						parts[k] = n + "=" + j.mask(w+" "+strings.TrimSpace(n), "default", strings.TrimSpace(val))
					}
				}
				vs[i] = strings.Join(parts, ";")
			case j.r.defaults && ln == "set-cookie":
				first, attrs, _ := strings.Cut(v, ";")
				if n, val, ok := strings.Cut(first, "="); ok && strings.TrimSpace(val) != "" {
					first = n + "=" + j.mask(w+" "+strings.TrimSpace(n), "default", strings.TrimSpace(val))
				}
				if attrs != "" {
					first += ";" + attrs
				}
				vs[i] = first
			default:
				if rule, ok := j.headerRule(name); ok {
					vs[i] = j.mask(w, rule, v)
				} else if ln == "referer" || ln == "location" || ln == "content-location" || ln == "origin" {
					vs[i] = j.url(v, w)
				}
			}
		}
	}
}

// url masks a URL's user password and its sensitive query (and fragment) parameters.
func (j *job) url(raw, where string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	changed := false
	if u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" && j.r.defaults {
			u.User = url.UserPassword(u.User.Username(), j.mask(where+" password", "default", pw))
			changed = true
		}
	}
	if u.RawQuery != "" {
		if q := j.pairs(u.RawQuery, where+" query"); q != u.RawQuery {
			u.RawQuery, changed = q, true
		}
	}
	if f := u.EscapedFragment(); strings.Contains(f, "=") {
		if nf := j.pairs(f, where+" fragment"); nf != f {
			if uf, err := url.PathUnescape(nf); err == nil {
				u.Fragment, u.RawFragment = uf, nf
				changed = true
			}
		}
	}
	if !changed {
		return raw
	}
	return u.String()
}

// pairs masks the values of sensitive names in a&b=c form encoding, keeping the rest as
// it was written.
func (j *job) pairs(raw, where string) string {
	parts := strings.Split(raw, "&")
	changed := false
	for i, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		if !ok || v == "" {
			continue
		}
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		rule, ok := j.paramRule(name)
		if !ok {
			continue
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			val = v
		}
		parts[i] = k + "=" + j.mask(where+" "+name, rule, val)
		changed = true
	}
	if !changed {
		return raw
	}
	return strings.Join(parts, "&")
}

// bodyWork is a body being masked: its decoded bytes.
type bodyWork struct {
	where   string
	orig    []byte // decoded original
	data    []byte // decoded, being masked
	decoded bool   // the body had a content coding that was undone
	cut     bool
}

func (j *job) openBody(b *session.Body, h http.Header, where string) *bodyWork {
	if len(b.Data) == 0 {
		return nil
	}
	w := &bodyWork{where: where, orig: b.Data, data: b.Data}
	if encs := bodyc.Codings(h); len(encs) > 0 {
		if !bodyc.Supported(encs) {
			j.note(where, "default", "", "not inspected: content coding "+strings.Join(encs, ", "))
			return nil
		}
		out, cut, err := bodyc.DecodeCodings(encs, b.Data, maxDecoded)
		if err != nil {
			j.note(where, "default", "", "not inspected: "+err.Error())
			return nil
		}
		w.orig, w.data, w.decoded, w.cut = out, out, true, cut
	}
	if j.whole != nil {
		sum := sha256.Sum256(w.orig)
		p := j.r.placeholder("body\x00" + hex.EncodeToString(sum[:]))
		j.note(where, j.whole.rule.String(), p, "the whole body ("+strconv.Itoa(len(w.orig))+" bytes)")
		w.data = []byte(p)
		return w
	}
	w.data = j.content(w.data, h.Get("Content-Type"), where)
	return w
}

// closeBody sweeps the body and writes it back when it changed: decoded, without its
// content coding.
func (j *job) closeBody(w *bodyWork, b *session.Body, h http.Header) {
	if w == nil {
		return
	}
	out := w.data
	if j.whole == nil {
		out = j.sweepBytes(out, w.where)
	}
	if bytes.Equal(out, w.orig) {
		return // nothing masked: keep the body as it travelled
	}
	truncated := b.Truncated || w.cut || b.Size > int64(len(b.Data))
	b.Data = out
	b.Spilled = ""
	if w.decoded {
		h.Del("Content-Encoding")
	}
	if h.Get("Content-Length") != "" && !truncated {
		h.Set("Content-Length", strconv.Itoa(len(out)))
	}
	if truncated {
		b.Truncated = true
		if b.Size < int64(len(out)) {
			b.Size = int64(len(out))
		}
	} else {
		b.Size = int64(len(out))
	}
}

// content masks a body's structured fields: JSON members, form parameters.
func (j *job) content(data []byte, ctype, where string) []byte {
	ct := strings.ToLower(ctype)
	trim := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case strings.Contains(ct, "json") || len(trim) > 0 && (trim[0] == '{' || trim[0] == '['):
		return j.json(data, where)
	case strings.Contains(ct, "x-www-form-urlencoded"):
		s := string(data)
		if out := j.pairs(strings.TrimRight(s, "\r\n"), where+" form"); out != strings.TrimRight(s, "\r\n") {
			return []byte(out)
		}
	}
	return data
}

// sweepHeaders runs the sweep over every header value.
func (j *job) sweepHeaders(h http.Header, where string) {
	for name, vs := range h {
		for i, v := range vs {
			vs[i] = j.sweepString(v, where+" "+name)
		}
	}
}

func (j *job) sweepString(s, where string) string {
	if s == "" {
		return s
	}
	out := j.sweepBytes([]byte(s), where)
	return string(out)
}

// jwtRE finds a JWT (header.claims.signature); the signature is masked.
var jwtRE = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{2,}\.([A-Za-z0-9_-]{8,})`)

// sweepBytes applies the regex rules and the JWT rule, then replaces every secret known
// to this session or to the Redactor.
func (j *job) sweepBytes(b []byte, where string) []byte {
	for _, c := range j.rules {
		if c.re != nil {
			b = j.replaceRE(b, c.re, where+" regex", c.rule.String())
		}
	}
	if j.r.defaults {
		b = j.replaceRE(b, jwtRE, "JWT signature in "+where, "default")
	}
	// Secrets of this session: exact substrings, longest first.
	if len(j.local) > 0 {
		ls := append([]string(nil), j.local...)
		sort.Slice(ls, func(a, c int) bool { return len(ls[a]) > len(ls[c]) })
		pairs := make([]string, 0, 2*len(ls))
		seen := map[string]bool{}
		for _, s := range ls {
			if seen[s] {
				continue
			}
			seen[s] = true
			if p, ok := j.r.known(s); ok {
				pairs = append(pairs, s, p)
			}
		}
		if len(pairs) > 0 {
			if out := strings.NewReplacer(pairs...).Replace(string(b)); out != string(b) {
				b = []byte(out)
				j.note(where, "default", "", "secrets found elsewhere in the session")
			}
		}
	}
	// Secrets of other sessions: every token-like run of the text, looked up.
	return j.lookupRuns(b, where)
}

func (j *job) replaceRE(b []byte, re *regexp.Regexp, where, rule string) []byte {
	if !re.Match(b) {
		return b
	}
	var out []byte
	last := 0
	for _, m := range re.FindAllSubmatchIndex(b, -1) {
		s, e := m[0], m[1]
		if len(m) >= 4 && m[2] >= 0 {
			s, e = m[2], m[3]
		}
		if s == e {
			continue
		}
		secret := string(b[s:e])
		if isPlaceholder(secret) {
			continue
		}
		out = append(out, b[last:s]...)
		out = append(out, j.mask(where, rule, secret)...)
		last = e
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

func tokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~' || c == '+' || c == '/' || c == '=' || c == '%'
}

// lookupRuns replaces the token-like runs of b (and their pieces between '=', '.' and
// '/') that the Redactor knows as secrets.
func (j *job) lookupRuns(b []byte, where string) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		if !tokenByte(b[i]) {
			i++
			continue
		}
		k := i
		for k < len(b) && tokenByte(b[k]) {
			k++
		}
		if k-i >= minSweep {
			run := b[i:k]
			repl, ok := j.lookupRun(run)
			if ok {
				out = append(out, b[last:i]...)
				out = append(out, repl...)
				last = k
				j.note(where, "default", "", "secrets found in other sessions")
			}
		}
		i = k
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

func (j *job) lookupRun(run []byte) ([]byte, bool) {
	if p, ok := j.r.known(string(run)); ok {
		return []byte(p), true
	}
	trimmed := bytes.TrimRight(run, "=.")
	if len(trimmed) >= minSweep && len(trimmed) < len(run) {
		if p, ok := j.r.known(string(trimmed)); ok {
			return append([]byte(p), run[len(trimmed):]...), true
		}
	}
	// Pieces: a=SECRET, x.SECRET, path/SECRET.
	if bytes.IndexAny(run, "=./") < 0 {
		return nil, false
	}
	var out []byte
	found := false
	start := 0
	flush := func(end int) {
		piece := run[start:end]
		if len(piece) >= minSweep {
			if p, ok := j.r.known(string(piece)); ok && !isPlaceholder(string(piece)) {
				out = append(out, p...)
				found = true
				return
			}
		}
		out = append(out, piece...)
	}
	for i, c := range run {
		if c == '=' || c == '.' || c == '/' {
			flush(i)
			out = append(out, c)
			start = i + 1
		}
	}
	flush(len(run))
	return out, found
}

// Frames returns a masked copy of HTTP/2 or HTTP/3 frames: their header fields (":path"
// as a URL, the rest as headers).
func (r *Redactor) Frames(fs []session.Frame) []session.Frame {
	out := make([]session.Frame, len(fs))
	for i, f := range fs {
		out[i] = f
		if len(f.Headers) == 0 {
			continue
		}
		j := r.newJob(nil)
		hs := make([]session.HeaderField, len(f.Headers))
		for k, h := range f.Headers {
			where := "frame header " + h.Name
			if h.Name == ":path" {
				h.Value = j.sweepString(j.url(h.Value, where), where)
			} else if !strings.HasPrefix(h.Name, ":") {
				hh := http.Header{h.Name: {h.Value}}
				j.headers(hh, "frame header")
				j.sweepHeaders(hh, "frame header")
				h.Value = hh[h.Name][0]
			}
			hs[k] = h
		}
		out[i].Headers = hs
	}
	return out
}
