package main

// A measurement for issue 26, item 9, not run in CI:
// INSPECTOR_MEASURE=1 go test -run MeasureHARImport -v ./cmd/inspector/

import (
	"bufio"
	"encoding/base64"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// procStatusMiB is a field (VmHWM, VmRSS) of /proc/PID/status in MiB.
func procStatusMiB(t *testing.T, pid int, field string) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skip("no /proc")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			kb, _ := strconv.ParseFloat(strings.Fields(l)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// writeBigHAR writes a HAR with one entry whose response body is n random bytes, base64.
func writeBigHAR(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(`{"log":{"version":"1.2","creator":{"name":"measure","version":"1"},"entries":[{"startedDateTime":"2026-03-04T05:06:07Z",` +
		`"request":{"method":"GET","url":"http://big.example/b","headers":[]},"response":{"status":200,"headers":[],"content":{"size":` +
		strconv.Itoa(n) + `,"mimeType":"application/octet-stream","encoding":"base64","text":"`)
	enc := base64.NewEncoder(base64.StdEncoding, w)
	rng := rand.NewChaCha8([32]byte{26})
	buf := make([]byte, 1<<20)
	for left := n; left > 0; left -= len(buf) {
		rng.Read(buf)
		enc.Write(buf[:min(left, len(buf))])
	}
	enc.Close()
	w.WriteString(`"}},"timings":{}}]}}`)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestMeasureHARImport: a HAR with one 250 MiB base64 body, imported by the CLI into a
// store (peak RSS of the child process), then through a running instance's control API
// (the instance's VmHWM, and its VmRSS once the import is done).
func TestMeasureHARImport(t *testing.T) {
	if os.Getenv("INSPECTOR_MEASURE") == "" {
		t.Skip("a measurement: set INSPECTOR_MEASURE=1")
	}
	bin := binary(t)
	har := filepath.Join(t.TempDir(), "big.har")
	writeBigHAR(t, har, 250<<20)
	fi, _ := os.Stat(har)

	start := time.Now()
	cmd := exec.Command(bin, "har", "import", "--data-dir", t.TempDir(), har)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("har import: %v\n%s", err, out)
	}
	peak := float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024
	t.Logf("CLI `har import` of a %d MiB HAR (one 250 MiB base64 body): peak RSS %.0f MiB, %s; %s",
		fi.Size()>>20, peak, time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(out)))

	data := t.TempDir()
	h := startHeadless(t, data)
	pid := h.cmd.Process.Pid
	base := procStatusMiB(t, pid, "VmHWM")
	start = time.Now()
	out, err = exec.Command(bin, "har", "import", "--data-dir", data, har).CombinedOutput()
	if err != nil {
		t.Fatalf("har import via the instance: %v\n%s", err, out)
	}
	took := time.Since(start).Round(time.Millisecond)
	hwm := procStatusMiB(t, pid, "VmHWM")
	rss := procStatusMiB(t, pid, "VmRSS")
	deadline := time.Now().Add(30 * time.Second)
	for rss > 150 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond) // a measurement: the scavenger's pace
		rss = procStatusMiB(t, pid, "VmRSS")
	}
	t.Logf("instance POST /api/v1/har of the same file: VmHWM %.0f MiB (%.0f MiB before), VmRSS %.0f MiB afterwards, %s; %s",
		hwm, base, rss, took, strings.TrimSpace(string(out)))
}
