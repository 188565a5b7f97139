package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"inspector/engine/wireguard"
)

// wireguard config makes a peer once, prints its configuration (and a QR code), and keeps
// the keys 0600; bad input is a usage error that changes nothing.
func TestWireGuardConfigCommand(t *testing.T) {
	dd := t.TempDir()
	code, out, errOut := runCLI(t, "wireguard", "config", "--data-dir", dd, "--name", "phone", "--endpoint", "192.0.2.1:51820", "--qr")
	if code != 0 || !strings.Contains(out, "[Interface]") || !strings.Contains(out, "Endpoint = 192.0.2.1:51820") || !strings.Contains(out, "█") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, `added the peer "phone"`) {
		t.Fatalf("stderr %q", errOut)
	}
	fi, err := os.Stat(filepath.Join(dd, "wireguard", wireguard.KeysFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("keys %v %v", fi, err)
	}
	code, out2, errOut := runCLI(t, "wireguard", "config", "--data-dir", dd, "--name", "phone", "--endpoint", "192.0.2.1:51820")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, out2) {
		t.Fatalf("second run: exit %d %q\n%s", code, errOut, out2)
	}
	if code, _, _ := runCLI(t, "wireguard", "config", "--data-dir", dd, "--name", "a/b"); code != 2 {
		t.Fatalf("bad name: exit %d", code)
	}
	if code, _, _ := runCLI(t, "wireguard", "config", "--data-dir", dd, "--endpoint", "nope"); code != 2 {
		t.Fatalf("bad endpoint: exit %d", code)
	}
	keys, _ := wireguard.LoadKeys(filepath.Join(dd, "wireguard"))
	if len(keys.Peers) != 1 {
		t.Fatalf("%d peers after bad input", len(keys.Peers))
	}
}

// --wireguard starts WireGuard mode beside the proxy listener; a bad address is refused.
func TestWireGuardFlag(t *testing.T) {
	t.Parallel()
	h := startHeadless(t, t.TempDir(), "--wireguard", ":0")
	// stderr's line comes before stdout's "listening on"; read it once the process ended.
	h.cmd.Process.Kill()
	h.cmd.Wait()
	if !strings.Contains(h.errb.String(), "WireGuard mode on UDP port") {
		t.Fatalf("stderr %q", h.errb.String())
	}
	if code, _, errOut := runCLI(t, "--headless", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--wireguard", "127.0.0.1:51820"); code != 2 || !strings.Contains(errOut, "every address") {
		t.Fatalf("exit %d %q", code, errOut)
	}
}
