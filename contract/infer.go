package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"inspector/content"
	"inspector/engine/session"
)

// MaxBodyBytes bounds the decoded body read per sample; a larger body is skipped.
const MaxBodyBytes = 8 << 20

// Stats count what an Inferrer took in and what it skipped, and why.
type Stats struct {
	Sessions   int            `json:"sessions"`   // sessions added
	Operations int            `json:"operations"` // distinct operations
	Bodies     int            `json:"bodies"`     // JSON bodies folded into schemas
	Skipped    map[string]int `json:"skipped"`    // reason -> count (sessions or bodies)
}

// Inferrer builds a contract from sessions. It is safe for concurrent use.
type Inferrer struct {
	mu      sync.Mutex
	hosts   map[string]*hostTree
	stats   Stats
	Servers bool // put each host as a server of the document (default when >1 host)
}

type hostTree struct {
	scheme string
	root   *pathNode
	count  int
}

// operation aggregates one method on one path template.
type operation struct {
	count    int
	query    map[string]*param
	security map[string]int // scheme name -> sessions
	req      map[string]*body
	resp     map[int]map[string]*body // status -> media type -> body
}

type param struct {
	count int
	vals  *node
}

// body aggregates the bodies of one media type.
type body struct {
	count   int
	schema  *node // nil when no body was JSON
	example any
	skipped int
}

func newOperation() *operation {
	return &operation{query: map[string]*param{}, security: map[string]int{}, req: map[string]*body{}, resp: map[int]map[string]*body{}}
}

func (o *operation) merge(x *operation) {
	o.count += x.count
	for k, p := range x.query {
		if mine := o.query[k]; mine != nil {
			mine.count += p.count
			mine.vals.merge(p.vals)
		} else {
			o.query[k] = p
		}
	}
	for k, c := range x.security {
		o.security[k] += c
	}
	mergeBodies(o.req, x.req)
	for st, m := range x.resp {
		if o.resp[st] == nil {
			o.resp[st] = map[string]*body{}
		}
		mergeBodies(o.resp[st], m)
	}
}

func mergeBodies(dst, src map[string]*body) {
	for mt, b := range src {
		mine := dst[mt]
		if mine == nil {
			dst[mt] = b
			continue
		}
		mine.count += b.count
		mine.skipped += b.skipped
		if b.schema != nil {
			if mine.schema == nil {
				mine.schema = b.schema
			} else {
				mine.schema.merge(b.schema)
			}
		}
		if mine.example == nil {
			mine.example = b.example
		}
	}
}

// NewInferrer returns an empty Inferrer.
func NewInferrer() *Inferrer {
	return &Inferrer{hosts: map[string]*hostTree{}, stats: Stats{Skipped: map[string]int{}}}
}

// Add folds one completed session in. Sessions that are no HTTP exchange (tunnels,
// failed handshakes, WebSocket upgrades, no response) are counted as skipped.
func (in *Inferrer) Add(s *session.Session) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.stats.Sessions++
	switch {
	case s.Flags.Has(session.FlagTunnel) || s.Flags.Has(session.FlagHandshakeFailed):
		in.stats.Skipped["not an HTTP exchange"]++
		return
	case s.Flags.Has(session.FlagWebSocket):
		in.stats.Skipped["websocket"]++
		return
	case s.Response == nil:
		in.stats.Skipped["no response"]++
		return
	}
	u, err := url.Parse(s.Request.URL)
	if err != nil || u.Host == "" {
		in.stats.Skipped["no absolute URL"]++
		return
	}
	h := in.hosts[u.Host]
	if h == nil {
		h = &hostTree{scheme: u.Scheme, root: newPathNode()}
		in.hosts[u.Host] = h
	}
	h.count++
	n := h.root
	for _, seg := range splitPath(u.EscapedPath()) {
		if dec, err := url.PathUnescape(seg); err == nil {
			seg = dec
		}
		n = n.child(seg)
	}
	if n.ops == nil {
		n.ops = map[string]*operation{}
	}
	method := strings.ToUpper(s.Request.Method)
	op := n.ops[method]
	if op == nil {
		op = newOperation()
		n.ops[method] = op
	}
	op.count++
	for k, vs := range u.Query() {
		p := op.query[k]
		if p == nil {
			p = &param{vals: newNode()}
			op.query[k] = p
		}
		p.count++
		for _, v := range vs {
			p.vals.add(queryValue(v), 1)
		}
	}
	for _, sch := range securitySeen(s.Request.Header, u.Query()) {
		op.security[sch]++
	}
	if s.Request.Body.Size > 0 || len(s.Request.Body.Data) > 0 {
		in.addBody(op.req, s.Request.Header, s.Request.Body, s.Flags.Has(session.FlagReqTruncated))
	}
	st := s.Response.Status
	if op.resp[st] == nil {
		op.resp[st] = map[string]*body{}
	}
	in.addBody(op.resp[st], s.Response.Header, s.Response.Body, s.Flags.Has(session.FlagRespTruncated))
}

