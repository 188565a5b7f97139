package script_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/hooks/script"
	"inspector/engine/session"
)

// seen is what the origin received.
type seen struct {
	Method, Path string
	Header       http.Header
	Body         string
}

type origin struct {
	*et.Origin
	mu   sync.Mutex
	reqs []seen
	// arrived is told of each request head, before the body is read.
	arrived chan struct{}
}

func startOrigin(t *testing.T) *origin {
	o := &origin{arrived: make(chan struct{}, 1)}
	o.Origin = et.StartOrigin(t, et.OriginH1Plain, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case o.arrived <- struct{}{}:
		default:
		}
		b, _ := io.ReadAll(r.Body)
		o.mu.Lock()
		o.reqs = append(o.reqs, seen{r.Method, r.URL.RequestURI(), r.Header.Clone(), string(b)})
		o.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Origin", "yes")
		w.Write([]byte(`{"price":10,"items":[1,2]}`))
	}))
	return o
}

func (o *origin) last(t *testing.T) seen {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.reqs) == 0 {
		t.Fatal("origin received nothing")
	}
	return o.reqs[len(o.reqs)-1]
}

func (o *origin) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.reqs)
}

// setup writes the scripts into a folder, starts a Manager on it and a proxy with it.
func setup(t *testing.T, opts script.Options, files map[string]string) (*script.Manager, *et.Proxy, *origin, string) {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts.Dir = dir
	if opts.PollInterval == 0 {
		opts.PollInterval = -1 // tests reload explicitly unless they test polling
	}
	m, err := script.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	o := startOrigin(t)
	p := et.StartProxy(t, nil, o.Origin)
	m.Install(p.Engine)
	return m, p, o, dir
}

