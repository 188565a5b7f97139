//go:build linux

package linux

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"inspector/platform/internal/testca"
	"inspector/platform/osapi"
)

// TestSystemStoreReal installs a throwaway CA into the real system store with
// update-ca-certificates, twice, and removes it, checking nothing is left behind.
func TestSystemStoreReal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to change the system CA store")
	}
	if _, err := exec.LookPath("update-ca-certificates"); err != nil {
		t.Skip("update-ca-certificates not installed (package ca-certificates)")
	}
	ctx := context.Background()
	cert := testca.New(t)
	s := NewSystemStore(osapi.ExecRunner{})
	if s.Flavor != "debian" {
		t.Fatalf("flavor %q, want debian", s.Flavor)
	}
	link := filepath.Join("/etc/ssl/certs", strings.TrimSuffix(filepath.Base(s.FileName(cert)), ".crt")+".pem")
	t.Cleanup(func() {
		if _, err := os.Stat(s.FileName(cert)); err == nil {
			os.Remove(s.FileName(cert))
			exec.Command("update-ca-certificates", "--fresh").Run()
		}
	})

	st, err := s.Status(ctx, cert)
	if err != nil || st.Trusted() {
		t.Fatalf("before install: %v, %v", st, err)
	}
	for i := range 2 { // idempotent
		if err := s.Install(ctx, cert); err != nil {
			t.Fatalf("install %d: %v", i, err)
		}
	}
	if st, err = s.Status(ctx, cert); err != nil || !st.Trusted() {
		t.Fatalf("after install: %v, %v", st, err)
	}
	bundle, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if n := bytes.Count(bundle, bytes.TrimSpace(pemOf(cert))); n != 1 {
		t.Fatalf("bundle holds the CA %d times, want 1", n)
	}
	if _, err := os.Lstat(link); err != nil {
		t.Fatalf("update-ca-certificates made no link: %v", err)
	}
	// Go's verifier, reading the bundle afresh, accepts a chain to the CA.
	pool := mustPool(t, bundle)
	if _, err := cert.Verify(x509VerifyOpts(pool)); err != nil {
		t.Fatalf("bundle does not verify the CA: %v", err)
	}

	for i := range 2 {
		if err := s.Remove(ctx, cert); err != nil {
			t.Fatalf("remove %d: %v", i, err)
		}
	}
	if st, err = s.Status(ctx, cert); err != nil || st.Trusted() {
		t.Fatalf("after remove: %v, %v", st, err)
	}
	if _, err := os.Stat(s.FileName(cert)); !os.IsNotExist(err) {
		t.Fatalf("certificate file left behind: %v", err)
	}
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Fatalf("link %s left behind: %v", link, err)
	}
	bundle, _ = os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if bundleHas(bundle, cert.Raw) {
		t.Fatal("bundle still holds the CA")
	}
}

func TestSystemStoreNeedsRoot(t *testing.T) {
	r := &osapi.RecordingRunner{}
	s := &SystemStore{Runner: r, Flavor: "debian", Dir: t.TempDir(), Bundles: []string{filepath.Join(t.TempDir(), "none.crt")}, Euid: func() int { return 1000 }}
	cert := testca.New(t)
	err := s.Install(context.Background(), cert)
	var nr *osapi.NeedsRootError
	if !asNeedsRoot(err, &nr) {
		t.Fatalf("install without root: %v, want NeedsRootError", err)
	}
	want := "inspector ca export | sudo tee " + s.FileName(cert) + " >/dev/null && sudo update-ca-certificates"
	if nr.Command != want {
		t.Fatalf("command %q, want %q", nr.Command, want)
	}
	if len(r.Calls()) != 0 {
		t.Fatalf("ran %v without root", r.Calls())
	}
	st, _ := s.Status(context.Background(), cert)
	if st.Trusted() || st.Places[0].Note != "installing needs root" {
		t.Fatalf("status %v", st)
	}
	// Nothing installed: removal has nothing to do and needs no root.
	if err := s.Remove(context.Background(), cert); err != nil {
		t.Fatal(err)
	}
}

func certutilOrSkip(t *testing.T) {
	if _, err := exec.LookPath("certutil"); err != nil {
		t.Skip("certutil not installed (package libnss3-tools)")
	}
}

func newNSSDB(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("certutil", "-N", "-d", "sql:"+dir, "--empty-password").CombinedOutput(); err != nil {
		t.Fatalf("certutil -N: %v: %s", err, out)
	}
}

func listNSS(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command("certutil", "-L", "-d", "sql:"+dir).CombinedOutput()
	if err != nil {
		t.Fatalf("certutil -L: %v: %s", err, out)
	}
	return string(out)
}

