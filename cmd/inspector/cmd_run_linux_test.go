package main

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"golang.org/x/net/dns/dnsmessage"

	et "inspector/engine/enginetest"
	"inspector/engine/session"
	"inspector/platform/linux"
	"inspector/store"
)

// needNetns skips when this process may not make network namespaces.
func needNetns(t *testing.T) {
	t.Helper()
	if err := linux.NetnsSupported(); err != nil {
		t.Skipf("skipped: inspector run needs network namespaces here: %v", err)
	}
}

func originPEM(t *testing.T, o *et.Origin) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "origin.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: o.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runInspector runs `inspector run ARGS` to its end (2 minutes at most).
func runInspector(t *testing.T, env []string, args ...string) (code int, out, errOut string) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"run"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), o.String(), e.String()
}

func storedSessions(t *testing.T, dataDir string) []*session.Session {
	t.Helper()
	st, err := store.Open(filepath.Join(dataDir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sums, err := st.List(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*session.Session
	for _, s := range sums {
		full, err := st.Get(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, full)
	}
	return out
}

// `inspector run -- curl https://…` with no proxy flag: the session is captured,
// decrypted and complete, and carries curl's name.
func TestRunCapturesCurl(t *testing.T) {
	needNetns(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("skipped: curl is not installed (make deps installs it)")
	}
	t.Parallel()
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	dd := t.TempDir()
	code, out, errOut := runInspector(t, nil, "--data-dir", dd, "--upstream-ca", originPEM(t, o), "--",
		"curl", "-sS", "--http2", "-o", "/dev/null", "-w", "%{http_code} %{http_version}", o.URL+"/echo?from=curl")
	if code != 0 || out != "200 2" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "1 session captured from curl") {
		t.Fatalf("stderr %q", errOut)
	}
	ss := storedSessions(t, dd)
	if len(ss) != 1 {
		t.Fatalf("%d sessions", len(ss))
	}
	s := ss[0]
	if s.Request.URL != o.URL+"/echo?from=curl" || s.Response == nil || s.Response.Status != 200 || s.Error != nil {
		t.Fatalf("session %s %+v %+v", s.Request.URL, s.Response, s.Error)
	}
	if s.Client.Process != "curl" || s.Client.TLS == nil || s.Request.Proto != "h2" {
		t.Fatalf("client %+v proto %s", s.Client, s.Request.Proto)
	}
	if s.Response.Header.Get("X-Echo-Proto") == "" {
		t.Fatalf("the origin's response is incomplete: %v", s.Response.Header)
	}
}

// startTestResolver is a real UDP DNS server on 127.0.0.1:0 answering every A query with
// 127.0.0.1.
func startTestResolver(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dnsmessage.Message
			if m.Unpack(buf[:n]) != nil || len(m.Questions) != 1 {
				continue
			}
			m.Header.Response, m.Header.RecursionAvailable = true, true
			if m.Questions[0].Type == dnsmessage.TypeA {
				m.Answers = []dnsmessage.Resource{{
					Header: dnsmessage.ResourceHeader{Name: m.Questions[0].Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
					Body:   &dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}},
				}}
			}
			b, _ := m.Pack()
			pc.WriteTo(b, from)
		}
	}()
	return pc.LocalAddr().String()
}

// TestRunHelperGoClient is the program `inspector run` starts in
// TestRunCapturesGoProgramWithoutProxy: a Go client whose Transport has no Proxy, which
// looks a name up and fetches a URL.
func TestRunHelperGoClient(t *testing.T) {
	url := os.Getenv("INSPECTOR_RUN_HELPER_URL")
	if url == "" {
		t.Skip("only run by inspector run in TestRunCapturesGoProgramWithoutProxy")
	}
	addrs, err := net.LookupHost("app.run.test")
	if err != nil {
		t.Fatalf("DNS inside the namespace: %v", err)
	}
	c := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("HELPER lookup=%s status=%d bytes=%d\n", strings.Join(addrs, ","), resp.StatusCode, len(b))
}

