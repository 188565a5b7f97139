// Package diff compares exchanges and recordings.
//
// Exchanges compares two sessions field by field: the request line, the headers (names
// case-insensitive, order ignored, repeated values compared as a multiset), and the
// decoded bodies: JSON member by member (key order ignored, arrays by index, paths like
// $.items[3].price), text line by line (Myers), anything else by size and SHA-256.
// Fields named by the ignore list (IgnoreConfig) are reported as OpIgnored, never as
// changes.
//
// Recordings aligns the calls of two recordings on method and normalised URL and reports
// calls only in one of them and matched calls whose status, headers, body shape or timing
// changed.
//
// Nothing here keeps a reference to the sessions it is given.
package diff

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sergi/go-diff/diffmatchpatch"

	"inspector/content"
	"inspector/engine/session"
	"inspector/internal/textual"
)

// Op says how a field differs.
type Op string

const (
	OpEqual   Op = "equal"
	OpAdded   Op = "added"   // only in B
	OpRemoved Op = "removed" // only in A
	OpChanged Op = "changed"
	OpIgnored Op = "ignored" // differs, in a field the ignore list names
)

// Field is one compared field: a request-line part, a header (Name is its name as in A,
// else B; values of repeated fields joined with "\n"), or a JSON member (Name is its path).
type Field struct {
	Name string `json:"name"`
	Op   Op     `json:"op"`
	A    string `json:"a,omitempty"`
	B    string `json:"b,omitempty"`
}

// Line is one line of a text body diff. LineA and LineB count from 1; 0 means the side
// has no such line.
type Line struct {
	Op    Op     `json:"op"` // equal, added, removed
	Text  string `json:"text"`
	LineA int    `json:"line_a,omitempty"`
	LineB int    `json:"line_b,omitempty"`
}

// Body kinds.
const (
	BodyNone   = "none"
	BodyJSON   = "json"
	BodyText   = "text"
	BodyBinary = "binary"
)

// Body is the comparison of two bodies, after decoding their Content-Encoding.
type Body struct {
	Kind    string  `json:"kind"`
	Equal   bool    `json:"equal"`
	Fields  []Field `json:"fields,omitempty"` // JSON: every member that differs (and ignored ones)
	Lines   []Line  `json:"lines,omitempty"`  // text: every line, in order
	SizeA   int     `json:"size_a"`
	SizeB   int     `json:"size_b"`
	SHA256A string  `json:"sha256_a,omitempty"`
	SHA256B string  `json:"sha256_b,omitempty"`
	// Notes say what could not be compared fully (a truncated capture, an encoding that
	// could not be undone).
	Notes []string `json:"notes,omitempty"`
}

// Message is the comparison of one side (request or response) of two exchanges.
type Message struct {
	Line    []Field `json:"line"`    // method and URL, or status
	Headers []Field `json:"headers"` // every header of either, in name order
	Body    Body    `json:"body"`
}

// Exchange is the comparison of two sessions.
type Exchange struct {
	A        session.ID `json:"a"`
	B        session.ID `json:"b"`
	Equal    bool       `json:"equal"`   // nothing differs except ignored fields
	Changes  int        `json:"changes"` // fields and lines that differ, not counting ignored ones
	Ignored  int        `json:"ignored"`
	Request  Message    `json:"request"`
	Response Message    `json:"response"`
}

// maxDecoded bounds a decoded body in a comparison.
const maxDecoded = 64 << 20

// DecodeBody undoes a body's Content-Encoding (gzip, deflate, br, zstd, stacked) for
// comparison, through content. It is the one place the diff decodes bodies.
func DecodeBody(h http.Header, data []byte) ([]byte, error) {
	out, _, _, err := content.Decode(h, data, maxDecoded)
	return out, err
}

