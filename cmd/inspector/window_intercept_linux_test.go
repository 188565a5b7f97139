package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	et "inspector/engine/enginetest"
	"inspector/engine/session"
	"inspector/engine/wireguard"
	"inspector/store"
	"inspector/ui"
)

// standIn is a browser or terminal stand-in: a real executable on PATH that records its
// argv and environment in OUT/NAME.args and OUT/NAME.env. With curl it then fetches
// $STANDIN_URL through the --proxy-server it was given, trusting the data directory's CA
// (found from --user-data-dir), and crashes (kill -9 of itself), as a browser might.
const standIn = `#!/bin/sh
name=$(basename "$0")
n=$(ls "$STANDIN_OUT" | grep -c "^$name-[0-9]*\.args$")
out="$STANDIN_OUT/$name-$n"
for a in "$@"; do printf '%s\n' "$a"; done > "$out.args.tmp"
export -p > "$out.env"
mv "$out.args.tmp" "$out.args"
if [ -n "$STANDIN_URL" ]; then
  for a in "$@"; do
    case "$a" in
      --proxy-server=*) px=${a#--proxy-server=socks5://} ;;
      --user-data-dir=*) prof=${a#--user-data-dir=} ;;
    esac
  done
  if [ -n "$px" ]; then
    curl -sS --max-time 30 --socks5-hostname "$px" --cacert "$prof/../../ca/root.pem" -o "$out.body" "$STANDIN_URL" 2> "$out.curl"
    kill -9 $$
  fi
fi
`

