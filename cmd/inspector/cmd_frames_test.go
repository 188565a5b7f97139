package main

import (
	"crypto/tls"
	"crypto/x509"
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
	"inspector/engine/session"
	"inspector/store"
)

// frameFields are the `frames --json` fields PRODUCT.md promises.
var frameFields = []string{"leg", "dir", "time", "stream", "type", "flags", "length"}

func TestFramesCommandDirectAndThroughInstance(t *testing.T) {
	dir := fillStore(t, 200, 200)
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st.PutFrames(1, []session.Frame{
		{Leg: "client", Dir: "in", Time: t0, Proto: session.HTTP2, ConnID: 1, Stream: 1, Type: "HEADERS", Flags: "END_STREAM|END_HEADERS", Length: 30,
			Headers: []session.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":path", Value: "/item/1"}}},
		{Leg: "upstream", Dir: "in", Time: t0.Add(time.Millisecond), Proto: session.HTTP2, ConnID: 2, Stream: 0, Type: "SETTINGS", Length: 18, Detail: "MAX_FRAME_SIZE=16384"},
	})
	if err := st.FlushFrames(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	dd := "--data-dir=" + dir
	cmds := [][]string{{"frames", "1", dd}, {"frames", "#1", "--json", dd}, {"frames", "2", dd}, {"frames", "9", dd}}
	type result struct {
		code int
		out  string
	}
	direct := make([]result, len(cmds))
	for i, c := range cmds {
		code, out, _ := runCLI(t, c...)
		direct[i] = result{code, out}
	}
	if direct[0].code != 0 || !strings.Contains(direct[0].out, "HEADERS") || !strings.Contains(direct[0].out, ":path: /item/1") ||
		!strings.Contains(direct[0].out, "MAX_FRAME_SIZE=16384") {
		t.Errorf("frames text: %d\n%s", direct[0].code, direct[0].out)
	}
	lines := strings.Split(strings.TrimSpace(direct[1].out), "\n")
	if len(lines) != 2 {
		t.Fatalf("frames --json: %d lines\n%s", len(lines), direct[1].out)
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		want := frameFields
		if i == 0 {
			want = append(want, "headers") // a HEADERS frame
		}
		for _, f := range want {
			if _, ok := m[f]; !ok {
				t.Errorf("frames --json lacks %q: %s", f, l)
			}
		}
	}
	if direct[2].code != 0 || !strings.Contains(direct[2].out, "no recorded frames") {
		t.Errorf("session without frames: %+v", direct[2])
	}
	if direct[3].code != 1 {
		t.Errorf("unknown session: exit %d", direct[3].code)
	}

	// The same answers from a running instance's control API.
	st, err = store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, stop, err := startControl(dir, "127.0.0.1:8080", st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for i, c := range cmds {
		code, out, errOut := runCLI(t, c...)
		if code != direct[i].code || out != direct[i].out {
			t.Errorf("%v through the instance: code %d (direct %d)\n%s\ndirect:\n%s\nstderr %q", c, code, direct[i].code, out, direct[i].out, errOut)
		}
	}
}

func TestFramesCommandBadInput(t *testing.T) {
	dd := "--data-dir=" + t.TempDir()
	for _, args := range [][]string{{"frames"}, {"frames", "x"}, {"frames", "0"}, {"frames", "1", "2"}} {
		if code, _, errOut := runCLI(t, append(args, dd)...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q; want a usage error", args, code, errOut)
		}
	}
}

// TestFramesEndToEnd: the real binary records an h2 exchange's frames on both legs and
// `inspector frames` shows them, while it runs and after it stopped.
func TestFramesEndToEnd(t *testing.T) {
	data := t.TempDir()
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	originCA := filepath.Join(t.TempDir(), "origin.pem")
	os.WriteFile(originCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: o.Certificate().Raw}), 0o644)
	h := startHeadless(t, data, "--upstream-ca", originCA)

	caPEM, err := exec.Command(binary(t), "ca", "export", "--data-dir", data).Output()
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	proxyURL, _ := url.Parse("http://" + h.addr)
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post(o.URL+"/echo", "text/plain", strings.NewReader(strings.Repeat("x", 100<<10)))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if l := h.nextLine(t); !strings.Contains(l, "h2→h2") {
		t.Fatalf("line %q", l)
	}
	tr.CloseIdleConnections() // the client connection ends: every frame is delivered

	check := func(when string) {
		t.Helper()
		out, err := exec.Command(binary(t), "frames", "1", "--json", "--data-dir", data).Output()
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		seen := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var f session.Frame
			if err := json.Unmarshal([]byte(l), &f); err != nil {
				t.Fatalf("%s: line %q: %v", when, l, err)
			}
			seen[f.Leg+" "+f.Dir+" "+f.Type] = true
		}
		for _, want := range []string{"client in HEADERS", "client in DATA", "client out HEADERS", "client out SETTINGS",
			"upstream out HEADERS", "upstream out DATA", "upstream in HEADERS", "upstream in SETTINGS"} {
			if !seen[want] {
				t.Errorf("%s: no %s frame in:\n%s", when, want, out)
			}
		}
	}
	// Frames are committed shortly after their session: poll the running instance.
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := exec.Command(binary(t), "frames", "1", "--json", "--data-dir", data).Output()
		if strings.Count(string(out), `"leg":"upstream"`) > 0 && strings.Count(string(out), `"leg":"client"`) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no frames of both legs within 10s:\n%s", out)
		}
	}
	check("running")
	h.cmd.Process.Signal(syscall.SIGTERM)
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("exit: %v; %s", err, h.errb)
	}
	check("stopped")
}

// TestFramesEndToEndH3Upstream: with --upstream-proto h3 the upstream leg's HTTP/3 frames
// (QPACK-decoded HEADERS, DATA, SETTINGS) are stored next to the client leg's HTTP/2 ones.
func TestFramesEndToEndH3Upstream(t *testing.T) {
	data := t.TempDir()
	o := et.StartOrigin(t, et.OriginH3, nil)
	originCA := filepath.Join(t.TempDir(), "origin.pem")
	os.WriteFile(originCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: o.Certificate().Raw}), 0o644)
	h := startHeadless(t, data, "--upstream-ca", originCA, "--upstream-proto", "h3")

	caPEM, err := exec.Command(binary(t), "ca", "export", "--data-dir", data).Output()
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	proxyURL, _ := url.Parse("http://" + h.addr)
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post(o.H3URL+"/echo?e2e", "text/plain", strings.NewReader(strings.Repeat("y", 30<<10)))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if l := h.nextLine(t); !strings.Contains(l, "h2→h3") {
		t.Fatalf("line %q", l)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := exec.Command(binary(t), "frames", "1", "--json", "--data-dir", data).Output()
		seen := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var f session.Frame
			if json.Unmarshal([]byte(l), &f) == nil {
				seen[f.Leg+" "+f.Proto+" "+f.Dir+" "+f.Type] = true
				if f.Leg == "upstream" && f.Type == "HEADERS" && f.Dir == "out" && len(f.Headers) == 0 {
					t.Fatalf("h3 HEADERS without decoded fields: %s", l)
				}
			}
		}
		if seen["upstream h3 out HEADERS"] && seen["upstream h3 in HEADERS"] && seen["upstream h3 out DATA"] &&
			seen["upstream h3 in DATA"] && seen["client h2 in HEADERS"] && seen["client h2 out DATA"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("frames of both legs not shown within 10s: %v\n%s", seen, out)
		}
	}
}
