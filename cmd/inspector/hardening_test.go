package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	et "inspector/engine/enginetest"
)

func TestResolveProxyAuth(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	// Loopback without the flag: none, and no file.
	if got, err := resolveProxyAuth(dir, "", false, &out); err != nil || got != "" {
		t.Fatalf("loopback default: %q %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, proxyAuthFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("credentials file written without --allow-remote: %v", err)
	}
	// --allow-remote: generated once, 0600, printed once, then reused silently.
	first, err := resolveProxyAuth(dir, "", true, &out)
	if err != nil || !regexp.MustCompile(`^inspector:[A-Za-z0-9_-]{24}$`).MatchString(first) {
		t.Fatalf("generated %q %v", first, err)
	}
	if !strings.Contains(out.String(), first) {
		t.Errorf("the new credentials were not shown: %q", out.String())
	}
	fi, err := os.Stat(filepath.Join(dir, proxyAuthFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file: %v %v", fi, err)
	}
	out.Reset()
	again, err := resolveProxyAuth(dir, "", true, &out)
	if err != nil || again != first || out.Len() != 0 {
		t.Errorf("second start: %q %v, printed %q", again, err, out.String())
	}
	other, _ := resolveProxyAuth(t.TempDir(), "", true, io.Discard)
	if other == first {
		t.Error("two data dirs got the same generated password")
	}
	// Explicit values.
	if got, err := resolveProxyAuth(dir, "none", true, &out); err != nil || got != "" {
		t.Errorf("none: %q %v", got, err)
	}
	if got, err := resolveProxyAuth(dir, "me:pw", false, &out); err != nil || got != "me:pw" {
		t.Errorf("explicit: %q %v", got, err)
	}
	for _, bad := range []string{"nopassword", ":pw", "me:"} {
		var ue usageError
		if _, err := resolveProxyAuth(dir, bad, true, &out); !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
	// A damaged file is a clear error, not silently replaced.
	os.WriteFile(filepath.Join(dir, proxyAuthFile), []byte("garbage\n"), 0o600)
	if _, err := resolveProxyAuth(dir, "", true, &out); err == nil || !strings.Contains(err.Error(), proxyAuthFile) {
		t.Errorf("damaged file: %v", err)
	}
}

// TestAllowRemoteTurnsOnProxyAuth runs the real binary with --allow-remote: the proxy
// demands the generated credentials, and even with them refuses to reach its own control
// API.
func TestAllowRemoteTurnsOnProxyAuth(t *testing.T) {
	data := t.TempDir()
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	h := startHeadless(t, data, "--allow-remote")
	cred, err := os.ReadFile(filepath.Join(data, proxyAuthFile))
	if err != nil {
		t.Fatal(err)
	}
	proxyURL := &url.URL{Scheme: "http", Host: h.addr}
	get := func(u string, auth string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", u, nil)
		if auth != "" {
			req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(auth)))
		}
		tr := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
		defer tr.CloseIdleConnections()
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := get(o.URL+"/echo", ""); resp.StatusCode != http.StatusProxyAuthRequired {
		t.Errorf("without credentials: %s", resp.Status)
	}
	if resp := get(o.URL+"/echo", "inspector:wrong"); resp.StatusCode != http.StatusProxyAuthRequired {
		t.Errorf("wrong credentials: %s", resp.Status)
	}
	if resp := get(o.URL+"/echo", strings.TrimSpace(string(cred))); resp.StatusCode != 200 {
		t.Errorf("with the generated credentials: %s", resp.Status)
	}
	h.nextLine(t)
	var ctl struct{ URL string }
	b, err := os.ReadFile(filepath.Join(data, "control.json"))
	if err != nil || json.Unmarshal(b, &ctl) != nil || ctl.URL == "" {
		t.Fatalf("control.json: %s %v", b, err)
	}
	if resp := get(strings.TrimSuffix(ctl.URL, "/")+"/api/v1/sessions", strings.TrimSpace(string(cred))); resp.StatusCode != http.StatusLoopDetected {
		t.Errorf("the control API through the proxy: %s", resp.Status)
	}
}

// TestBinaryHoldsNoPrivateKey: the CA key is generated per install, never built in. The
// built binary must hold no PEM private key block, and two data dirs get different CAs.
func TestBinaryHoldsNoPrivateKey(t *testing.T) {
	bin, err := os.ReadFile(binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`).Find(bin); m != nil {
		t.Errorf("the binary contains %q", m)
	}
	export := func(dir string) []byte {
		out, err := exec.Command(binary(t), "ca", "export", "--data-dir", dir).Output()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if bytes.Equal(export(t.TempDir()), export(t.TempDir())) {
		t.Error("two installs share one CA")
	}
}
