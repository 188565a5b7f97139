package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"inspector/engine/session"
	"inspector/store"
)

func TestControlAPI(t *testing.T) {
	dir := fillStore(t, 200, 404, 500, 201)
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	extra := map[string]http.Handler{
		"GET /api/v1/ping": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pong") }),
	}
	addr, stop, err := startControl(dir, "127.0.0.1:8080", st, extra)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()

	path := filepath.Join(dir, controlFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("control.json: %v, mode %v", err, fi.Mode())
	}
	var info controlInfo
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &info); err != nil || info.URL != "http://"+addr || len(info.Token) != 64 || info.Proxy != "127.0.0.1:8080" {
		t.Fatalf("control.json = %s (%v)", b, err)
	}

	get := func(p, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", info.URL+p, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, p := range []string{"/api/v1/sessions", "/api/v1/sessions/1", "/api/v1/stats", "/api/v1/ping"} {
		if code, _ := get(p, ""); code != 401 {
			t.Errorf("%s without token: %d", p, code)
		}
		if code, _ := get(p, strings.Repeat("0", 64)); code != 401 {
			t.Errorf("%s with a wrong token: %d", p, code)
		}
	}
	tok := info.Token
	code, body := get("/api/v1/sessions", tok)
	var sums []session.Summary
	if err := json.Unmarshal([]byte(body), &sums); code != 200 || err != nil || len(sums) != 4 || sums[1].Status != 404 {
		t.Fatalf("sessions: %d %v %s", code, err, body)
	}
	code, body = get("/api/v1/sessions?filter=status:4xx", tok)
	if json.Unmarshal([]byte(body), &sums); code != 200 || len(sums) != 1 || sums[0].ID != 2 {
		t.Fatalf("filter: %d %s", code, body)
	}
	code, body = get("/api/v1/sessions?after=2&limit=1", tok)
	if json.Unmarshal([]byte(body), &sums); code != 200 || len(sums) != 1 || sums[0].ID != 3 {
		t.Fatalf("after/limit: %d %s", code, body)
	}
	if code, body = get("/api/v1/sessions?after=99", tok); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("empty page: %d %q", code, body)
	}
	code, body = get("/api/v1/sessions?filter=status:4zz", tok)
	if code != 400 || !strings.Contains(body, `"error"`) || !strings.Contains(body, "filter") {
		t.Fatalf("bad filter: %d %s", code, body)
	}
	for _, q := range []string{"after=x", "limit=-1", "limit=z"} {
		if code, _ = get("/api/v1/sessions?"+q, tok); code != 400 {
			t.Errorf("?%s: %d", q, code)
		}
	}
	code, body = get("/api/v1/sessions/3", tok)
	var s session.Session
	if json.Unmarshal([]byte(body), &s); code != 200 || s.ID != 3 || s.Status() != 500 || string(s.Response.Body.Data) != `{"n":2}` {
		t.Fatalf("session 3: %d %s", code, body)
	}
	if code, body = get("/api/v1/sessions/77", tok); code != 404 || !strings.Contains(body, "no such session") {
		t.Fatalf("unknown id: %d %s", code, body)
	}
	if code, _ = get("/api/v1/sessions/abc", tok); code != 400 {
		t.Fatalf("bad id: %d", code)
	}
	code, body = get("/api/v1/stats", tok)
	var stats store.Stats
	if json.Unmarshal([]byte(body), &stats); code != 200 || stats.Sessions != 4 || !strings.Contains(body, `"sessions":4`) {
		t.Fatalf("stats: %d %s", code, body)
	}
	if code, body = get("/api/v1/ping", tok); code != 200 || body != "pong" {
		t.Fatalf("extra handler: %d %q", code, body)
	}

	// DNS rebinding: a foreign Host is refused even with the token.
	req, _ := http.NewRequest("GET", info.URL+"/api/v1/stats", nil)
	req.Host = "evil.example"
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultTransport.(*http.Transport).Clone().RoundTrip(req)
	if err != nil || resp.StatusCode != 403 {
		t.Fatalf("foreign Host: %v %v", err, resp)
	}
	resp.Body.Close()

	// The client type speaks the same API.
	c, err := newControlClient(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := c.sessions("status:5xx", 0, 0); err != nil || len(l) != 1 {
		t.Fatalf("client sessions: %v %v", l, err)
	}
	if _, err := c.sessions("(", 0, 0); err == nil || !strings.Contains(err.Error(), "HTTP 400") {
		t.Fatalf("client bad filter: %v", err)
	}
	if st, err := c.stats(); err != nil || st.Sessions != 4 {
		t.Fatalf("client stats: %+v %v", st, err)
	}

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("control.json left after stop: %v", err)
	}
	if _, err := c.stats(); err == nil {
		t.Fatal("API still answers after stop")
	}
	if _, err := newControlClient(dir); err != errNoInstance {
		t.Fatalf("newControlClient without control.json = %v", err)
	}
}

func TestControlBadExtraPattern(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := http.NotFoundHandler()
	for _, extra := range []map[string]http.Handler{
		{"GET /api/v1/stats": h}, // conflicts with a built-in
		{"BAD PATTERN WITH SPACES": h},
		{"GET /api/v1/x": nil},
	} {
		if _, _, err := startControl(dir, "", st, extra); err == nil {
			t.Errorf("startControl(%v): no error", extra)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, controlFile)); !os.IsNotExist(err) {
		t.Fatal("control.json written by a failed start")
	}
	if _, _, err := startControl(dir, "", nil, nil); err == nil {
		t.Fatal("startControl without a store: no error")
	}
}
