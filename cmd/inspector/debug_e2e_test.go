package main

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	et "inspector/engine/enginetest"
	"inspector/engine/hooks/breakpoint"
)

// TestBreakpointsWithCurlAndTheRealBinary drives `inspector --headless` through its
// control API while real curl processes send traffic through the proxy.
func TestBreakpointsWithCurlAndTheRealBinary(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	data := t.TempDir()
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	originCA := filepath.Join(t.TempDir(), "origin.pem")
	os.WriteFile(originCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: o.Certificate().Raw}), 0o644)
	h := startHeadless(t, data, "--upstream-ca", originCA)
	caPEM, err := exec.Command(binary(t), "ca", "export", "--data-dir", data).Output()
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, caPEM, 0o644)

	var info controlInfo
	b, _ := os.ReadFile(filepath.Join(data, controlFile))
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{Proxy: nil}}
	api := func(method, path, body string, out any) int {
		t.Helper()
		req, _ := http.NewRequest(method, info.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+info.Token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if out != nil && resp.StatusCode == 200 {
			if err := json.Unmarshal(raw, out); err != nil {
				t.Fatalf("%s: %v %s", path, err, raw)
			}
		}
		return resp.StatusCode
	}
	waitPaused := func() breakpoint.Paused {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			var ps []breakpoint.Paused
			api("GET", "/api/v1/paused", "", &ps)
			if len(ps) > 0 {
				return ps[0]
			}
		}
		t.Fatal("nothing paused")
		return breakpoint.Paused{}
	}
	curl := func(args ...string) *exec.Cmd {
		return exec.Command("curl", append([]string{"-sS", "-x", "http://" + h.addr, "--cacert", caFile, "-o", "/dev/null", "-D", "-"}, args...)...)
	}
	type out struct {
		s   string
		err error
	}
	start := func(c *exec.Cmd) <-chan out {
		ch := make(chan out, 1)
		var buf bytes.Buffer
		c.Stdout, c.Stderr = &buf, &buf
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { err := c.Wait(); ch <- out{buf.String(), err} }()
		return ch
	}

	if code := api("POST", "/api/v1/breakpoints", `{"filter": "path:/echo?hold", "phase": "request"}`, nil); code != 200 {
		t.Fatalf("add breakpoint: %d", code)
	}
	held := start(curl("-X", "POST", "--data-binary", "original", o.URL+"/echo?hold"))
	p := waitPaused()
	// Other curl requests complete meanwhile.
	if o, err := curl(o.URL + "/echo?free").CombinedOutput(); err != nil || !strings.Contains(string(o), " 200") {
		t.Fatalf("free request: %v %s", err, o)
	}
	edits := `{"header": {"X-Edited": ["yes"], "Content-Type": ["text/plain"]}, "body": "edited!"}`
	if code := api("POST", fmt.Sprintf("/api/v1/sessions/%d/resume", p.ID), edits, nil); code != 200 {
		t.Fatalf("resume: %d", code)
	}
	edited := p.ID
	r := <-held
	lower := strings.ToLower(r.s)
	if r.err != nil || !strings.Contains(lower, "x-echo-h-x-edited: yes") || !strings.Contains(lower, "x-echo-body-size: 7") {
		t.Fatalf("curl after resume: %v\n%s", r.err, r.s)
	}

	// A response breakpoint, aborted: curl gets no 2xx.
	api("POST", "/api/v1/breakpoints", `{"filter": "path:/status", "phase": "response"}`, nil)
	held = start(curl("-w", "code=%{http_code}", o.URL+"/status?code=200"))
	p = waitPaused()
	api("POST", fmt.Sprintf("/api/v1/sessions/%d/abort", p.ID), "", nil)
	if r := <-held; strings.Contains(r.s, "code=2") {
		t.Errorf("aborted response reached curl as 2xx:\n%s", r.s)
	}

	// `inspector replay` goes through the running instance (and its breakpoints, so
	// remove them first).
	var bs breakpoint.Settings
	api("GET", "/api/v1/breakpoints", "", &bs)
	for _, b := range bs.Breakpoints {
		if code := api("DELETE", fmt.Sprintf("/api/v1/breakpoints/%d", b.ID), "", nil); code != 200 {
			t.Fatalf("delete breakpoint: %d", code)
		}
	}
	ro, err := exec.Command(binary(t), "replay", fmt.Sprint(edited), "--data-dir", data).CombinedOutput()
	if err != nil || !strings.Contains(string(ro), fmt.Sprintf("#%d → #", edited)) {
		t.Errorf("replay: %v %s", err, ro)
	}
}
