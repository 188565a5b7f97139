package diff

import (
	"inspector/contract"

	"time"

	"fmt"
	"github.com/sergi/go-diff/diffmatchpatch"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"inspector/engine/session"
)

// Call is one call of a recording, reduced to what the recording diff compares (no
// bodies are kept).
type Call struct {
	Index    int        `json:"index"` // position in its recording, from 0
	ID       session.ID `json:"id"`
	Method   string     `json:"method"`
	URL      string     `json:"url"`
	Key      string     `json:"key"` // method + normalised URL, what calls are aligned on
	Status   int        `json:"status"`
	Duration float64    `json:"duration_ms"`
	// Headers are the response's header names, lower-case, sorted; ReqHeaders the
	// request's.
	Headers    []string `json:"headers,omitempty"`
	ReqHeaders []string `json:"request_headers,omitempty"`
	// ContentType is the response's media type without parameters.
	ContentType string `json:"content_type,omitempty"`
	// Shape is the response body's shape: for JSON every path with its type, arrays
	// collapsed to [] ("$.items[].price:number"), sorted; otherwise one entry naming the
	// kind ("text", "binary"); empty without a body.
	Shape []string `json:"shape,omitempty"`
	Error string   `json:"error,omitempty"`
}

// CallOf reduces s to a Call at position index.
func CallOf(s *session.Session, index int) Call {
	c := Call{Index: index, ID: s.ID, Method: s.Request.Method, URL: s.Request.URL,
		Key: s.Request.Method + " " + NormalizeURL(s.Request.URL), Duration: float64(s.Duration().Microseconds()) / 1000}
	if s.Error != nil {
		c.Error = s.Error.Error()
	}
	c.ReqHeaders = headerNames(s.Request.Header)
	if r := s.Response; r != nil {
		c.Status = r.Status
		c.Headers = headerNames(r.Header)
		ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
		c.ContentType = strings.ToLower(strings.TrimSpace(ct))
		c.Shape = shapeOf(r.Header, r.Body)
	}
	return c
}

func headerNames(h http.Header) []string {
	out := make([]string, 0, len(h))
	for k := range h {
		out = append(out, strings.ToLower(k))
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func shapeOf(h http.Header, b session.Body) []string {
	d, err := DecodeBody(h, b.Data)
	if err != nil {
		d = b.Data
	}
	if len(d) == 0 {
		return nil
	}
	if isJSONType(h, d) {
		if v, ok := parseJSON(d); ok {
			set := map[string]bool{}
			shapeWalk("$", v, set)
			out := make([]string, 0, len(set))
			for k := range set {
				out = append(out, k)
			}
			sort.Strings(out)
			return out
		}
	}
	if isText(d) {
		return []string{"text"}
	}
	return []string{"binary"}
}

func shapeWalk(p string, v any, set map[string]bool) {
	set[p+":"+jsonType(v)] = true
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			shapeWalk(p+formatPath([]seg{{key: k, index: -1}})[1:], e, set)
		}
	case []any:
		for _, e := range x {
			shapeWalk(p+"[]", e, set)
		}
	}
}

var (
	reUUID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	reNum  = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
	reHex  = regexp.MustCompile(`^[0-9a-fA-F]{8,}$`)
	// an opaque id: 16 or more letters, digits, - and _, with at least one digit
	reID = regexp.MustCompile(`^[A-Za-z0-9_-]{16,}$`)
)

// normValue replaces an id-like path segment or query value with a placeholder.
func normValue(s string) string {
	switch {
	case s == "":
		return s
	case reNum.MatchString(s):
		return "{n}"
	case reUUID.MatchString(s):
		return "{uuid}"
	case reHex.MatchString(s) && strings.ContainsAny(s, "0123456789"):
		return "{hex}"
	case reID.MatchString(s) && strings.ContainsAny(s, "0123456789"):
		return "{id}"
	}
	return s
}

