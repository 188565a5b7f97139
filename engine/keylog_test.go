package engine_test

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"inspector/engine"
	"inspector/engine/enginetest"
)

// lockedBuf is a key-log sink shared by handshakes on many goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.Lines(l.b.String()) {
		out = append(out, line)
	}
	return out
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// TestSessionKeysAreBothLegsSecrets: a session's keys (SessionKeys, the TLS tab's "Copy
// TLS keys") are exactly the NSS lines the client wrote for its handshake with Inspector
// and the lines the origin wrote for its handshake with Inspector: the client leg's and
// the upstream leg's secrets, each under its own client random. The key-log file gets the
// same lines while it is set, none while the switch is off, and the in-memory table keeps
// working either way.
func TestSessionKeysAreBothLegsSecrets(t *testing.T) {
	var originKeys, clientKeys, file lockedBuf
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.TLS = &tls.Config{KeyLogWriter: &originKeys, NextProtos: []string{"http/1.1"}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	origin := &enginetest.Origin{Server: srv, Kind: enginetest.OriginH1TLS}
	p := enginetest.StartProxy(t, func(c *engine.Config) { c.KeyLog = &file; c.Fingerprint = "go" }, origin)
	if !p.Engine.KeyLogging() {
		t.Fatal("KeyLogging off with Config.KeyLog set")
	}
	get := func() ([]string, []string) {
		t.Helper()
		cl := p.Client(t, enginetest.ClientH1)
		tr := cl.Transport.(*http.Transport)
		tr.TLSClientConfig.KeyLogWriter = &clientKeys
		resp, err := cl.Get(srv.URL + "/k")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		tr.CloseIdleConnections()
		s := p.Next(t)
		return p.Engine.SessionKeys(s.ID)
	}
	c, u := get()
	if len(c) == 0 || len(u) == 0 {
		t.Fatalf("no keys: client leg %d lines, upstream leg %d", len(c), len(u))
	}
	if !slices.Equal(sorted(c), sorted(clientKeys.lines())) {
		t.Errorf("client leg:\n%s\nthe client wrote:\n%s", strings.Join(c, ""), strings.Join(clientKeys.lines(), ""))
	}
	if !slices.Equal(sorted(u), sorted(originKeys.lines())) {
		t.Errorf("upstream leg:\n%s\nthe origin wrote:\n%s", strings.Join(u, ""), strings.Join(originKeys.lines(), ""))
	}
	if strings.Fields(c[0])[1] == strings.Fields(u[0])[1] {
		t.Error("both legs have the same client random")
	}
	if got, want := sorted(file.lines()), sorted(append(slices.Clone(c), u...)); !slices.Equal(got, want) {
		t.Errorf("key-log file:\n%s\nwant both legs:\n%s", strings.Join(got, ""), strings.Join(want, ""))
	}

	// Switched off: the file gets nothing more; the session's keys are still there.
	p.Engine.SetKeyLog(nil)
	if p.Engine.KeyLogging() {
		t.Fatal("KeyLogging on after SetKeyLog(nil)")
	}
	before := len(file.lines())
	c2, u2 := get()
	if len(file.lines()) != before {
		t.Error("the key-log file grew while switched off")
	}
	if len(c2) == 0 || len(u2) == 0 || slices.Equal(c2, c) {
		t.Errorf("second session's keys: %d, %d lines (same as the first: %v)", len(c2), len(u2), slices.Equal(c2, c))
	}
	// Switched on again, to another file.
	var file2 lockedBuf
	p.Engine.SetKeyLog(&file2)
	c3, u3 := get()
	// The client leg is a new connection; the upstream leg may be the pooled connection
	// of the second session, whose handshake the file missed: its keys are still known.
	want := slices.Clone(c3)
	if !slices.Equal(u3, u2) {
		want = append(want, u3...)
	}
	if got := sorted(file2.lines()); !slices.Equal(got, sorted(want)) {
		t.Errorf("second file:\n%s\nwant:\n%s", strings.Join(got, ""), strings.Join(want, ""))
	}
	if c, u := p.Engine.SessionKeys(999999); c != nil || u != nil {
		t.Error("keys for an unknown session")
	}
}
