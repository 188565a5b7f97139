package platform

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// memBackend is an in-memory ProxyBackend.
type memBackend struct {
	name     string
	value    string
	applyErr error
	applied  int
}

func (m *memBackend) Name() string { return m.name }
func (m *memBackend) Snapshot(context.Context) (json.RawMessage, error) {
	return json.Marshal(m.value)
}
func (m *memBackend) Apply(_ context.Context, addr string) error {
	if m.applyErr != nil {
		return m.applyErr
	}
	m.applied++
	m.value = "proxy " + addr
	return nil
}
func (m *memBackend) Restore(_ context.Context, saved json.RawMessage) error {
	return json.Unmarshal(saved, &m.value)
}
func (m *memBackend) Describe(context.Context) (string, error) { return m.name + ": " + m.value, nil }

func TestProxyKeepsOriginalsAcrossEnables(t *testing.T) {
	b := &memBackend{name: "mem", value: "corp"}
	p := &Proxy{DataDir: t.TempDir(), Backends: []ProxyBackend{b}}
	ctx := context.Background()
	for _, a := range []string{"127.0.0.1:1", "127.0.0.1:2"} {
		if err := p.Enable(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if b.value != "proxy 127.0.0.1:2" {
		t.Fatalf("value %q", b.value)
	}
	if err := p.Disable(ctx); err != nil || b.value != "corp" {
		t.Fatalf("disable: %v, value %q", err, b.value)
	}
	if err := p.Disable(ctx); err != nil {
		t.Fatalf("disable without journal: %v", err)
	}
}

func TestProxyApplyFailureRollsBack(t *testing.T) {
	good := &memBackend{name: "good", value: "orig"}
	bad := &memBackend{name: "bad", value: "orig2", applyErr: errors.New("denied")}
	p := &Proxy{DataDir: t.TempDir(), Backends: []ProxyBackend{good, bad}}
	err := p.Enable(context.Background(), "127.0.0.1:8080")
	if err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("enable: %v", err)
	}
	if good.value != "orig" || bad.value != "orig2" {
		t.Fatalf("not rolled back: %q %q", good.value, bad.value)
	}
	if _, err := ReadJournal(p.DataDir); !errors.Is(err, ErrNoJournal) {
		t.Fatalf("journal after rollback: %v", err)
	}
}

func TestProxyBadInput(t *testing.T) {
	p := &Proxy{DataDir: t.TempDir(), Backends: []ProxyBackend{&memBackend{name: "m"}}}
	ctx := context.Background()
	for _, a := range []string{"", "nohost", ":80", "127.0.0.1:0", "127.0.0.1:99999", "127.0.0.1:x"} {
		if err := p.Enable(ctx, a); err == nil {
			t.Errorf("Enable(%q) accepted", a)
		}
	}
	if err := (&Proxy{DataDir: t.TempDir()}).Enable(ctx, "127.0.0.1:8080"); !errors.Is(err, ErrNoProxyBackend) {
		t.Fatalf("no backends: %v", err)
	}
	os.WriteFile(filepath.Join(p.DataDir, JournalFile), []byte("{not json"), 0o600)
	if err := p.Disable(ctx); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged journal: %v", err)
	}
	os.WriteFile(filepath.Join(p.DataDir, JournalFile), []byte(`{"version":7}`), 0o600)
	if _, err := ReadJournal(p.DataDir); err == nil || !strings.Contains(err.Error(), "version 7") {
		t.Fatalf("unknown version: %v", err)
	}
}

func TestRecoverLeavesLiveAndOwnerlessJournals(t *testing.T) {
	b := &memBackend{name: "mem", value: "orig"}
	ctx := context.Background()
	for _, owner := range []int{0, -1} { // this (live) process; no owner
		p := &Proxy{DataDir: t.TempDir(), Backends: []ProxyBackend{b}, OwnerPID: owner}
		if err := p.Enable(ctx, "127.0.0.1:8080"); err != nil {
			t.Fatal(err)
		}
		if ok, err := p.Recover(ctx); ok || err != nil {
			t.Fatalf("owner %d: recovered=%v err=%v", owner, ok, err)
		}
		st, _ := p.Status(ctx)
		if !st.Set || (owner == -1) != strings.Contains(st.String(), "until 'inspector proxy off'") {
			t.Fatalf("status %s", st)
		}
		if err := p.Disable(ctx); err != nil || b.value != "orig" {
			t.Fatal(err)
		}
	}
	// A journal whose owner is gone (a pid that cannot exist) is restored, and a watchdog
	// for it restores at once.
	p := &Proxy{DataDir: t.TempDir(), Backends: []ProxyBackend{b}, OwnerPID: 1 << 30}
	if err := p.Enable(ctx, "127.0.0.1:8080"); err != nil {
		t.Fatal(err)
	}
	if err := RunWatchdog(ctx, p, 1<<30, 1); err != nil || b.value != "orig" {
		t.Fatalf("watchdog: %v %q", err, b.value)
	}
}

