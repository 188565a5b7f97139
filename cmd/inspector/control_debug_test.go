package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	et "inspector/engine/enginetest"
	"inspector/engine/hooks/breakpoint"
	"inspector/engine/session"
	"inspector/rootca"
	"inspector/store"
)

// debugInstance is a real instance (CA, store, engine, control API with the debug
// handlers) in a temporary data directory, trusting origin's certificate.
type debugInstance struct {
	inst   *instance
	info   controlInfo
	origin *et.Origin
	proxy  *http.Client
}

func startDebugInstance(t *testing.T) *debugInstance {
	t.Helper()
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "origin.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: o.Certificate().Raw}), 0o600)
	inst, err := startInstance(dir, instanceFlags{listen: "127.0.0.1:0", upstreamCA: caFile, captureLimit: 1 << 20, upstreamProto: "auto", leafDays: rootca.MaxLeafDays})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- inst.engine.Serve() }()
	t.Cleanup(func() {
		if err := inst.shutdown(); err != nil {
			t.Error(err)
		}
		<-served
	})
	var info controlInfo
	b, err := os.ReadFile(filepath.Join(dir, controlFile))
	if err != nil || json.Unmarshal(b, &info) != nil {
		t.Fatalf("control.json: %v %s", err, b)
	}
	pu, _ := url.Parse("http://" + inst.engine.Addr())
	roots := inst.ca.Cert()
	pool := newPool(roots.Raw)
	tr := &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &debugInstance{inst: inst, info: info, origin: o, proxy: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// api calls the control API; body is marshalled to JSON unless it is a string.
func (d *debugInstance) api(t *testing.T, method, path string, body any, out any) int {
	t.Helper()
	return d.apiWith(t, d.info.Token, method, path, body, out)
}

func (d *debugInstance) apiWith(t *testing.T, token, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, d.info.URL+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	return resp.StatusCode
}

// waitPausedAPI polls GET /api/v1/paused (each poll is a real round trip) until n
// sessions wait.
func (d *debugInstance) waitPausedAPI(t *testing.T, n int) []breakpoint.Paused {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var ps []breakpoint.Paused
		if code := d.api(t, "GET", "/api/v1/paused", nil, &ps); code != 200 {
			t.Fatalf("paused: %d", code)
		}
		if len(ps) >= n {
			return ps
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d paused, want %d", len(ps), n)
		}
	}
}

type clientResult struct {
	resp *http.Response
	body []byte
	err  error
}

