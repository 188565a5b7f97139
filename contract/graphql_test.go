package contract_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"inspector/contract"
	et "inspector/engine/enginetest"
)

// A GraphQL endpoint answering canned responses per operation, called through the engine.
func TestInferGraphQL(t *testing.T) {
	t.Parallel()
	answers := map[string]string{
		"GetUser":    `{"data":{"user":{"__typename":"User","id":"u1","name":"Ann","age":31,"friends":[{"__typename":"User","id":"u2","name":"Bo","age":null}],"avatar":{"url":"https://x/a.png","w":64}}}}`,
		"Search":     `{"data":{"search":[{"__typename":"User","id":"u3","name":"Cy"},{"__typename":"Post","id":"p1","title":"Hi","score":4.5}]}}`,
		"CreatePost": `{"data":{"createPost":{"id":"p2","title":"New"}}}`,
		"Broken":     `{"errors":[{"message":"no"}],"data":null}`,
	}
	o := et.StartOrigin(t, et.OriginH2TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			OperationName string `json:"operationName"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answers[req.OperationName])
	}))
	p := et.StartProxy(t, nil, o)
	client := p.Client(t, et.ClientH2)
	queries := []struct{ name, query, vars string }{
		{"GetUser", `query GetUser($id: ID!) { user(id: $id) { __typename id name age friends(first: 5) { id name age } avatar { url w } } }`, `{"id":"u1"}`},
		{"GetUser", `query GetUser($id: ID!) { user(id: $id) { __typename id name age friends(first: 5) { id name age } avatar { url w } } }`, `{"id":"u9"}`},
		{"Search", `query Search($q: String!) { search(q: $q) { __typename ... on User { id name } ...PostBits } } fragment PostBits on Post { id title score }`, `{"q":"h"}`},
		{"CreatePost", `mutation CreatePost($input: NewPost!) { createPost(input: $input) { id title } }`, `{"input":{"title":"New"}}`},
		{"Broken", `query Broken { boom }`, ``},
	}
	in := contract.NewGraphQLInferrer()
	for _, q := range queries {
		body := map[string]any{"query": q.query, "operationName": q.name}
		if q.vars != "" {
			body["variables"] = json.RawMessage(q.vars)
		}
		b, _ := json.Marshal(body)
		resp, err := client.Post(o.URL+"/graphql", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		in.Add(p.Next(t))
	}
	eps := in.Endpoints()
	if len(eps) != 1 || !strings.HasSuffix(eps[0], "/graphql") {
		t.Fatalf("endpoints %v", eps)
	}
	ops := in.Operations(eps[0])
	got := map[string]contract.GraphQLOperation{}
	for _, op := range ops {
		got[op.Type+" "+op.Name] = op
	}
	if got["query GetUser"].Count != 2 || got["mutation CreatePost"].Count != 1 || got["query Broken"].Errors != 1 {
		t.Errorf("operations %+v", ops)
	}
	if v := got["query GetUser"].Variables; v == nil || !strings.Contains(mustJSONText(v), `"id"`) {
		t.Errorf("variables %v", v)
	}
	sdl := in.SDL(eps[0])
	t.Logf("%s", sdl)
	if _, err := gqlparser.LoadSchema(&ast.Source{Name: "inferred.graphql", Input: sdl}); err != nil {
		t.Fatalf("the SDL skeleton does not load: %v", err)
	}
	for _, want := range []string{
		"user(id: ID!): User", "friends(first: Int): [User]", "age: Int", "avatar: Avatar", "url: String",
		"search(q: String!): [SearchResult] # 1 samples", "union SearchResult = Post | User", "score: Float", "createPost(input: NewPost!): CreatePost",
		"scalar NewPost",
	} {
		if !strings.Contains(sdl, want) {
			t.Errorf("SDL lacks %q", want)
		}
	}
}

func mustJSONText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
