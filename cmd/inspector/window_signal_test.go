//go:build linux

package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startXvfb starts an X server on a free display (Xvfb -displayfd) and returns its
// DISPLAY value; the test is skipped where Xvfb is not installed.
func startXvfb(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("Xvfb")
	if err != nil {
		t.Skip("Xvfb is not installed (Debian package xvfb; make test installs it)")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-displayfd", "3", "-screen", "0", "1280x820x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(r).ReadString('\n')
	r.Close()
	if err != nil {
		t.Fatalf("Xvfb gave no display number: %v", err)
	}
	return ":" + strings.TrimSpace(line)
}

// The window quits cleanly on SIGTERM, SIGINT and SIGHUP, at once after it announced its
// address and once it runs: exit status 0, no panic (Fyne's driver handles SIGINT and
// SIGTERM itself; a second Quit from Inspector's own handler used to panic in GLFW after
// the loop ended, skipping the instance's clean-up).
func TestWindowQuitsCleanlyOnSignals(t *testing.T) {
	display := startXvfb(t)
	bin := binary(t)
	for _, sg := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		for _, settle := range []bool{false, true} {
			cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
			cmd.Env = append(os.Environ(), "DISPLAY="+display, "LANG=C.UTF-8")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stdout)
			if !sc.Scan() || !strings.HasPrefix(sc.Text(), "listening on ") {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("no address announced; stderr: %s", stderr.String())
			}
			if settle {
				waitPainted(t, display) // Fyne's loop runs: the signal goes to it
			}
			cmd.Process.Signal(sg)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				if errors.As(err, &ee) || err != nil || strings.Contains(stderr.String(), "panic") {
					t.Fatalf("%v (window running: %v): exit %v; stderr:\n%s", sg, settle, err, stderr.String())
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("%v (window running: %v): still running after 30 s", sg, settle)
			}
		}
	}
}

// waitPainted waits until the X server's screen is no longer blank (the window has
// painted), polling a screenshot (ImageMagick's import) for up to 30 s.
func waitPainted(t *testing.T, display string) {
	t.Helper()
	imp, err := exec.LookPath("import")
	if err != nil {
		t.Skip("ImageMagick's import is not installed (make test installs imagemagick)")
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		cmd := exec.Command(imp, "-window", "root", "-format", "%[fx:standard_deviation]", "info:")
		cmd.Env = append(os.Environ(), "DISPLAY="+display)
		out, err := cmd.Output()
		if err == nil && strings.TrimSpace(string(out)) != "0" {
			return
		}
		time.Sleep(50 * time.Millisecond) // polling a condition (the first frame), bounded above
	}
	t.Fatal("the window never painted")
}
