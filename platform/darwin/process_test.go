package darwin

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"inspector/platform/osapi"
)

func TestProcessOfLsof(t *testing.T) {
	client := netip.MustParseAddrPort("127.0.0.1:54321")
	proxy := netip.MustParseAddrPort("127.0.0.1:8080")
	out := "p501\ncinspector\nf9\nn127.0.0.1:8080->127.0.0.1:54321\np777\ncSafari\nf22\nn127.0.0.1:54321->127.0.0.1:8080\n"
	r := &osapi.RecordingRunner{Respond: func(osapi.Call) ([]byte, error) { return []byte(out), nil }}
	p, err := ProcessOf(context.Background(), r, client, proxy)
	if err != nil || p.PID != 777 || p.Name != "Safari" {
		t.Fatalf("ProcessOf: %+v %v", p, err)
	}
	if c := r.Calls(); len(c) != 1 || c[0] != "lsof -nP -iTCP@127.0.0.1:54321 -Fpcn" {
		t.Fatalf("command %q", c)
	}
	if got := LsofArgs(netip.MustParseAddrPort("[::1]:443")); got[1] != "-iTCP@[::1]:443" {
		t.Fatalf("v6 args %q", got)
	}
	// Nothing matches: lsof exits 1 with no output.
	none := &osapi.RecordingRunner{Respond: func(osapi.Call) ([]byte, error) { return nil, &osapi.ExitError{Cmd: "lsof"} }}
	if _, err := ProcessOf(context.Background(), none, client, proxy); !errors.Is(err, osapi.ErrNoProcess) {
		t.Fatalf("no match: %v", err)
	}
	// lsof missing is an error of its own.
	missing := &osapi.RecordingRunner{Respond: func(osapi.Call) ([]byte, error) { return nil, osapi.ErrToolMissing }}
	if _, err := ProcessOf(context.Background(), missing, client, proxy); !errors.Is(err, osapi.ErrToolMissing) {
		t.Fatalf("missing lsof: %v", err)
	}
	if _, err := ParseLsof([]byte("pxyz\n"), client, proxy); err == nil || errors.Is(err, osapi.ErrNoProcess) {
		t.Fatalf("bad output: %v", err)
	}
}