func do(t *testing.T, p *et.Proxy, method, url, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := p.Client(t, et.ClientH1).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func next(t *testing.T, p *et.Proxy) *session.Session {
	t.Helper()
	return p.Next(t)
}

const stagesJS = `
exports.requestHeaders = function (flow) {
  flow.request.headers.set("X-From-Headers-Stage", "1");
  flow.request.url = flow.request.url.replace("/old", "/new");
};
exports.request = function (flow) {
  var v = flow.request.json();
  v.added = true;
  flow.request.setJSON(v);
  flow.request.method = "PUT";
  flow.tag("request rewritten");
};
function responseHeaders(flow) {
  flow.response.headers.remove("X-Origin");
  flow.response.headers.set("X-Script", "yes");
}
function response(flow) {
  var v = flow.response.json();
  v.price = v.price * 2;
  flow.response.setJSON(v);
  flow.response.status = 203;
  flow.mark("red");
}
`

func TestEachStageEditsReachTheWire(t *testing.T) {
	m, p, o, _ := setup(t, script.Options{}, map[string]string{"stages.js": stagesJS})
	if st := m.Status(); len(st) != 1 || st[0].Error != "" || len(st[0].Handlers) != 4 {
		t.Fatalf("status %+v", st)
	}
	resp, body := do(t, p, "POST", o.URL+"/old/path?q=1", `{"a":1}`, map[string]string{"Content-Type": "application/json"})
	got := o.last(t)
	if got.Method != "PUT" || got.Path != "/new/path?q=1" || got.Header.Get("X-From-Headers-Stage") != "1" {
		t.Fatalf("origin got %s %s %v", got.Method, got.Path, got.Header)
	}
	var sent map[string]any
	if err := json.Unmarshal([]byte(got.Body), &sent); err != nil || sent["added"] != true || sent["a"] != float64(1) {
		t.Fatalf("origin body %q", got.Body)
	}
	if resp.StatusCode != 203 || resp.Header.Get("X-Script") != "yes" || resp.Header.Get("X-Origin") != "" {
		t.Fatalf("client got %d %v", resp.StatusCode, resp.Header)
	}
	if !strings.Contains(body, `"price":20`) {
		t.Fatalf("client body %q", body)
	}
	s := next(t, p)
	if s.Mark != "red" || !strings.Contains(s.Comment, "request rewritten") {
		t.Fatalf("session mark %q comment %q", s.Mark, s.Comment)
	}
	// The session records what went on the wire: the edited request and response bodies.
	if !strings.Contains(string(s.Request.Body.Data), `"added":true`) || !strings.Contains(string(s.Response.Body.Data), `"price":20`) {
		t.Fatalf("recorded bodies %q / %q", s.Request.Body.Data, s.Response.Body.Data)
	}
}

func TestRespondDropAndStore(t *testing.T) {
	_, p, o, _ := setup(t, script.Options{}, map[string]string{"a.js": `
exports.request = function (flow) {
  var n = (store.get("n") || 0) + 1;
  store.set("n", n);
  flow.request.headers.set("X-Count", String(n));
  if (flow.request.url.indexOf("/answer") >= 0) {
    flow.respond(418, {"Content-Type": "text/plain"}, "answered by a script");
  }
  if (flow.request.url.indexOf("/drop") >= 0) {
    flow.drop();
  }
};`})
	do(t, p, "GET", o.URL+"/one", "", nil)
	do(t, p, "GET", o.URL+"/two", "", nil)
	if c := o.last(t).Header.Get("X-Count"); c != "2" {
		t.Fatalf("store did not last across calls: X-Count %q", c)
	}
	before := o.count()
	resp, body := do(t, p, "GET", o.URL+"/answer", "", nil)
	if resp.StatusCode != 418 || body != "answered by a script" || o.count() != before {
		t.Fatalf("respond: %d %q, origin requests %d → %d", resp.StatusCode, body, before, o.count())
	}
	resp, _ = do(t, p, "GET", o.URL+"/drop", "", nil)
	if resp.StatusCode != http.StatusBadGateway || o.count() != before {
		t.Fatalf("drop: %d, origin requests %d → %d", resp.StatusCode, before, o.count())
	}
}

func TestEndlessLoopIsInterruptedAndTrafficContinuesUnmodified(t *testing.T) {
	m, p, o, _ := setup(t, script.Options{Budget: 50 * time.Millisecond}, map[string]string{"loop.js": `
exports.request = function (flow) {
  flow.request.headers.set("X-Half-Done", "1");
  while (true) {}
};`})
	resp, _ := do(t, p, "GET", o.URL+"/x", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if o.last(t).Header.Get("X-Half-Done") != "" {
		t.Fatal("the edit of an interrupted handler reached the wire")
	}
	s := next(t, p)
	if !strings.Contains(s.Comment, "time budget of 50ms exceeded") || !strings.Contains(s.Comment, "loop.js") {
		t.Fatalf("session comment %q", s.Comment)
	}
	var logged bool
	for _, e := range m.Log() {
		if e.Error && e.Session == s.ID && fileLine.MatchString(e.Text) {
			logged = true
		}
	}
	if !logged {
		t.Fatalf("no log entry with file:line: %+v", m.Log())
	}
}

var fileLine = regexp.MustCompile(`loop\.js:\d+:\d+`)

func TestThrowKeepsTheFlowAndReportsTheLine(t *testing.T) {
	_, p, o, _ := setup(t, script.Options{}, map[string]string{"throw.js": `exports.request = function (flow) {
  flow.request.method = "DELETE";
  throw new Error("boom");
};`})
	do(t, p, "GET", o.URL+"/x", "", nil)
	if o.last(t).Method != "GET" {
		t.Fatal("a throwing handler's edit reached the wire")
	}
	if s := next(t, p); !strings.Contains(s.Comment, "boom") || !strings.Contains(s.Comment, "throw.js:3") {
		t.Fatalf("comment %q", s.Comment)
	}
}

func TestSyntaxErrorIsReportedWithItsLine(t *testing.T) {
	m, p, o, _ := setup(t, script.Options{}, map[string]string{"bad.js": "var a = 1;\nexports.request = function (flow) {\n  flow.request.headers.set(\"A\", \"1\"\n};\n"})
	st := m.Status()
	if len(st) != 1 || !strings.Contains(st[0].Error, "bad.js") || !strings.Contains(st[0].Error, "Line 4") {
		t.Fatalf("status %+v", st)
	}
	resp, _ := do(t, p, "GET", o.URL+"/x", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("a broken script stopped traffic: %d", resp.StatusCode)
	}
}

func TestReloadOnFileChange(t *testing.T) {
	m, p, o, dir := setup(t, script.Options{PollInterval: 10 * time.Millisecond}, map[string]string{"v.js": `exports.request = f => f.request.headers.set("X-V", "1");`})
	do(t, p, "GET", o.URL+"/a", "", nil)
	if v := o.last(t).Header.Get("X-V"); v != "1" {
		t.Fatalf("X-V %q", v)
	}
	loaded := m.Status()[0].Loaded
	// A different size, so the change is seen even within the file system's mtime resolution.
	if err := os.WriteFile(filepath.Join(dir, "v.js"), []byte(`exports.request = f => f.request.headers.set("X-V", "two");`), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for m.Status()[0].Loaded.Equal(loaded) {
		if time.Now().After(deadline) {
			t.Fatal("the watcher did not reload the changed file")
		}
		time.Sleep(5 * time.Millisecond)
	}
	do(t, p, "GET", o.URL+"/b", "", nil)
	if v := o.last(t).Header.Get("X-V"); v != "two" {
		t.Fatalf("after reload X-V %q", v)
	}
	// Removing the file removes its handlers.
	os.Remove(filepath.Join(dir, "v.js"))
	m.Reload()
	do(t, p, "GET", o.URL+"/c", "", nil)
	if v := o.last(t).Header.Get("X-V"); v != "" {
		t.Fatalf("removed script still ran: X-V %q", v)
	}
}

func TestScriptsHaveNoFileNetworkOrProcessAccess(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(secret, []byte("top secret"), 0o600)
	m, p, o, _ := setup(t, script.Options{}, map[string]string{"probe.js": `
exports.request = function (flow) {
  var names = ["require", "process", "fetch", "XMLHttpRequest", "setTimeout", "Deno", "Bun", "load", "readFile", "os"];
  var found = names.filter(function (n) { return typeof globalThis[n] !== "undefined"; });
  log("globals:" + JSON.stringify(found));
  try { require("fs").readFileSync(` + "`" + secret + "`" + `); log("READ"); } catch (e) { log("require failed: " + e.name); }
};`})
	do(t, p, "GET", o.URL+"/x", "", nil)
	var lines []string
	for _, e := range m.Log() {
		lines = append(lines, e.Text)
	}
	all := strings.Join(lines, "\n")
	if !strings.Contains(all, "globals:[]") || !strings.Contains(all, "require failed: ReferenceError") || strings.Contains(all, "READ") {
		t.Fatalf("log:\n%s", all)
	}
}

func TestDoneAndErrorStages(t *testing.T) {
	m, p, o, _ := setup(t, script.Options{}, map[string]string{"d.js": `
exports.done = function (s) { log("done " + s.id + " " + s.status); };
exports.error = function (s) { log("error " + s.id + " " + s.error_phase); };`})
	do(t, p, "GET", o.URL+"/ok", "", nil)
	s := next(t, p)
	o.Close() // the next request fails to dial
	do(t, p, "GET", o.URL+"/gone", "", nil)
	f := next(t, p)
	want := []string{"done " + itoa(s.ID) + " 200", "error " + itoa(f.ID) + " dial", "done " + itoa(f.ID)}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var text bytes.Buffer
		for _, e := range m.Log() {
			text.WriteString(e.Text + "\n")
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(text.String(), w)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %q lacks %q", text.String(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func itoa(id session.ID) string { b, _ := json.Marshal(uint64(id)); return string(b) }

// Overhead on the keep-alive path: no script, a no-op script, a header-rewriting script.
func benchScript(b *testing.B, src string) {
	o := et.StartOrigin(b, et.OriginH1Plain, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	p := et.StartProxy(b, func(c *engine.Config) {}, o)
	go func() {
		for range p.Sessions {
		}
	}()
	if src != "" {
		dir := b.TempDir()
		os.WriteFile(filepath.Join(dir, "s.js"), []byte(src), 0o644)
		m, err := script.New(script.Options{Dir: dir, PollInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(m.Close)
		m.Install(p.Engine)
	}
	c := p.Client(b, et.ClientH1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := c.Get(o.URL + "/x")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func BenchmarkKeepAliveNoScript(b *testing.B) { benchScript(b, "") }
func BenchmarkKeepAliveNoopScript(b *testing.B) {
	benchScript(b, `exports.request = function (f) {}; exports.response = function (f) {};`)
}
func BenchmarkKeepAliveHeaderRewrite(b *testing.B) {
	benchScript(b, `exports.request = function (f) { f.request.headers.set("X-A", "1"); };
exports.response = function (f) { f.response.headers.set("X-B", "2"); f.response.headers.remove("Date"); };`)
}

// The examples in docs/scripts load without errors and define handlers.
func TestDocumentedExamplesLoad(t *testing.T) {
	m, err := script.New(script.Options{Dir: filepath.Join("..", "..", "..", "docs", "scripts"), PollInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	st := m.Status()
	if len(st) < 5 {
		t.Fatalf("examples: %+v", st)
	}
	for _, s := range st {
		if s.Error != "" || len(s.Handlers) == 0 {
			t.Errorf("%s: error %q, handlers %v", s.File, s.Error, s.Handlers)
		}
	}
}

// TestBodiesStreamUnlessAScriptWantsThem: the Manager sits on the engine's named stages
// and takes the body stages only while a script has a request handler: with only a
// requestHeaders handler the request body streams (the client writes it only once the
// origin has the request head), with a request handler the script reads the buffered
// body, and after a reload without it bodies stream again.
func TestBodiesStreamUnlessAScriptWantsThem(t *testing.T) {
	const headersOnly = `exports.requestHeaders = function (flow) { flow.request.headers.set("X-Seen", "1"); };`
	const withBody = `exports.request = function (flow) { flow.request.headers.set("X-Body", flow.request.text()); };`
	m, p, o, dir := setup(t, script.Options{}, map[string]string{"a.js": headersOnly})
	streamed := func() {
		t.Helper()
		for len(o.arrived) > 0 {
			<-o.arrived
		}
		pr, pw := io.Pipe()
		go func() {
			select {
			case <-o.arrived: // a proxy buffering the body would never let the head through
				pw.Write([]byte("late body"))
				pw.Close()
			case <-time.After(10 * time.Second): // a failure guard, not a wait
				pw.CloseWithError(errors.New("the origin never got the request head: the body was buffered"))
			}
		}()
		resp, err := p.Client(t, et.ClientH1).Post(o.URL+"/stream", "text/plain", pr)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		next(t, p)
		if got := o.last(t); got.Body != "late body" || got.Header.Get("X-Seen") != "1" {
			t.Fatalf("origin got %q %v", got.Body, got.Header)
		}
	}
	streamed()

	if err := os.WriteFile(filepath.Join(dir, "a.js"), []byte(withBody), 0o644); err != nil {
		t.Fatal(err)
	}
	m.Reload()
	do(t, p, "POST", o.URL+"/buffered", "whole body", nil)
	next(t, p)
	if got := o.last(t); got.Header.Get("X-Body") != "whole body" {
		t.Fatalf("the request handler saw %q", got.Header.Get("X-Body"))
	}

	if err := os.WriteFile(filepath.Join(dir, "a.js"), []byte(headersOnly), 0o644); err != nil {
		t.Fatal(err)
	}
	m.Reload()
	streamed()
}
