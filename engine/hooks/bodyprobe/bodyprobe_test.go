package bodyprobe_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	et "inspector/engine/enginetest"
	"inspector/engine/hooks/breakpoint"
	"inspector/engine/hooks/rules"
)

const createUser = `{"query":"mutation CreateUser($n: String!) { createUser(name: $n) { id } }","operationName":"CreateUser","variables":{"n":"ada"}}`
const listUsers = `{"query":"query ListUsers { users { id } }","operationName":"ListUsers"}`

// bodies records what the origin received.
type bodies struct {
	mu  sync.Mutex
	got []string
}

func start(t *testing.T) (*et.Proxy, *et.Origin, *bodies) {
	b := &bodies{}
	o := et.StartOrigin(t, et.OriginH1Plain, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.got = append(b.got, string(data))
		b.mu.Unlock()
		w.Write([]byte(`{"data":{}}`))
	}))
	p := et.StartProxy(t, nil, o)
	go func() {
		for range p.Sessions {
		}
	}()
	return p, o, b
}

func post(t *testing.T, p *et.Proxy, url, body string) (int, string) {
	t.Helper()
	resp, err := p.Client(t, et.ClientH1).Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A request-stage rule whose filter names a GraphQL operation in the POST body matches,
// and the body still reaches the origin whole when the rule does not answer.
func TestRuleMatchesOnTheRequestBody(t *testing.T) {
	p, o, got := start(t)
	m, err := rules.New(filepath.Join(t.TempDir(), "rules.json"))
	if err != nil {
		t.Fatal(err)
	}
	m.Install(p.Engine)
	if _, err := m.Replace([]rules.Rule{{Kind: rules.AutoRespond, Enabled: true, Filter: "gql:CreateUser", Status: 201, Body: "mocked"}}); err != nil {
		t.Fatal(err)
	}
	if status, body := post(t, p, o.URL+"/graphql", createUser); status != 201 || body != "mocked" {
		t.Fatalf("gql:CreateUser rule: %d %q", status, body)
	}
	if status, _ := post(t, p, o.URL+"/graphql", listUsers); status != 200 {
		t.Fatalf("other operation: %d", status)
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	if len(got.got) != 1 || got.got[0] != listUsers {
		t.Fatalf("origin received %q", got.got)
	}
}

// A request breakpoint on gql:mutation pauses the mutation with its body and lets a query
// through.
func TestBreakpointMatchesOnTheRequestBody(t *testing.T) {
	p, o, got := start(t)
	m, err := breakpoint.New(filepath.Join(t.TempDir(), "bp.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Install(p.Engine)
	if _, err := m.Add(breakpoint.Breakpoint{Filter: "gql:mutation", Phase: breakpoint.PhaseRequest, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if status, _ := post(t, p, o.URL+"/graphql", listUsers); status != 200 {
		t.Fatalf("query paused or failed: %d", status)
	}
	done := make(chan int, 1)
	go func() { s, _ := post(t, p, o.URL+"/graphql", createUser); done <- s }()
	deadline := time.Now().Add(10 * time.Second)
	for len(m.List()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the mutation was not paused")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if pz := m.List()[0]; !strings.Contains(string(pz.Body), "CreateUser") {
		t.Fatalf("paused body %q", pz.Body)
	}
	m.Resume(m.List()[0].ID, nil)
	if s := <-done; s != 200 {
		t.Fatalf("resumed mutation: %d", s)
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	if len(got.got) != 2 || got.got[1] != createUser {
		t.Fatalf("origin received %q", got.got)
	}
}
