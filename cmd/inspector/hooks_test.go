package main

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestHooksInstalled runs the real binary with a header rule and a script, both put on the
// engine by installHooks: the script sees the header the rule set, and the origin gets both.
func TestHooksInstalled(t *testing.T) {
	data := t.TempDir()
	rules := `{"rules":[{"id":1,"kind":"header","enabled":true,"filter":"path:/order","header_name":"X-Rule","header_value":"from-rule"}]}`
	if err := os.WriteFile(filepath.Join(data, "rules.json"), []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(t.TempDir(), "seen.js")
	if err := os.WriteFile(js, []byte(`exports.request = f => f.request.headers.set("X-Seen", f.request.headers.get("X-Rule") || "nothing");`), 0o600); err != nil {
		t.Fatal(err)
	}
	origin := startRecordingOrigin(t)
	h := startHeadless(t, data, "--script", js)
	proxyURL, _ := url.Parse("http://" + h.addr)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 30 * time.Second}
	resp, err := client.Get(origin.URL + "/order")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := origin.requests()
	if len(got) != 1 || got[0].Get("X-Rule") != "from-rule" || got[0].Get("X-Seen") != "from-rule" {
		t.Fatalf("origin headers %v (stderr %s)", got, h.errb)
	}
}
