package engine_test

// Hardening probes: HTTP/2 conformance (h2spec), request smuggling and framing, hostile
// origins, resource limits and leaks. Every probe runs against a real engine on 127.0.0.1:0.

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	et "inspector/engine/enginetest"
)

// startConnectRelay listens on 127.0.0.1:0 and turns every accepted connection into a
// CONNECT tunnel through proxyAddr to target, so tools that cannot use a proxy (h2spec)
// can talk to the proxy's client-facing side. Cleanup closes the listener and every relay.
func startConnectRelay(t testing.TB, proxyAddr, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	track := func(c net.Conn, add bool) bool {
		mu.Lock()
		defer mu.Unlock()
		if add && conns == nil {
			return false
		}
		if add {
			conns[c] = true
		} else if conns != nil {
			delete(conns, c)
		}
		return true
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				if !track(c, true) {
					return
				}
				defer track(c, false)
				up, err := net.Dial("tcp", proxyAddr)
				if err != nil {
					return
				}
				defer up.Close()
				if !track(up, true) {
					return
				}
				defer track(up, false)
				if _, err := io.WriteString(up, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); err != nil {
					return
				}
				br := bufio.NewReader(up)
				resp, err := http.ReadResponse(br, nil)
				if err != nil || resp.StatusCode != 200 {
					return
				}
				done := make(chan struct{})
				go func() {
					_, _ = io.Copy(up, c)
					if tc, ok := up.(*net.TCPConn); ok {
						_ = tc.CloseWrite()
					}
					close(done)
				}()
				_, _ = io.Copy(c, br)
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				<-done
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		conns = nil
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

var h2specTotals = regexp.MustCompile(`(\d+) tests, (\d+) passed, (\d+) skipped, (\d+) failed`)

// TestH2Spec runs h2spec against the proxy's client-facing HTTP/2 through a CONNECT
// tunnel. It needs the h2spec binary: set INSPECTOR_H2SPEC to its path (`make h2spec`
// installs it and runs this test). The score must reach Go's own server's baseline.
func TestH2Spec(t *testing.T) {
	bin := os.Getenv("INSPECTOR_H2SPEC")
	if bin == "" {
		t.Skip("INSPECTOR_H2SPEC is not set; run `make h2spec`")
	}
	origin := et.StartOrigin(t, et.OriginH2TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
	}))
	p := et.StartProxy(t, nil, origin)
	relay := startConnectRelay(t, p.Addr(), origin.Listener.Addr().String())
	_, port, _ := net.SplitHostPort(relay)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	args := []string{"-h", "127.0.0.1", "-p", port, "-t", "-k", "-o", "5"}
	if only := os.Getenv("INSPECTOR_H2SPEC_ONLY"); only != "" {
		args = append(args, "-v", only) // one section, for debugging
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	out, _ := cmd.CombinedOutput() // h2spec exits 1 when any case fails; the score decides
	m := h2specTotals.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no h2spec summary in its output:\n%s", out)
	}
	total, _ := strconv.Atoi(string(m[1]))
	passed, _ := strconv.Atoi(string(m[2]))
	skipped, _ := strconv.Atoi(string(m[3]))
	failed, _ := strconv.Atoi(string(m[4]))
	t.Logf("h2spec through the proxy: %d/%d passed, %d skipped, %d failed", passed, total, skipped, failed)
	if failed > 0 {
		// List the failed cases for the report.
		var fails []string
		_, summary, _ := strings.Cut(string(out), "Failures:")
		for _, line := range strings.Split(summary, "\n") {
			if strings.Contains(line, "×") {
				fails = append(fails, strings.TrimSpace(line))
			}
		}
		t.Logf("failed cases:\n%s", strings.Join(fails, "\n"))
	}
	if passed < 141 {
		t.Errorf("h2spec: %d/%d passed, want at least 141 (Go's own server baseline)\n%s", passed, total, out)
	}
}
