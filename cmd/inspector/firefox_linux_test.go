//go:build linux

package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	et "inspector/engine/enginetest"
	"inspector/platform/osapi"
)

// TestFirefoxThroughProxyAfterCAInstall runs the real Firefox (Debian's firefox-esr) headless
// on a fresh HOME: once to make its profiles, then `inspector ca install`, then through
// the proxy to an HTTPS page whose script calls fetch(). The fetch() reaching the origin
// proves Firefox accepted Inspector's certificate; the running instance must list it.
func TestFirefoxThroughProxyAfterCAInstall(t *testing.T) {
	ff := ""
	for _, name := range []string{"firefox-esr", "firefox"} {
		if p, err := exec.LookPath(name); err == nil {
			ff = p
			break
		}
	}
	if ff == "" {
		t.Skip("firefox not installed (make test-firefox installs Debian's firefox-esr)")
	}
	if _, err := exec.LookPath("certutil"); err != nil {
		t.Skip("certutil not installed (apt install libnss3-tools)")
	}
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME=", "MOZ_HEADLESS=1", "MOZ_CRASHREPORTER_DISABLE=1")
	run := func(timeout time.Duration, name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			return string(out), fmt.Errorf("%s %v: timed out after %v", filepath.Base(name), args, timeout)
		}
		return string(out), err
	}

	// First run: Firefox makes profiles.ini and its profiles.
	if out, err := run(2*time.Minute, ff, "--headless", "--screenshot", filepath.Join(home, "first.png"), "about:blank"); err != nil {
		t.Fatalf("first firefox run: %v\n%s", err, out)
	}
	profiles, err := osapi.FirefoxProfiles(osapi.FirefoxRoots("linux", home, ""))
	if err != nil || len(profiles) == 0 {
		t.Fatalf("firefox made no profile we can find: %v %v", profiles, err)
	}
	t.Logf("firefox profiles: %+v", profiles)

	pinged := make(chan string, 4)
	origin := et.StartOrigin(t, et.OriginH1TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/ping":
			select {
			case pinged <- r.Header.Get("User-Agent"):
			default:
			}
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "pong")
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><title>start</title><script>
fetch("/api/ping?from=fetch").then(r => r.text()).then(t => { document.title = t; });
</script>`)
		default:
			http.NotFound(w, r)
		}
	}))
	originCA := filepath.Join(t.TempDir(), "origin.pem")
	os.WriteFile(originCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: origin.Certificate().Raw}), 0o644)

	data := t.TempDir()
	h := startHeadless(t, data, "--upstream-ca", originCA)

	out, err := run(time.Minute, binary(t), "ca", "install", "--data-dir", data)
	t.Cleanup(func() { run(time.Minute, binary(t), "ca", "uninstall", "--data-dir", data) })
	if err != nil && !(os.Geteuid() != 0 && strings.Contains(out, "needs administrator rights")) {
		t.Fatalf("ca install: %v\n%s", err, out)
	}
	for _, p := range profiles {
		if !strings.Contains(out, "trusted      Firefox profile "+filepath.Base(p.Dir)) {
			t.Fatalf("ca install did not trust Firefox profile %s:\n%s", p.Dir, out)
		}
	}

	// Firefox through the proxy: manual proxy for http and https, 127.0.0.1 not exempt.
	_, port, _ := strings.Cut(h.addr, ":")
	prof := profiles[0].Dir
	for _, p := range profiles { // the profile Firefox starts by default
		if strings.HasSuffix(p.Name, "default-esr") || strings.HasSuffix(p.Name, "default-release") {
			prof = p.Dir
		}
	}
	prefs := fmt.Sprintf(`user_pref("network.proxy.type", 1);
user_pref("network.proxy.http", "127.0.0.1");
user_pref("network.proxy.http_port", %[1]s);
user_pref("network.proxy.ssl", "127.0.0.1");
user_pref("network.proxy.ssl_port", %[1]s);
user_pref("network.proxy.no_proxies_on", "");
user_pref("network.proxy.allow_hijacking_localhost", true);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("app.update.auto", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.enabled", false);
user_pref("network.captive-portal-service.enabled", false);
`, port)
	if err := os.WriteFile(filepath.Join(prof, "user.js"), []byte(prefs), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fx := exec.CommandContext(ctx, ff, "--headless", "--no-remote", "--profile", prof, origin.URL+"/")
	fx.Env = env
	var fxOut strings.Builder
	fx.Stdout, fx.Stderr = &fxOut, &fxOut
	if err := fx.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- fx.Wait() }()
	t.Cleanup(func() {
		fx.Process.Kill()
		<-exited
	})
	select {
	case ua := <-pinged:
		if !strings.Contains(ua, "Firefox") {
			t.Fatalf("fetch() came with User-Agent %q", ua)
		}
	case err := <-exited:
		t.Fatalf("firefox exited before its page's fetch() arrived: %v\n%s", err, fxOut.String())
	case <-ctx.Done():
		t.Fatalf("no fetch() from Firefox within 3 minutes; firefox output:\n%s", fxOut.String())
	}

	// The running instance lists the fetch() (its line on stdout, then `sessions --json`).
	want := origin.URL + "/api/ping?from=fetch"
	for {
		if l := h.nextLine(t); strings.Contains(l, want) {
			if !strings.Contains(l, "200 GET") {
				t.Fatalf("session line %q", l)
			}
			break
		}
	}
	raw, err := run(time.Minute, binary(t), "sessions", "--json", "--data-dir", data)
	if err != nil {
		t.Fatalf("sessions --json: %v\n%s", err, raw)
	}
	found := false
	for _, l := range strings.Split(strings.TrimSpace(raw), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["url"] == want && m["status"] == float64(200) && m["tls"] == true {
			found = true
		}
	}
	if !found {
		t.Fatalf("sessions --json of the running instance lacks %s:\n%s", want, raw)
	}
}