// A Go program whose Transport has Proxy: nil, which no proxy variable reaches, is
// captured and decrypted; its DNS works inside the namespace; the CA reaches it through
// SSL_CERT_FILE.
func TestRunCapturesGoProgramWithoutProxy(t *testing.T) {
	needNetns(t)
	t.Parallel()
	o := et.StartOrigin(t, et.OriginH1TLS, nil)
	dd := t.TempDir()
	url := o.URL + "/echo?from=go"
	code, out, errOut := runInspector(t, []string{"INSPECTOR_RUN_HELPER_URL=" + url, "HTTPS_PROXY=", "https_proxy="},
		"--data-dir", dd, "--upstream-ca", originPEM(t, o), "--dns", startTestResolver(t), "--",
		os.Args[0], "-test.run=^TestRunHelperGoClient$", "-test.v")
	if code != 0 || !strings.Contains(out, "HELPER lookup=127.0.0.1 status=200") {
		t.Fatalf("exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	ss := storedSessions(t, dd)
	if len(ss) != 1 {
		t.Fatalf("%d sessions", len(ss))
	}
	s := ss[0]
	if s.Request.URL != url || s.Response == nil || s.Response.Status != 200 || s.Client.TLS == nil {
		t.Fatalf("session %s %+v %+v", s.Request.URL, s.Response, s.Client)
	}
	if s.Client.Process != filepath.Base(os.Args[0]) {
		t.Fatalf("process %q, want %q", s.Client.Process, filepath.Base(os.Args[0]))
	}
}

// The command's exit status is run's.
func TestRunPassesExitStatus(t *testing.T) {
	needNetns(t)
	t.Parallel()
	code, _, errOut := runInspector(t, nil, "--data-dir", t.TempDir(), "--", "sh", "-c", "exit 7")
	if code != 7 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
}

// Without CAP_NET_ADMIN run says so in one line, points to `inspector launch terminal`,
// and leaves nothing behind (not even the data directory).
func TestRunWithoutCapability(t *testing.T) {
	t.Parallel()
	dd := filepath.Join(t.TempDir(), "data")
	code, lines := runWithCaps(t, "-all", "run", "--data-dir", dd, "--", "true")
	if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "CAP_NET_ADMIN") ||
		!strings.Contains(lines[0], "inspector launch terminal") {
		t.Fatalf("exit %d, stderr %q", code, lines)
	}
	if _, err := os.Stat(dd); !os.IsNotExist(err) {
		t.Fatalf("the data directory was made: %v", err)
	}
}

// A namespace that is made but cannot be set up (here: CAP_SYS_ADMIN to make it, but not
// CAP_NET_ADMIN to bring its loopback up) ends run with one clear line, the command never
// started, and nothing left: no data directory, no nftables table, no named namespace.
func TestRunNamespaceSetupFailsLeavesNothing(t *testing.T) {
	needNetns(t)
	t.Parallel()
	dd := filepath.Join(t.TempDir(), "data")
	marker := filepath.Join(t.TempDir(), "ran")
	code, lines := runWithCaps(t, "-all,+sys_admin", "run", "--data-dir", dd, "--", "touch", marker)
	if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "network namespace") {
		t.Fatalf("exit %d, stderr %q", code, lines)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the command ran: %v", err)
	}
	if _, err := os.Stat(dd); !os.IsNotExist(err) {
		t.Fatalf("the data directory was made: %v", err)
	}
	requireNothingLeft(t)
}

// After a kill -9 of the instance its command dies too, and nothing is left: no process,
// no nftables table in the host's namespace, no named namespace.
func TestRunKill9LeavesNothing(t *testing.T) {
	needNetns(t)
	t.Parallel()
	cmd := exec.Command(binary(t), "run", "--data-dir", t.TempDir(), "--", "sleep", "300")
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var child int
	deadline := time.Now().Add(60 * time.Second)
	for child == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the command never started; stderr %s", e.String())
		}
		child = childNamed(cmd.Process.Pid, "sleep")
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline = time.Now().Add(60 * time.Second)
	for alive(child) {
		if time.Now().After(deadline) {
			t.Fatalf("the command (pid %d) outlived the kill -9 of its instance", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
	requireNothingLeft(t)
}

// runWithCaps runs the binary with args under setpriv with the given capability bounding
// set (setpriv --bounding-set) and returns its exit code and the lines of its stderr.
func runWithCaps(t *testing.T, bounding string, args ...string) (int, []string) {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("skipped: setpriv (util-linux) is not installed")
	}
	cmd := exec.Command(setpriv, append([]string{"--bounding-set=" + bounding, "--inh-caps=-all", "--no-new-privs", "--", binary(t)}, args...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), strings.Split(strings.TrimSpace(e.String()), "\n")
}

// requireNothingLeft fails if an instance's namespace left anything on the host: an
// nftables table of Inspector in the host's namespace, or a named namespace.
func requireNothingLeft(t *testing.T) {
	t.Helper()
	c, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		if tb.Name == linux.NftTable {
			t.Fatalf("an nftables table %q is in the host's namespace", tb.Name)
		}
	}
	if ents, _ := os.ReadDir("/run/netns"); len(ents) > 0 {
		for _, e := range ents {
			if strings.Contains(e.Name(), "inspector") {
				t.Fatalf("a named namespace %s is left", e.Name())
			}
		}
	}
}

// childNamed is the pid of a child of pid whose command is name, or 0.
func childNamed(pid int, name string) int {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(b)) {
			c, _ := strconv.Atoi(f)
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c))
			if strings.TrimSpace(string(comm)) == name {
				return c
			}
		}
	}
	return 0
}

// alive reports whether pid runs (a zombie waiting for its reaper does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
