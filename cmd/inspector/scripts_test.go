package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScriptFlagAndFolder runs the real binary with --script and a file in
// DATA_DIR/scripts: both rewrite a request on the wire, and the control API lists them with
// the broken one's error.
func TestScriptFlagAndFolder(t *testing.T) {
	data := t.TempDir()
	os.MkdirAll(filepath.Join(data, "scripts"), 0o700)
	os.WriteFile(filepath.Join(data, "scripts", "a.js"), []byte(`exports.request = f => f.request.headers.set("X-From-Folder", "1");`), 0o600)
	os.WriteFile(filepath.Join(data, "scripts", "broken.js"), []byte("exports.request = function ( {\n"), 0o600)
	flagFile := filepath.Join(t.TempDir(), "b.js")
	os.WriteFile(flagFile, []byte(`exports.request = f => f.request.headers.set("X-From-Flag", "1");`), 0o600)

	origin := startRecordingOrigin(t)
	h := startHeadless(t, data, "--script", flagFile)
	proxyURL, _ := url.Parse("http://" + h.addr)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 30 * time.Second}
	resp, err := client.Get(origin.URL + "/s")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := origin.requests()
	if len(got) != 1 || got[0].Get("X-From-Folder") != "1" || got[0].Get("X-From-Flag") != "1" {
		t.Fatalf("origin headers %v", got)
	}
	info := readControlInfo(t, data)
	req, _ := http.NewRequest("GET", info.URL+"/api/v1/scripts", nil)
	req.Header.Set("Authorization", "Bearer "+info.Token)
	aresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer aresp.Body.Close()
	var st struct {
		Scripts []struct {
			File  string `json:"file"`
			Error string `json:"error"`
		} `json:"scripts"`
	}
	json.NewDecoder(aresp.Body).Decode(&st)
	var broken string
	for _, s := range st.Scripts {
		if strings.HasSuffix(s.File, "broken.js") {
			broken = s.Error
		}
	}
	if len(st.Scripts) != 3 || !strings.Contains(broken, "broken.js: Line 2") {
		t.Fatalf("scripts %+v", st.Scripts)
	}
	if !strings.Contains(h.errb.String(), "broken.js") {
		t.Fatalf("stderr does not report the broken script: %s", h.errb)
	}
}
