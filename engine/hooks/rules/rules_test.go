package rules_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	et "inspector/engine/enginetest"
	"inspector/engine/hooks/rules"
	"inspector/engine/session"
)

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	return send(t, c, "GET", u, "")
}

func TestRulesThroughTheEngine(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	other := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o, other)
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "local"), 0o755)
	os.WriteFile(filepath.Join(dir, "local", "data.json"), []byte(`{"local":true}`), 0o644)
	os.WriteFile(filepath.Join(t.TempDir(), "secret"), []byte("outside"), 0o644)
	path := filepath.Join(t.TempDir(), "rules.json")
	m, err := rules.New(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AllowFolder(dir); err != nil {
		t.Fatal(err)
	}
	ou, _ := url.Parse(other.URL)
	_, err = m.Replace([]rules.Rule{
		{Kind: rules.MapRemote, Enabled: true, Filter: "path:/remote", Target: other.URL + "/echo"},
		{Kind: rules.MapLocal, Enabled: true, Filter: "path:/local/", File: dir},
		{Kind: rules.AutoRespond, Enabled: true, Filter: "path:/canned", Status: 503, Header: http.Header{"Retry-After": {"7"}}, Body: "later"},
		{Kind: rules.Header, Enabled: true, Filter: "path:/echo", HeaderName: "X-Injected", HeaderValue: "req"},
		{Kind: rules.Header, Enabled: true, Filter: "path:/echo", Phase: "response", Op: "remove", HeaderName: "X-Echo-Proto"},
		{Kind: rules.Header, Enabled: true, Filter: "status:2xx path:/echo", Phase: "response", HeaderName: "X-Resp-Rule", HeaderValue: "yes"},
		{Kind: rules.AutoRespond, Enabled: false, Filter: "path:/echo", Status: 500},
		{Kind: rules.Throttle, Enabled: true, Filter: "path:/bytes", LatencyMS: 1, BytesPerSec: 1 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Install(p.Engine)
	c := p.Client(t, et.ClientH2)

	resp, _ := get(t, c, o.URL+"/remote?q=1")
	if resp.Header.Get("X-Echo-Host") != ou.Host || resp.Header.Get("X-Echo-Proto") != "" || resp.Header.Get("X-Echo-H-X-Injected") != "req" {
		t.Errorf("map_remote + header rules: %v", resp.Header)
	}
	if s := p.Next(t); !strings.HasPrefix(s.Request.URL, other.URL+"/echo?q=1") {
		t.Errorf("session URL %s", s.Request.URL)
	}

	resp, body := get(t, c, o.URL+"/local/data.json")
	if resp.StatusCode != 200 || body != `{"local":true}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("map_local: %s %q %v", resp.Status, body, resp.Header)
	}
	if s := p.Next(t); !s.Flags.Has(session.FlagAnswered) {
		t.Error("map_local session not flagged answered")
	}
	resp, _ = get(t, c, o.URL+"/local/../../secret")
	if resp.StatusCode != 404 {
		t.Errorf("map_local left its directory: %s", resp.Status)
	}
	p.Next(t)

	resp, body = get(t, c, o.URL+"/canned")
	if resp.StatusCode != 503 || body != "later" || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("auto_respond: %s %q", resp.Status, body)
	}
	p.Next(t)

	resp, _ = get(t, c, o.URL+"/echo")
	if resp.StatusCode != 200 || resp.Header.Get("X-Resp-Rule") != "yes" {
		t.Errorf("response header rule / disabled rule: %s %v", resp.Status, resp.Header)
	}
	p.Next(t)

	resp, body = get(t, c, o.URL+"/bytes?n=100000")
	if resp.StatusCode != 200 || !bytes.Equal([]byte(body), et.Pattern(100000)) {
		t.Errorf("throttled body differs (%d bytes)", len(body))
	}
	if s := p.Next(t); s.Response.Body.Size != 100000 {
		t.Errorf("throttled capture size %d", s.Response.Body.Size)
	}

	// Saved and reloaded.
	m2, err := rules.New(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := m2.Rules(); len(got) != 8 || got[0].ID == 0 || got[7].BytesPerSec != 1<<20 {
		t.Errorf("reloaded %+v", got)
	}
}

func TestBadRules(t *testing.T) {
	m, err := rules.New("")
	if err != nil {
		t.Fatal(err)
	}
	bad := []rules.Rule{
		{Kind: "rewrite", Filter: "host:a"},
		{Kind: rules.MapRemote, Filter: "host:a", Target: "not a url"},
		{Kind: rules.MapRemote, Filter: "(host:a", Target: "http://b"},
		{Kind: rules.MapRemote, Filter: "", Target: "http://b"},
		{Kind: rules.MapLocal, Filter: "host:a", File: "relative/file"},
		{Kind: rules.AutoRespond, Filter: "host:a", Status: 42},
		{Kind: rules.AutoRespond, Filter: "host:a", Status: 200, Header: http.Header{"X": {"a\nb"}}},
		{Kind: rules.Header, Filter: "host:a", HeaderName: "Bad Name"},
		{Kind: rules.Header, Filter: "host:a", HeaderName: "X", Op: "mangle"},
		{Kind: rules.Header, Filter: "host:a", HeaderName: "X", Phase: "later"},
		{Kind: rules.Throttle, Filter: "host:a"},
		{Kind: rules.Throttle, Filter: "host:a", LatencyMS: -1},
	}
	for _, r := range bad {
		if _, err := m.Add(r); err == nil {
			t.Errorf("accepted %+v", r)
		}
	}
	if len(m.Rules()) != 0 {
		t.Error("a bad rule was stored")
	}
	if err := m.Remove(1); err == nil {
		t.Error("removed a missing rule")
	}
	p := filepath.Join(t.TempDir(), "rules.json")
	for _, s := range []string{"[", `{"rules":[{"id":1,"kind":"throttle","filter":"host:a"}]}`,
		`{"rules":[{"id":1,"kind":"header","filter":"host:a","header_name":"X"},{"id":1,"kind":"header","filter":"host:a","header_name":"Y"}]}`} {
		os.WriteFile(p, []byte(s), 0o600)
		if _, err := rules.New(p); err == nil {
			t.Errorf("loaded %s", s)
		}
	}
}

// TestLimitedReaderRate measures the throttle in a synctest bubble: 256 KiB at 64 KiB/s
// take four seconds of (fake) time, less the initial burst.
func TestLimitedReaderRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate, n = 64 << 10, 256 << 10
		start := time.Now()
		r := rules.NewLimitedReader(context.Background(), io.NopCloser(bytes.NewReader(make([]byte, n))), rate)
		got, err := io.Copy(io.Discard, r)
		if err != nil || got != n {
			t.Fatal(got, err)
		}
		el := time.Since(start)
		want := time.Duration(n-16<<10) * time.Second / rate
		if el != want {
			t.Errorf("took %v of fake time, want %v", el, want)
		}
		// Cancelling the context ends a wait.
		ctx, cancel := context.WithCancel(context.Background())
		r = rules.NewLimitedReader(ctx, io.NopCloser(bytes.NewReader(make([]byte, n))), 1)
		buf := make([]byte, 10)
		r.Read(buf) // the burst
		go cancel()
		if _, err := r.Read(buf); err != context.Canceled {
			t.Errorf("read after cancel: %v", err)
		}
	})
}

func BenchmarkRulesOnRequest(b *testing.B) {
	m, _ := rules.New("")
	for i := 0; i < 50; i++ {
		m.Add(rules.Rule{Kind: rules.Header, Enabled: true, Filter: "host:*.example" + strings.Repeat("x", i%5), HeaderName: "X", HeaderValue: "y"})
	}
	s := &session.Session{Request: session.Request{Method: "GET", URL: "https://api.example.com/v1"}}
	b.ReportAllocs()
	for b.Loop() {
		m.Match(s)
	}
}

// TestRulesPersistAndNotify: rules survive a reload with their ids, every change is
// announced, and a corrupt file is an error that names the file and the line.
func TestRulesPersistAndNotify(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rules.json")
	m, err := rules.New(p)
	if err != nil {
		t.Fatal(err)
	}
	changes := 0
	m.OnChange(func() { changes++ })
	a, _ := m.Add(rules.Rule{Kind: rules.Header, Filter: "host:a", HeaderName: "X", Enabled: true})
	b, err := m.Add(rules.Rule{Kind: rules.Throttle, Filter: "host:b", LatencyMS: 5})
	if err != nil || a == b {
		t.Fatalf("ids %d %d: %v", a, b, err)
	}
	if err := m.Remove(a); err != nil {
		t.Fatal(err)
	}
	m.Add(rules.Rule{Kind: "nonsense", Filter: "host:a"})
	if changes != 3 {
		t.Errorf("%d changes announced, want 3", changes)
	}
	m2, err := rules.New(p)
	if err != nil {
		t.Fatal(err)
	}
	if rs := m2.Rules(); len(rs) != 1 || rs[0].ID != b || rs[0].LatencyMS != 5 {
		t.Fatalf("reloaded %+v", rs)
	}
	os.WriteFile(p, []byte("{\"rules\": [\n  {\"id\": 1,}\n]}"), 0o600)
	if _, err := rules.New(p); err == nil || !strings.Contains(err.Error(), p+": line 2, column 12") {
		t.Fatalf("corrupt file: %v", err)
	}
}
