package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"inspector/content"
	"inspector/engine/session"
)

// GraphQLInferrer gathers, per GraphQL endpoint, the operations and variables seen and an
// SDL skeleton of the types the responses show: the root fields the operations select,
// with their arguments (typed from the operations' variable definitions), and an object
// type per selection, named by __typename when the response has it, else after the field.
// Safe for concurrent use.
type GraphQLInferrer struct {
	mu        sync.Mutex
	endpoints map[string]*gqlEndpoint // scheme://host/path
	stats     Stats
}

type gqlEndpoint struct {
	ops   map[string]*gqlOp // "query Name"
	types map[string]*gqlType
}

// GraphQLOperation is one operation seen at an endpoint.
type GraphQLOperation struct {
	Type      string         `json:"type"`
	Name      string         `json:"name"`
	Count     int            `json:"count"`
	Errors    int            `json:"errors"`              // responses with a non-empty "errors"
	Variables map[string]any `json:"variables,omitempty"` // JSON Schema of the variables seen
	Query     string         `json:"query"`
}

type gqlOp struct {
	GraphQLOperation
	vars *node
}

type gqlType struct {
	fields map[string]*gqlField
	order  []string
	count  int
}

type gqlField struct {
	args  map[string]string
	kinds map[string]int
	list  bool
	count int
	nulls int
}

// NewGraphQLInferrer returns an empty GraphQLInferrer.
func NewGraphQLInferrer() *GraphQLInferrer {
	return &GraphQLInferrer{endpoints: map[string]*gqlEndpoint{}, stats: Stats{Skipped: map[string]int{}}}
}

// Add folds in one session; sessions that are not GraphQL requests are ignored.
func (g *GraphQLInferrer) Add(s *session.Session) {
	ops := content.GraphQLOps(s)
	if len(ops) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stats.Sessions++
	u, err := url.Parse(s.Request.URL)
	if err != nil {
		return
	}
	key := u.Scheme + "://" + u.Host + u.Path
	ep := g.endpoints[key]
	if ep == nil {
		ep = &gqlEndpoint{ops: map[string]*gqlOp{}, types: map[string]*gqlType{}}
		g.endpoints[key] = ep
	}
	var results []map[string]any
	if s.Response != nil && !s.Flags.Has(session.FlagRespTruncated) {
		body, _, _, err := content.Decode(s.Response.Header, s.Response.Body.Data, MaxBodyBytes)
		if err == nil {
			body = bytes.TrimSpace(body)
			if len(body) > 0 && body[0] == '[' {
				_ = json.Unmarshal(body, &results)
			} else {
				var one map[string]any
				if json.Unmarshal(body, &one) == nil {
					results = []map[string]any{one}
				}
			}
		}
	}
	for i, op := range ops {
		if op.Error != "" || op.Query == "" {
			g.stats.Skipped["GraphQL document does not parse (or persisted query without text)"]++
			continue
		}
		doc, err := parser.ParseQuery(&ast.Source{Input: op.Query})
		if err != nil {
			g.stats.Skipped["GraphQL document does not parse (or persisted query without text)"]++
			continue
		}
		def := pickOperation(doc, op.Name)
		if def == nil {
			continue
		}
		k := string(def.Operation) + " " + op.Name
		o := ep.ops[k]
		if o == nil {
			o = &gqlOp{GraphQLOperation: GraphQLOperation{Type: string(def.Operation), Name: op.Name, Query: op.Query}, vars: newNode()}
			ep.ops[k] = o
		}
		o.Count++
		if op.Variables != "" {
			var v any
			dec := json.NewDecoder(strings.NewReader(op.Variables))
			dec.UseNumber()
			if dec.Decode(&v) == nil {
				o.vars.add(v, 0)
			}
		}
		if i >= len(results) || results[i] == nil {
			continue
		}
		if errs, ok := results[i]["errors"].([]any); ok && len(errs) > 0 {
			o.Errors++
		}
		data, ok := results[i]["data"].(map[string]any)
		if !ok {
			continue
		}
		frags := map[string]*ast.FragmentDefinition{}
		for _, f := range doc.Fragments {
			frags[f.Name] = f
		}
		root := map[ast.Operation]string{ast.Query: "Query", ast.Mutation: "Mutation", ast.Subscription: "Subscription"}[def.Operation]
		g.stats.Bodies++
		ep.walk(root, def.SelectionSet, data, def.VariableDefinitions, frags, 0)
	}
}

