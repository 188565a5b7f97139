//go:build windows

package windows

import (
	"context"
	"os"
	"testing"

	"inspector/platform/osapi"
)

// TestRealWinINetRoundTrip changes the real HKCU Internet Settings (under Wine: the
// throwaway prefix of `make test-windows`; on a real machine only with
// INSPECTOR_TEST_REAL_PROXY=1) and restores them, with the real InternetSetOptionW refresh,
// whose failure must be a warning.
func TestRealWinINetRoundTrip(t *testing.T) {
	if os.Getenv("INSPECTOR_TEST_REAL_PROXY") != "1" {
		t.Skip("changes this user's system proxy; set INSPECTOR_TEST_REAL_PROXY=1 (the Wine harness does)")
	}
	b, err := NewProxyBackend()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before, err := b.read()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := b.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Apply(ctx, "127.0.0.1:8899"); err != nil && !osapi.IsWarning(err) {
		t.Fatal(err)
	} else if err != nil {
		t.Logf("apply warning: %v", err)
	}
	if d, _ := b.Describe(ctx); d != "Windows (WinINet): proxy "+ProxyServerValue("127.0.0.1:8899")+", bypass "+ProxyOverrideValue() {
		t.Fatalf("after apply: %s", d)
	}
	if err := b.Restore(ctx, snap); err != nil && !osapi.IsWarning(err) {
		t.Fatal(err)
	}
	after, _ := b.read()
	if len(after) != len(before) {
		t.Fatalf("restored %v, want %v", after, before)
	}
	for i := range before {
		if after[i] != before[i] {
			t.Fatalf("restored %+v, want %+v", after[i], before[i])
		}
	}
}
