package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	et "inspector/engine/enginetest"
	"inspector/store"
)

// builtBinary is the real inspector binary, built once per test run by binary() and
// removed by TestMain.
var builtBinary string

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBinary != "" {
		os.RemoveAll(filepath.Dir(builtBinary))
	}
	os.Exit(code)
}

func binary(t *testing.T) string {
	t.Helper()
	if builtBinary != "" {
		return builtBinary
	}
	dir, err := os.MkdirTemp("", "inspector-bin")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "inspector")
	out, err := exec.Command("go", "build", "-tags", "migrated_fynedo", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	builtBinary = bin
	return bin
}

// headless starts `inspector --headless` and returns its proxy address and a reader of its
// stdout lines after "listening on".
type headlessProc struct {
	cmd   *exec.Cmd
	addr  string
	lines chan string
	errb  *strings.Builder
}

func startHeadless(t *testing.T, dataDir string, args ...string) *headlessProc {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"--headless", "--listen", "127.0.0.1:0", "--data-dir", dataDir}, args...)...)
	stdout, _ := cmd.StdoutPipe()
	h := &headlessProc{cmd: cmd, lines: make(chan string, 1000), errb: &strings.Builder{}}
	cmd.Stderr = h.errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		cmd.Wait()
		t.Fatalf("no output; stderr: %s", h.errb)
	}
	first := sc.Text()
	addr, ok := strings.CutPrefix(first, "listening on ")
	if !ok {
		t.Fatalf("first line %q", first)
	}
	h.addr = addr
	go func() {
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	return h
}

func (h *headlessProc) nextLine(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			t.Fatalf("inspector exited; stderr: %s", h.errb)
		}
		return l
	case <-time.After(15 * time.Second):
		t.Fatal("no session line within 15s")
	}
	return ""
}

func TestHeadlessEndToEnd(t *testing.T) {
	data := t.TempDir()
	o2 := et.StartOrigin(t, et.OriginH2TLS, nil)
	plain := et.StartOrigin(t, et.OriginH1Plain, nil)
	untrusted := et.StartUntrustedOrigin(t, nil)
	originCA := filepath.Join(t.TempDir(), "origin.pem")
	os.WriteFile(originCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: o2.Certificate().Raw}), 0o644)

	h := startHeadless(t, data, "--upstream-ca", originCA)

	// The CA as `ca export` writes it is what the proxy signs with.
	caPEM, err := exec.Command(binary(t), "ca", "export", "--data-dir", data).Output()
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, caPEM, 0o644)
	if fi, _ := os.Stat(filepath.Join(data, "ca", "root-key.pem")); fi == nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("CA key file mode: %v", fi)
	}

	curl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("curl", append([]string{"-sS", "-x", "http://" + h.addr, "--cacert", caFile}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed (make deps installs it)")
	}
	post := filepath.Join(t.TempDir(), "post.bin")
	os.WriteFile(post, et.RandomBytes(300<<10), 0o644)
	curl("--http1.1", "--data-binary", "@"+post, "-o", "/dev/null", o2.URL+"/echo")
	if l := h.nextLine(t); !strings.Contains(l, "200 POST "+o2.URL+"/echo h1→h1") {
		t.Errorf("line %q", l)
	}
	out := curl("--http2", "-o", "-", o2.URL+"/bytes?n=1048576")
	if len(out) != 1<<20 || out != string(et.Pattern(1<<20)) {
		t.Errorf("download through h2: %d bytes", len(out))
	}
	if l := h.nextLine(t); !strings.Contains(l, "200 GET "+o2.URL+"/bytes?n=1048576 h2→h2") {
		t.Errorf("line %q", l)
	}
	curl("-o", "/dev/null", plain.URL+"/status?code=404")
	if l := h.nextLine(t); !strings.Contains(l, "404 GET "+plain.URL) {
		t.Errorf("line %q", l)
	}
	if out := curl("-o", "/dev/null", "-w", "%{http_code}", untrusted.URL+"/echo"); out != "502" {
		t.Errorf("untrusted origin: %q", out)
	}
	if l := h.nextLine(t); !strings.Contains(l, "tls") {
		t.Errorf("line %q", l)
	}

	// A second instance on the same data directory fails fast with a clear message.
	second := exec.Command(binary(t), "--headless", "--listen", "127.0.0.1:0", "--data-dir", data)
	start := time.Now()
	msg, err := second.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "already running") {
		t.Errorf("second instance: %v %s", err, msg)
	}
	t.Logf("second instance refused after %v", time.Since(start).Round(time.Millisecond))

	// SIGTERM: clean exit, everything committed.
	h.cmd.Process.Signal(syscall.SIGTERM)
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr %s", err, h.errb)
	}
	if _, err := os.Stat(filepath.Join(data, "control.json")); !os.IsNotExist(err) {
		t.Errorf("control.json left behind: %v", err)
	}
	raw, err := exec.Command(binary(t), "sessions", "--json", "--data-dir", data).Output()
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		rows = append(rows, m)
	}
	if len(rows) != 4 {
		t.Fatalf("%d sessions stored, want 4:\n%s", len(rows), raw)
	}
	for _, f := range []string{"id", "started", "method", "url", "status", "client_proto", "upstream_proto", "req_bytes", "resp_bytes", "duration_ms", "error", "replay_of", "tls"} {
		if _, ok := rows[0][f]; !ok {
			t.Errorf("sessions --json lacks %q", f)
		}
	}
	if rows[0]["req_bytes"].(float64) != 300<<10 || rows[0]["client_proto"] != "http/1.1" || rows[0]["upstream_proto"] != "http/1.1" || rows[0]["tls"] != true {
		t.Errorf("first row %v", rows[0])
	}
	if rows[3]["status"].(float64) != 0 || rows[3]["error"] == "" {
		t.Errorf("error row %v", rows[3])
	}
}

