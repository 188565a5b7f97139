package breakpoint_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/hooks/breakpoint"
)

// TestHooksAfterTheBreakpointRunBeforeThePause: a breakpoint's hook only marks the flow
// paused; a hook registered after it has already run when the session shows up as paused
// (its change is in the paused snapshot), at both stages, and what the user edits while
// paused is applied after it (the edit is final on the wire).
func TestHooksAfterTheBreakpointRunBeforeThePause(t *testing.T) {
	et.RequireNoLeaks(t)
	o, p, m, changed := setup(t, et.OriginH2TLS)
	if _, err := m.Add(breakpoint.Breakpoint{Filter: "path:/echo", Phase: breakpoint.PhaseBoth, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	reqRan, respRan := make(chan struct{}, 1), make(chan struct{}, 1)
	p.AddRequestHook(engine.RequestHookFunc(func(ctx context.Context, f *engine.Flow) error {
		f.Request.Header.Set("X-Later-Hook", "request")
		f.Request.Header.Set("X-Overridden", "by the hook")
		reqRan <- struct{}{}
		return nil
	}))
	p.AddResponseHook(engine.ResponseHookFunc(func(ctx context.Context, f *engine.Flow) error {
		f.Response.Header.Set("X-Later-Hook", "response")
		respRan <- struct{}{}
		return nil
	}))
	held := do(p.Client(t, et.ClientH1), mustRequest(t, o.URL+"/echo"))

	paused := waitPaused(t, m, changed, 1)[0]
	select {
	case <-reqRan:
	default:
		t.Fatal("the request hook after the breakpoint had not run when the session paused")
	}
	if paused.Phase != breakpoint.PhaseRequest || paused.Header.Get("X-Later-Hook") != "request" {
		t.Fatalf("the paused request does not show the later hook's header: %+v", paused)
	}
	h := paused.Header.Clone()
	h.Set("X-Overridden", "by the user")
	if err := m.Resume(paused.ID, &breakpoint.Edits{Header: h}); err != nil {
		t.Fatal(err)
	}

	paused = waitPaused(t, m, changed, 1)[0]
	select {
	case <-respRan:
	default:
		t.Fatal("the response hook after the breakpoint had not run when the session paused")
	}
	if paused.Phase != breakpoint.PhaseResponse || paused.Header.Get("X-Later-Hook") != "response" ||
		paused.Header.Get("X-Echo-H-X-Overridden") != "by the user" {
		t.Fatalf("the paused response: %+v", paused)
	}
	if err := m.Resume(paused.ID, nil); err != nil {
		t.Fatal(err)
	}
	r := <-held
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.resp.Header.Get("X-Later-Hook") != "response" || r.resp.Header.Get("X-Echo-H-X-Later-Hook") != "request" {
		t.Errorf("client got %v", r.resp.Header)
	}
	p.Next(t)
}

func mustRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestCloseBetweenMatchAndPause: a session matched just before Close does not wait:
// Close continued every pause, including one not yet waiting.
func TestCloseBetweenMatchAndPause(t *testing.T) {
	et.RequireNoLeaks(t)
	o, p, m, _ := setup(t, et.OriginH2TLS)
	if _, err := m.Add(breakpoint.Breakpoint{Filter: "path:/echo", Phase: breakpoint.PhaseRequest, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	p.AddRequestHook(engine.RequestHookFunc(func(ctx context.Context, f *engine.Flow) error {
		m.Close() // after the breakpoint's hook matched, before its pause waits
		return nil
	}))
	select {
	case r := <-do(p.Client(t, et.ClientH1), mustRequest(t, o.URL+"/echo")):
		if r.err != nil || r.resp.StatusCode != http.StatusOK {
			t.Fatalf("%v %v", r.resp, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the session waits at a closed manager: %+v", m.List())
	}
	p.Next(t)
}

// TestCorruptSettingsFileNamesWhere: the error names the file and the line, and the file is
// kept.
func TestCorruptSettingsFileNamesWhere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "breakpoints.json")
	bad := "{\"breakpoints\": [\n  {\"id\": 1, \"filter\": \"host:a\", \"phase\": \"request\"},\n  {\"id\": 2, \"filter\": \"(host:a\", \"phase\": \"request\"}\n]}\n"
	os.WriteFile(path, []byte(bad), 0o600)
	_, err := breakpoint.New(path)
	if err == nil || !strings.Contains(err.Error(), path+": entry 2 (id 2): breakpoint:") {
		t.Fatalf("error %v", err)
	}
	os.WriteFile(path, []byte("{\"breakpoints\": [\n  {\"id\": \"one\"}]}"), 0o600)
	if _, err := breakpoint.New(path); err == nil || !strings.Contains(err.Error(), path+": line 2, column ") {
		t.Fatalf("error %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "{\"breakpoints\": [\n  {\"id\": \"one\"}]}" {
		t.Fatalf("the corrupt file was changed: %q", b)
	}
}
