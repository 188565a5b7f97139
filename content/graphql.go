package content

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/formatter"
	"github.com/vektah/gqlparser/v2/parser"
)

// GraphQLOp is one GraphQL operation of a request (a batch has several).
type GraphQLOp struct {
	// Type is "query", "mutation" or "subscription"; Name the operation name (the
	// request's operationName, else the document's), "" for an anonymous operation.
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	// Query is the document pretty-printed (as sent when it does not parse).
	Query     string `json:"query"`
	Variables string `json:"variables,omitempty"` // indented JSON
	// Persisted is the sha256 of an Automatic Persisted Query sent without its text.
	Persisted string `json:"persisted,omitempty"`
	// Error says why the document did not parse.
	Error string `json:"error,omitempty"`
}

type gqlRequest struct {
	Query         string          `json:"query"`
	OperationName string          `json:"operationName"`
	Variables     json.RawMessage `json:"variables"`
	Extensions    struct {
		PersistedQuery struct {
			Hash string `json:"sha256Hash"`
		} `json:"persistedQuery"`
	} `json:"extensions"`
}

// GraphQLRequest reads the operations of a GraphQL request: a POST body (JSON object or
// batch array, or application/graphql text) or, when body is empty, a GET URL's ?query=.
// ok is false when neither holds a GraphQL request.
func GraphQLRequest(mediaType string, body []byte, rawURL string) (ops []GraphQLOp, ok bool) {
	if len(bytes.TrimSpace(body)) == 0 {
		q, name, vars, found := GraphQLGET(rawURL)
		if !found {
			return nil, false
		}
		return []GraphQLOp{graphQLOp(q, name, json.RawMessage(vars), "")}, true
	}
	if mediaType == "application/graphql" {
		return []GraphQLOp{graphQLOp(string(body), "", nil, "")}, true
	}
	if !isGraphQLRequest(body) {
		return nil, false
	}
	t := bytes.TrimSpace(body)
	var reqs []gqlRequest
	if t[0] == '[' {
		if json.Unmarshal(t, &reqs) != nil {
			return nil, false
		}
	} else {
		var r gqlRequest
		if json.Unmarshal(t, &r) != nil {
			return nil, false
		}
		reqs = []gqlRequest{r}
	}
	for _, r := range reqs {
		ops = append(ops, graphQLOp(r.Query, r.OperationName, r.Variables, r.Extensions.PersistedQuery.Hash))
	}
	return ops, true
}

func graphQLOp(query, name string, vars json.RawMessage, persisted string) GraphQLOp {
	op := GraphQLOp{Type: "query", Name: name, Query: query, Persisted: persisted}
	if v := bytes.TrimSpace(vars); len(v) > 0 && string(v) != "null" {
		op.Variables = indentJSON(v)
	}
	if strings.TrimSpace(query) == "" {
		return op
	}
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		op.Error = err.Error()
		// A best guess from the first word, so a filter still finds mutations.
		f := strings.Fields(query)
		if len(f) > 0 && (f[0] == "mutation" || f[0] == "subscription") {
			op.Type = f[0]
		}
		return op
	}
	var chosen *ast.OperationDefinition
	for _, o := range doc.Operations {
		if name == "" || o.Name == name {
			chosen = o
			break
		}
	}
	if chosen != nil {
		op.Type = string(chosen.Operation)
		if op.Name == "" {
			op.Name = chosen.Name
		}
	}
	var buf bytes.Buffer
	formatter.NewFormatter(&buf, formatter.WithIndent("  ")).FormatQueryDocument(doc)
	op.Query = strings.TrimRight(buf.String(), "\n")
	return op
}

// GraphQLErrors returns the messages of a GraphQL response's "errors" (or of each
// response of a batch), with their paths; nil when there are none.
func GraphQLErrors(body []byte) []string {
	t := bytes.TrimSpace(body)
	if len(t) == 0 {
		return nil
	}
	type resp struct {
		Errors []struct {
			Message string `json:"message"`
			Path    []any  `json:"path"`
		} `json:"errors"`
	}
	var rs []resp
	if t[0] == '[' {
		if json.Unmarshal(t, &rs) != nil {
			return nil
		}
	} else {
		var r resp
		if json.Unmarshal(t, &r) != nil {
			return nil
		}
		rs = []resp{r}
	}
	var out []string
	for _, r := range rs {
		for _, e := range r.Errors {
			s := e.Message
			if len(e.Path) > 0 {
				parts := make([]string, len(e.Path))
				for i, p := range e.Path {
					parts[i] = fmt.Sprint(p)
				}
				s += " (at " + strings.Join(parts, ".") + ")"
			}
			out = append(out, s)
		}
	}
	return out
}

func init() { Register(KindGraphQL, graphQLRequestViews) }

// graphQLRequestViews: each operation of a GraphQL request, its variables, and the
// request JSON.
func graphQLRequestViews(in *Input) []View {
	ops, ok := GraphQLRequest(MediaType(in.Header.Get("Content-Type")), in.Body, in.Options.URL)
	s, n := in.Text()
	raw := View{Name: "JSON", Kind: KindJSON, Lang: "json", Text: s, Partial: in.Partial, Note: n}
	if p, ok := IndentJSON(s); ok {
		raw.Text = p
	}
	if !ok {
		return []View{raw}
	}
	return append(graphQLViews(ops, n), raw)
}

func graphQLViews(ops []GraphQLOp, note string) []View {
	var out []View
	for i, op := range ops {
		name := "GraphQL"
		if len(ops) > 1 {
			name = fmt.Sprintf("GraphQL %d", i+1)
		}
		title := op.Type
		if op.Name != "" {
			title += " " + op.Name
		}
		v := View{Name: name, Kind: KindGraphQL, Lang: "graphql", Text: "# " + title + "\n" + op.Query + "\n", Note: note}
		if op.Persisted != "" {
			v.Text = "# " + title + "\n# persisted query sha256 " + op.Persisted + "\n" + op.Query
		}
		if op.Error != "" {
			v.Note = joinNote(note, "query does not parse: "+op.Error)
		}
		out = append(out, v)
		if op.Variables != "" {
			out = append(out, View{Name: strings.Replace(name, "GraphQL", "Variables", 1), Kind: KindGraphQL, Lang: "json", Text: op.Variables})
		}
	}
	return out
}
