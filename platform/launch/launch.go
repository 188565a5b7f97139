// Package launch starts clients that go through Inspector and trust its CA without any
// change to the machine: browsers with a fresh profile of their own under the data
// directory, and shells with proxy and CA variables (Env). It builds command lines and
// files; running them is the caller's. No fyne.io imports; builds with CGO_ENABLED=0.
package launch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Browser kinds.
const (
	KindChromium = "chromium"
	KindFirefox  = "firefox"
)

// Browser is a client Inspector knows how to launch.
type Browser struct {
	ID   string // the NAME of `inspector launch NAME`
	Name string // for people
	Kind string // KindChromium or KindFirefox
}

// Browsers are the launchable browsers, in menu order.
var Browsers = []Browser{
	{"chromium", "Chromium", KindChromium},
	{"chrome", "Google Chrome", KindChromium},
	{"edge", "Microsoft Edge", KindChromium},
	{"brave", "Brave", KindChromium},
	{"firefox", "Firefox", KindFirefox},
}

// ByID finds a browser by its ID (case-insensitive).
func ByID(id string) (Browser, bool) {
	for _, b := range Browsers {
		if strings.EqualFold(b.ID, id) {
			return b, true
		}
	}
	return Browser{}, false
}

// IDs lists the browser IDs, for messages.
func IDs() string {
	var ids []string
	for _, b := range Browsers {
		ids = append(ids, b.ID)
	}
	return strings.Join(ids, ", ")
}