// TestWindowInterceptMenu taps every entry of the window's Intercept menu on a real
// instance: real executables on PATH stand in for the browsers and the terminal (no
// browser starts in a unit test; TestLaunchChromium and docs/launch.md's figure run the
// real one). Absent browsers are greyed with what was looked for; a launched Chromium gets
// its own profile, SOCKS listener and SPKI trust; its session stays, tagged, after it
// crashes; a second launch gets a second profile; Firefox gets a profile with the CA in
// its own cert9.db; the terminal gets the variables of inspector env; Run a command…
// captures curl in a namespace; Phone over WireGuard… shows a QR code and turns WireGuard
// mode on at run time.
func TestWindowInterceptMenu(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("skipped: curl is not installed (make deps installs it)")
	}
	certutil, err := exec.LookPath("certutil")
	if err != nil {
		t.Skip("skipped: certutil is not installed (libnss3-tools)")
	}
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	bin, out := t.TempDir(), t.TempDir()
	for _, n := range []string{"chromium", "firefox", "xterm"} {
		if err := os.WriteFile(filepath.Join(bin, n), []byte(standIn), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range []string{curl, certutil, "/bin/sh"} {
		os.Symlink(tool, filepath.Join(bin, filepath.Base(tool)))
	}
	for _, tool := range []string{"ls", "grep", "mv", "basename"} {
		if p, err := exec.LookPath(tool); err == nil {
			os.Symlink(p, filepath.Join(bin, tool))
		}
	}
	t.Setenv("PATH", bin)
	t.Setenv("STANDIN_OUT", out)
	t.Setenv("STANDIN_URL", o.URL+"/echo?from=standin")

	dir := t.TempDir()
	f := defaultTestFlags()
	f.upstreamCA = originPEM(t, o)
	inst, err := startInstance(dir, f)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.shutdown()
	go inst.engine.Serve()

	posts := make(chan func(), 64)
	d := windowDeps(inst, nil)
	d.Post = func(f func()) { posts <- f }
	u := ui.New(test.NewTempApp(t), test.NewTempWindow(t, nil), d)
	// settle runs what the UI's background work posted until cond holds.
	settle := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for !cond() {
			select {
			case f := <-posts:
				f()
			case <-time.After(20 * time.Millisecond):
			case <-deadline:
				t.Fatalf("%s: timed out; last outcome %q", what, u.InterceptLast())
			}
		}
	}
	tap := func(label string) {
		t.Helper()
		it := u.InterceptItem(label)
		if it == nil {
			t.Fatalf("no Intercept entry %q", label)
		}
		if it.Disabled {
			t.Fatalf("entry %q is disabled", it.Label)
		}
		it.Action()
	}

	// Absent browsers: greyed, naming what was looked for.
	for label, want := range map[string]string{
		"Google Chrome":  "looked for it on PATH: google-chrome, google-chrome-stable",
		"Microsoft Edge": "looked for it on PATH: microsoft-edge, microsoft-edge-stable",
		"Brave":          "looked for it on PATH: brave-browser, brave",
	} {
		it := u.InterceptItem(label)
		if it == nil || !it.Disabled || !strings.Contains(it.Label, "not installed: "+want) {
			t.Fatalf("%s: %+v", label, it)
		}
	}
	for _, label := range []string{"Chromium", "Firefox", "Terminal", "Run a command…", "Phone over WireGuard…"} {
		if it := u.InterceptItem(label); it == nil || it.Disabled || it.Label != label {
			t.Fatalf("%s: %+v", label, it)
		}
	}

	// Chromium, twice: each launch a profile, a SOCKS listener and the CA's SPKI of its own.
	for n := 1; n <= 2; n++ {
		client := "chromium-" + strconv.Itoa(n)
		tap("Chromium")
		settle("launch "+client, func() bool { return strings.Contains(u.InterceptLast(), "Launched "+client) })
		args := readArgs(t, filepath.Join(out, "chromium-"+strconv.Itoa(n-1)+".args"))
		profile := filepath.Join(dir, "launch", client)
		for _, want := range []string{"--user-data-dir=" + profile, "--ignore-certificate-errors-spki-list=" + inst.ca.SPKIHash(), "--disable-quic"} {
			if !contains(args, want) {
				t.Fatalf("%s argv %q lacks %q", client, args, want)
			}
		}
		if fi, err := os.Stat(profile); err != nil || !fi.IsDir() {
			t.Fatalf("profile %s: %v", profile, err)
		}
		// The stand-in fetched the page through its SOCKS listener, then crashed: the
		// session stays, decrypted and tagged, and the listener is gone.
		s := waitSession(t, inst.store, func(s *session.Session) bool { return s.Client.Process == client+launchedSuffix })
		if s.Request.URL != o.URL+"/echo?from=standin" || s.Response == nil || s.Response.Status != 200 || s.Client.TLS == nil {
			t.Fatalf("%s session %s %+v tls %v", client, s.Request.URL, s.Response, s.Client.TLS)
		}
		socks := argValue(args, "--proxy-server=socks5://")
		poll(t, 60*time.Second, client+"'s SOCKS listener to close after the crash", func() bool {
			c, err := net.DialTimeout("tcp", socks, time.Second)
			if err == nil {
				c.Close()
			}
			return err != nil
		})
	}

	// Firefox: a profile with user.js and the CA in its own certificate database.
	os.Unsetenv("STANDIN_URL")
	tap("Firefox")
	settle("launch firefox", func() bool { return strings.Contains(u.InterceptLast(), "Launched firefox-1") })
	args := readArgs(t, filepath.Join(out, "firefox-0.args"))
	prof := filepath.Join(dir, "launch", "firefox-1")
	if !contains(args, "-profile") || !contains(args, prof) {
		t.Fatalf("firefox argv %q", args)
	}
	userJS, err := os.ReadFile(filepath.Join(prof, "user.js"))
	if err != nil || !strings.Contains(string(userJS), `"network.proxy.socks_port"`) {
		t.Fatalf("user.js: %v %s", err, userJS)
	}
	if l, err := exec.Command(certutil, "-L", "-d", "sql:"+prof).CombinedOutput(); err != nil || !strings.Contains(string(l), "C,,") {
		t.Fatalf("certutil -L: %v %s", err, l)
	}

	// Terminal: the variables of inspector env, pointing at this instance.
	tap("Terminal")
	settle("terminal", func() bool { return strings.Contains(u.InterceptLast(), "opened xterm") })
	poll(t, 60*time.Second, "the terminal's environment", func() bool {
		_, err := os.Stat(filepath.Join(out, "xterm-0.args"))
		return err == nil
	})
	env, _ := os.ReadFile(filepath.Join(out, "xterm-0.env"))
	for _, want := range []string{"HTTPS_PROXY='http://" + inst.engine.Addr() + "'", "SSL_CERT_FILE='" + filepath.Join(dir, "launch", "env", "bundle.pem") + "'"} {
		if !strings.Contains(string(env), want) {
			t.Fatalf("terminal env lacks %s:\n%s", want, env)
		}
	}

	// Run a command…: curl in a namespace of its own, with no proxy setting.
	tap("Run a command…")
	entry, run, note := u.InterceptRunWidgets()
	if err := runSupport(); err != nil {
		// Without CAP_NET_ADMIN the dialog says so in one line and cannot start anything.
		if !run.Disabled() || note.Text != err.Error() || strings.Contains(note.Text, "\n") {
			t.Fatalf("no netns: button disabled %v, note %q", run.Disabled(), note.Text)
		}
		t.Logf("Run a command… not exercised: %v", err)
	} else {
		entry.SetText("curl -sS --max-time 30 -o /dev/null " + o.URL + "/echo?from=window-run")
		test.Tap(run)
		settle("run", func() bool { return strings.Contains(note.Text, "Running curl") })
		s := waitSession(t, inst.store, func(s *session.Session) bool { return strings.Contains(s.Request.URL, "from=window-run") })
		if s.Client.Process != "curl"+launchedSuffix || s.Response == nil || s.Response.Status != 200 || s.Client.TLS == nil {
			t.Fatalf("run session: process %q response %+v", s.Client.Process, s.Response)
		}
	}

	// Phone over WireGuard…: off at first, with a QR code of the configuration; turned on
	// here, then a second device restarts it on the same port.
	tap("Phone over WireGuard…")
	p := u.InterceptPhoneWidgets()
	if firstLANAddr() == "" {
		if !strings.Contains(p.State.Text, "no non-loopback IPv4 address") {
			t.Fatalf("state %q", p.State.Text)
		}
		return
	}
	if !strings.Contains(p.State.Text, "WireGuard mode is off") || !strings.Contains(p.State.Text, "--wireguard :51820") ||
		p.QR.Image == nil || !strings.Contains(p.Config.Text, "[Interface]") || !strings.Contains(p.Config.Text, "# Inspector: phone") {
		t.Fatalf("phone dialog: state %q, qr %v, config %q", p.State.Text, p.QR.Image != nil, p.Config.Text)
	}
	p.Port.SetText("0") // a free port: tests take no fixed ones
	test.Tap(p.Enable)
	settle("WireGuard on", func() bool { return strings.Contains(p.State.Text, "WireGuard mode listens on UDP port") })
	port := inst.wireGuardPort()
	if port == 0 || !strings.Contains(p.Config.Text, ":"+strconv.Itoa(port)+"\n") {
		t.Fatalf("port %d, config %q", port, p.Config.Text)
	}
	p.Name.SetText("tablet")
	test.Tap(p.Show)
	keys, err := wireguard.LoadKeys(filepath.Join(dir, "wireguard"))
	if err != nil || len(keys.Peers) != 2 || inst.wireGuardPort() != port || !strings.Contains(p.Config.Text, "# Inspector: tablet") {
		t.Fatalf("second device: %v, %d peers, port %d (was %d)", err, len(keys.Peers), inst.wireGuardPort(), port)
	}
}

func readArgs(t *testing.T, path string) []string {
	t.Helper()
	poll(t, 60*time.Second, path, func() bool { _, err := os.Stat(path); return err == nil })
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func argValue(args []string, prefix string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, prefix); ok {
			return v
		}
	}
	return ""
}

// waitSession polls st (flushing its writer) for a session that match accepts.
func waitSession(t *testing.T, st *store.Store, match func(*session.Session) bool) *session.Session {
	t.Helper()
	var found *session.Session
	poll(t, 60*time.Second, "the session in the store", func() bool {
		st.Flush()
		sums, err := st.List(store.Query{})
		if err != nil {
			t.Fatal(err)
		}
		for _, sum := range sums {
			if s, err := st.Get(sum.ID); err == nil && match(s) {
				found = s
				return true
			}
		}
		return false
	})
	return found
}
