package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"inspector/engine"
	"inspector/engine/session"
	"inspector/rootca"
	"inspector/ui"
	"inspector/ui/viewmodel"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWindowKeyLogSwitchAndCopyTLSKeys: the window's key-log switch (ui.Deps.TLSKeys of
// a real instance started without --keylog) writes the key log while on; the TLS tab's
// Copy TLS keys puts that session's lines of both legs on the clipboard, and they are the
// lines of the key-log file for the two client randoms: the client's (as its own TLS
// stack logged them) and Inspector's towards the origin (as the origin logged them). A
// path that cannot be opened is an error that leaves the switch off; the HAR carries no
// secret.
func TestWindowKeyLogSwitchAndCopyTLSKeys(t *testing.T) {
	var originKeys, clientKeys syncBuf
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
	origin.TLS = &tls.Config{KeyLogWriter: &originKeys}
	origin.StartTLS()
	defer origin.Close()
	dir := t.TempDir()
	caFile := filepath.Join(dir, "origin-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: origin.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	inst, err := startInstance(dir, instanceFlags{listen: "127.0.0.1:0", captureLimit: 1 << 20, upstreamProto: "auto", upstreamCA: caFile, leafDays: rootca.MaxLeafDays})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.shutdown()
	go inst.engine.Serve()
	sub := inst.engine.Subscribe(64, engine.EventComplete)
	defer sub.Close()
	d := windowDeps(inst, nil)
	if d.TLSKeys == nil {
		t.Fatal("no TLS keys in the window deps")
	}
	if d.TLSKeys.KeyLogFile() != "" {
		t.Fatal("key log on without --keylog")
	}
	if err := d.TLSKeys.SetKeyLogFile(filepath.Join(dir, "no-such-dir", "k.log")); err == nil || !strings.Contains(err.Error(), "no-such-dir") {
		t.Fatalf("unwritable key log: %v", err)
	}
	if d.TLSKeys.KeyLogFile() != "" {
		t.Fatal("a failed switch left the key log on")
	}
	keylog := filepath.Join(dir, "keys.log")
	if err := d.TLSKeys.SetKeyLogFile(keylog); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(keylog); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key log file: %v %v", fi, err)
	}

	pool := x509.NewCertPool()
	pool.AddCert(inst.ca.Cert())
	px, _ := url.Parse("http://" + inst.engine.Addr())
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(px), TLSClientConfig: &tls.Config{RootCAs: pool, KeyLogWriter: &clientKeys}}}
	resp, err := c.Get(origin.URL + "/secret-path")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	var s *session.Session
	select {
	case ev := <-sub.C:
		s = ev.Session
	case <-time.After(10 * time.Second):
		t.Fatal("no completed session")
	}

	a := test.NewTempApp(t)
	u := ui.New(a, test.NewTempWindow(t, nil), d)
	u.ApplyBatch(viewmodel.Batch{Rows: []session.Summary{s.Summarize()}, Completed: []*session.Session{s}})
	u.SelectID(s.ID)
	u.CopyTLSKeys()
	copied := a.Clipboard().Content()
	var keyLines []string
	for l := range strings.Lines(copied) {
		if !strings.HasPrefix(l, "#") {
			keyLines = append(keyLines, l)
		}
	}
	if !strings.Contains(copied, "client leg") || !strings.Contains(copied, "upstream leg") || len(keyLines) < 2 {
		t.Fatalf("copied:\n%s", copied)
	}
	file, _ := os.ReadFile(keylog)
	fileLines := slices.Collect(strings.Lines(string(file)))
	for _, l := range keyLines {
		if !slices.Contains(fileLines, l) {
			t.Errorf("copied line not in the key-log file: %q", l)
		}
	}
	// Each endpoint's own lines are among the copied ones: the secrets are the right ones.
	for name, own := range map[string]string{"client": clientKeys.String(), "origin": originKeys.String()} {
		for l := range strings.Lines(own) {
			if !slices.Contains(keyLines, l) {
				t.Errorf("the %s's line %q was not copied", name, l)
			}
		}
	}
	if len(keyLines) != len(fileLines) {
		t.Errorf("copied %d lines, the file has %d (one session, one connection each leg)", len(keyLines), len(fileLines))
	}

	// Off: the file stops growing.
	if err := d.TLSKeys.SetKeyLogFile(""); err != nil || d.TLSKeys.KeyLogFile() != "" {
		t.Fatal(err)
	}
	c.Transport.(*http.Transport).CloseIdleConnections()
	if resp, err := c.Get(origin.URL + "/again"); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	<-sub.C
	if after, _ := os.ReadFile(keylog); !bytes.Equal(after, file) {
		t.Error("the key log grew after it was switched off")
	}

	// The session's HAR holds no secret.
	var har bytes.Buffer
	if _, err := u.ExportHAR(&har, ui.ScopeAll); err != nil {
		t.Fatal(err)
	}
	for _, l := range keyLines {
		if f := strings.Fields(l); strings.Contains(har.String(), f[2]) {
			t.Errorf("the HAR carries the secret of %s", f[0])
		}
	}
}
