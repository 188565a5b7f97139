package contract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"inspector/content"
	"inspector/engine/session"
)

// DocError is an OpenAPI document that cannot be used, with where and why.
type DocError struct {
	File   string
	Line   int // 0 when not known
	Reason string
}

func (e *DocError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
	}
	return e.File + ": " + e.Reason
}

var yamlLineRe = regexp.MustCompile(`line (\d+)`)

// LoadDocument reads and validates an OpenAPI document (JSON or YAML). A document that does
// not parse or is not valid is a *DocError naming the file, the line where it can be
// found, and the reason.
func LoadDocument(path string) (*openapi3.T, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		de := &DocError{File: path, Reason: err.Error()}
		if m := yamlLineRe.FindStringSubmatch(err.Error()); m != nil {
			fmt.Sscan(m[1], &de.Line)
		}
		return nil, de
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, &DocError{File: path, Line: lineOf(raw, err.Error()), Reason: err.Error()}
	}
	return doc, nil
}

var quotedPathRe = regexp.MustCompile(`invalid path (/\S*)|invalid operation (\w+)|"([^"]+)"`)

// lineOf finds the line of the first path, operation or quoted name a validation error
// mentions, searching forward from each match: a best effort, 0 when none is found.
func lineOf(raw []byte, msg string) int {
	lines := strings.Split(string(raw), "\n")
	from := 0
	found := 0
	for _, m := range quotedPathRe.FindAllStringSubmatch(msg, -1) {
		key := m[1] + m[2] + m[3]
		if m[2] != "" {
			key = strings.ToLower(m[2])
		}
		for i := from; i < len(lines); i++ {
			l := strings.TrimSpace(lines[i])
			if strings.HasPrefix(l, key+":") || strings.HasPrefix(l, `"`+key+`"`) || strings.HasPrefix(l, `'`+key+`'`) {
				from, found = i, i+1
				break
			}
		}
	}
	return found
}

// Verdict is how one session stands against a contract.
type Verdict struct {
	// Operation is "METHOD /template" of the matching operation, empty when none matched.
	Operation string   `json:"operation,omitempty"`
	Conforms  bool     `json:"conforms"`
	Problems  []string `json:"problems,omitempty"`
}

// Validator checks sessions against one document. It is safe for concurrent use.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
}

// NewValidator prepares doc for checking. doc must be valid.
func NewValidator(doc *openapi3.T) (*Validator, error) {
	r, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &Validator{doc: doc, router: r}, nil
}

// Covers reports whether the document speaks of s's origin: it has no servers, or one
// whose scheme and host are s's. Sessions to other origins are not checked against it.
func (v *Validator) Covers(s *session.Session) bool {
	if len(v.doc.Servers) == 0 {
		return true
	}
	u, err := url.Parse(s.Request.URL)
	if err != nil {
		return false
	}
	for _, srv := range v.doc.Servers {
		if su, err := url.Parse(srv.URL); err == nil && strings.EqualFold(su.Host, u.Host) && (su.Scheme == "" || su.Scheme == u.Scheme) {
			return true
		}
	}
	return false
}

// Filter is the check for contract: filter terms (filter.SetContract): sessions to an
// origin the document covers are checked, with verdicts of stored sessions cached (a
// session is immutable once stored).
func (v *Validator) Filter() func(*session.Session) (checked, conforms bool) {
	var mu sync.Mutex
	cache := map[session.ID]bool{}
	return func(s *session.Session) (bool, bool) {
		if s.Response == nil || s.Flags.Has(session.FlagTunnel) || s.Flags.Has(session.FlagHandshakeFailed) || !v.Covers(s) {
			return false, false
		}
		if s.ID != 0 {
			mu.Lock()
			ok, hit := cache[s.ID]
			mu.Unlock()
			if hit {
				return true, ok
			}
		}
		ok := v.Check(s).Conforms
		if s.ID != 0 {
			mu.Lock()
			if len(cache) >= 1<<17 {
				clear(cache)
			}
			cache[s.ID] = ok
			mu.Unlock()
		}
		return true, ok
	}
}

// Check validates s's request and response. Sessions that are no HTTP exchange conform
// vacuously (Operation empty, no problems); a request no operation matches does not
// conform ("no operation").
func (v *Validator) Check(s *session.Session) Verdict {
	if s.Response == nil || s.Flags.Has(session.FlagTunnel) || s.Flags.Has(session.FlagHandshakeFailed) {
		return Verdict{Conforms: true}
	}
	u, err := url.Parse(s.Request.URL)
	if err != nil {
		return Verdict{Problems: []string{"request URL: " + err.Error()}}
	}
	reqBody, _, _, _ := content.Decode(s.Request.Header, s.Request.Body.Data, MaxBodyBytes)
	req, err := http.NewRequest(s.Request.Method, u.String(), bytes.NewReader(reqBody))
	if err != nil {
		return Verdict{Problems: []string{"request: " + err.Error()}}
	}
	req.Header = s.Request.Header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Del("Content-Encoding")
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		why := "no operation matches " + s.Request.Method + " " + u.Path
		var re *routers.RouteError
		if errors.As(err, &re) && re.Reason != "" && !strings.Contains(re.Reason, "no matching") {
			why += " (" + re.Reason + ")"
		}
		return Verdict{Problems: []string{why}}
	}
	vd := Verdict{Operation: route.Method + " " + route.Path}
	opts := &openapi3filter.Options{MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	ctx := context.Background()
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
		vd.Problems = append(vd.Problems, problems("request", err)...)
	}
	if !s.Flags.Has(session.FlagRespTruncated) && !s.Response.Body.Truncated {
		body, _, _, _ := content.Decode(s.Response.Header, s.Response.Body.Data, MaxBodyBytes)
		h := s.Response.Header.Clone()
		if h == nil {
			h = http.Header{}
		}
		h.Del("Content-Encoding")
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: s.Response.Status, Header: h,
			Body: io.NopCloser(bytes.NewReader(body)), Options: opts}
		if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
			vd.Problems = append(vd.Problems, problems(fmt.Sprintf("response %d", s.Response.Status), err)...)
		}
	}
	vd.Conforms = len(vd.Problems) == 0
	return vd
}