// queryValue types a query parameter's value: integer, number, boolean or string.
func queryValue(v string) any {
	if intRe.MatchString(v) {
		return json.Number(v)
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil && strings.ContainsAny(v, "0123456789") && !strings.ContainsAny(v, "xXnN") {
		return json.Number(v)
	}
	switch v {
	case "true", "false":
		return v == "true"
	}
	return v
}

func mediaTypeOf(h http.Header) string {
	ct := h.Get("Content-Type")
	if ct == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(strings.Split(ct, ";")[0]))
	}
	return mt
}

func isJSON(mt string) bool {
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

func (in *Inferrer) addBody(m map[string]*body, h http.Header, b session.Body, truncated bool) {
	mt := mediaTypeOf(h)
	if mt == "" && b.Size == 0 && len(b.Data) == 0 {
		return // no body
	}
	if mt == "" {
		mt = "application/octet-stream"
	}
	bd := m[mt]
	if bd == nil {
		bd = &body{}
		m[mt] = bd
	}
	bd.count++
	if !isJSON(mt) {
		return
	}
	skip := func(why string) {
		bd.skipped++
		in.stats.Skipped[why]++
	}
	if truncated || b.Truncated || int64(len(b.Data)) < b.Size && b.Spilled == "" {
		skip("body truncated (over the capture limit)")
		return
	}
	data, _, cut, err := content.Decode(h, b.Data, MaxBodyBytes)
	if err != nil {
		skip("body not decodable")
		return
	}
	if cut {
		skip(fmt.Sprintf("body over %d MiB", MaxBodyBytes>>20))
		return
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		skip("body not JSON")
		return
	}
	if bd.schema == nil {
		bd.schema = newNode()
	}
	bd.schema.add(v, 0)
	if bd.example == nil && len(data) <= exampleMaxBytes {
		bd.example = maskExample(v, "")
	}
	in.stats.Bodies++
}

// Security scheme names used in documents.
const (
	SecBearer = "bearerAuth"
	SecBasic  = "basicAuth"
)

var apiKeyHeaders = []string{"X-Api-Key", "Api-Key", "Apikey", "X-Auth-Token", "X-Access-Token"}
var apiKeyQuery = []string{"api_key", "apikey", "api-key", "key", "access_token", "token"}

func securitySeen(h http.Header, q url.Values) []string {
	var out []string
	if a := h.Get("Authorization"); a != "" {
		scheme, _, _ := strings.Cut(a, " ")
		switch strings.ToLower(scheme) {
		case "bearer":
			out = append(out, SecBearer)
		case "basic":
			out = append(out, SecBasic)
		}
	}
	for _, k := range apiKeyHeaders {
		if h.Get(k) != "" {
			out = append(out, "apiKeyHeader_"+http.CanonicalHeaderKey(k))
		}
	}
	for _, k := range apiKeyQuery {
		if q.Has(k) {
			out = append(out, "apiKeyQuery_"+k)
		}
	}
	return out
}

// Stats reports what was taken in so far.
func (in *Inferrer) Stats() Stats {
	in.mu.Lock()
	defer in.mu.Unlock()
	st := in.stats
	st.Skipped = map[string]int{}
	for k, v := range in.stats.Skipped {
		st.Skipped[k] = v
	}
	st.Operations = 0
	for _, h := range in.hosts {
		walkOps(h.root, nil, func(_ []string, n *pathNode) { st.Operations += len(n.ops) })
	}
	return st
}

// walkOps calls fn once for every node with operations, with its path template segments (a
// parameter segment is given as "{}": names are chosen when rendering). Fixed children
// come before the parameter child, each in sorted order, so documents are stable.
func walkOps(n *pathNode, segs []string, fn func([]string, *pathNode)) {
	if len(n.ops) > 0 {
		fn(segs, n)
	}
	keys := make([]string, 0, len(n.fixed))
	for k := range n.fixed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		walkOps(n.fixed[k], append(segs[:len(segs):len(segs)], k), fn)
	}
	if n.param != nil {
		walkOps(n.param, append(segs[:len(segs):len(segs)], "{}"), fn)
	}
}

// Hosts lists the hosts seen, sorted.
func (in *Inferrer) Hosts() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]string, 0, len(in.hosts))
	for h := range in.hosts {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// OperationCount is one operation in a Summary.
type OperationCount struct {
	Method string `json:"method"`
	Path   string `json:"path"` // template, parameters named as in Document
	Count  int    `json:"count"`
}

// HostSummary is a host's operations, for a tree view.
type HostSummary struct {
	Host       string           `json:"host"`
	Count      int              `json:"count"`
	Operations []OperationCount `json:"operations"`
}

// Summary lists hosts and their operations with sample counts, cheaply (no schemas are
// rendered): what a live tree view polls.
func (in *Inferrer) Summary() []HostSummary {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []HostSummary
	for host, h := range in.hosts {
		hs := HostSummary{Host: host, Count: h.count}
		walkOps(h.root, nil, func(segs []string, n *pathNode) {
			path, _ := template(h.root, segs)
			for m, op := range n.ops {
				hs.Operations = append(hs.Operations, OperationCount{Method: m, Path: path, Count: op.count})
			}
		})
		sort.Slice(hs.Operations, func(i, j int) bool {
			a, b := hs.Operations[i], hs.Operations[j]
			if a.Path != b.Path {
				return a.Path < b.Path
			}
			return a.Method < b.Method
		})
		out = append(out, hs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}