// Exchanges compares a and b; ig may be nil (nothing ignored). The ignore rules are those
// for a's host.
func Exchanges(a, b *session.Session, ig *IgnoreConfig) *Exchange {
	m := ig.For(hostOf(a.Request.URL))
	e := &Exchange{A: a.ID, B: b.ID}
	e.Request.Line = []Field{
		field("method", a.Request.Method, b.Request.Method, false),
		field("url", a.Request.URL, b.Request.URL, false),
	}
	e.Request.Headers = Headers(a.Request.Header, b.Request.Header, m)
	e.Request.Body = Bodies(a.Request.Header, a.Request.Body, b.Request.Header, b.Request.Body, m)
	ra, rb := a.Response, b.Response
	if ra == nil {
		ra = &session.Response{}
	}
	if rb == nil {
		rb = &session.Response{}
	}
	e.Response.Line = []Field{field("status", statusText(ra.Status), statusText(rb.Status), false)}
	e.Response.Headers = Headers(ra.Header, rb.Header, m)
	e.Response.Body = Bodies(ra.Header, ra.Body, rb.Header, rb.Body, m)
	for _, msg := range []*Message{&e.Request, &e.Response} {
		for _, fs := range [][]Field{msg.Line, msg.Headers, msg.Body.Fields} {
			for _, f := range fs {
				e.count(f.Op)
			}
		}
		for _, l := range msg.Body.Lines {
			e.count(l.Op)
		}
		if msg.Body.Kind == BodyBinary && !msg.Body.Equal {
			e.Changes++
		}
	}
	e.Equal = e.Changes == 0
	return e
}

func (e *Exchange) count(op Op) {
	switch op {
	case OpIgnored:
		e.Ignored++
	case OpEqual:
	default:
		e.Changes++
	}
}

func statusText(s int) string {
	if s == 0 {
		return "(no response)"
	}
	return strconv.Itoa(s) + " " + http.StatusText(s)
}

func hostOf(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Hostname()
	}
	return ""
}

func field(name, a, b string, ignored bool) Field {
	f := Field{Name: name, A: a, B: b}
	switch {
	case a == b:
		f.Op = OpEqual
	case ignored:
		f.Op = OpIgnored
	case a == "":
		f.Op = OpAdded
	case b == "":
		f.Op = OpRemoved
	default:
		f.Op = OpChanged
	}
	return f
}

// Headers compares two header sets: names case-insensitive, field order ignored,
// repeated values as a multiset. Every name of either appears once, in lower-case name
// order.
func Headers(a, b http.Header, m *Matcher) []Field {
	type vals struct {
		name string
		v    []string
		ok   bool
	}
	all := map[string]*[2]vals{}
	add := func(h http.Header, side int) {
		for k, vs := range h {
			lk := strings.ToLower(k)
			p := all[lk]
			if p == nil {
				p = &[2]vals{}
				all[lk] = p
			}
			if !p[side].ok {
				p[side].name = k
			}
			p[side].v = append(p[side].v, vs...)
			p[side].ok = true
		}
	}
	add(a, 0)
	add(b, 1)
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]Field, 0, len(names))
	for _, k := range names {
		p := all[k]
		name := p[0].name
		if !p[0].ok {
			name = p[1].name
		}
		va, vb := slices.Clone(p[0].v), slices.Clone(p[1].v)
		ign := m.Header(k)
		f := Field{Name: name, A: strings.Join(va, "\n"), B: strings.Join(vb, "\n")}
		slices.Sort(va)
		slices.Sort(vb)
		switch {
		case p[0].ok == p[1].ok && slices.Equal(va, vb):
			f.Op = OpEqual
		case ign:
			f.Op = OpIgnored
		case !p[0].ok:
			f.Op = OpAdded
		case !p[1].ok:
			f.Op = OpRemoved
		default:
			f.Op = OpChanged
		}
		out = append(out, f)
	}
	return out
}

// Bodies compares two bodies after decoding them.
func Bodies(ha http.Header, a session.Body, hb http.Header, b session.Body, m *Matcher) Body {
	var out Body
	da, ea := DecodeBody(ha, a.Data)
	db, eb := DecodeBody(hb, b.Data)
	for _, n := range []struct {
		side string
		b    session.Body
		err  error
	}{{"A", a, ea}, {"B", b, eb}} {
		if n.err != nil {
			out.Notes = append(out.Notes, n.side+": body compared as captured: "+n.err.Error())
		}
		if n.b.Truncated || n.b.Size > int64(len(n.b.Data)) {
			out.Notes = append(out.Notes, n.side+": body captured in part ("+strconv.Itoa(len(n.b.Data))+" of "+strconv.FormatInt(n.b.Size, 10)+" bytes)")
		}
	}
	if ea != nil {
		da = a.Data
	}
	if eb != nil {
		db = b.Data
	}
	out.SizeA, out.SizeB = len(da), len(db)
	switch {
	case len(da) == 0 && len(db) == 0:
		out.Kind, out.Equal = BodyNone, true
		return out
	case isJSONType(ha, da) && isJSONType(hb, db):
		if ja, ok := parseJSON(da); ok {
			if jb, ok := parseJSON(db); ok {
				out.Kind = BodyJSON
				jsonDiff(nil, ja, jb, m, &out.Fields)
				out.Equal = true
				for _, f := range out.Fields {
					if f.Op != OpIgnored {
						out.Equal = false
					}
				}
				return out
			}
		}
	}
	if isText(da) && isText(db) {
		out.Kind = BodyText
		out.Lines = lineDiff(string(da), string(db))
		out.Equal = bytes.Equal(da, db)
		return out
	}
	out.Kind = BodyBinary
	sa, sb := sha256.Sum256(da), sha256.Sum256(db)
	out.SHA256A, out.SHA256B = hex.EncodeToString(sa[:]), hex.EncodeToString(sb[:])
	out.Equal = sa == sb
	return out
}