// Candidates are where b's executable is looked for on goos: names on PATH (no
// separator) and absolute paths. getenv expands Windows folders (ProgramFiles, ...).
func Candidates(b Browser, goos string, getenv func(string) string) []string {
	switch goos {
	case "windows":
		pf, pf86, local := getenv("ProgramFiles"), getenv("ProgramFiles(x86)"), getenv("LOCALAPPDATA")
		in := func(rel string, roots ...string) []string {
			var out []string
			for _, r := range roots {
				if r != "" {
					out = append(out, r+`\`+rel)
				}
			}
			return out
		}
		switch b.ID {
		case "chromium":
			return in(`Chromium\Application\chrome.exe`, local, pf)
		case "chrome":
			return in(`Google\Chrome\Application\chrome.exe`, pf, pf86, local)
		case "edge":
			return in(`Microsoft\Edge\Application\msedge.exe`, pf86, pf)
		case "brave":
			return in(`BraveSoftware\Brave-Browser\Application\brave.exe`, pf, pf86, local)
		case "firefox":
			return in(`Mozilla Firefox\firefox.exe`, pf, pf86)
		}
	case "darwin":
		app := map[string]string{
			"chromium": "Chromium.app/Contents/MacOS/Chromium",
			"chrome":   "Google Chrome.app/Contents/MacOS/Google Chrome",
			"edge":     "Microsoft Edge.app/Contents/MacOS/Microsoft Edge",
			"brave":    "Brave Browser.app/Contents/MacOS/Brave Browser",
			"firefox":  "Firefox.app/Contents/MacOS/firefox",
		}[b.ID]
		out := []string{"/Applications/" + app}
		if h := getenv("HOME"); h != "" {
			out = append(out, h+"/Applications/"+app)
		}
		return out
	default:
		return map[string][]string{
			"chromium": {"chromium", "chromium-browser"},
			"chrome":   {"google-chrome", "google-chrome-stable"},
			"edge":     {"microsoft-edge", "microsoft-edge-stable"},
			"brave":    {"brave-browser", "brave"},
			"firefox":  {"firefox", "firefox-esr"},
		}[b.ID]
	}
	return nil
}

// Find returns the first candidate that exists. The error names everything looked for.
func Find(b Browser, goos string, getenv func(string) string, lookPath func(string) (string, error)) (string, error) {
	cands := Candidates(b, goos, getenv)
	for _, c := range cands {
		if !strings.ContainsAny(c, `/\`) {
			if p, err := lookPath(c); err == nil {
				return p, nil
			}
			continue
		}
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			return c, nil
		}
	}
	where := "on PATH: " + strings.Join(cands, ", ")
	if len(cands) > 0 && strings.ContainsAny(cands[0], `/\`) {
		where = "at " + strings.Join(cands, ", ")
	}
	return "", fmt.Errorf("%s is not installed: looked for it %s", b.Name, where)
}

// Spec is one launch.
type Spec struct {
	Browser Browser
	Exe     string
	// Profile is the fresh profile folder (Chromium's --user-data-dir, Firefox's -profile).
	Profile string
	// SOCKS is the host:port of the SOCKS5 listener of this launch.
	SOCKS string
	// SPKI is the CA's SPKI hash (Chromium's --ignore-certificate-errors-spki-list).
	SPKI string
	// Args are the user's extra arguments (after --), before URL.
	Args []string
	URL  string
}

// Command is the launch's argv. Chromium-family browsers get the proxy and SPKI flags and
// QUIC off (Chromium never trusts an added root for QUIC); Firefox takes everything from
// its profile (WriteFirefoxProfile).
func Command(s Spec) []string {
	argv := []string{s.Exe}
	switch s.Browser.Kind {
	case KindChromium:
		argv = append(argv,
			"--user-data-dir="+s.Profile,
			"--proxy-server=socks5://"+s.SOCKS,
			"--proxy-bypass-list=<-loopback>",
			"--ignore-certificate-errors-spki-list="+s.SPKI,
			"--disable-quic",
			"--no-first-run",
			"--no-default-browser-check",
		)
	case KindFirefox:
		argv = append(argv, "-profile", s.Profile, "-no-remote", "-new-instance")
	}
	argv = append(argv, s.Args...)
	if s.URL != "" {
		argv = append(argv, s.URL)
	}
	return argv
}

// NewProfile makes DIR/<id>-<n> for the lowest n not yet used, so that a second launch of
// one browser gets a second, separate profile.
func NewProfile(dir, id string) (string, int, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", 0, err
	}
	for n := 1; n < 10000; n++ {
		p := filepath.Join(dir, fmt.Sprintf("%s-%d", id, n))
		if err := os.Mkdir(p, 0o700); err == nil {
			return p, n, nil
		} else if !os.IsExist(err) {
			return "", 0, err
		}
	}
	return "", 0, fmt.Errorf("%s: too many %s profiles; delete old ones", dir, id)
}

// FirefoxPrefs is the user.js of a launched Firefox profile: SOCKS5 with remote DNS,
// loopback not bypassed, HTTP/3 off (Inspector decrypts TCP), no first-run pages.
func FirefoxPrefs(socks string) string {
	host, port, _ := strings.Cut(socks, ":")
	if i := strings.LastIndex(socks, ":"); i >= 0 {
		host, port = strings.Trim(socks[:i], "[]"), socks[i+1:]
	}
	prefs := [][2]string{
		{"network.proxy.type", "1"},
		{"network.proxy.socks", fmt.Sprintf("%q", host)},
		{"network.proxy.socks_port", port},
		{"network.proxy.socks_version", "5"},
		{"network.proxy.socks_remote_dns", "true"},
		{"network.proxy.no_proxies_on", `""`},
		{"network.proxy.allow_hijacking_localhost", "true"},
		{"network.http.http3.enable", "false"},
		{"security.enterprise_roots.enabled", "false"},
		{"browser.shell.checkDefaultBrowser", "false"},
		{"browser.startup.homepage_override.mstone", `"ignore"`},
		{"browser.aboutwelcome.enabled", "false"},
		{"datareporting.policy.dataSubmissionEnabled", "false"},
		{"toolkit.telemetry.reportingpolicy.firstRun", "false"},
		{"app.update.auto", "false"},
	}
	var b strings.Builder
	b.WriteString("// Written by Inspector for a launched Firefox: this profile goes through Inspector.\n")
	for _, p := range prefs {
		fmt.Fprintf(&b, "user_pref(%q, %s);\n", p[0], p[1])
	}
	return b.String()
}

// WriteFirefoxProfile fills a fresh Firefox profile: user.js with the proxy preferences,
// and the CA (caFile, PEM) in the profile's own cert9.db through certutil (package
// libnss3-tools), trusted for TLS servers only. Nothing outside profile changes.
func WriteFirefoxProfile(ctx context.Context, profile, socks, caFile, nick string) error {
	if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(FirefoxPrefs(socks)), 0o600); err != nil {
		return err
	}
	certutil, err := exec.LookPath("certutil")
	if err != nil {
		return fmt.Errorf("Firefox needs the CA in its profile's certificate database, and certutil is not installed (Debian/Ubuntu: apt install libnss3-tools; Fedora: dnf install nss-tools; macOS: brew install nss)")
	}
	db := "sql:" + profile
	if out, err := exec.CommandContext(ctx, certutil, "-N", "-d", db, "--empty-password").CombinedOutput(); err != nil {
		return fmt.Errorf("certutil -N: %v: %s", err, out)
	}
	if out, err := exec.CommandContext(ctx, certutil, "-A", "-d", db, "-n", nick, "-t", "C,,", "-i", caFile).CombinedOutput(); err != nil {
		return fmt.Errorf("certutil -A: %v: %s", err, out)
	}
	return nil
}
