package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"inspector/engine"
	"inspector/engine/session"
	"inspector/rootca"
	"inspector/store"
	"inspector/ui"
)

// TestWindowDepsWireTheInstance builds the window's dependencies from a real store,
// engine and CA and checks that the UI runs on them: stored sessions are listed, the
// status bar shows the proxy address, and HAR export works through store/har.
func TestWindowDepsWireTheInstance(t *testing.T) {
	dir := t.TempDir()
	ca, err := rootca.Load(filepath.Join(dir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := &session.Session{ID: st.NextID(), Request: session.Request{Method: "GET", URL: "http://example.test/x"},
		Response: &session.Response{Status: 204}}
	st.Put(s)
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Listen: "127.0.0.1:0", CA: ca, NewID: st.NextID})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(t.Context())
	inst := &instance{dataDir: dir, ca: ca, store: st, engine: eng}
	sub := eng.Subscribe(16)
	defer sub.Close()

	d := windowDeps(inst, sub.C)
	if d.Store == nil || d.Engine == nil || d.Events == nil || d.HAR == nil {
		t.Fatalf("deps not wired: %+v", d)
	}
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	u := ui.New(a, w, d)
	if u.Model().Len() != 1 || u.Model().At(0).Status != 204 {
		t.Fatalf("stored session not listed: %d rows", u.Model().Len())
	}
	var buf bytes.Buffer
	if n, err := u.ExportHAR(&buf, ui.ScopeAll); err != nil || n != 1 || !strings.Contains(buf.String(), "example.test/x") {
		t.Fatalf("export: n=%d err=%v", n, err)
	}
}

func TestOSAdapterNeedsCA(t *testing.T) {
	if o := newOSAdapter(&instance{dataDir: t.TempDir()}); o != nil {
		t.Fatal("adapter without a CA")
	}
}
