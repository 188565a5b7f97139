package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"inspector/platform"
	"inspector/platform/linux"
	"inspector/platform/osapi"
	"inspector/rootca"
)

// runCmd runs the CLI in-process and returns exit status, stdout and stderr.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	oldOut, oldErr := stdout, stderr
	stdout, stderr = &out, &errb
	defer func() { stdout, stderr = oldOut, oldErr }()
	code := run(args)
	return code, out.String(), errb.String()
}

// gnomeKeyfile sets up GNOME proxy settings in a keyfile under a temporary HOME and makes
// the proxy commands use only that backend.
func gnomeKeyfile(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("gsettings"); err != nil {
		t.Skip("gsettings not installed (package libglib2.0-bin)")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GSETTINGS_BACKEND", "keyfile")
	if err := exec.Command("gsettings", "list-keys", "org.gnome.system.proxy").Run(); err != nil {
		t.Skip("schema org.gnome.system.proxy not installed (package gsettings-desktop-schemas)")
	}
	old := newSystemProxy
	newSystemProxy = func(_ context.Context, dataDir string) (*platform.Proxy, error) {
		return &platform.Proxy{DataDir: dataDir, Backends: []platform.ProxyBackend{&linux.GNOME{Runner: osapi.ExecRunner{}}}}, nil
	}
	t.Cleanup(func() { newSystemProxy = old })
	for _, kv := range [][3]string{
		{"org.gnome.system.proxy.http", "host", "proxy.corp.example"},
		{"org.gnome.system.proxy.http", "port", "3128"},
		{"org.gnome.system.proxy", "ignore-hosts", "['*.corp.example']"},
		{"org.gnome.system.proxy", "mode", "manual"},
	} {
		if out, err := exec.Command("gsettings", "set", kv[0], kv[1], kv[2]).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
}

func gsettingsDump(t *testing.T) string {
	out, err := exec.Command("gsettings", "list-recursively", "org.gnome.system.proxy").Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestProxyOnOffStatus(t *testing.T) {
	gnomeKeyfile(t)
	before := gsettingsDump(t)
	dir := t.TempDir()

	code, _, errs := runCmd(t, "proxy", "on", "--data-dir", dir)
	if code != 2 || !strings.Contains(errs, "no running instance") {
		t.Fatalf("proxy on without instance: %d %q", code, errs)
	}
	if code, _, errs = runCmd(t, "proxy", "on", "--data-dir", dir, "--listen", "nonsense"); code != 2 {
		t.Fatalf("bad --listen: %d %q", code, errs)
	}

	// A running instance: control.json names its proxy, which accepts connections.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctl, _ := json.Marshal(map[string]string{"url": "http://127.0.0.1:1", "token": "x", "proxy": ln.Addr().String()})
	if err := os.WriteFile(filepath.Join(dir, controlFile), ctl, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(t, "proxy", "on", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "system proxy set to "+ln.Addr().String()) || !strings.Contains(out, "export http_proxy=") {
		t.Fatalf("proxy on: %d %q %q", code, out, errs)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if d := gsettingsDump(t); !strings.Contains(d, "org.gnome.system.proxy.http port "+port) {
		t.Fatalf("proxy not set:\n%s", d)
	}
	code, out, _ = runCmd(t, "proxy", "status", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "set by Inspector to "+ln.Addr().String()) || !strings.Contains(out, "GNOME: manual") {
		t.Fatalf("proxy status: %d %q", code, out)
	}
	code, out, _ = runCmd(t, "proxy", "off", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "system proxy restored") {
		t.Fatalf("proxy off: %d %q", code, out)
	}
	if after := gsettingsDump(t); after != before {
		t.Fatalf("not restored:\n%s\nwant\n%s", after, before)
	}
	code, out, _ = runCmd(t, "proxy", "off", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "nothing to restore") {
		t.Fatalf("second proxy off: %d %q", code, out)
	}
}

// TestEnableSystemProxyWatchdog runs the instance's enableSystemProxy: restore puts the
// settings back, the watchdog then exits, and recoverSystemProxy has nothing to do.
func TestEnableSystemProxyWatchdog(t *testing.T) {
	gnomeKeyfile(t)
	before := gsettingsDump(t)
	dir := t.TempDir()
	t.Setenv("INSPECTOR_TEST_WATCHDOG", "1")
	old := watchdogCommand
	watchdogCommand = func(dataDir string, pid int) (string, []string, error) {
		return os.Args[0], []string{"-test.run=^TestWatchdogHelper$", "--", "proxy", "watchdog", "--data-dir", dataDir, "--pid", strconv.Itoa(pid), "--interval", "20ms"}, nil
	}
	t.Cleanup(func() { watchdogCommand = old })

	restore, err := enableSystemProxy(dir, "127.0.0.1:18080")
	if err != nil {
		t.Fatal(err)
	}
	if d := gsettingsDump(t); !strings.Contains(d, "org.gnome.system.proxy.http port 18080") {
		t.Fatalf("proxy not set:\n%s", d)
	}
	if err := recoverSystemProxy(dir); err != nil { // owner (this process) alive: no-op
		t.Fatal(err)
	}
	if _, err := platform.ReadJournal(dir); err != nil {
		t.Fatalf("recover removed a live owner's journal: %v", err)
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if after := gsettingsDump(t); after != before {
		t.Fatalf("not restored:\n%s\nwant\n%s", after, before)
	}
	if err := recoverSystemProxy(dir); err != nil {
		t.Fatal(err)
	}
}

// TestWatchdogHelper is not a test: it is the watchdog process started by
// TestEnableSystemProxyWatchdog, running the real 'proxy watchdog' command.
func TestWatchdogHelper(t *testing.T) {
	if os.Getenv("INSPECTOR_TEST_WATCHDOG") != "1" {
		t.Skip("helper process")
	}
	for i, a := range os.Args {
		if a == "--" {
			os.Exit(run(os.Args[i+1:]))
		}
	}
	t.Fatal("no command")
}

func TestCACommandsNSS(t *testing.T) {
	if _, err := exec.LookPath("certutil"); err != nil {
		t.Skip("certutil not installed (package libnss3-tools)")
	}
	home := t.TempDir()
	db := filepath.Join(home, ".pki", "nssdb")
	os.MkdirAll(db, 0o700)
	if out, err := exec.Command("certutil", "-N", "-d", "sql:"+db, "--empty-password").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	old := newTrustStore
	newTrustStore = func(context.Context, string) (platform.TrustStore, error) {
		return &linux.NSSStore{Runner: osapi.ExecRunner{}, Home: home}, nil
	}
	t.Cleanup(func() { newTrustStore = old })
	dir := t.TempDir()

	code, out, _ := runCmd(t, "ca", "status", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "no root CA yet") {
		t.Fatalf("status without CA: %d %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "ca")); !os.IsNotExist(err) {
		t.Fatal("ca status created a CA")
	}
	code, out, errs := runCmd(t, "ca", "install", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "trusted      Chromium NSS db") {
		t.Fatalf("install: %d %q %q", code, out, errs)
	}
	ca, err := rootca.Load(filepath.Join(dir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	list, _ := exec.Command("certutil", "-L", "-d", "sql:"+db).Output()
	if !strings.Contains(string(list), osapi.Nickname(ca.Cert())) {
		t.Fatalf("not in NSS db:\n%s", list)
	}
	code, out, _ = runCmd(t, "ca", "status", "--data-dir", dir, "--json")
	var js struct {
		CA     bool
		Places []osapi.TrustPlace
	}
	if code != 0 || json.Unmarshal([]byte(out), &js) != nil || !js.CA || len(js.Places) != 1 || !js.Places[0].Trusted {
		t.Fatalf("status --json: %d %q", code, out)
	}
	code, out, _ = runCmd(t, "ca", "uninstall", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "--delete-key") {
		t.Fatalf("uninstall: %d %q", code, out)
	}
	list, _ = exec.Command("certutil", "-L", "-d", "sql:"+db).Output()
	if strings.Contains(string(list), osapi.Nickname(ca.Cert())) {
		t.Fatalf("still in NSS db:\n%s", list)
	}
	code, out, _ = runCmd(t, "ca", "uninstall", "--data-dir", dir, "--delete-key")
	if code != 0 || !strings.Contains(out, "deleted the root CA") {
		t.Fatalf("uninstall --delete-key: %d %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "ca", rootca.KeyFile)); !os.IsNotExist(err) {
		t.Fatalf("key left: %v", err)
	}
	if code, _, _ = runCmd(t, "ca", "status", "--data-dir", dir, "extra"); code != 2 {
		t.Fatalf("extra argument: exit %d, want 2", code)
	}
}
