package content

import (
	"strings"
	"testing"
)

func TestGraphQLRequest(t *testing.T) {
	ops, ok := GraphQLRequest("application/json", []byte(`{"query":"mutation AddUser($n: String!) { addUser(name: $n) { id } }","variables":{"n":"ann"}}`), "https://api/graphql")
	if !ok || len(ops) != 1 || ops[0].Type != "mutation" || ops[0].Name != "AddUser" || !strings.Contains(ops[0].Variables, `"n": "ann"`) {
		t.Fatalf("%+v %v", ops, ok)
	}
	if !strings.Contains(ops[0].Query, "mutation AddUser ($n: String!) {\n  addUser(name: $n) {\n    id\n  }\n}") {
		t.Errorf("pretty query:\n%s", ops[0].Query)
	}
	// A batch, with operationName picking one of several operations.
	batch := `[{"query":"query A { a } query B { b }","operationName":"B"},{"query":"{ me { id } }"},{"query":"subscription S { s }"}]`
	ops, ok = GraphQLRequest("application/json", []byte(batch), "")
	if !ok || len(ops) != 3 || ops[0].Name != "B" || ops[1].Type != "query" || ops[1].Name != "" || ops[2].Type != "subscription" {
		t.Fatalf("batch %+v", ops)
	}
	// GET ?query=
	ops, ok = GraphQLRequest("", nil, "https://api/graphql?query=query%20Q%7Bx%7D&variables=%7B%22a%22%3A1%7D")
	if !ok || ops[0].Name != "Q" || !strings.Contains(ops[0].Variables, `"a": 1`) {
		t.Fatalf("GET %+v %v", ops, ok)
	}
	// A query that does not parse keeps its text and says why.
	ops, ok = GraphQLRequest("application/json", []byte(`{"query":"mutation { broken("}`), "")
	if !ok || ops[0].Error == "" || ops[0].Type != "mutation" || ops[0].Query != "mutation { broken(" {
		t.Errorf("broken %+v", ops)
	}
	if _, ok := GraphQLRequest("application/json", []byte(`{"a":1}`), ""); ok {
		t.Error("plain JSON taken for GraphQL")
	}
	if errs := GraphQLErrors([]byte(`{"data":null,"errors":[{"message":"denied","path":["user",0]}]}`)); len(errs) != 1 || errs[0] != "denied (at user.0)" {
		t.Errorf("errors %q", errs)
	}
}