// problems flattens kin-openapi's errors into one line each, prefixed with the part.
func problems(part string, err error) []string {
	var me openapi3.MultiError
	if errors.As(err, &me) {
		var out []string
		for _, e := range me {
			out = append(out, problems(part, e)...)
		}
		return out
	}
	var re *openapi3filter.RequestError
	if errors.As(err, &re) {
		where := part
		if re.Parameter != nil {
			where += " " + re.Parameter.In + " parameter " + re.Parameter.Name
		} else if re.RequestBody != nil {
			where += " body"
		}
		if re.Err != nil {
			if inner := problems(where, re.Err); len(inner) > 0 {
				return inner
			}
		}
		return []string{where + ": " + re.Reason}
	}
	var rse *openapi3filter.ResponseError
	if errors.As(err, &rse) {
		if rse.Err != nil {
			return problems(part+" body", rse.Err)
		}
		return []string{part + ": " + rse.Reason}
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		field := strings.Join(se.JSONPointer(), ".")
		if field == "" {
			field = "(root)"
		}
		return []string{fmt.Sprintf("%s: field %s: %s", part, field, se.Reason)}
	}
	msg := strings.TrimSpace(strings.SplitN(err.Error(), "\n", 2)[0])
	return []string{part + ": " + msg}
}

// Drift is one difference between two contracts: an operation added or removed, a field
// added or removed, or a type changed.
type Drift struct {
	Kind  string `json:"kind"` // "operation added", "operation removed", "field added", "field removed", "type changed"
	Where string `json:"where"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
}

func (d Drift) String() string {
	s := d.Kind + ": " + d.Where
	if d.From != "" || d.To != "" {
		s += " (" + d.From + " → " + d.To + ")"
	}
	return s
}

// CompareDocuments reports how b departs from a (a the older contract), sorted.
func CompareDocuments(a, b *openapi3.T) []Drift {
	ops := func(d *openapi3.T) map[string]*openapi3.Operation {
		out := map[string]*openapi3.Operation{}
		if d == nil || d.Paths == nil {
			return out
		}
		for p, item := range d.Paths.Map() {
			for m, op := range item.Operations() {
				out[m+" "+p] = op
			}
		}
		return out
	}
	oa, ob := ops(a), ops(b)
	var out []Drift
	for k := range oa {
		if ob[k] == nil {
			out = append(out, Drift{Kind: "operation removed", Where: k})
		}
	}
	for k, op := range ob {
		old := oa[k]
		if old == nil {
			out = append(out, Drift{Kind: "operation added", Where: k})
			continue
		}
		for st, r := range op.Responses.Map() {
			or := old.Responses.Value(st)
			if or == nil || or.Value == nil || r.Value == nil {
				if or == nil {
					out = append(out, Drift{Kind: "response added", Where: k + " " + st})
				}
				continue
			}
			for mt, m := range r.Value.Content {
				om := or.Value.Content[mt]
				if om == nil || om.Schema == nil || m.Schema == nil {
					continue
				}
				out = append(out, compareSchemas(k+" "+st+" ", "", om.Schema.Value, m.Schema.Value, 0)...)
			}
		}
		if op.RequestBody != nil && old.RequestBody != nil && op.RequestBody.Value != nil && old.RequestBody.Value != nil {
			for mt, m := range op.RequestBody.Value.Content {
				if om := old.RequestBody.Value.Content[mt]; om != nil && om.Schema != nil && m.Schema != nil {
					out = append(out, compareSchemas(k+" request ", "", om.Schema.Value, m.Schema.Value, 0)...)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Where != out[j].Where {
			return out[i].Where < out[j].Where
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}

func typeName(s *openapi3.Schema) string {
	if s == nil {
		return ""
	}
	if len(s.OneOf) > 0 {
		var ts []string
		for _, o := range s.OneOf {
			ts = append(ts, typeName(o.Value))
		}
		return strings.Join(ts, "|")
	}
	if s.Type == nil {
		return "any"
	}
	t := strings.Join(*s.Type, "|")
	if s.Format != "" {
		t += "/" + s.Format
	}
	return t
}

func compareSchemas(prefix, path string, a, b *openapi3.Schema, depth int) []Drift {
	if a == nil || b == nil || depth > MaxDepth {
		return nil
	}
	field := path
	if field == "" {
		field = "(body)"
	}
	var out []Drift
	if ta, tb := typeName(a), typeName(b); ta != tb {
		out = append(out, Drift{Kind: "type changed", Where: prefix + field, From: ta, To: tb})
	}
	for name, p := range b.Properties {
		sub := strings.TrimPrefix(path+"."+name, ".")
		op := a.Properties[name]
		if op == nil {
			out = append(out, Drift{Kind: "field added", Where: prefix + sub})
			continue
		}
		out = append(out, compareSchemas(prefix, sub, op.Value, p.Value, depth+1)...)
	}
	for name := range a.Properties {
		if b.Properties[name] == nil {
			out = append(out, Drift{Kind: "field removed", Where: prefix + strings.TrimPrefix(path+"."+name, ".")})
		}
	}
	if a.Items != nil && b.Items != nil {
		out = append(out, compareSchemas(prefix, path+"[]", a.Items.Value, b.Items.Value, depth+1)...)
	}
	return out
}
