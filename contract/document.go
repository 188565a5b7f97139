package contract

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Options shape a rendered document.
type Options struct {
	Title string // info.title; default "Inferred by Inspector"
	// Host, when set, renders only that host (host[:port] as in URLs).
	Host string
}

// Document renders what has been inferred as an OpenAPI 3.1 document. Each host is a
// server; with several hosts, operations of a host other than the first carry a servers
// entry of their own, so one document holds them all.
func (in *Inferrer) Document(opt Options) *openapi3.T {
	in.mu.Lock()
	defer in.mu.Unlock()
	title := opt.Title
	if title == "" {
		title = "Inferred by Inspector"
	}
	doc := &openapi3.T{
		OpenAPI: "3.1.0",
		Info: &openapi3.Info{Title: title, Version: "inferred",
			Description: fmt.Sprintf("Inferred from %d captured sessions (%d JSON bodies). Every part carries %s: the sessions that support it.", in.stats.Sessions, in.stats.Bodies, CountExt)},
		Paths:      openapi3.NewPaths(),
		Components: &openapi3.Components{SecuritySchemes: openapi3.SecuritySchemes{}},
	}
	hosts := make([]string, 0, len(in.hosts))
	for h := range in.hosts {
		if opt.Host == "" || opt.Host == h {
			hosts = append(hosts, h)
		}
	}
	sort.Strings(hosts)
	for i, host := range hosts {
		h := in.hosts[host]
		server := &openapi3.Server{URL: h.scheme + "://" + host}
		doc.Servers = append(doc.Servers, server)
		walkOps(h.root, nil, func(segs []string, n *pathNode) {
			path, params := template(h.root, segs)
			item := doc.Paths.Value(path)
			if item == nil {
				item = &openapi3.PathItem{}
				doc.Paths.Set(path, item)
			}
			if i > 0 && len(item.Servers) == 0 {
				item.Servers = openapi3.Servers{server}
			}
			methods := make([]string, 0, len(n.ops))
			for m := range n.ops {
				methods = append(methods, m)
			}
			sort.Strings(methods)
			for _, m := range methods {
				item.SetOperation(m, in.renderOp(doc, m, path, params, n.ops[m]))
			}
		})
	}
	return doc
}

type pathParam struct {
	name, typ, format string
}

// template names the parameters of a path whose segments are segs ("{}" for a parameter).
func template(root *pathNode, segs []string) (string, []pathParam) {
	var b strings.Builder
	var params []pathParam
	used := map[string]bool{}
	n := root
	prev := ""
	for _, s := range segs {
		b.WriteByte('/')
		if s == "{}" {
			n = n.param
			typ, format := n.paramType()
			name := paramName(prev, used)
			params = append(params, pathParam{name: name, typ: typ, format: format})
			b.WriteString("{" + name + "}")
			prev = "{"
			continue
		}
		n = n.fixed[s]
		b.WriteString(escapeSeg(s))
		prev = s
	}
	if b.Len() == 0 {
		return "/", nil
	}
	return b.String(), params
}

var braceRe = regexp.MustCompile(`[{}]`)

func escapeSeg(s string) string {
	return braceRe.ReplaceAllStringFunc(s, func(c string) string { return "%" + fmt.Sprintf("%02X", c[0]) })
}

func opID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	up := true
	for _, r := range path {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			if up {
				b.WriteString(strings.ToUpper(string(r)))
				up = false
			} else {
				b.WriteRune(r)
			}
		default:
			up = true
		}
	}
	return b.String()
}

