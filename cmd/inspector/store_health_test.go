//go:build linux

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"inspector/engine/enginetest"
	"inspector/engine/session"
	"inspector/store"
	"inspector/store/storetest"
)

// zeroInside writes a store of n sessions into dataDir, closes it cleanly and zeroes every
// other page between a quarter and three quarters of the file (the header and the meta
// bucket intact), as a disk that lost writes leaves it.
func zeroInside(t *testing.T, dataDir string, n int) {
	t.Helper()
	path := filepath.Join(dataDir, "sessions.db")
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		id := st.NextID()
		st.Put(&session.Session{ID: id, Started: time.Now(),
			Request:  session.Request{Method: "GET", URL: "http://example.com/" + strconv.Itoa(i)},
			Response: &session.Response{Status: 200, Body: session.Body{Data: make([]byte, 3000), Size: 3000}}})
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	storetest.ZeroInside(t, path, 16<<10) // the page size of new stores
}

// TestHeadlessDamagedStore: a store damaged inside makes the headless proxy exit 1 with a
// clear line naming the file and --reset-store (it used to start and lose every session);
// with --reset-store it moves the file aside, says so, and stores sessions again.
func TestHeadlessDamagedStore(t *testing.T) {
	data := t.TempDir()
	zeroInside(t, data, 300)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), "--headless", "--listen", "127.0.0.1:0", "--data-dir", data)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v\n%s", err, out)
	}
	msg := string(out)
	t.Logf("stderr: %s", msg)
	if !strings.Contains(msg, "session store is damaged") || !strings.Contains(msg, "sessions.db") ||
		!strings.Contains(msg, "--reset-store") || strings.Contains(msg, "listening on") {
		t.Fatalf("output: %s", msg)
	}
	plain := enginetest.StartOrigin(t, enginetest.OriginH1Plain, nil)
	h := startHeadless(t, data, "--reset-store")
	proxy, _ := url.Parse("http://" + h.addr)
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	resp, err := c.Get(plain.URL + "/bytes?n=100")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	h.nextLine(t)
	h.cmd.Process.Signal(syscall.SIGTERM)
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("exit: %v %s", err, h.errb)
	}
	if s := h.errb.String(); !strings.Contains(s, "damaged session store was moved to "+filepath.Join(data, "sessions.db.corrupt-")) {
		t.Errorf("stderr with --reset-store: %s", s)
	}
	st, err := store.Open(filepath.Join(data, "sessions.db"), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := st.Stats().Sessions; n != 1 {
		t.Errorf("%d sessions in the fresh store", n)
	}
}