func pickOperation(doc *ast.QueryDocument, name string) *ast.OperationDefinition {
	for _, o := range doc.Operations {
		if name == "" || o.Name == name {
			return o
		}
	}
	if len(doc.Operations) > 0 {
		return doc.Operations[0]
	}
	return nil
}

func (ep *gqlEndpoint) typ(name string) *gqlType {
	t := ep.types[name]
	if t == nil {
		t = &gqlType{fields: map[string]*gqlField{}}
		ep.types[name] = t
	}
	return t
}

func (ep *gqlEndpoint) walk(typeName string, sel ast.SelectionSet, val map[string]any, vars ast.VariableDefinitionList, frags map[string]*ast.FragmentDefinition, depth int) {
	if depth > MaxDepth || val == nil {
		return
	}
	t := ep.typ(typeName)
	t.count++
	tn, _ := val["__typename"].(string)
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if strings.HasPrefix(s.Name, "__") {
				continue
			}
			key := s.Alias
			if key == "" {
				key = s.Name
			}
			v, present := val[key]
			if !present {
				continue
			}
			f := t.fields[s.Name]
			if f == nil {
				f = &gqlField{args: map[string]string{}, kinds: map[string]int{}}
				t.fields[s.Name] = f
				t.order = append(t.order, s.Name)
			}
			f.count++
			for _, a := range s.Arguments {
				if _, ok := f.args[a.Name]; !ok {
					f.args[a.Name] = argType(a.Value, vars)
				}
			}
			items := []any{v}
			if l, ok := v.([]any); ok {
				f.list, items = true, l
			}
			for _, it := range items {
				switch it := it.(type) {
				case nil:
					f.nulls++
				case map[string]any:
					if len(s.SelectionSet) == 0 {
						f.kinds["JSON"]++
						continue
					}
					child, _ := it["__typename"].(string)
					if child == "" {
						child = typeNameFor(s.Name, f.list)
					}
					f.kinds[child]++
					ep.walk(child, s.SelectionSet, it, vars, frags, depth+1)
				default:
					f.kinds[scalarName(it, s.Name)]++
				}
			}
		case *ast.InlineFragment:
			if s.TypeCondition == "" || tn == "" || tn == s.TypeCondition {
				ep.walk(typeName, s.SelectionSet, val, vars, frags, depth)
				t.count--
			}
		case *ast.FragmentSpread:
			if fr := frags[s.Name]; fr != nil && (tn == "" || tn == fr.TypeCondition) {
				ep.walk(typeName, fr.SelectionSet, val, vars, frags, depth)
				t.count--
			}
		}
	}
}

func argType(v *ast.Value, vars ast.VariableDefinitionList) string {
	if v == nil {
		return "String"
	}
	switch v.Kind {
	case ast.Variable:
		if d := vars.ForName(v.Raw); d != nil && d.Type != nil {
			return d.Type.String()
		}
	case ast.IntValue:
		return "Int"
	case ast.FloatValue:
		return "Float"
	case ast.BooleanValue:
		return "Boolean"
	case ast.ListValue:
		if len(v.Children) > 0 {
			return "[" + argType(v.Children[0].Value, vars) + "]"
		}
	}
	return "String"
}

func scalarName(v any, field string) string {
	switch v := v.(type) {
	case bool:
		return "Boolean"
	case float64:
		if v == float64(int32(v)) {
			return "Int"
		}
		return "Float"
	case string:
		if field == "id" || strings.HasSuffix(field, "Id") || strings.HasSuffix(field, "ID") {
			return "ID"
		}
		return "String"
	}
	return "JSON"
}

func typeNameFor(field string, list bool) string {
	n := []rune(field)
	if len(n) == 0 {
		return "Object"
	}
	n[0] = unicode.ToUpper(n[0])
	s := string(n)
	if list {
		switch {
		case strings.HasSuffix(s, "ies"):
			s = strings.TrimSuffix(s, "ies") + "y"
		case strings.HasSuffix(s, "s") && !strings.HasSuffix(s, "ss"):
			s = strings.TrimSuffix(s, "s")
		}
	}
	if builtinScalar[s] {
		s += "Object"
	}
	return s
}

var builtinScalar = map[string]bool{"Int": true, "Float": true, "String": true, "Boolean": true, "ID": true, "JSON": true}