// NormalizeURL is the URL calls are aligned on: scheme and host lower-case, default port
// dropped, numbers, UUIDs, hex strings and opaque ids in path segments and query values
// replaced by {n}, {uuid}, {hex}, {id}; query parameters sorted; fragment dropped.
func NormalizeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	host := strings.ToLower(u.Host)
	host = strings.TrimSuffix(strings.TrimSuffix(host, ":80"), ":443")
	segs := strings.Split(u.EscapedPath(), "/")
	for i, s := range segs {
		if us, err := url.PathUnescape(s); err == nil {
			s = us
		}
		segs[i] = normValue(s)
	}
	q := u.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var qs []string
	for _, k := range keys {
		for _, v := range q[k] {
			qs = append(qs, k+"="+normValue(v))
		}
	}
	out := strings.ToLower(u.Scheme) + "://" + host + strings.Join(segs, "/")
	if len(qs) > 0 {
		out += "?" + strings.Join(qs, "&")
	}
	return out
}

// Options tune the recording diff.
type Options struct {
	// SlowerFactor and SlowerMinMS: a matched call is slower when B took more than
	// SlowerFactor times A's duration and at least SlowerMinMS more (defaults 2 and 100).
	SlowerFactor float64 `json:"slower_factor,omitempty"`
	SlowerMinMS  float64 `json:"slower_min_ms,omitempty"`
	// Ignore names response headers whose appearance or disappearance is not a change
	// (its default rules apply to every host).
	Ignore *IgnoreConfig `json:"-"`
}

// Pair is a matched call.
type Pair struct {
	A       Call     `json:"a"`
	B       Call     `json:"b"`
	Changes []string `json:"changes,omitempty"` // what changed, one phrase each
	Slower  bool     `json:"slower,omitempty"`
}

// Row is one line of the side-by-side view: A, B or both.
type Row struct {
	A    *Call  `json:"a,omitempty"`
	B    *Call  `json:"b,omitempty"`
	Pair *Pair  `json:"-"`
	Kind string `json:"kind"` // "same", "changed", "slower", "missing" (only in A), "new" (only in B)
}

// Summary counts the differences.
type Summary struct {
	CallsA  int `json:"calls_a"`
	CallsB  int `json:"calls_b"`
	Matched int `json:"matched"`
	Missing int `json:"missing"` // only in A
	New     int `json:"new"`     // only in B
	Changed int `json:"changed"` // matched, status, headers or shape differ
	Slower  int `json:"slower"`  // matched, B slower beyond the threshold
}

// Recording is the result of Recordings.
type Recording struct {
	A       string  `json:"a"`
	B       string  `json:"b"`
	Summary Summary `json:"summary"`
	Missing []Call  `json:"missing"`
	New     []Call  `json:"new"`
	Pairs   []Pair  `json:"pairs"` // every matched pair, in A's order
	// ContractDrift is how B's inferred API contract departs from A's (operations,
	// responses and fields added or removed, types changed); set by the caller.
	ContractDrift []contract.Drift `json:"contract_drift,omitempty"`
	// Rows are the side-by-side view (not in JSON: it repeats the lists; WriteText and
	// LayoutRows rebuild it for a decoded Recording).
	Rows []Row `json:"-"`
}

// LayoutRows returns Rows, building them first when the Recording was decoded from JSON.
func (r *Recording) LayoutRows() []Row {
	if r.Rows == nil {
		r.Rows = r.layout()
	}
	return r.Rows
}

// Equal: nothing missing, new, changed or slower.
func (r *Recording) Equal() bool {
	s := r.Summary
	return s.Missing == 0 && s.New == 0 && s.Changed == 0 && s.Slower == 0
}

// SummaryLine is "3 calls missing, 1 new, 5 changed, 2 slower" (or "no differences in N
// calls").
func (r *Recording) SummaryLine() string {
	s := r.Summary
	if r.Equal() {
		return fmt.Sprintf("no differences (%d calls matched)", s.Matched)
	}
	plural := "calls"
	if s.Missing == 1 {
		plural = "call"
	}
	return fmt.Sprintf("%d %s missing, %d new, %d changed, %d slower", s.Missing, plural, s.New, s.Changed, s.Slower)
}