func (d *debugInstance) send(req *http.Request) <-chan clientResult {
	ch := make(chan clientResult, 1)
	go func() {
		resp, err := d.proxy.Do(req)
		var b []byte
		if err == nil {
			b, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		ch <- clientResult{resp, b, err}
	}()
	return ch
}

func TestControlDebugBreakpointsThroughAPI(t *testing.T) {
	d := startDebugInstance(t)
	o := d.origin

	// Without the token: 401 on every write route.
	for _, c := range [][2]string{{"POST", "/api/v1/breakpoints"}, {"GET", "/api/v1/paused"}, {"POST", "/api/v1/sessions/1/resume"},
		{"POST", "/api/v1/sessions/1/abort"}, {"POST", "/api/v1/replay"}, {"PUT", "/api/v1/rules"}, {"DELETE", "/api/v1/breakpoints/1"}} {
		if code := d.apiWith(t, "", c[0], c[1], "{}", nil); code != 401 {
			t.Errorf("%v without token: %d", c, code)
		}
	}
	// Through the proxy: refused, even with the token.
	req, _ := http.NewRequest("GET", d.info.URL+"/api/v1/paused", nil)
	req.Header.Set("Authorization", "Bearer "+d.info.Token)
	if r := <-d.send(req); r.err != nil || r.resp.StatusCode/100 == 2 {
		t.Errorf("control API through the proxy: %+v", r)
	}

	// Bad input.
	for _, b := range []string{`{"filter":"(host:a","phase":"request"}`, `{"filter":"host:a","phase":"later"}`, `{"filter":"host:a","phase":"request","bogus":1}`, `not json`} {
		if code := d.api(t, "POST", "/api/v1/breakpoints", b, nil); code != 400 {
			t.Errorf("POST breakpoints %s: %d", b, code)
		}
	}
	if code := d.api(t, "POST", "/api/v1/sessions/999/resume", nil, nil); code != 409 {
		t.Errorf("resume of a session that is not paused: %d", code)
	}
	if code := d.api(t, "POST", "/api/v1/sessions/abc/abort", nil, nil); code != 400 {
		t.Errorf("abort of a bad id: %d", code)
	}
	if code := d.api(t, "DELETE", "/api/v1/breakpoints/77", nil, nil); code != 404 {
		t.Errorf("delete of an unknown breakpoint: %d", code)
	}

	// A request breakpoint pauses one request while others complete.
	var created struct{ ID int64 }
	if code := d.api(t, "POST", "/api/v1/breakpoints", map[string]string{"filter": "path:/echo?hold", "phase": "request"}, &created); code != 200 || created.ID == 0 {
		t.Fatalf("add breakpoint: %d %+v", code, created)
	}
	req, _ = http.NewRequest("POST", o.URL+"/echo?hold", strings.NewReader("before"))
	held := d.send(req)
	p := d.waitPausedAPI(t, 1)[0]
	if p.Method != "POST" || string(p.Body) != "before" {
		t.Fatalf("paused %+v", p)
	}
	for i := 0; i < 3; i++ {
		req, _ := http.NewRequest("GET", o.URL+"/echo?free", nil)
		if r := <-d.send(req); r.err != nil || r.resp.StatusCode != 200 {
			t.Fatalf("other request while paused: %+v", r)
		}
	}
	if code := d.api(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/resume", p.ID), `{"status": 200}`, nil); code != 400 {
		t.Errorf("a response edit on a paused request: %d", code)
	}
	edits := `{"header": {"X-Edited": ["by api"]}, "body": "after edit"}`
	if code := d.api(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/resume", p.ID), edits, nil); code != 200 {
		t.Fatalf("resume: %d", code)
	}
	r := <-held
	if r.err != nil || r.resp.Header.Get("X-Echo-H-X-Edited") != "by api" || r.resp.Header.Get("X-Echo-Body-Size") != "10" {
		t.Fatalf("edited request reached the origin as %+v", r)
	}
	if code := d.api(t, "DELETE", fmt.Sprintf("/api/v1/breakpoints/%d", created.ID), nil, nil); code != 200 {
		t.Fatalf("delete: %d", code)
	}

	// A response breakpoint changes the status the client sees.
	d.api(t, "POST", "/api/v1/breakpoints", map[string]string{"filter": "path:/status", "phase": "response"}, &created)
	held = d.send(mustGet(o.URL + "/status?code=200"))
	p = d.waitPausedAPI(t, 1)[0]
	if p.Phase != breakpoint.PhaseResponse || p.Status != 200 {
		t.Fatalf("paused %+v", p)
	}
	d.api(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/resume", p.ID), `{"status": 451}`, nil)
	if r := <-held; r.err != nil || r.resp.StatusCode != 451 {
		t.Fatalf("client got %+v", r)
	}

	// Abort: the client gets no 2xx.
	held = d.send(mustGet(o.URL + "/status?code=204"))
	p = d.waitPausedAPI(t, 1)[0]
	if code := d.api(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/abort", p.ID), nil, nil); code != 200 {
		t.Fatalf("abort: %d", code)
	}
	if r := <-held; r.err == nil && r.resp.StatusCode/100 == 2 {
		t.Errorf("aborted session gave the client %s", r.resp.Status)
	}

	// Respond with a custom answer.
	held = d.send(mustGet(o.URL + "/status?code=500"))
	p = d.waitPausedAPI(t, 1)[0]
	d.api(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/respond", p.ID), `{"status": 202, "body": "custom"}`, nil)
	if r := <-held; r.err != nil || r.resp.StatusCode != 202 || string(r.body) != "custom" {
		t.Errorf("respond: %+v %q", r.resp, r.body)
	}

	// The settings survive in DATA_DIR/breakpoints.json.
	var s breakpoint.Settings
	d.api(t, "PUT", "/api/v1/breakpoints/timeout", `{"timeout": "2m", "on_timeout": "abort"}`, nil)
	d.api(t, "GET", "/api/v1/breakpoints", nil, &s)
	if len(s.Breakpoints) != 1 || time.Duration(s.Timeout) != 2*time.Minute || s.OnTimeout != breakpoint.TimeoutAbort {
		t.Errorf("settings %+v", s)
	}
	if b, err := os.ReadFile(filepath.Join(d.inst.dataDir, "breakpoints.json")); err != nil || !strings.Contains(string(b), "path:/status") {
		t.Errorf("breakpoints.json: %s %v", b, err)
	}
}

func mustGet(u string) *http.Request {
	r, err := http.NewRequest("GET", u, nil)
	if err != nil {
		panic(err)
	}
	return r
}

func TestControlDebugReplayAndRules(t *testing.T) {
	d := startDebugInstance(t)
	o := d.origin
	req, _ := http.NewRequest("PUT", o.URL+"/echo?orig", strings.NewReader("replay me"))
	req.Header.Set("X-Orig", "1")
	if r := <-d.send(req); r.err != nil || r.resp.StatusCode != 200 {
		t.Fatal(r)
	}
	var sums []session.Summary
	for len(sums) == 0 { // the store commits in batches
		d.inst.store.Flush()
		d.api(t, "GET", "/api/v1/sessions?filter=path:/echo?orig", nil, &sums)
	}
	orig := sums[0].ID

	var rr replayResponse
	if code := d.api(t, "POST", "/api/v1/replay", map[string]any{"ids": []session.ID{orig}, "count": 3, "parallel": 2}, &rr); code != 200 || len(rr.IDs) != 3 {
		t.Fatalf("replay: %d %+v", code, rr)
	}
	for _, id := range rr.IDs {
		var s session.Session
		d.inst.store.Flush()
		if code := d.api(t, "GET", fmt.Sprintf("/api/v1/sessions/%d", id), nil, &s); code != 200 || s.ReplayOf != orig ||
			string(s.Request.Body.Data) != "replay me" || s.Request.Method != "PUT" || s.Request.Header.Get("X-Orig") != "1" {
			t.Errorf("replayed session %d: %d replay_of %d %s %q", id, code, s.ReplayOf, s.Request.Method, s.Request.Body.Data)
		}
	}
	if code := d.api(t, "POST", "/api/v1/replay", `{"ids": [999999]}`, nil); code != 404 {
		t.Errorf("replay of an unknown id: %d", code)
	}
	if code := d.api(t, "POST", "/api/v1/replay", `{"ids": []}`, nil); code != 400 {
		t.Errorf("replay of nothing: %d", code)
	}
	if code := d.api(t, "POST", "/api/v1/replay", fmt.Sprintf(`{"ids": [%d], "count": -2}`, orig), nil); code != 400 {
		t.Errorf("replay with a negative count: %d", code)
	}

	// `inspector replay` goes through the running instance.
	code, out, errOut := runCLI(t, "replay", fmt.Sprint(orig), "--count", "2", "--data-dir", d.inst.dataDir)
	if code != 0 || strings.Count(out, fmt.Sprintf("#%d → #", orig)) != 2 {
		t.Errorf("replay CLI: %d %q %q", code, out, errOut)
	}
	if code, _, _ := runCLI(t, "replay", "x1", "--data-dir", d.inst.dataDir); code != 2 {
		t.Errorf("replay of a bad id: exit %d", code)
	}

	// Rules through the API.
	var added struct{ ID int64 }
	if code := d.api(t, "POST", "/api/v1/rules", `{"kind":"auto_respond","enabled":true,"filter":"path:/canned","status":418,"body":"rule"}`, &added); code != 200 || added.ID == 0 {
		t.Fatalf("add rule: %d", code)
	}
	if r := <-d.send(mustGet(o.URL + "/canned")); r.err != nil || r.resp.StatusCode != 418 || string(r.body) != "rule" {
		t.Errorf("auto_respond: %+v", r)
	}
	if code := d.api(t, "PUT", "/api/v1/rules", `{"rules":[{"kind":"throttle","filter":"host:a"}]}`, nil); code != 400 {
		t.Errorf("bad rules accepted: %d", code)
	}
	if code := d.api(t, "DELETE", fmt.Sprintf("/api/v1/rules/%d", added.ID), nil, nil); code != 200 {
		t.Errorf("delete rule: %d", code)
	}
	if r := <-d.send(mustGet(o.URL + "/canned")); r.err != nil || r.resp.StatusCode != 404 {
		t.Errorf("after delete: %+v", r)
	}
}

func TestReplayCLIInProcess(t *testing.T) {
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	dir := fillStore(t, 200)
	st := openRW(t, dir)
	s := mkSession(2, 0, nil)
	s.Request.Method, s.Request.URL, s.Response = "POST", o.URL+"/echo?cli", nil
	s.Request.Body = session.Body{Data: []byte("hello"), Size: 5}
	ids, err := st.Import([]*session.Session{s})
	if err != nil || len(ids) != 1 {
		t.Fatal(ids, err)
	}
	id := ids[0]
	st.Close()
	code, out, errOut := runCLI(t, "replay", fmt.Sprint(id), "--json", "--data-dir", dir)
	if code != 0 {
		t.Fatalf("replay: %d %q %q", code, out, errOut)
	}
	var res struct {
		Original, ID session.ID
		Status       int
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Original != id || res.ID == 0 || res.Status != 200 {
		t.Fatalf("output %q: %v", out, err)
	}
	st = openRW(t, dir)
	defer st.Close()
	ns, err := st.Get(res.ID)
	if err != nil || ns.ReplayOf != id || string(ns.Request.Body.Data) != "hello" {
		t.Fatalf("stored replay: %+v %v", ns, err)
	}
}

func newPool(der ...[]byte) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, d := range der {
		c, err := x509.ParseCertificate(d)
		if err != nil {
			panic(err)
		}
		pool.AddCert(c)
	}
	return pool
}

func openRW(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestDamagedDebugSettingsStopTheStart(t *testing.T) {
	for _, name := range []string{"breakpoints.json", "rules.json"} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, name), []byte(`{"breakpoints": [{"id": 1, "filter": "(", "phase": "request"}], "rules": [{"id": 1, "kind": "nope"}]}`), 0o600)
		inst, err := startInstance(dir, instanceFlags{listen: "127.0.0.1:0", captureLimit: 1 << 20, upstreamProto: "auto", leafDays: rootca.MaxLeafDays})
		if err == nil {
			inst.shutdown()
			t.Fatalf("started with a damaged %s", name)
		}
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
		if _, err := os.Stat(filepath.Join(dir, controlFile)); err == nil {
			t.Errorf("control.json left behind after a failed start")
		}
	}
}
