package filter

import (
	"net/http"
	"strings"
	"testing"

	"inspector/engine/session"
)

func TestGQLAndGRPCTerms(t *testing.T) {
	post := func(id session.ID, ct, url, body string) *session.Session {
		return &session.Session{ID: id, Request: session.Request{Method: "POST", URL: url,
			Header: http.Header{"Content-Type": {ct}}, Body: session.Body{Data: []byte(body), Size: int64(len(body))}},
			Response: &session.Response{Status: 200, Header: http.Header{"Content-Type": {ct}}}}
	}
	ss := []*session.Session{
		post(1, "application/json", "https://api.x/graphql", `{"query":"mutation AddUser { add { id } }"}`),
		post(2, "application/json", "https://api.x/graphql", `[{"query":"query GetUser { u { id } }"},{"query":"subscription OnTick { t }"}]`),
		{ID: 3, Request: session.Request{Method: "GET", URL: "https://api.x/graphql?query=" + strings.ReplaceAll("query GetFeed{f}", " ", "%20")},
			Response: &session.Response{Status: 200}},
		post(4, "application/grpc", "https://rpc.x/demo.v1.Greeter/SayHello", "\x00\x00\x00\x00\x00"),
		post(5, "application/grpc-web+proto", "https://rpc.x/demo.v1.Greeter/Stream", ""),
		post(6, "application/connect+proto", "https://rpc.x/other.Svc/Do", ""),
		post(7, "application/json", "https://api.x/demo.v1.Greeter/SayHello", `{"a":1}`), // not RPC, not GraphQL
	}
	// Connect unary: application/proto with the protocol header.
	c := post(8, "application/proto", "https://rpc.x/other.Svc/Get", "")
	c.Request.Header.Set("Connect-Protocol-Version", "1")
	ss = append(ss, c)
	for expr, want := range map[string][]int{
		"gql:mutation":                 {1},
		"gql:query":                    {2, 3},
		"gql:subscription":             {2},
		"gql:GetUser":                  {2},
		"gql:getuser":                  {2},
		"gql:Get*":                     {2, 3},
		"gql:Nope":                     nil,
		"grpc:demo.v1.Greeter/*":       {4, 5},
		"grpc:*/SayHello":              {4},
		"grpc:Greeter/SayHello":        {4},
		"grpc:/demo.v1.Greeter/Stream": {5},
		"grpc:demo.v1.Greeter":         {4, 5},
		"grpc:other.*":                 {6, 8},
		"-grpc:* -gql:*":               {7},
	} {
		e, err := Parse(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if !e.NeedsSession() {
			t.Errorf("%s: must need the session", expr)
		}
		var got []int
		for _, s := range ss {
			if e.Match(s) {
				got = append(got, int(s.ID))
			}
		}
		if !equalInts(got, want) {
			t.Errorf("%s: matched %v, want %v", expr, got, want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