// Endpoints lists the GraphQL endpoints seen.
func (g *GraphQLInferrer) Endpoints() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, 0, len(g.endpoints))
	for k := range g.endpoints {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Operations lists the operations seen at an endpoint, sorted by type and name.
func (g *GraphQLInferrer) Operations(endpoint string) []GraphQLOperation {
	g.mu.Lock()
	defer g.mu.Unlock()
	ep := g.endpoints[endpoint]
	if ep == nil {
		return nil
	}
	var out []GraphQLOperation
	for _, o := range ep.ops {
		op := o.GraphQLOperation
		if o.vars.count > 0 {
			b, _ := json.Marshal(o.vars.schema())
			_ = json.Unmarshal(b, &op.Variables)
		}
		out = append(out, op)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// SDL renders the schema skeleton of an endpoint: the root types first, then the object
// types by name. Fields are nullable (what a sample shows is never proof of non-null);
// a field seen with several types takes the first and names the others in a comment.
func (g *GraphQLInferrer) SDL(endpoint string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	ep := g.endpoints[endpoint]
	if ep == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Inferred by Inspector from GraphQL traffic to %s.\n", endpoint)
	b.WriteString("# Only fields that operations selected appear; all are nullable.\n\n")
	names := make([]string, 0, len(ep.types))
	for n := range ep.types {
		names = append(names, n)
	}
	rank := map[string]int{"Query": 0, "Mutation": 1, "Subscription": 2}
	sort.Slice(names, func(i, j int) bool {
		ri, ok1 := rank[names[i]]
		rj, ok2 := rank[names[j]]
		if !ok1 {
			ri = 3
		}
		if !ok2 {
			rj = 3
		}
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	usesJSON := false
	var unions []string
	for _, n := range names {
		t := ep.types[n]
		fmt.Fprintf(&b, "type %s { # seen %d times\n", n, t.count)
		if len(t.order) == 0 {
			b.WriteString("  _seen: Boolean # no field of it was selected\n")
		}
		for _, fn := range t.order {
			f := t.fields[fn]
			kinds := make([]string, 0, len(f.kinds))
			for k := range f.kinds {
				kinds = append(kinds, k)
			}
			sort.Slice(kinds, func(i, j int) bool {
				return f.kinds[kinds[i]] > f.kinds[kinds[j]] || f.kinds[kinds[i]] == f.kinds[kinds[j]] && kinds[i] < kinds[j]
			})
			typ, note := "String", ""
			switch {
			case len(kinds) == 0:
				note = "; only null seen (type guessed)"
			case len(kinds) == 2 && f.kinds["Int"] > 0 && f.kinds["Float"] > 0:
				typ = "Float"
			case len(kinds) > 1 && allObjects(ep, kinds):
				// Several object types at one field: a union (or an interface; the
				// wire cannot tell which).
				sort.Strings(kinds)
				typ = typeNameFor(fn, f.list) + "Result"
				unions = append(unions, fmt.Sprintf("union %s = %s # guessed: could be an interface\n", typ, strings.Join(kinds, " | ")))
			default:
				typ = kinds[0]
				if len(kinds) > 1 {
					note = "; also seen as " + strings.Join(kinds[1:], ", ")
				}
			}
			if typ == "JSON" {
				usesJSON = true
			}
			if f.list {
				typ = "[" + typ + "]"
			}
			args := ""
			if len(f.args) > 0 {
				an := make([]string, 0, len(f.args))
				for a := range f.args {
					an = append(an, a)
				}
				sort.Strings(an)
				var parts []string
				for _, a := range an {
					parts = append(parts, a+": "+f.args[a])
				}
				args = "(" + strings.Join(parts, ", ") + ")"
			}
			fmt.Fprintf(&b, "  %s%s: %s # %d samples%s\n", fn, args, typ, f.count, note)
		}
		b.WriteString("}\n\n")
	}
	for _, u := range unions {
		b.WriteString(u)
	}
	if usesJSON {
		b.WriteString("scalar JSON\n")
	}
	// Argument types the operations named (input objects, enums, custom scalars) whose
	// shape the wire does not show: declared as scalars, so the skeleton is valid SDL.
	declared := map[string]bool{"JSON": usesJSON}
	for _, n := range names {
		for _, fn := range ep.types[n].order {
			for _, at := range ep.types[n].fields[fn].args {
				base := strings.Trim(at, "[]!")
				if !builtinScalar[base] && ep.types[base] == nil && !declared[base] {
					declared[base] = true
					fmt.Fprintf(&b, "scalar %s # an argument type named by the operations; its shape is not on the wire\n", base)
				}
			}
		}
	}
	return b.String()
}

func allObjects(ep *gqlEndpoint, kinds []string) bool {
	for _, k := range kinds {
		if ep.types[k] == nil {
			return false
		}
	}
	return true
}
