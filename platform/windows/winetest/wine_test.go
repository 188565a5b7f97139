//go:build winetest

// Package winetest runs the real Windows build of Inspector under Wine in a throwaway
// WINEPREFIX: the CA in the crypt32 Root stores, HTTPS through the proxy, the WinINet
// system proxy with its journal and watchdog, and the window under Xvfb. `make
// test-windows` builds what it needs and runs it; see README "Windows under Wine".
//
// Inputs (environment):
//
//	INSPECTOR_WINE_EXE       the GUI build of cmd/inspector (inspector.exe)
//	INSPECTOR_WINE_PLATFORM  `go test -c` of platform/windows for windows (optional)
//	INSPECTOR_WINE_SHIM      bcryptprimitives.dll built from processprng.c
//	INSPECTOR_WINE_DISPLAY   the X display for the window step (e.g. :95; empty skips it)
//	INSPECTOR_WINE_OUT       where the screenshot is written (default: a temp dir)
package winetest

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

const internetSettings = `HKCU\Software\Microsoft\Windows\CurrentVersion\Internet Settings`

type wineEnv struct {
	t      *testing.T
	prefix string
	exe    string
	env    []string
}

func need(t *testing.T, name string) string {
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set; run `make test-windows`", name)
	}
	abs, err := filepath.Abs(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return abs
}

// setup makes a fresh prefix with the ProcessPrng shim in system32.
func setup(t *testing.T) *wineEnv {
	if _, err := exec.LookPath("wine"); err != nil {
		t.Fatalf("wine not installed: %v (make test-windows installs wine64)", err)
	}
	w := &wineEnv{t: t, prefix: filepath.Join(t.TempDir(), "prefix"), exe: need(t, "INSPECTOR_WINE_EXE")}
	shim := need(t, "INSPECTOR_WINE_SHIM")
	w.env = append(os.Environ(), "WINEPREFIX="+w.prefix, "WINEDEBUG=-all", "WINEARCH=win64",
		// n: our shim; mscoree/mshtml disabled so wineboot asks for no Mono or Gecko.
		"WINEDLLOVERRIDES=bcryptprimitives=n;mscoree,mshtml=", "DISPLAY=")
	start := time.Now()
	if out, err := w.run(3*time.Minute, "wineboot", "-i"); err != nil {
		t.Fatalf("wineboot: %v\n%s", err, out)
	}
	w.waitServer()
	sys32 := filepath.Join(w.prefix, "drive_c", "windows", "system32")
	data, err := os.ReadFile(shim)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sys32, "bcryptprimitives.dll"), data, 0o644); err != nil {
		t.Fatalf("installing the ProcessPrng shim: %v", err)
	}
	t.Logf("prefix ready in %v", time.Since(start).Round(time.Second))
	t.Cleanup(func() { w.run(time.Minute, "wineserver", "-k") })
	return w
}

func (w *wineEnv) waitServer() {
	if out, err := w.run(2*time.Minute, "wineserver", "-w"); err != nil {
		w.t.Fatalf("wineserver -w: %v\n%s", err, out)
	}
}

// run runs a command in the prefix with a timeout and returns its combined output. The
// output goes through a file, not a pipe: a Windows process it starts (the proxy
// watchdog) inherits Wine's Unix standard handles and outlives it, and a pipe would not
// reach EOF until that process ends.
func (w *wineEnv) run(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	f, err := os.CreateTemp("", "winetest-out-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = w.env
	cmd.Stdout, cmd.Stderr = f, f
	err = cmd.Run()
	out, _ := os.ReadFile(f.Name())
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("%s %s: no result within %v", name, strings.Join(args, " "), timeout)
	}
	return string(out), err
}