func TestPlainProxyWithGoClient(t *testing.T) {
	data := t.TempDir()
	plain := et.StartOrigin(t, et.OriginH1Plain, nil)
	h := startHeadless(t, data)
	c := &http.Client{Transport: &http.Transport{Proxy: func(*http.Request) (*urlT, error) { return parseURL("http://" + h.addr) }}}
	resp, err := c.Get(plain.URL + "/echo")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	if l := h.nextLine(t); !strings.Contains(l, "200 GET "+plain.URL+"/echo h1→h1") {
		t.Errorf("line %q", l)
	}
}

func TestRemoteListenNeedsFlag(t *testing.T) {
	cmd := exec.Command(binary(t), "--headless", "--listen", "0.0.0.0:0", "--data-dir", t.TempDir())
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--allow-remote") {
		t.Fatalf("%v: %s", err, out)
	}
}

type urlT = url.URL

func parseURL(s string) (*url.URL, error) { return url.Parse(s) }

// TestCAInstallThenCurlWithoutCACert is the user's path on Linux: `ca install` puts the
// CA in the system store, after which curl trusts the proxy with no --cacert; `ca
// uninstall` takes it away again. It changes the machine's trust store, so it needs root
// and always uninstalls.
func TestCAInstallThenCurlWithoutCACert(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to change the system trust store")
	}
	for _, tool := range []string{"curl", "update-ca-certificates"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (make deps installs it)", tool)
		}
	}
	data := t.TempDir()
	home := t.TempDir()
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	originCA := filepath.Join(t.TempDir(), "origin.pem")
	os.WriteFile(originCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: o.Certificate().Raw}), 0o644)
	h := startHeadless(t, data, "--upstream-ca", originCA)
	ca := func(verb string) string {
		cmd := exec.Command(binary(t), "ca", verb, "--data-dir", data)
		cmd.Env = append(os.Environ(), "HOME="+home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ca %s: %v\n%s", verb, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { ca("uninstall") })
	curl := func() error {
		return exec.Command("curl", "-sS", "-o", "/dev/null", "-x", "http://"+h.addr, o.URL+"/echo").Run()
	}
	if err := curl(); err == nil {
		t.Fatal("curl trusted the proxy before ca install")
	}
	if out := ca("install"); !strings.Contains(out, "trusted") {
		t.Errorf("install said %q", out)
	}
	if err := curl(); err != nil {
		t.Fatalf("curl without --cacert after ca install: %v", err)
	}
	ca("uninstall")
	if err := curl(); err == nil {
		t.Fatal("curl still trusts the proxy after ca uninstall")
	}
}

// TestLargeBodyKeptWhole: a body beyond --capture-limit is spilled to disk while it
// streams and ends up whole in the store, with nothing left in the spill folder.
func TestLargeBodyKeptWhole(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed (make deps installs it)")
	}
	data := t.TempDir()
	plain := et.StartOrigin(t, et.OriginH1Plain, nil)
	h := startHeadless(t, data, "--capture-limit", "65536")
	const n = 5_000_000
	out, err := exec.Command("curl", "-sS", "-x", "http://"+h.addr, "-o", "/dev/null", "-w", "%{size_download}", plain.URL+"/stream?n=5000000").Output()
	if err != nil || string(out) != "5000000" {
		t.Fatalf("curl: %v %s", err, out)
	}
	h.nextLine(t)
	h.cmd.Process.Signal(syscall.SIGTERM)
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("exit: %v %s", err, h.errb)
	}
	st, err := store.Open(filepath.Join(data, "sessions.db"), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := st.Get(1)
	if err != nil {
		t.Fatal(err)
	}
	b := s.Response.Body
	if b.Size != n || b.Truncated || b.Spilled != store.SpilledInStore || !bytes.Equal(b.Data, et.Pattern(n)) {
		t.Errorf("stored body: size %d, %d bytes, truncated %v, spilled %q", b.Size, len(b.Data), b.Truncated, b.Spilled)
	}
	if left, _ := os.ReadDir(filepath.Join(data, "spill")); len(left) != 0 {
		t.Errorf("spill files left: %v", left)
	}
}