func (in *Inferrer) renderOp(doc *openapi3.T, method, path string, params []pathParam, op *operation) *openapi3.Operation {
	o := &openapi3.Operation{
		OperationID: opID(method, path),
		Responses:   openapi3.NewResponses(),
		Extensions:  map[string]any{CountExt: op.count},
	}
	o.Responses.Delete("default")
	for _, p := range params {
		sch := &openapi3.Schema{Type: &openapi3.Types{p.typ}, Format: p.format}
		o.Parameters = append(o.Parameters, &openapi3.ParameterRef{Value: &openapi3.Parameter{
			Name: p.name, In: openapi3.ParameterInPath, Required: true,
			Schema: openapi3.NewSchemaRef("", sch), Extensions: map[string]any{CountExt: op.count}}})
	}
	qs := make([]string, 0, len(op.query))
	for k := range op.query {
		qs = append(qs, k)
	}
	sort.Strings(qs)
	for _, k := range qs {
		p := op.query[k]
		o.Parameters = append(o.Parameters, &openapi3.ParameterRef{Value: &openapi3.Parameter{
			Name: k, In: openapi3.ParameterInQuery, Required: p.count == op.count,
			Schema: openapi3.NewSchemaRef("", scalarSchema(p.vals)), Extensions: map[string]any{CountExt: p.count}}})
	}
	if len(op.req) > 0 {
		rb := &openapi3.RequestBody{Content: openapi3.Content{}, Extensions: map[string]any{CountExt: 0}}
		total := 0
		for mt, b := range op.req {
			rb.Content[mt] = mediaType(b)
			total += b.count
		}
		rb.Extensions[CountExt] = total
		rb.Required = total == op.count
		o.RequestBody = &openapi3.RequestBodyRef{Value: rb}
	}
	statuses := make([]int, 0, len(op.resp))
	for st := range op.resp {
		statuses = append(statuses, st)
	}
	sort.Ints(statuses)
	for _, st := range statuses {
		m := op.resp[st]
		desc := http.StatusText(st)
		if desc == "" {
			desc = "Status " + strconv.Itoa(st)
		}
		r := &openapi3.Response{Description: &desc, Extensions: map[string]any{}}
		total := 0
		if len(m) > 0 {
			r.Content = openapi3.Content{}
		}
		for mt, b := range m {
			r.Content[mt] = mediaType(b)
			total += b.count
		}
		if total == 0 {
			for _, b := range m {
				total += b.count
			}
		}
		r.Extensions[CountExt] = total
		o.Responses.Set(strconv.Itoa(st), &openapi3.ResponseRef{Value: r})
	}
	if len(statuses) == 0 {
		d := "No response seen"
		o.Responses.Set("default", &openapi3.ResponseRef{Value: &openapi3.Response{Description: &d}})
	}
	// Security: each scheme seen on this operation is one alternative.
	names := make([]string, 0, len(op.security))
	for k := range op.security {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		doc.Components.SecuritySchemes[k] = &openapi3.SecuritySchemeRef{Value: securityScheme(k)}
		req := openapi3.NewSecurityRequirement()
		req[k] = []string{}
		o.Security = openapi3.NewSecurityRequirements()
		*o.Security = append(*o.Security, req)
	}
	if len(names) > 0 {
		o.Security = &openapi3.SecurityRequirements{}
		for _, k := range names {
			*o.Security = append(*o.Security, openapi3.SecurityRequirement{k: []string{}})
		}
		o.Extensions["x-inspector-security-samples"] = op.security
	}
	return o
}

func securityScheme(name string) *openapi3.SecurityScheme {
	switch {
	case name == SecBearer:
		return &openapi3.SecurityScheme{Type: "http", Scheme: "bearer"}
	case name == SecBasic:
		return &openapi3.SecurityScheme{Type: "http", Scheme: "basic"}
	case strings.HasPrefix(name, "apiKeyHeader_"):
		return &openapi3.SecurityScheme{Type: "apiKey", In: "header", Name: strings.TrimPrefix(name, "apiKeyHeader_")}
	case strings.HasPrefix(name, "apiKeyQuery_"):
		return &openapi3.SecurityScheme{Type: "apiKey", In: "query", Name: strings.TrimPrefix(name, "apiKeyQuery_")}
	}
	return &openapi3.SecurityScheme{Type: "http", Scheme: name}
}

// scalarSchema is a query parameter's schema: its values' type, without enums of one
// sample's worth.
func scalarSchema(n *node) *openapi3.Schema {
	s := n.schema()
	return s
}

func mediaType(b *body) *openapi3.MediaType {
	m := &openapi3.MediaType{Extensions: map[string]any{CountExt: b.count}}
	if b.skipped > 0 {
		m.Extensions["x-inspector-skipped"] = b.skipped
	}
	if b.schema != nil {
		m.Schema = openapi3.NewSchemaRef("", b.schema.schema())
		if b.example != nil {
			m.Example = b.example
		}
	}
	return m
}