// TestNSSStoreReal installs into a temporary Chromium NSS db and into every Firefox profile
// that a profiles.ini lists, with the real certutil, and removes it again: a relative
// profile in ~/.mozilla/firefox, an absolute one (IsRelative=0) listed by the XDG
// ~/.config/mozilla/firefox of Firefox 147+ that has no cert9.db yet (it must be
// initialised, not skipped), and the snap's. A folder not listed in any profiles.ini is
// not a profile and is left alone.
func TestNSSStoreReal(t *testing.T) {
	certutilOrSkip(t)
	ctx := context.Background()
	home := t.TempDir()
	chromium := filepath.Join(home, ".pki", "nssdb")
	legacy := filepath.Join(home, ".mozilla", "firefox", "abcd1234.default-release")
	xdg := filepath.Join(t.TempDir(), "elsewhere", "wxyz5678.default-esr") // absolute, no db yet
	snap := filepath.Join(home, "snap", "firefox", "common", ".mozilla", "firefox", "snap0000.default")
	stray := filepath.Join(home, ".mozilla", "firefox", "notlisted.default")
	newNSSDB(t, chromium)
	newNSSDB(t, legacy)
	newNSSDB(t, snap)
	newNSSDB(t, stray)
	writeINI(t, filepath.Join(home, ".mozilla", "firefox"), "[General]\nStartWithLastProfile=1\n\n[Profile0]\nName=default-release\nIsRelative=1\nPath=abcd1234.default-release\nDefault=1\n")
	writeINI(t, filepath.Join(home, ".config", "mozilla", "firefox"), "[Install3B6073811A6ABF12]\nDefault="+xdg+"\nLocked=1\n\n[Profile0]\nName=default-esr\nIsRelative=0\nPath="+xdg+"\n")
	writeINI(t, filepath.Join(home, "snap", "firefox", "common", ".mozilla", "firefox"), "[Profile0]\r\nName=default\r\nPath=snap0000.default\r\n")
	cert := testca.New(t)
	n := &NSSStore{Runner: osapi.ExecRunner{}, Home: home}

	st, err := n.Status(ctx, cert)
	if err != nil || len(st.Places) != 4 || !strings.Contains(st.String(), "wxyz5678.default-esr (no certificate database yet") {
		t.Fatalf("status before install must report the profile without a database:\n%v %v", st, err)
	}
	for i := range 2 {
		if err := n.Install(ctx, cert); err != nil {
			t.Fatalf("install %d: %v", i, err)
		}
	}
	nick := osapi.Nickname(cert)
	for _, db := range []string{chromium, legacy, xdg, snap} {
		list := listNSS(t, db)
		if strings.Count(list, nick) != 1 {
			t.Fatalf("%s lists %q %d times:\n%s", db, nick, strings.Count(list, nick), list)
		}
		for _, l := range strings.Split(list, "\n") {
			if strings.HasPrefix(l, nick) && !strings.HasSuffix(strings.TrimSpace(l), "C,,") {
				t.Fatalf("trust flags in %q, want C,,", l)
			}
		}
	}
	if strings.Contains(listNSS(t, stray), nick) {
		t.Fatal("a folder no profiles.ini lists got the CA")
	}
	st, err = n.Status(ctx, cert)
	if err != nil || len(st.Places) != 4 {
		t.Fatalf("status after install: %v %v", st, err)
	}
	for _, p := range st.Places {
		if !p.Trusted {
			t.Fatalf("status after install:\n%v", st)
		}
	}

	if err := n.Remove(ctx, cert); err != nil {
		t.Fatal(err)
	}
	for _, db := range []string{chromium, legacy, xdg, snap} {
		if list := listNSS(t, db); strings.Contains(list, nick) {
			t.Fatalf("%s still lists the CA:\n%s", db, list)
		}
	}
	if st, _ = n.Status(ctx, cert); st.Trusted() {
		t.Fatalf("status after remove: %v", st)
	}
}

func writeINI(t *testing.T, dir, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "profiles.ini"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestNSSStoreCreatesChromiumDB checks that an installed-but-never-run Chromium gets its db.
func TestNSSStoreCreatesChromiumDB(t *testing.T) {
	certutilOrSkip(t)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".config", "chromium"), 0o700); err != nil {
		t.Fatal(err)
	}
	cert := testca.New(t)
	n := &NSSStore{Runner: osapi.ExecRunner{}, Home: home}
	if err := n.Install(context.Background(), cert); err != nil {
		t.Fatal(err)
	}
	if list := listNSS(t, filepath.Join(home, ".pki", "nssdb")); !strings.Contains(list, osapi.Nickname(cert)) {
		t.Fatalf("CA not in the new db:\n%s", list)
	}
}

func TestNSSStoreMissingCertutil(t *testing.T) {
	home := t.TempDir()
	newDir := filepath.Join(home, ".pki", "nssdb")
	os.MkdirAll(newDir, 0o700)
	os.WriteFile(filepath.Join(newDir, "cert9.db"), nil, 0o600)
	r := &osapi.RecordingRunner{Respond: func(osapi.Call) ([]byte, error) { return nil, osapi.ErrToolMissing }}
	err := (&NSSStore{Runner: r, Home: home}).Install(context.Background(), testca.New(t))
	if err == nil || !strings.Contains(err.Error(), "apt install libnss3-tools") {
		t.Fatalf("error %v, want an install hint", err)
	}
}
