//go:build linux

package platform

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"inspector/platform/linux"
	"inspector/platform/osapi"
)

// gnomeEnv points gsettings at a keyfile under a temporary HOME for this test (and for
// the child processes it starts) and returns the keyfile's path.
func gnomeEnv(t *testing.T) string {
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
	return filepath.Join(home, ".config", "glib-2.0", "settings", "keyfile")
}

func gset(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("gsettings", append([]string{"set"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("gsettings set %v: %v: %s", args, err, out)
	}
}

// setOddOriginals sets unusual user settings: a corporate manual proxy with a bypass list.
func setOddOriginals(t *testing.T) {
	gset(t, "org.gnome.system.proxy.http", "host", "proxy.corp.example")
	gset(t, "org.gnome.system.proxy.http", "port", "3128")
	gset(t, "org.gnome.system.proxy.https", "host", "secure-proxy.corp.example")
	gset(t, "org.gnome.system.proxy.https", "port", "3129")
	gset(t, "org.gnome.system.proxy", "ignore-hosts", "['*.corp.example', '10.0.0.0/8', \"it's odd\"]")
	gset(t, "org.gnome.system.proxy", "autoconfig-url", "http://wpad.corp.example/proxy.pac")
	gset(t, "org.gnome.system.proxy", "mode", "manual")
}

func gdump(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("gsettings", "list-recursively", "org.gnome.system.proxy").Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func gnomeProxy(t *testing.T, dataDir string) *Proxy {
	return &Proxy{DataDir: dataDir, Backends: []ProxyBackend{&linux.GNOME{Runner: osapi.ExecRunner{}}}}
}

func TestGNOMERoundTripOddSettings(t *testing.T) {
	keyfile := gnomeEnv(t)
	setOddOriginals(t)
	before, beforeFile := gdump(t), readFile(t, keyfile)
	ctx := context.Background()
	p := gnomeProxy(t, t.TempDir())

	if err := p.Enable(ctx, "127.0.0.1:18080"); err != nil {
		t.Fatal(err)
	}
	during := gdump(t)
	for _, want := range []string{
		"org.gnome.system.proxy mode 'manual'",
		"org.gnome.system.proxy.http host '127.0.0.1'",
		"org.gnome.system.proxy.http port 18080",
		"org.gnome.system.proxy.https host '127.0.0.1'",
		"org.gnome.system.proxy.https port 18080",
		"org.gnome.system.proxy ignore-hosts ['localhost', '127.0.0.1', '::1', '127.0.0.0/8']",
	} {
		if !strings.Contains(during, want) {
			t.Errorf("while enabled, missing %q in\n%s", want, during)
		}
	}
	fi, err := os.Stat(filepath.Join(p.DataDir, JournalFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal: %v %v", fi, err)
	}
	st, err := p.Status(ctx)
	if err != nil || !st.Set || st.Addr != "127.0.0.1:18080" || st.OwnerPID != os.Getpid() || !st.OwnerAlive {
		t.Fatalf("status %+v %v", st, err)
	}
	// A second Enable (new port) must keep the user's originals, not journal our own.
	if err := p.Enable(ctx, "127.0.0.1:18081"); err != nil {
		t.Fatal(err)
	}
	if err := p.Disable(ctx); err != nil {
		t.Fatal(err)
	}
	if after := gdump(t); after != before {
		t.Fatalf("settings not restored:\nbefore\n%s\nafter\n%s", before, after)
	}
	if afterFile := readFile(t, keyfile); afterFile != beforeFile {
		t.Fatalf("keyfile not byte-identical:\nbefore\n%s\nafter\n%s", beforeFile, afterFile)
	}
	if _, err := os.Stat(filepath.Join(p.DataDir, JournalFile)); !os.IsNotExist(err) {
		t.Fatalf("journal left behind: %v", err)
	}
	if st, _ := p.Status(ctx); st.Set || !strings.Contains(st.String(), "not set by Inspector") {
		t.Fatalf("status after disable: %s", st)
	}
}

// TestGNOMERoundTripDefaults starts from untouched settings: keys that were unset are
// reset again rather than written with their default value.
func TestGNOMERoundTripDefaults(t *testing.T) {
	keyfile := gnomeEnv(t)
	before := gdump(t)
	p := gnomeProxy(t, t.TempDir())
	ctx := context.Background()
	if err := p.Enable(ctx, "127.0.0.1:18080"); err != nil {
		t.Fatal(err)
	}
	if err := p.Disable(ctx); err != nil {
		t.Fatal(err)
	}
	if after := gdump(t); after != before {
		t.Fatalf("settings not restored:\nbefore\n%s\nafter\n%s", before, after)
	}
	// GKeyFile keeps the emptied groups; no key may remain.
	for _, l := range strings.Split(readFile(t, keyfile), "\n") {
		if strings.Contains(l, "=") {
			t.Fatalf("key left in keyfile: %q", l)
		}
	}
}

// TestHelperOwner is not a test: it is the process that sets the proxy and then gets
// SIGKILLed by TestKill9*. It runs only when started by them.
func TestHelperOwner(t *testing.T) {
	if os.Getenv("INSPECTOR_TEST_HELPER") != "owner" {
		t.Skip("helper process")
	}
	args := flagArgs()
	dataDir, withWatchdog := args[0], args[1] == "watchdog"
	p := gnomeProxy(t, dataDir)
	if err := p.Enable(context.Background(), "127.0.0.1:18080"); err != nil {
		t.Fatal(err)
	}
	if withWatchdog {
		exe, _ := os.Executable()
		_, err := StartWatchdog(exe, []string{"-test.run=^TestHelperWatchdog$", "--", dataDir, strconv.Itoa(os.Getpid())}, os.Stdout)
		if err != nil {
			t.Fatal(err)
		}
	}
	os.Stdout.WriteString("ready\n")
	select {} // until SIGKILL
}

// TestHelperWatchdog is the watchdog process of TestHelperOwner.
func TestHelperWatchdog(t *testing.T) {
	if os.Getenv("INSPECTOR_TEST_HELPER") != "owner" {
		t.Skip("helper process")
	}
	args := flagArgs()
	pid, _ := strconv.Atoi(args[1])
	if err := RunWatchdog(context.Background(), gnomeProxy(t, args[0]), pid, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("watchdog restored\n")
}

func flagArgs() []string {
	for i, a := range os.Args {
		if a == "--" {
			return os.Args[i+1:]
		}
	}
	return nil
}

// startOwner runs TestHelperOwner, waits for "ready" and SIGKILLs it. It returns the read
// end of the pipe its stdout (and its watchdog's) went to.
func killedOwner(t *testing.T, dataDir, mode string) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOwner$", "--", dataDir, mode)
	cmd.Env = append(os.Environ(), "INSPECTOR_TEST_HELPER=owner")
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// Guard against a hang only; the test waits on events, not on time.
	r.SetReadDeadline(time.Now().Add(60 * time.Second))
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("owner did not get ready: %q %v", line, err)
	}
	if !strings.Contains(gdump(t), "org.gnome.system.proxy.http host '127.0.0.1'") {
		t.Fatalf("owner did not set the proxy:\n%s", gdump(t))
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no chance to clean up
		t.Fatal(err)
	}
	cmd.Wait()
	return r
}

func TestKill9WatchdogRestores(t *testing.T) {
	keyfile := gnomeEnv(t)
	setOddOriginals(t)
	before, beforeFile := gdump(t), readFile(t, keyfile)
	dataDir := t.TempDir()

	r := killedOwner(t, dataDir, "watchdog")
	// EOF arrives when the watchdog, the last holder of the pipe, has exited.
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("waiting for the watchdog: %v (output %q)", err, rest)
	}
	if !strings.Contains(string(rest), "watchdog restored") {
		t.Fatalf("watchdog output %q", rest)
	}
	if after := gdump(t); after != before {
		t.Fatalf("watchdog did not restore:\nbefore\n%s\nafter\n%s", before, after)
	}
	if readFile(t, keyfile) != beforeFile {
		t.Fatal("keyfile not byte-identical after the watchdog restored")
	}
	if _, err := ReadJournal(dataDir); !errors.Is(err, ErrNoJournal) {
		t.Fatalf("journal after restore: %v", err)
	}
}

func TestKill9NextStartRecovers(t *testing.T) {
	gnomeEnv(t)
	setOddOriginals(t)
	before := gdump(t)
	dataDir := t.TempDir()
	killedOwner(t, dataDir, "none")

	j, err := ReadJournal(dataDir)
	if err != nil {
		t.Fatalf("journal after kill -9: %v", err)
	}
	p := gnomeProxy(t, dataDir)
	st, _ := p.Status(context.Background())
	if !st.Set || st.OwnerAlive || st.OwnerPID != j.OwnerPID || !strings.Contains(st.String(), "which is gone") {
		t.Fatalf("status of a leftover journal: %+v", st)
	}
	restored, err := p.Recover(context.Background())
	if err != nil || !restored {
		t.Fatalf("recover: %v %v", restored, err)
	}
	if after := gdump(t); after != before {
		t.Fatalf("next start did not restore:\nbefore\n%s\nafter\n%s", before, after)
	}
	if restored, err := p.Recover(context.Background()); err != nil || restored {
		t.Fatalf("second recover: %v %v", restored, err)
	}
}
