package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
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

func TestNetworkProfileFlag(t *testing.T) {
	out, err := exec.Command(binary(t), "--headless", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--network-profile", "5G").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--network-profile") || !strings.Contains(string(out), "not one of") {
		t.Fatalf("bad profile: %v\n%s", err, out)
	}
	data := t.TempDir()
	startHeadless(t, data, "--network-profile", "bw:2000,latency:80")
	info := readControlInfo(t, data)
	req, _ := http.NewRequest("GET", info.URL+"/api/v1/network-profile", nil)
	req.Header.Set("Authorization", "Bearer "+info.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got networkProfileBody
	json.NewDecoder(resp.Body).Decode(&got)
	if got.Profile == nil || got.Profile.DownKbps != 2000 || got.Profile.LatencyMS != 80 {
		t.Fatalf("profile %+v", got.Profile)
	}
}