// inspector runs inspector.exe with args and fails the test on a non-zero exit.
func (w *wineEnv) inspector(args ...string) string {
	w.t.Helper()
	out, err := w.run(2*time.Minute, "wine", append([]string{w.exe}, args...)...)
	if err != nil {
		w.t.Fatalf("inspector %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.ReplaceAll(out, "\r\n", "\n")
}

// winPath is a Linux path as Wine's Z: drive shows it.
func winPath(p string) string { return "Z:" + strings.ReplaceAll(p, "/", `\`) }

// regValue reads one registry value with `wine reg query`; ok is false when it is absent.
func (w *wineEnv) regValue(key, name string) (typ, val string, ok bool) {
	w.t.Helper()
	out, err := w.run(time.Minute, "wine", "reg", "query", key, "/v", name)
	if err != nil {
		return "", "", false
	}
	re := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(name) + `\s+(REG_\w+)\s*(.*?)\r?$`)
	m := re.FindStringSubmatch(out)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

func (w *wineEnv) regKeyExists(key string) bool {
	_, err := w.run(time.Minute, "wine", "reg", "query", key)
	return err == nil
}

func (w *wineEnv) regAdd(key, name, typ, val string) {
	w.t.Helper()
	if out, err := w.run(time.Minute, "wine", "reg", "add", key, "/v", name, "/t", typ, "/d", val, "/f"); err != nil {
		w.t.Fatalf("reg add %s %s: %v\n%s", key, name, err, out)
	}
}

// proxyValues are the WinINet values Inspector changes, as `reg query` prints them.
func (w *wineEnv) proxyValues() map[string]string {
	m := map[string]string{}
	for _, n := range []string{"ProxyEnable", "ProxyServer", "ProxyOverride", "AutoConfigURL", "AutoDetect"} {
		if typ, v, ok := w.regValue(internetSettings, n); ok {
			m[n] = typ + " " + v
		}
	}
	return m
}

// waitFor polls cond every 200ms until it holds or timeout passes (a registry value or a
// file written by another process has nothing to wait on but itself).
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// headless is a running `inspector.exe --headless`.
type headless struct {
	cmd   *exec.Cmd
	addr  string
	lines chan string
	errb  *strings.Builder
}

func (w *wineEnv) startHeadless(args ...string) *headless {
	t := w.t
	t.Helper()
	cmd := exec.Command("wine", append([]string{w.exe, "--headless", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = w.env
	stdout, _ := cmd.StdoutPipe()
	h := &headless{cmd: cmd, lines: make(chan string, 100), errb: &strings.Builder{}}
	cmd.Stderr = h.errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Kill()
		select { // a watchdog it started may hold its stdout; wineserver -k ends that
		case <-done:
		case <-time.After(30 * time.Second):
		}
	})
	first := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		ok := false
		for sc.Scan() {
			l := strings.TrimRight(sc.Text(), "\r")
			if !ok {
				first <- l
				ok = true
				continue
			}
			h.lines <- l
		}
		close(h.lines)
		if !ok {
			close(first)
		}
		cmd.Wait()
	}()
	select {
	case l, ok := <-first:
		addr, found := strings.CutPrefix(l, "listening on ")
		if !ok || !found {
			t.Fatalf("inspector --headless printed %q first; stderr:\n%s", l, h.errb)
		}
		h.addr = addr
	case <-time.After(2 * time.Minute):
		t.Fatalf("inspector --headless printed nothing within 2 minutes; stderr:\n%s", h.errb)
	}
	return h
}

func (h *headless) nextLine(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			t.Fatalf("inspector exited; stderr:\n%s", h.errb)
		}
		return l
	case <-time.After(time.Minute):
		t.Fatalf("no session line within a minute; stderr:\n%s", h.errb)
	}
	return ""
}

func writePEM(t *testing.T, path string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}

func curl(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "curl", append([]string{"-sS", "--max-time", "50"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("curl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestWine(t *testing.T) {
	w := setup(t)

	if p := os.Getenv("INSPECTOR_WINE_PLATFORM"); p != "" {
		t.Run("platform-real-tests", func(t *testing.T) {
			out, err := w.run(5*time.Minute, "wine", need(t, "INSPECTOR_WINE_PLATFORM"), "-test.run", "^TestReal", "-test.v", "-test.count=1")
			t.Log(out)
			if err != nil || !strings.Contains(out, "\nPASS") {
				t.Fatalf("platform/windows real tests under Wine: %v", err)
			}
		})
	}

	t.Run("help", func(t *testing.T) {
		if out := w.inspector("help"); !strings.Contains(out, "ca install") || !strings.Contains(out, "proxy on") {
			t.Fatalf("help:\n%s", out)
		}
	})

	data := t.TempDir()
	dd := winPath(data)
	t.Run("ca-and-https", func(t *testing.T) {
		out := w.inspector("ca", "install", "--data-dir", dd)
		if !strings.Contains(out, "trusted      Windows CurrentUser Root store") {
			t.Fatalf("ca install:\n%s", out)
		}
		if out := w.inspector("ca", "status", "--data-dir", dd); !strings.Contains(out, "trusted      Windows CurrentUser Root store") {
			t.Fatalf("ca status after install:\n%s", out)
		}
		caPEM := w.inspector("ca", "export", "--data-dir", dd)
		block, _ := pem.Decode([]byte(caPEM))
		if block == nil {
			t.Fatalf("ca export printed no PEM:\n%s", caPEM)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			t.Fatal(err)
		}
		caFile := filepath.Join(t.TempDir(), "ca.pem")
		writePEM(t, caFile, block.Bytes)
		sum := sha1.Sum(block.Bytes)
		thumbKey := `HKCU\Software\Microsoft\SystemCertificates\ROOT\Certificates\` + strings.ToUpper(hex.EncodeToString(sum[:]))
		if !w.regKeyExists(thumbKey) {
			t.Fatalf("ca install wrote no %s", thumbKey)
		}

		// HTTPS through the Wine-run proxy, from curl on the Linux side.
		origin := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			io.WriteString(rw, "hello from the origin "+r.URL.Path)
		}))
		defer origin.Close()
		originCA := filepath.Join(t.TempDir(), "origin.pem")
		writePEM(t, originCA, origin.Certificate().Raw)
		h := w.startHeadless("--data-dir", dd, "--upstream-ca", winPath(originCA))
		if got := curl(t, "-x", "http://"+h.addr, "--cacert", caFile, origin.URL+"/through-wine"); got != "hello from the origin /through-wine" {
			t.Fatalf("through the proxy: %q", got)
		}
		if l := h.nextLine(t); !strings.Contains(l, "200 GET "+origin.URL+"/through-wine") {
			t.Fatalf("session line %q", l)
		}
		h.cmd.Process.Kill()

		out = w.inspector("ca", "uninstall", "--data-dir", dd)
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "trusted ") {
				t.Fatalf("ca uninstall still reports trusted:\n%s", out)
			}
		}
		st := w.inspector("ca", "status", "--data-dir", dd)
		if !strings.Contains(st, "not trusted  Windows CurrentUser Root store") || !strings.Contains(st, "not trusted  Windows LocalMachine Root store") {
			t.Fatalf("ca status after uninstall:\n%s", st)
		}
		// The second read path: the registry key behind the store is gone.
		if w.regKeyExists(thumbKey) {
			t.Fatalf("%s still exists after ca uninstall", thumbKey)
		}
	})

	// A corporate proxy and bypass list to be restored exactly.
	w.regAdd(internetSettings, "ProxyEnable", "REG_DWORD", "1")
	w.regAdd(internetSettings, "ProxyServer", "REG_SZ", "corp-proxy.example:3128")
	w.regAdd(internetSettings, "ProxyOverride", "REG_SZ", "*.corp.example;10.*;<local>")
	w.regAdd(internetSettings, "AutoConfigURL", "REG_SZ", "http://wpad.corp.example/proxy.pac")
	orig := w.proxyValues()
	t.Logf("seeded: %v", orig)

	t.Run("proxy-on-off", func(t *testing.T) {
		h := w.startHeadless("--data-dir", dd)
		out := w.inspector("proxy", "on", "--data-dir", dd)
		if !strings.Contains(out, "system proxy set to "+h.addr) {
			t.Fatalf("proxy on:\n%s", out)
		}
		if _, v, _ := w.regValue(internetSettings, "ProxyEnable"); v != "0x1" {
			t.Fatalf("ProxyEnable %q after proxy on", v)
		}
		if _, v, _ := w.regValue(internetSettings, "ProxyServer"); v != "http="+h.addr+";https="+h.addr {
			t.Fatalf("ProxyServer %q after proxy on", v)
		}
		if _, _, ok := w.regValue(internetSettings, "AutoConfigURL"); ok {
			t.Fatal("AutoConfigURL left set: a PAC would bypass Inspector")
		}
		if st := w.inspector("proxy", "status", "--data-dir", dd); !strings.Contains(st, "set by Inspector to "+h.addr) {
			t.Fatalf("proxy status:\n%s", st)
		}
		if out := w.inspector("proxy", "off", "--data-dir", dd); !strings.Contains(out, "system proxy restored") {
			t.Fatalf("proxy off:\n%s", out)
		}
		if got := w.proxyValues(); fmt.Sprint(got) != fmt.Sprint(orig) {
			t.Fatalf("after proxy off:\n got %v\nwant %v", got, orig)
		}
		if st := w.inspector("proxy", "status", "--data-dir", dd); !strings.Contains(st, "not set by Inspector") {
			t.Fatalf("proxy status after off:\n%s", st)
		}
		h.cmd.Process.Kill()
	})

	t.Run("watchdog-after-kill-9", func(t *testing.T) {
		dd2 := winPath(t.TempDir())
		h := w.startHeadless("--data-dir", dd2, "--system-proxy")
		if _, v, _ := w.regValue(internetSettings, "ProxyServer"); v != "http="+h.addr+";https="+h.addr {
			t.Fatalf("ProxyServer %q with --system-proxy", v)
		}
		if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 2*time.Minute, "the watchdog to restore the proxy settings", func() bool {
			return fmt.Sprint(w.proxyValues()) == fmt.Sprint(orig)
		})
	})

	t.Run("process-attribution", func(t *testing.T) {
		// A Windows client process (built here for windows/amd64) sends requests through
		// the Wine-run proxy; its sessions carry its name, found with GetExtendedTcpTable.
		client := filepath.Join(t.TempDir(), "wclient.exe")
		build := exec.Command("go", "build", "-o", client, "./testdata/wclient")
		build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the Windows client: %v\n%s", err, out)
		}
		origin := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "ok") }))
		defer origin.Close()
		dd3 := winPath(t.TempDir())
		h := w.startHeadless("--data-dir", dd3)
		defer h.cmd.Process.Kill()
		out, err := w.run(2*time.Minute, "wine", client, h.addr, origin.URL+"/from-windows/1", origin.URL+"/from-windows/2")
		if err != nil || strings.Count(out, "200 OK") != 2 {
			t.Fatalf("wclient: %v\n%s", err, out)
		}
		h.nextLine(t)
		h.nextLine(t)
		var lines string
		waitFor(t, time.Minute, "the client's sessions with its process name", func() bool {
			lines = w.inspector("sessions", "--json", "--data-dir", dd3, "--filter", "process:wclient path:/from-windows")
			return strings.Contains(lines, "/from-windows/") && strings.Contains(lines, "wclient")
		})
		t.Logf("attributed sessions:\n%s", lines)
	})

	if d := os.Getenv("INSPECTOR_WINE_DISPLAY"); d != "" {
		t.Run("window", func(t *testing.T) { windowStep(t, w, d) })
	}
}

// windowStep opens the window under Xvfb, sends a request through it and screenshots it.
func windowStep(t *testing.T, w *wineEnv, display string) {
	if _, err := exec.LookPath("import"); err != nil {
		t.Fatal("ImageMagick's import is not installed (make deps installs imagemagick)")
	}
	ensureXvfb(t, display)
	// The prefix's desktop started without a display (nulldrv) for the console steps; end
	// it so that the window's process starts one on the X display.
	w.run(time.Minute, "wineserver", "-k")
	w.waitServer()
	dir := t.TempDir()
	dd := winPath(dir)
	env := append(append([]string(nil), w.env...), "DISPLAY="+display)
	cmd := exec.Command("wine", w.exe, "--listen", "127.0.0.1:0", "--data-dir", dd)
	cmd.Env = env
	var errb strings.Builder
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })

	var ctl struct {
		Proxy string `json:"proxy"`
	}
	waitFor(t, 3*time.Minute, "the window's instance to write control.json", func() bool {
		select {
		case <-exited:
			t.Fatalf("the window exited:\n%s", errb.String())
		default:
		}
		data, err := os.ReadFile(filepath.Join(dir, "control.json"))
		return err == nil && json.Unmarshal(data, &ctl) == nil && ctl.Proxy != ""
	})
	shot := func(name string) string {
		out := filepath.Join(outDir(t), name)
		c := exec.Command("import", "-window", "root", out)
		c.Env = env
		if b, err := c.CombinedOutput(); err != nil {
			t.Fatalf("screenshot: %v\n%s", err, b)
		}
		return out
	}
	origin := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		io.WriteString(rw, "row")
	}))
	defer origin.Close()
	// The window takes a moment to draw its first frame; wait until the screen is not blank.
	var before string
	waitFor(t, 2*time.Minute, "the window to draw", func() bool {
		before = shot("window-before.png")
		return colours(t, before) > 8
	})
	if got := curl(t, "-x", "http://"+ctl.Proxy, origin.URL+"/captured-row"); got != "row" {
		t.Fatalf("through the window's proxy: %q", got)
	}
	var after string
	waitFor(t, time.Minute, "the captured row to appear in the window", func() bool {
		after = shot("window.png")
		return differs(t, before, after)
	})
	out, err := w.run(time.Minute, "wine", w.exe, "sessions", "--json", "--data-dir", dd)
	if err != nil || !strings.Contains(out, origin.URL+"/captured-row") {
		t.Fatalf("the window's instance does not list the row: %v\n%s", err, out)
	}
	t.Logf("screenshot: %s (%d colours)", after, colours(t, after))
}

// ensureXvfb starts Xvfb on display unless an X server already answers there, and stops
// the one it started when the test ends. A socket nobody answers on is a crashed server's
// leftover (the display is this harness's own) and is removed with its lock file.
func ensureXvfb(t *testing.T, display string) {
	n := strings.TrimPrefix(display, ":")
	sock, lock := "/tmp/.X11-unix/X"+n, "/tmp/.X"+n+"-lock"
	answers := func() bool {
		c, err := net.DialTimeout("unix", sock, 2*time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	if answers() {
		return
	}
	os.Remove(sock)
	os.Remove(lock)
	x := exec.Command("Xvfb", display, "-screen", "0", "1280x800x24", "-nolisten", "tcp")
	var errb strings.Builder
	x.Stderr = &errb
	if err := x.Start(); err != nil {
		t.Fatalf("Xvfb: %v (make test-windows installs xvfb)", err)
	}
	exited := make(chan struct{})
	go func() { x.Wait(); close(exited) }()
	t.Cleanup(func() {
		x.Process.Signal(syscall.SIGTERM) // Xvfb removes its socket and lock on TERM
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			x.Process.Kill()
			<-exited
		}
	})
	waitFor(t, 30*time.Second, "Xvfb "+display+" to start", func() bool {
		select {
		case <-exited:
			t.Fatalf("Xvfb %s exited:\n%s", display, errb.String())
		default:
		}
		return answers()
	})
}

func outDir(t *testing.T) string {
	if d := os.Getenv("INSPECTOR_WINE_OUT"); d != "" {
		os.MkdirAll(d, 0o755)
		return d
	}
	return t.TempDir()
}

// colours is the number of distinct colours in an image (ImageMagick's %k).
func colours(t *testing.T, png string) int {
	out, err := exec.Command("identify", "-format", "%k", png).Output()
	if err != nil {
		t.Fatalf("identify %s: %v", png, err)
	}
	var n int
	fmt.Sscan(string(out), &n)
	return n
}

// differs reports whether two screenshots differ in more than a handful of pixels
// (ImageMagick's compare -metric AE).
func differs(t *testing.T, a, b string) bool {
	out, _ := exec.Command("compare", "-metric", "AE", a, b, "null:").CombinedOutput()
	var n float64
	fmt.Sscan(string(out), &n)
	return n > 100
}