// Recordings compares two recordings (their calls in recording order).
//
// Calls are grouped by Key. Within a key the calls of A and B are aligned in order: a
// Myers diff of their URL, status and shape pairs the alike calls, the other calls of the
// key are paired in order, and what is left over is only in A or only in B. Calls of different keys may interleave freely.
func Recordings(nameA string, a []Call, nameB string, b []Call, opt Options) *Recording {
	if opt.SlowerFactor <= 0 {
		opt.SlowerFactor = 2
	}
	if opt.SlowerMinMS <= 0 {
		opt.SlowerMinMS = 100
	}
	m := opt.Ignore.For("")
	r := &Recording{A: nameA, B: nameB, Missing: []Call{}, New: []Call{}, Pairs: []Pair{}}
	r.Summary.CallsA, r.Summary.CallsB = len(a), len(b)
	byKey := map[string]*[2][]int{}
	var keys []string
	for side, cs := range [][]Call{a, b} {
		for i := range cs {
			k := cs[i].Key
			g := byKey[k]
			if g == nil {
				g = &[2][]int{}
				byKey[k] = g
				keys = append(keys, k)
			}
			g[side] = append(g[side], i)
		}
	}
	var pairs []Pair
	for _, k := range keys {
		g := byKey[k]
		for _, pr := range align(a, b, g[0], g[1]) {
			switch {
			case pr[1] < 0:
				r.Missing = append(r.Missing, a[pr[0]])
			case pr[0] < 0:
				r.New = append(r.New, b[pr[1]])
			default:
				pairs = append(pairs, comparePair(a[pr[0]], b[pr[1]], opt, m))
			}
		}
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].A.Index < pairs[j].A.Index })
	sort.Slice(r.Missing, func(i, j int) bool { return r.Missing[i].Index < r.Missing[j].Index })
	sort.Slice(r.New, func(i, j int) bool { return r.New[i].Index < r.New[j].Index })
	r.Pairs = pairs
	r.Summary.Matched = len(pairs)
	r.Summary.Missing, r.Summary.New = len(r.Missing), len(r.New)
	for _, p := range pairs {
		if len(p.Changes) > 0 {
			r.Summary.Changed++
		}
		if p.Slower {
			r.Summary.Slower++
		}
	}
	r.Rows = r.layout()
	return r
}

// align pairs the calls ia (indexes into a) with ib (into b), all of one key, in order;
// -1 marks a call without partner. A Myers diff of the calls' signatures (URL, status,
// shape) pairs the alike calls; the others are paired in order, and what is left stands
// alone. (Pairing the others only between two alike calls would not do: among many equal
// calls, which one a minimal diff deletes is arbitrary.)
func align(a, b []Call, ia, ib []int) [][2]int {
	out := make([][2]int, 0, max(len(ia), len(ib)))
	codes := map[string]rune{}
	code := func(c Call) rune {
		k := fmt.Sprint(c.URL, " ", c.Status, c.Shape)
		r, ok := codes[k]
		if !ok {
			r = rune(len(codes) + 1)
			if r >= 0xd800 {
				r += 0x800 // skip the surrogates
			}
			codes[k] = r
		}
		return r
	}
	ra := make([]rune, len(ia))
	for i, x := range ia {
		ra[i] = code(a[x])
	}
	rb := make([]rune, len(ib))
	for j, x := range ib {
		rb[j] = code(b[x])
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = time.Second
	var dels, ins []int
	flush := func() {
		k := 0
		for ; k < len(dels) && k < len(ins); k++ {
			out = append(out, [2]int{dels[k], ins[k]})
		}
		for _, d := range dels[k:] {
			out = append(out, [2]int{d, -1})
		}
		for _, n := range ins[min(k, len(ins)):] {
			out = append(out, [2]int{-1, n})
		}
		dels, ins = dels[:0], ins[:0]
	}
	i, j := 0, 0
	for _, d := range dmp.DiffMainRunes(ra, rb, false) {
		n := len([]rune(d.Text))
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			for range n {
				out = append(out, [2]int{ia[i], ib[j]})
				i++
				j++
			}
		case diffmatchpatch.DiffDelete:
			for range n {
				dels = append(dels, ia[i])
				i++
			}
		case diffmatchpatch.DiffInsert:
			for range n {
				ins = append(ins, ib[j])
				j++
			}
		}
	}
	flush()
	return out
}

