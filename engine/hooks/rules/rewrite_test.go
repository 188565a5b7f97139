package rules_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	et "inspector/engine/enginetest"
	"inspector/engine/hooks/rules"
	"inspector/engine/session"
)

// rewriteOrigin serves the bodies the rewrite rules work on.
func rewriteOrigin() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", et.Handler())
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<p>price: 10 EUR</p><p>tax: 2 EUR</p>`)
	})
	mux.HandleFunc("/gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, `{"flag":false}`)
		zw.Close()
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "gone", http.StatusNotFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(bytes.Repeat([]byte("EUR "), rules.MaxRewriteBody/4+10))
	})
	mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: EUR\n\n")
	})
	return mux
}

func send(t *testing.T, c *http.Client, method, u, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	if body == "" {
		req.Body = nil
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestRewriteRulesThroughTheEngine sends real requests through a proxy with each new rule
// kind, over h2 and h1, and checks what the client got and what the session recorded.
func TestRewriteRulesThroughTheEngine(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, rewriteOrigin())
	other := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o, other)
	path := filepath.Join(t.TempDir(), "rules.json")
	m, err := rules.New(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Replace([]rules.Rule{
		{Kind: rules.MapLocal, Enabled: true, Filter: "path:/inline", Body: `{"inline":true}`, Header: http.Header{"Content-Type": {"application/json"}}},
		{Kind: rules.MapLocal, Enabled: true, Filter: "path:/teapot", Status: 418, Body: "short and stout"},
		{Kind: rules.Block, Enabled: true, List: []string{"*.ads.test", o.URL + "/tracker/"}},
		{Kind: rules.Block, Enabled: true, Filter: "method:DELETE", Status: 451},
		{Kind: rules.URLRewrite, Enabled: true, Filter: "path:/v1/", Pattern: `/v1/(\w+)`, Replace: "/echo?was=$1"},
		{Kind: rules.URLRewrite, Enabled: true, Filter: "path:/broken", Pattern: `^https://`, Replace: "gopher://"},
		{Kind: rules.BodyRewrite, Enabled: true, Filter: "path:/page OR path:/gz OR path:/big OR path:/events", Phase: "response", Pattern: `(\d+) EUR|EUR|false`, Replace: "${1} USD"},
		{Kind: rules.BodyRewrite, Enabled: true, Filter: "method:POST path:/echo", Pattern: `secret`, Replace: "XXXXXX"},
		{Kind: rules.StatusRewrite, Enabled: true, Filter: "path:/missing status:404", Status: 200},
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Install(p.Engine)
	c := p.Client(t, et.ClientH2)

	resp, body := send(t, c, "GET", o.URL+"/inline/x", "")
	if resp.StatusCode != 200 || body != `{"inline":true}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("inline map_local: %s %q %v", resp.Status, body, resp.Header)
	}
	if s := p.Next(t); !s.Flags.Has(session.FlagAnswered) {
		t.Error("inline map_local not answered by the rule")
	}
	resp, body = send(t, c, "GET", o.URL+"/teapot", "")
	if resp.StatusCode != 418 || body != "short and stout" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("inline map_local with status: %s %q %v", resp.Status, body, resp.Header)
	}
	p.Next(t)

	resp, body = send(t, c, "GET", o.URL+"/tracker/pixel.gif", "")
	if resp.StatusCode != 403 || !strings.Contains(body, "block list") || resp.Header.Get("X-Inspector-Rule") == "" {
		t.Errorf("blocked URL prefix: %s %q", resp.Status, body)
	}
	if s := p.Next(t); !s.Flags.Has(session.FlagAnswered) || s.Response.Status != 403 {
		t.Errorf("blocked session: flags %v", s.Flags)
	}
	resp, body = send(t, c, "DELETE", o.URL+"/echo", "")
	if resp.StatusCode != 451 {
		t.Errorf("blocked by filter: %s %q", resp.Status, body)
	}
	p.Next(t)
	resp, _ = send(t, c, "GET", o.URL+"/trackers-are-fine", "")
	if resp.StatusCode != 404 { // the origin's own answer: not on the list
		t.Errorf("unlisted URL: %s", resp.Status)
	}
	p.Next(t)

	resp, body = send(t, c, "GET", o.URL+"/v1/users", "")
	if resp.StatusCode != 200 || !strings.Contains(body, `"/echo?was=users"`) {
		t.Errorf("url_rewrite: %s %q", resp.Status, body)
	}
	if s := p.Next(t); s.Request.URL != o.URL+"/echo?was=users" {
		t.Errorf("rewritten session URL %s", s.Request.URL)
	}
	resp, body = send(t, c, "GET", o.URL+"/broken", "")
	if resp.StatusCode != 502 || !strings.Contains(body, "gopher://") {
		t.Errorf("url_rewrite to a bad URL: %s %q", resp.Status, body)
	}
	p.Next(t)

	resp, body = send(t, c, "GET", o.URL+"/page", "")
	if body != `<p>price: 10 USD</p><p>tax: 2 USD</p>` || resp.ContentLength != int64(len(body)) {
		t.Errorf("response body_rewrite: %q (length %d)", body, resp.ContentLength)
	}
	if s := p.Next(t); s.Response.Body.Size != int64(len(body)) {
		t.Errorf("session keeps %d bytes, client got %d", s.Response.Body.Size, len(body))
	}
	resp, body = send(t, c, "GET", o.URL+"/gz", "")
	if body != `{"flag": USD}` || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip body_rewrite: %q %v", body, resp.Header)
	}
	p.Next(t)
	resp, body = send(t, c, "GET", o.URL+"/big", "")
	if len(body) != 4*(rules.MaxRewriteBody/4+10) || strings.Contains(body, "USD") {
		t.Errorf("a body over the cap was changed or cut: %d bytes", len(body))
	}
	p.Next(t)
	_, body = send(t, c, "GET", o.URL+"/events", "")
	if body != "data: EUR\n\n" {
		t.Errorf("an event stream was rewritten: %q", body)
	}
	p.Next(t)

	resp, _ = send(t, c, "POST", o.URL+"/echo", `{"password":"secret"}`)
	if resp.Header.Get("X-Echo-Body-Size") != "21" || resp.Header.Get("X-Echo-Body-Sha256") != sha(`{"password":"XXXXXX"}`) {
		t.Errorf("request body_rewrite: origin saw %s bytes, %s", resp.Header.Get("X-Echo-Body-Size"), resp.Header.Get("X-Echo-Body-Sha256"))
	}
	if s := p.Next(t); s.Request.Body.Size != 21 {
		t.Errorf("session records a request body of %d bytes, the origin got 21", s.Request.Body.Size)
	}

	resp, body = send(t, c, "GET", o.URL+"/missing", "")
	if resp.StatusCode != 200 || body != "gone\n" {
		t.Errorf("status_rewrite: %s %q", resp.Status, body)
	}
	if s := p.Next(t); s.Response.Status != 200 || s.Response.Reason != "OK" {
		t.Errorf("status_rewrite session: %d %q", s.Response.Status, s.Response.Reason)
	}

	// Over h1 too, and the rules came back from the file.
	m2, err := rules.New(path)
	if err != nil {
		t.Fatal(err)
	}
	if rs := m2.Rules(); len(rs) != 9 || rs[0].Body != `{"inline":true}` || rs[2].List[0] != "*.ads.test" || rs[6].Pattern == "" {
		t.Fatalf("reloaded %+v", rs)
	}
	c1 := p.Client(t, et.ClientH1)
	if _, body := send(t, c1, "GET", other.URL+"/v1/things", ""); !strings.Contains(body, "/echo?was=things") {
		t.Errorf("h1 url_rewrite: %q", body)
	}
	p.Next(t)
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestMapLocalInlineNeedsNoFolder: an inline body is served with no allowed folder, in a
// manager whose data directory holds the rules, while a file rule still needs one.
func TestMapLocalInlineNeedsNoFolder(t *testing.T) {
	dir := t.TempDir()
	m, err := rules.New(filepath.Join(dir, "rules.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(rules.Rule{Kind: rules.MapLocal, Enabled: true, Filter: "host:a", Body: "hi"}); err != nil {
		t.Fatalf("inline map_local refused: %v", err)
	}
	f := filepath.Join(t.TempDir(), "x.txt")
	os.WriteFile(f, []byte("x"), 0o600)
	if _, err := m.Add(rules.Rule{Kind: rules.MapLocal, Enabled: true, Filter: "host:a", File: f}); err == nil {
		t.Fatal("a file map_local outside the allowed folders was accepted")
	}
}

func TestBadRewriteRules(t *testing.T) {
	m, _ := rules.New("")
	bad := []rules.Rule{
		{Kind: rules.BodyRewrite, Filter: "host:a"},
		{Kind: rules.BodyRewrite, Filter: "host:a", Pattern: "(", Replace: "x"},
		{Kind: rules.BodyRewrite, Filter: "host:a", Pattern: "a", Phase: "both"},
		{Kind: rules.URLRewrite, Filter: "host:a", Pattern: "[z-a]"},
		{Kind: rules.URLRewrite, Filter: "", Pattern: "a"},
		{Kind: rules.StatusRewrite, Filter: "host:a"},
		{Kind: rules.StatusRewrite, Filter: "host:a", Status: 204},
		{Kind: rules.StatusRewrite, Filter: "host:a", Status: 101},
		{Kind: rules.Block},
		{Kind: rules.Block, List: []string{"  "}},
		{Kind: rules.Block, List: []string{"example.com/ads"}},
		{Kind: rules.Block, List: []string{`a"b`}},
		{Kind: rules.Block, List: []string{"https:///nohost"}},
		{Kind: rules.Block, List: []string{"a.test"}, Status: 42},
		{Kind: rules.MapLocal, Filter: "host:a", File: "/tmp/x", Body: "both"},
		{Kind: rules.MapLocal, Filter: "host:a", Body: "x", Status: 7},
	}
	for _, r := range bad {
		if _, err := m.Add(r); err == nil {
			t.Errorf("accepted %+v", r)
		}
	}
	if len(m.Rules()) != 0 {
		t.Error("a bad rule was stored")
	}
}