func isJSONType(h http.Header, d []byte) bool {
	ct := strings.ToLower(h.Get("Content-Type"))
	if strings.Contains(ct, "json") {
		return true
	}
	t := bytes.TrimSpace(d)
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

func parseJSON(d []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(d))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if dec.More() {
		return nil, false
	}
	return v, true
}

func isText(d []byte) bool { return textual.IsText(d) }

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "?"
}

// scalar writes a JSON value compactly for display.
func scalar(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func numEq(a, b json.Number) bool {
	if a == b {
		return true
	}
	fa, ea := a.Float64()
	fb, eb := b.Float64()
	return ea == nil && eb == nil && fa == fb
}

// jsonDiff appends a Field for every path under p where a and b differ: members by key
// (order ignored), arrays by index.
func jsonDiff(p []seg, a, b any, m *Matcher, out *[]Field) {
	ign := m.path(p)
	emit := func(op Op, av, bv string) {
		if ign {
			op = OpIgnored
		}
		*out = append(*out, Field{Name: formatPath(p), Op: op, A: av, B: bv})
	}
	if jsonType(a) != jsonType(b) {
		emit(OpChanged, scalar(a), scalar(b))
		return
	}
	switch av := a.(type) {
	case map[string]any:
		bv := b.(map[string]any)
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			q := append(slices.Clip(p), seg{key: k, index: -1})
			x, inA := av[k]
			y, inB := bv[k]
			switch {
			case inA && inB:
				jsonDiff(q, x, y, m, out)
			case inA:
				appendOne(q, OpRemoved, scalar(x), "", m, out)
			default:
				appendOne(q, OpAdded, "", scalar(y), m, out)
			}
		}
	case []any:
		bv := b.([]any)
		for i := 0; i < max(len(av), len(bv)); i++ {
			q := append(slices.Clip(p), seg{index: i})
			switch {
			case i < len(av) && i < len(bv):
				jsonDiff(q, av[i], bv[i], m, out)
			case i < len(av):
				appendOne(q, OpRemoved, scalar(av[i]), "", m, out)
			default:
				appendOne(q, OpAdded, "", scalar(bv[i]), m, out)
			}
		}
	case json.Number:
		if !numEq(av, b.(json.Number)) {
			emit(OpChanged, string(av), string(b.(json.Number)))
		}
	default:
		if scalar(a) != scalar(b) {
			emit(OpChanged, scalar(a), scalar(b))
		}
	}
}

func appendOne(p []seg, op Op, a, b string, m *Matcher, out *[]Field) {
	if m.path(p) {
		op = OpIgnored
	}
	*out = append(*out, Field{Name: formatPath(p), Op: op, A: a, B: b})
}

// lineDiffTimeout bounds the search for a minimal line diff; past it the diff is still
// correct, only not minimal (large, very different bodies).
const lineDiffTimeout = 2 * time.Second

// lineDiff is a Myers diff of a and b by lines.
func lineDiff(a, b string) []Line {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = lineDiffTimeout
	ca, cb, lines := dmp.DiffLinesToChars(a, b)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lines)
	var out []Line
	la, lb := 0, 0
	for _, d := range diffs {
		text := strings.TrimSuffix(d.Text, "\n")
		for _, l := range strings.Split(text, "\n") {
			switch d.Type {
			case diffmatchpatch.DiffEqual:
				la++
				lb++
				out = append(out, Line{Op: OpEqual, Text: l, LineA: la, LineB: lb})
			case diffmatchpatch.DiffDelete:
				la++
				out = append(out, Line{Op: OpRemoved, Text: l, LineA: la})
			case diffmatchpatch.DiffInsert:
				lb++
				out = append(out, Line{Op: OpAdded, Text: l, LineB: lb})
			}
		}
	}
	return out
}