// failBackend fails Apply and Restore the way a backend does when the OS refuses.
type failBackend struct{ memBackend }

func (f *failBackend) Apply(context.Context, string) error { return errors.New("apply refused") }
func (f *failBackend) Restore(context.Context, json.RawMessage) error {
	return errors.New("restore refused")
}

// TestProxyFailedRollbackNeverClaimsSet: when Enable fails and its rollback fails too, the
// journal stays (for 'proxy off') but Status must not claim the proxy is set.
func TestProxyFailedRollbackNeverClaimsSet(t *testing.T) {
	p := &Proxy{DataDir: t.TempDir(), Backends: []ProxyBackend{&failBackend{memBackend{name: "f", value: "corp"}}}, OwnerPID: -1}
	ctx := context.Background()
	err := p.Enable(ctx, "127.0.0.1:8899")
	if err == nil || !strings.Contains(err.Error(), "apply refused") || !strings.Contains(err.Error(), "restore refused") {
		t.Fatalf("enable: %v", err)
	}
	if _, err := ReadJournal(p.DataDir); err != nil {
		t.Fatalf("the journal must stay so that 'proxy off' can retry: %v", err)
	}
	st, err := p.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Set || !st.Incomplete || strings.Contains(st.String(), "set by Inspector to") {
		t.Fatalf("status claims a proxy that was not set: %+v\n%s", st, st)
	}
}

// warnBackend applies and restores but its courtesy notification fails.
type warnBackend struct{ memBackend }

func (w *warnBackend) Apply(ctx context.Context, addr string) error {
	w.memBackend.Apply(ctx, addr)
	return Warn(errors.New("refresh: 12018"))
}
func (w *warnBackend) Restore(ctx context.Context, saved json.RawMessage) error {
	if err := w.memBackend.Restore(ctx, saved); err != nil {
		return err
	}
	return Warn(errors.New("refresh: 12018"))
}

// TestProxyWarningsAreNotFailures: a backend whose settings changed but whose notification
// failed is set (and restored), with the warning handed to Warn.
func TestProxyWarningsAreNotFailures(t *testing.T) {
	b := &warnBackend{memBackend{name: "w", value: "corp"}}
	var warned []error
	p := &Proxy{DataDir: t.TempDir(), Backends: []ProxyBackend{b}, OwnerPID: -1, Warn: func(e error) { warned = append(warned, e) }}
	ctx := context.Background()
	if err := p.Enable(ctx, "127.0.0.1:8899"); err != nil {
		t.Fatalf("enable failed on a warning: %v", err)
	}
	if st, _ := p.Status(ctx); !st.Set || st.Incomplete || b.value != "proxy 127.0.0.1:8899" {
		t.Fatalf("after enable: %+v, value %q", st, b.value)
	}
	if err := p.Disable(ctx); err != nil {
		t.Fatalf("disable failed on a warning: %v", err)
	}
	if _, err := ReadJournal(p.DataDir); !errors.Is(err, ErrNoJournal) || b.value != "corp" {
		t.Fatalf("after disable: journal %v, value %q", err, b.value)
	}
	if len(warned) != 2 || !strings.Contains(warned[0].Error(), "12018") {
		t.Fatalf("warnings %v", warned)
	}
	// A warning joined with a real error is a failure.
	if IsWarning(errors.Join(Warn(errors.New("w")), errors.New("real"))) || !IsWarning(errors.Join(Warn(errors.New("w")))) {
		t.Fatal("IsWarning on joined errors")
	}
}