// TestHeadlessDiskFull: the headless proxy under a file size limit (prlimit, as a full
// disk) prints a line on stderr as soon as the store starts losing sessions, and another
// when the limit is lifted and a commit succeeds again; the stats say the same.
func TestHeadlessDiskFull(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) not installed")
	}
	data := t.TempDir()
	plain := enginetest.StartOrigin(t, enginetest.OriginH1Plain, nil)
	bin := binary(t)
	cmd := exec.Command("prlimit", "--fsize=12582912:unlimited", bin,
		"--headless", "--listen", "127.0.0.1:0", "--data-dir", data)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := func(r io.Reader) chan string {
		ch := make(chan string, 1000)
		go func() {
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				ch <- sc.Text()
			}
			close(ch)
		}()
		return ch
	}
	outLines, errLines := lines(stdout), lines(stderr)
	next := func(ch chan string, what string) string {
		t.Helper()
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatalf("inspector exited waiting for %s", what)
			}
			return l
		case <-time.After(20 * time.Second):
			t.Fatalf("no %s within 20 s", what)
		}
		return ""
	}
	first := next(outLines, "the listening line")
	addr, ok := strings.CutPrefix(first, "listening on ")
	if !ok {
		t.Fatalf("first line %q", first)
	}
	proxy, _ := url.Parse("http://" + addr)
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	get := func(n int) {
		t.Helper()
		resp, err := c.Get(fmt.Sprintf("%s/stream?n=%d", plain.URL, n))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		next(outLines, "a session line")
	}
	var failing string
	for i := 0; i < 20 && failing == ""; i++ {
		get(3 << 20)
		select {
		case l := <-errLines:
			if strings.Contains(l, "session store") {
				failing = l
			}
		default:
			// The commit of this session may still be under way: its line comes when the
			// next one is done, or below.
		}
	}
	if failing == "" {
		failing = next(errLines, "the failing line")
	}
	t.Logf("when the disk filled: %s", failing)
	if !strings.Contains(failing, "the session store is failing: ") || !strings.Contains(failing, "stored without their bodies)") ||
		!strings.Contains(failing, "file too large") {
		t.Fatalf("failing line: %q", failing)
	}
	// Free the disk: lift the limit of the running process.
	if out, err := exec.Command("prlimit", "--pid", strconv.Itoa(cmd.Process.Pid), "--fsize=unlimited:unlimited").CombinedOutput(); err != nil {
		t.Fatalf("prlimit --pid: %v %s", err, out)
	}
	get(1000)
	recovered := next(errLines, "the recovery line")
	t.Logf("when the disk had room again: %s", recovered)
	if !strings.Contains(recovered, "the session store works again") {
		t.Fatalf("recovery line: %q", recovered)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

// TestMayBeMissingPlural: "1 session may be missing", not "1 sessions".
func TestMayBeMissingPlural(t *testing.T) {
	if got := mayBeMissing(1); got != "1 session may be missing" {
		t.Error(got)
	}
	if got := mayBeMissing(3); got != "3 sessions may be missing" {
		t.Error(got)
	}
}

// TestSessionsOnEmptyStoreFile: `inspector sessions` on a 0-byte sessions.db lists nothing
// (it used to fail with "bad file descriptor"); `inspector show` says there is no such
// session; a forged HAR (CR/LF in a header) is refused and adds nothing.
func TestSessionsOnEmptyStoreFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sessions.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "sessions", "--data-dir", dir)
	if code != 0 || strings.Contains(errOut, "bad file descriptor") {
		t.Fatalf("sessions on a 0-byte store: %d %q %q", code, out, errOut)
	}
	code, _, errOut = runCmd(t, "show", "1", "--data-dir", dir)
	if code == 0 || !strings.Contains(errOut, "no such session") {
		t.Fatalf("show on a 0-byte store: %d %q", code, errOut)
	}
	har := filepath.Join(t.TempDir(), "forged.har")
	doc := `{"log":{"entries":[{"startedDateTime":"2024-01-01T00:00:00Z",
		"request":{"method":"GET","url":"http://x/","headers":[{"name":"X-A","value":"1\r\nX-Forged: yes"}]},
		"response":{"status":200,"headers":[]}}]}}`
	if err := os.WriteFile(har, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCmd(t, "har", "import", "--data-dir", dir, har)
	if code != 1 || !strings.Contains(errOut, "request.headers[0].value") || !strings.Contains(errOut, "nothing was added") {
		t.Fatalf("forged HAR import: %d %q", code, errOut)
	}
	if code, out, _ := runCmd(t, "sessions", "--data-dir", dir); code != 0 || strings.TrimSpace(out) != "" {
		t.Fatalf("after the refused import: %d %q", code, out)
	}
}

// TestHealthLineDamaged: damage met while running names --reset-store.
func TestHealthLineDamaged(t *testing.T) {
	l := healthLine(store.Health{Damaged: true, LastError: "session store is damaged: assertion failed"})
	if !strings.Contains(l, "damaged") || !strings.Contains(l, "--reset-store") || !strings.Contains(l, "assertion failed") {
		t.Error(l)
	}
}

// TestSessionsOnDamagedStore: `inspector sessions` on a store damaged inside says so and
// how to start afresh.
func TestSessionsOnDamagedStore(t *testing.T) {
	dir := t.TempDir()
	zeroInside(t, dir, 300)
	code, _, errOut := runCmd(t, "sessions", "--data-dir", dir)
	if code != 1 || !strings.Contains(errOut, "session store is damaged") || !strings.Contains(errOut, "--reset-store") {
		t.Fatalf("sessions on a damaged store: %d %q", code, errOut)
	}
}