func comparePair(a, b Call, opt Options, m *Matcher) Pair {
	p := Pair{A: a, B: b}
	if a.Status != b.Status {
		p.Changes = append(p.Changes, fmt.Sprintf("status %d → %d", a.Status, b.Status))
	}
	if a.Error != b.Error {
		p.Changes = append(p.Changes, fmt.Sprintf("error %q → %q", a.Error, b.Error))
	}
	p.Changes = append(p.Changes, namesChange("request headers", a.ReqHeaders, b.ReqHeaders, m)...)
	p.Changes = append(p.Changes, namesChange("headers", a.Headers, b.Headers, m)...)
	if a.ContentType != b.ContentType {
		p.Changes = append(p.Changes, fmt.Sprintf("content type %q → %q", a.ContentType, b.ContentType))
	}
	if !slices.Equal(a.Shape, b.Shape) {
		p.Changes = append(p.Changes, "body shape: "+shapeChange(a.Shape, b.Shape))
	}
	if b.Duration > a.Duration*opt.SlowerFactor && b.Duration-a.Duration >= opt.SlowerMinMS {
		p.Slower = true
	}
	return p
}

// namesChange says which header names (sorted lists a and b) only one side has, leaving
// out ignored ones.
func namesChange(what string, a, b []string, m *Matcher) []string {
	var added, removed []string
	for _, h := range b {
		if _, ok := slices.BinarySearch(a, h); !ok && !m.Header(h) {
			added = append(added, h)
		}
	}
	for _, h := range a {
		if _, ok := slices.BinarySearch(b, h); !ok && !m.Header(h) {
			removed = append(removed, h)
		}
	}
	var out []string
	if len(added) > 0 {
		out = append(out, what+" added: "+strings.Join(added, ", "))
	}
	if len(removed) > 0 {
		out = append(out, what+" removed: "+strings.Join(removed, ", "))
	}
	return out
}

// shapeChange describes two shapes' difference briefly: up to 3 paths each way.
func shapeChange(a, b []string) string {
	var plus, minus []string
	for _, s := range b {
		if _, ok := slices.BinarySearch(a, s); !ok {
			plus = append(plus, "+"+s)
		}
	}
	for _, s := range a {
		if _, ok := slices.BinarySearch(b, s); !ok {
			minus = append(minus, "-"+s)
		}
	}
	cut := func(l []string) []string {
		if len(l) > 3 {
			return append(l[:3:3], fmt.Sprintf("… %d more", len(l)-3))
		}
		return l
	}
	return strings.Join(append(cut(minus), cut(plus)...), " ")
}

// layout lays the result out side by side in A's order, each call only in B placed after
// the row of the B call before it.
func (r *Recording) layout() []Row {
	partnerOfB := make([]int, r.Summary.CallsB) // A index + 1, 0 for none
	for _, p := range r.Pairs {
		if p.B.Index < len(partnerOfB) {
			partnerOfB[p.B.Index] = p.A.Index + 1
		}
	}
	type keyed struct {
		pos float64
		sub int
		row Row
	}
	var ks []keyed
	for i := range r.Pairs {
		p := &r.Pairs[i]
		kind := "same"
		switch {
		case len(p.Changes) > 0:
			kind = "changed"
		case p.Slower:
			kind = "slower"
		}
		ks = append(ks, keyed{float64(p.A.Index), 0, Row{A: &p.A, B: &p.B, Pair: p, Kind: kind}})
	}
	for i := range r.Missing {
		ks = append(ks, keyed{float64(r.Missing[i].Index), 0, Row{A: &r.Missing[i], Kind: "missing"}})
	}
	for i := range r.New {
		c := &r.New[i]
		pos := -0.5
		for j := c.Index - 1; j >= 0; j-- {
			if partnerOfB[j] > 0 {
				pos = float64(partnerOfB[j]-1) + 0.5
				break
			}
		}
		ks = append(ks, keyed{pos, c.Index, Row{B: c, Kind: "new"}})
	}
	sort.SliceStable(ks, func(i, j int) bool {
		if ks[i].pos != ks[j].pos {
			return ks[i].pos < ks[j].pos
		}
		return ks[i].sub < ks[j].sub
	})
	out := make([]Row, len(ks))
	for i := range ks {
		out[i] = ks[i].row
	}
	return out
}

// Calls reduces sessions to calls, in order.
func Calls(ss []*session.Session) []Call {
	out := make([]Call, len(ss))
	for i, s := range ss {
		out[i] = CallOf(s, i)
	}
	return out
}
