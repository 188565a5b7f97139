package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"inspector/engine"
	"inspector/engine/session"
	"inspector/rootca"
	"inspector/store"
	"inspector/ui"
	"inspector/ui/viewmodel"
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
	if d.Store == nil || d.Engine == nil || d.Events == nil || d.HAR == nil || d.CA == nil || d.OpenStore == nil {
		t.Fatalf("deps not wired: %+v", d)
	}
	// Preferences live in the data directory, not in the app's shared file.
	if _, ok := d.Prefs.(*ui.FilePrefs); !ok || d.PrefsErr != nil {
		t.Fatalf("prefs = %T, %v", d.Prefs, d.PrefsErr)
	}
	d.Prefs.SetString("probe", "x")
	if _, err := os.Stat(filepath.Join(dir, "window.json")); err != nil {
		t.Fatalf("no window.json in the data directory: %v", err)
	}
	if !bytes.Equal(d.CA(), ca.PEM()) {
		t.Fatal("the CA PEM is not the instance's")
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

// TestOpenStoreReadOnlyViewer opens another data directory's store read-only (File ▸
// Open store…); one a running instance holds, or none, gives a clear error.
func TestOpenStoreReadOnlyViewer(t *testing.T) {
	dir := t.TempDir()
	w, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Put(&session.Session{ID: w.NextID(), Request: session.Request{Method: "GET", URL: "http://example.test/v"}})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := openStoreReadOnly(dir); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("a store held by a running instance: %v", err)
	}
	w.Close()
	st, closeFn, err := openStoreReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	a := test.NewTempApp(t)
	v := ui.New(a, test.NewTempWindow(t, nil), ui.Deps{Store: st, ReadOnly: true})
	if v.Model().Len() != 1 {
		t.Fatalf("viewer lists %d sessions", v.Model().Len())
	}
	if err := st.Delete(1); err == nil {
		t.Fatal("the viewer's store accepted a delete")
	}
	if _, _, err := openStoreReadOnly(filepath.Join(dir, "nope")); err == nil {
		t.Fatal("a missing store opened")
	}
}

func TestOSAdapterNeedsCA(t *testing.T) {
	if o := newOSAdapter(&instance{dataDir: t.TempDir()}); o != nil {
		t.Fatal("adapter without a CA")
	}
}

// TestWindowHARExportMatchesTheCLI captures a 3,000,000-byte response through a real
// instance (its body beyond the 1 MiB capture limit spills to disk, then into the store),
// hands the window the session the engine publishes (which holds only the first 1 MiB in
// memory), and exports HAR from the window and with `inspector har export`: the two
// files are identical, byte for byte, and hold the whole body.
func TestWindowHARExportMatchesTheCLI(t *testing.T) {
	const size = 3_000_000
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Write(bytes.Repeat([]byte("a"), size))
	}))
	defer origin.Close()
	dir := t.TempDir()
	inst, err := startInstance(dir, instanceFlags{listen: "127.0.0.1:0", captureLimit: 1 << 20, spillLimit: 64 << 20, upstreamProto: "auto", leafDays: rootca.MaxLeafDays})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.shutdown()
	go inst.engine.Serve()
	sub := inst.engine.Subscribe(64, engine.EventComplete)
	defer sub.Close()
	// Observers are called in order on one goroutine: when this one has the session, the
	// instance's store observer has handed it to the store, and Flush commits it.
	stored := make(chan struct{}, 1)
	inst.engine.Observe(engine.ObserverFunc(func(ev engine.Event) {
		if ev.Kind == engine.EventComplete {
			select {
			case stored <- struct{}{}:
			default:
			}
		}
	}))
	u := ui.New(test.NewTempApp(t), test.NewTempWindow(t, nil), windowDeps(inst, nil))

	px, _ := url.Parse("http://" + inst.engine.Addr())
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(px)}}
	resp, err := c.Get(origin.URL + "/big")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := io.Copy(io.Discard, resp.Body); n != size {
		t.Fatalf("client read %d bytes", n)
	}
	resp.Body.Close()
	var s *session.Session
	for s == nil {
		select {
		case ev := <-sub.C:
			if ev.Kind == engine.EventComplete {
				s = ev.Session
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no completed session")
		}
	}
	if got := len(s.Response.Body.Data); got != 1<<20 || s.Response.Body.Size != size {
		t.Fatalf("the published session holds %d of %d bytes; the test needs the capped one", got, s.Response.Body.Size)
	}
	u.ApplyBatch(viewmodel.Batch{Rows: []session.Summary{s.Summarize()}, Completed: []*session.Session{s}})
	<-stored
	if err := inst.store.Flush(); err != nil {
		t.Fatal(err)
	}

	var fromWindow bytes.Buffer
	if n, err := u.ExportHAR(&fromWindow, ui.ScopeAll); err != nil || n != 1 {
		t.Fatalf("window export: %d, %v", n, err)
	}
	out := filepath.Join(t.TempDir(), "cli.har")
	if err := runHARExport([]string{"--data-dir", dir, "-o", out}); err != nil {
		t.Fatal(err)
	}
	fromCLI, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fromWindow.Bytes(), fromCLI) {
		t.Fatalf("window export (%d bytes) differs from the CLI's (%d bytes)", fromWindow.Len(), len(fromCLI))
	}
	var doc struct {
		Log struct {
			Entries []struct {
				Response struct {
					Content struct {
						Size int    `json:"size"`
						Text string `json:"text"`
					} `json:"content"`
				} `json:"response"`
			} `json:"entries"`
		} `json:"log"`
	}
	if err := json.Unmarshal(fromCLI, &doc); err != nil {
		t.Fatal(err)
	}
	if e := doc.Log.Entries; len(e) != 1 || e[0].Response.Content.Size != size || len(e[0].Response.Content.Text) != size {
		t.Fatalf("HAR body: %d entries, size %d, text %d", len(e), e[0].Response.Content.Size, len(e[0].Response.Content.Text))
	}
}
