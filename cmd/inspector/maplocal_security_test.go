package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// apiRaw calls the control API and returns the status and the body.
func (d *debugInstance) apiRaw(t *testing.T, method, path string, body any) (int, string) {
	t.Helper()
	j, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, d.info.URL+path, bytes.NewReader(j))
	req.Header.Set("Authorization", "Bearer "+d.info.Token)
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// mapLocalSite is a folder with a page and symlinks to the instance's CA key, its ca/
// folder and /etc/passwd.
func mapLocalSite(t *testing.T, data string) string {
	t.Helper()
	site := t.TempDir()
	os.WriteFile(filepath.Join(site, "page.html"), []byte("<p>mine</p>"), 0o644)
	for name, target := range map[string]string{
		"key.pem": filepath.Join(data, "ca", "root-key.pem"),
		"ca":      filepath.Join(data, "ca"),
		"passwd":  "/etc/passwd",
		"token":   filepath.Join(data, controlFile),
	} {
		if err := os.Symlink(target, filepath.Join(site, name)); err != nil {
			t.Fatal(err)
		}
	}
	return site
}

// TestControlAPIMapLocalCannotReadTheCAKey: over HTTP, the control API refuses map_local
// rules for the CA key, the token, /etc/passwd, a symlink to any of them and a path with
// "..", by POST and by PUT, with an error that says why; a file under a folder the user
// allowed (`inspector rules allow-folder`) is served; the key never is.
func TestControlAPIMapLocalCannotReadTheCAKey(t *testing.T) {
	d := startDebugInstance(t)
	data := d.inst.dataDir
	key := filepath.Join(data, "ca", "root-key.pem")
	if b, err := os.ReadFile(key); err != nil || !strings.Contains(string(b), "PRIVATE KEY") {
		t.Fatalf("the instance's CA key: %v", err)
	}
	site := mapLocalSite(t, data)
	rule := func(file string) map[string]any {
		return map[string]any{"kind": "map_local", "enabled": true, "filter": "host:steal.example", "file": file}
	}
	try := func(file, want string) {
		t.Helper()
		if code, body := d.apiRaw(t, "POST", "/api/v1/rules", rule(file)); code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("POST map_local %s: %d %s, want 400 %q", file, code, body, want)
		}
		if code, body := d.apiRaw(t, "PUT", "/api/v1/rules", map[string]any{"rules": []any{rule(file)}}); code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("PUT map_local %s: %d %s, want 400 %q", file, code, body, want)
		}
	}
	try(key, "data directory")
	try(filepath.Join(site, "page.html"), "not under a map-local folder") // none allowed yet
	if code, out, errOut := runCLI(t, "rules", "allow-folder", "--data-dir", data, site); code != 0 || !strings.Contains(out, site) {
		t.Fatalf("rules allow-folder: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "rules", "allow-folder", "--data-dir", data, filepath.Join(data, "ca")); code != 1 || !strings.Contains(errOut, "data directory") {
		t.Fatalf("rules allow-folder ca/: %d %q", code, errOut)
	}
	try(key, "data directory")
	try(filepath.Join(data, controlFile), "data directory")
	try("/etc/passwd", "not under a map-local folder")
	try(filepath.Join(site, "key.pem"), "data directory")
	try(filepath.Join(site, "ca", "root-key.pem"), "data directory")
	try(filepath.Join(site, "token"), "data directory")
	try(filepath.Join(site, "passwd"), "not under a map-local folder")
	try(site+"/../"+filepath.Base(data)+"/ca/root-key.pem", "..")
	var rs rulesBody
	if d.api(t, "GET", "/api/v1/rules", nil, &rs); len(rs.Rules) != 0 {
		t.Fatalf("refused rules were stored: %+v", rs.Rules)
	}
	// The allowed folder is served through the proxy; its links into the data directory
	// are refused as they are served.
	if code, body := d.apiRaw(t, "POST", "/api/v1/rules", rule(site)); code != 200 {
		t.Fatalf("map_local of the allowed folder: %d %s", code, body)
	}
	for path, want := range map[string]int{"/page.html": 200, "/key.pem": 403, "/ca/root-key.pem": 403, "/token": 403, "/passwd": 403} {
		resp, err := d.proxy.Get("http://steal.example" + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || strings.Contains(string(b), "PRIVATE KEY") || strings.Contains(string(b), d.info.Token) || strings.Contains(string(b), "root:") {
			t.Errorf("GET %s through a map_local rule: %d %q, want %d", path, resp.StatusCode, b, want)
		}
	}
	if code, out, _ := runCLI(t, "rules", "folders", "--data-dir", data); code != 0 || strings.TrimSpace(out) != site {
		t.Errorf("rules folders: %d %q", code, out)
	}
}
