package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	et "inspector/engine/enginetest"
)

// TestProcessAttributionCurl: a real curl through the real binary: its PID and "curl"
// land on the session, and `sessions --filter process:curl --json` (and pid:N) list it
// apart by PID; nothing is attributed to this test process.
func TestProcessAttributionCurl(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed (make deps installs it)")
	}
	data := t.TempDir()
	plain := et.StartOrigin(t, et.OriginH1Plain, nil)
	h := startHeadless(t, data)

	// Each curl fetches two URLs on one connection, --rate keeping it alive between them
	// like any client that does more than one request: a lookup (a few ms, /proc) cannot
	// find a socket whose process has already exited, which a one-request curl to a
	// loopback origin (well under 1 ms) often has.
	runCurl := func(tag string) int {
		t.Helper()
		c := exec.Command("curl", "-sS", "--rate", "4/s", "-x", "http://"+h.addr,
			"-o", "/dev/null", plain.URL+"/echo?from="+tag+"&n=1", "-o", "/dev/null", plain.URL+"/echo?from="+tag+"&n=2")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(); err != nil {
			t.Fatalf("curl: %v", err)
		}
		h.nextLine(t)
		h.nextLine(t)
		return c.Process.Pid
	}
	curlPID := runCurl("curl1")
	otherPID := runCurl("curl2")

	h.cmd.Process.Signal(syscall.SIGTERM)
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr %s", err, h.errb)
	}
	rows := func(filter string) []map[string]any {
		t.Helper()
		raw, err := exec.Command(binary(t), "sessions", "--json", "--filter", filter, "--data-dir", data).Output()
		if err != nil {
			t.Fatalf("sessions --filter %s: %v", filter, err)
		}
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			if l == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			out = append(out, m)
		}
		return out
	}
	all := rows("process:curl")
	if len(all) != 4 {
		t.Fatalf("process:curl listed %d sessions, want 4: %v", len(all), all)
	}
	for i, r := range all {
		want := curlPID
		if i >= 2 {
			want = otherPID
		}
		if r["process"] != "curl" || r["pid"] != float64(want) {
			t.Errorf("session %v: want process curl pid %d", r, want)
		}
	}
	if got := rows("pid:" + strconv.Itoa(curlPID)); len(got) != 2 || !strings.Contains(got[0]["url"].(string), "from=curl1") {
		t.Errorf("pid:%d listed %v", curlPID, got)
	}
	if got := rows("process:cu* -pid:" + strconv.Itoa(curlPID)); len(got) != 2 || got[0]["pid"] != float64(otherPID) {
		t.Errorf("the other curl: %v", got)
	}
	if got := rows("pid:" + strconv.Itoa(os.Getpid())); len(got) != 0 {
		t.Errorf("sessions attributed to the test process: %v", got)
	}
	if got := rows("process:wget"); len(got) != 0 {
		t.Errorf("process:wget listed %v", got)
	}
}
