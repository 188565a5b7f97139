package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"inspector/platform"
)

// notifyFails is a proxy backend whose settings change but whose notification of running
// apps fails, like WinINet's InternetSetOptionW(INTERNET_OPTION_REFRESH) under Wine (12018).
type notifyFails struct{ value string }

func (n *notifyFails) Name() string { return "notify-fails" }
func (n *notifyFails) Snapshot(context.Context) (json.RawMessage, error) {
	return json.Marshal(n.value)
}
func (n *notifyFails) Apply(_ context.Context, addr string) error {
	n.value = "proxy " + addr
	return platform.Warn(errors.New("InternetSetOptionW(37): error 12018"))
}
func (n *notifyFails) Restore(_ context.Context, saved json.RawMessage) error {
	if err := json.Unmarshal(saved, &n.value); err != nil {
		return err
	}
	return platform.Warn(errors.New("InternetSetOptionW(37): error 12018"))
}
func (n *notifyFails) Describe(context.Context) (string, error) { return "fake: " + n.value, nil }

// TestProxyOnOffNotificationFailureIsAWarning: `proxy on` and `proxy off` succeed when
// only the notification failed, and say so on stderr.
func TestProxyOnOffNotificationFailureIsAWarning(t *testing.T) {
	b := &notifyFails{value: "corp:3128"}
	old := newSystemProxy
	newSystemProxy = func(_ context.Context, dataDir string) (*platform.Proxy, error) {
		return &platform.Proxy{DataDir: dataDir, Backends: []platform.ProxyBackend{b}}, nil
	}
	t.Cleanup(func() { newSystemProxy = old })
	dir := t.TempDir()
	code, out, errs := runCmd(t, "proxy", "on", "--data-dir", dir, "--listen", "127.0.0.1:8899")
	if code != 0 || !strings.Contains(out, "system proxy set to 127.0.0.1:8899") || !strings.Contains(errs, "warning: ") || !strings.Contains(errs, "12018") {
		t.Fatalf("proxy on: %d %q %q", code, out, errs)
	}
	if b.value != "proxy 127.0.0.1:8899" {
		t.Fatalf("backend %q", b.value)
	}
	if code, out, _ := runCmd(t, "proxy", "status", "--data-dir", dir); code != 0 || !strings.Contains(out, "set by Inspector to 127.0.0.1:8899") {
		t.Fatalf("proxy status: %d %q", code, out)
	}
	code, out, errs = runCmd(t, "proxy", "off", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "system proxy restored") || !strings.Contains(errs, "12018") || b.value != "corp:3128" {
		t.Fatalf("proxy off: %d %q %q, backend %q", code, out, errs, b.value)
	}
	if code, out, _ := runCmd(t, "proxy", "status", "--data-dir", dir); code != 0 || !strings.Contains(out, "not set by Inspector") {
		t.Fatalf("proxy status after off: %d %q", code, out)
	}
}
