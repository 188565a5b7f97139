// Package linux implements certificate trust and system proxy settings for Linux desktops:
// the system CA store (update-ca-certificates or p11-kit's trust), the user's NSS databases
// (Chromium and Firefox, through certutil), GNOME (gsettings) and KDE (kwriteconfig).
//
// Every OS change goes through an osapi.Runner or plain files under configurable paths, so
// the logic is unit-tested with fakes and, on Linux, for real. The package has no build
// constraint so its logic tests run on any OS; only Linux uses it at run time.
package linux

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"inspector/platform/osapi"
)

// SystemStore is the system-wide CA store. Changing it needs root; without root Install
// and Remove return an *osapi.NeedsRootError with the exact command to run.
type SystemStore struct {
	Runner osapi.Runner
	// Flavor is "debian" (update-ca-certificates, Dir) or "p11kit" (trust anchor).
	Flavor string
	// Dir is where the debian flavour puts the certificate file
	// (default /usr/local/share/ca-certificates).
	Dir string
	// Bundles are the generated bundle files checked by Status; the first existing one is used.
	Bundles []string
	// Euid returns the effective user id (default os.Geteuid).
	Euid func() int
}

// NewSystemStore picks the flavour by the tools present; it returns nil when neither
// update-ca-certificates nor trust is installed.
func NewSystemStore(r osapi.Runner) *SystemStore {
	s := &SystemStore{Runner: r, Dir: "/usr/local/share/ca-certificates",
		Bundles: []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem"}}
	switch {
	case lookPath("update-ca-certificates"):
		s.Flavor = "debian"
	case lookPath("trust"):
		s.Flavor = "p11kit"
	default:
		return nil
	}
	return s
}

func lookPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

func (s *SystemStore) euid() int {
	if s.Euid != nil {
		return s.Euid()
	}
	return os.Geteuid()
}

// FileName is the certificate's file under Dir, unique per CA.
func (s *SystemStore) FileName(cert *x509.Certificate) string {
	return filepath.Join(s.Dir, "inspector-"+osapi.Fingerprint(cert)[:16]+".crt")
}

func (s *SystemStore) name() string {
	if s.Flavor == "p11kit" {
		return "system store (p11-kit trust)"
	}
	return "system store (" + s.Dir + ")"
}

func (s *SystemStore) rootCmd(cert *x509.Certificate, install bool) string {
	if s.Flavor == "p11kit" {
		if install {
			return "inspector ca export -o /tmp/inspector-ca.pem && sudo trust anchor --store /tmp/inspector-ca.pem"
		}
		return "inspector ca export -o /tmp/inspector-ca.pem && sudo trust anchor --remove /tmp/inspector-ca.pem"
	}
	if install {
		return "inspector ca export | sudo tee " + s.FileName(cert) + " >/dev/null && sudo update-ca-certificates"
	}
	return "sudo rm -f " + s.FileName(cert) + " && sudo update-ca-certificates --fresh"
}

func pemOf(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// Install implements osapi.TrustStore.
func (s *SystemStore) Install(ctx context.Context, cert *x509.Certificate) error {
	if err := osapi.CheckCert(cert); err != nil {
		return err
	}
	st, _ := s.Status(ctx, cert)
	if len(st.Places) == 1 && st.Places[0].Trusted {
		return nil
	}
	if s.euid() != 0 {
		return &osapi.NeedsRootError{Store: s.name(), Command: s.rootCmd(cert, true)}
	}
	if s.Flavor == "p11kit" {
		return withTempFile(pemOf(cert), func(path string) error {
			_, err := s.Runner.Run(ctx, "trust", "anchor", "--store", path)
			return err
		})
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(s.FileName(cert), pemOf(cert), 0o644); err != nil {
		return fmt.Errorf("system store: %w", err)
	}
	_, err := s.Runner.Run(ctx, "update-ca-certificates")
	return err
}

// Remove implements osapi.TrustStore.
func (s *SystemStore) Remove(ctx context.Context, cert *x509.Certificate) error {
	if err := osapi.CheckCert(cert); err != nil {
		return err
	}
	st, _ := s.Status(ctx, cert)
	_, statErr := os.Stat(s.FileName(cert))
	fileThere := s.Flavor == "debian" && statErr == nil
	if !fileThere && !(len(st.Places) == 1 && st.Places[0].Trusted) {
		return nil
	}
	if s.euid() != 0 {
		return &osapi.NeedsRootError{Store: s.name(), Command: s.rootCmd(cert, false)}
	}
	if s.Flavor == "p11kit" {
		return withTempFile(pemOf(cert), func(path string) error {
			_, err := s.Runner.Run(ctx, "trust", "anchor", "--remove", path)
			return err
		})
	}
	if err := os.Remove(s.FileName(cert)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("system store: %w", err)
	}
	// --fresh: a plain run leaves the removed certificate's links in /etc/ssl/certs dangling.
	_, err := s.Runner.Run(ctx, "update-ca-certificates", "--fresh")
	return err
}

// Status implements osapi.TrustStore: trusted when the generated bundle holds the certificate.
func (s *SystemStore) Status(_ context.Context, cert *x509.Certificate) (osapi.TrustStatus, error) {
	if err := osapi.CheckCert(cert); err != nil {
		return osapi.TrustStatus{}, err
	}
	p := osapi.TrustPlace{Store: s.name()}
	for _, b := range s.Bundles {
		data, err := os.ReadFile(b)
		if err != nil {
			continue
		}
		p.Trusted = bundleHas(data, cert.Raw)
		break
	}
	if !p.Trusted && s.euid() != 0 {
		p.Note = "installing needs root"
	}
	return osapi.TrustStatus{Places: []osapi.TrustPlace{p}}, nil
}

// bundleHas reports whether a PEM bundle contains the DER certificate.
func bundleHas(bundle, der []byte) bool {
	for {
		var b *pem.Block
		b, bundle = pem.Decode(bundle)
		if b == nil {
			return false
		}
		if b.Type == "CERTIFICATE" && bytes.Equal(b.Bytes, der) {
			return true
		}
	}
}

func withTempFile(data []byte, f func(path string) error) error {
	tf, err := os.CreateTemp("", "inspector-ca-*.pem")
	if err != nil {
		return err
	}
	defer os.Remove(tf.Name())
	if _, err := tf.Write(data); err != nil {
		tf.Close()
		return err
	}
	if err := tf.Close(); err != nil {
		return err
	}
	return f(tf.Name())
}

// NSSStore trusts the certificate in the user's NSS databases, through certutil (package
// libnss3-tools): Chromium's ~/.pki/nssdb and every Firefox profile listed in every
// profiles.ini Firefox uses (osapi.FirefoxRoots: ~/.mozilla/firefox, the XDG
// ~/.config/mozilla/firefox of Firefox 147+, the snap's and the flatpak's).
type NSSStore struct {
	Runner osapi.Runner
	// Home is the user's home directory.
	Home string
	// FirefoxRoots are the folders holding profiles.ini; nil means osapi.FirefoxRoots.
	FirefoxRoots []string
}

// nssDB is one database, as certutil's -d argument ("sql:/path" or "dbm:/path").
type nssDB struct{ name, arg string }

// nssDatabases are the NSS databases under Home. pending are Firefox profiles without a
// certificate database yet (a profile made but never started, or its cert9.db deleted);
// with create set they get one (certutil -N --empty-password, as Firefox itself would) and
// are returned as databases, otherwise they are returned for Status to report. err is
// about unreadable profiles.ini files or databases that could not be created.
func (n *NSSStore) nssDatabases(ctx context.Context, create bool) (dbs []nssDB, pending []osapi.FirefoxProfile, err error) {
	pki := filepath.Join(n.Home, ".pki", "nssdb")
	if exists(filepath.Join(pki, "cert9.db")) {
		dbs = append(dbs, nssDB{"Chromium NSS db (" + pki + ")", "sql:" + pki})
	} else if create && n.chromiumPresent() {
		if err := os.MkdirAll(pki, 0o700); err == nil {
			if _, err := n.Runner.Run(ctx, "certutil", "-N", "-d", "sql:"+pki, "--empty-password"); err == nil {
				dbs = append(dbs, nssDB{"Chromium NSS db (" + pki + ")", "sql:" + pki})
			}
		}
	}
	roots := n.FirefoxRoots
	if roots == nil {
		roots = osapi.FirefoxRoots("linux", n.Home, "")
	}
	profiles, perr := osapi.FirefoxProfiles(roots)
	errs := []error{perr}
	for _, p := range profiles {
		name := "Firefox profile " + filepath.Base(p.Dir)
		switch {
		case exists(filepath.Join(p.Dir, "cert9.db")):
			dbs = append(dbs, nssDB{name, "sql:" + p.Dir})
		case exists(filepath.Join(p.Dir, "cert8.db")):
			dbs = append(dbs, nssDB{name, "dbm:" + p.Dir})
		case !create:
			pending = append(pending, p)
		default:
			if err := os.MkdirAll(p.Dir, 0o700); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				continue
			}
			if _, err := n.Runner.Run(ctx, "certutil", "-N", "-d", "sql:"+p.Dir, "--empty-password"); err != nil {
				errs = append(errs, fmt.Errorf("%s (%s) has no certificate database and creating one failed: %w", name, p.Dir, toolHint(err)))
				continue
			}
			dbs = append(dbs, nssDB{name, "sql:" + p.Dir})
		}
	}
	return dbs, pending, errors.Join(errs...)
}

func (n *NSSStore) chromiumPresent() bool {
	for _, d := range []string{"google-chrome", "chromium", "BraveSoftware", "microsoft-edge", "vivaldi"} {
		if exists(filepath.Join(n.Home, ".config", d)) {
			return true
		}
	}
	return false
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (n *NSSStore) has(ctx context.Context, db nssDB, nick string) (bool, error) {
	_, err := n.Runner.Run(ctx, "certutil", "-L", "-d", db.arg, "-n", nick)
	if errors.Is(err, osapi.ErrToolMissing) {
		return false, err
	}
	return err == nil, nil
}

func toolHint(err error) error {
	if errors.Is(err, osapi.ErrToolMissing) {
		return fmt.Errorf("browser NSS databases: certutil not found; install it (Debian/Ubuntu: apt install libnss3-tools, Fedora: dnf install nss-tools): %w", err)
	}
	return err
}

// Install implements osapi.TrustStore.
func (n *NSSStore) Install(ctx context.Context, cert *x509.Certificate) error {
	if err := osapi.CheckCert(cert); err != nil {
		return err
	}
	dbs, _, derr := n.nssDatabases(ctx, true)
	if len(dbs) == 0 {
		return derr
	}
	nick := osapi.Nickname(cert)
	return withTempFile(pemOf(cert), func(path string) error {
		errs := []error{derr}
		for _, db := range dbs {
			ok, err := n.has(ctx, db, nick)
			if err != nil {
				return toolHint(err)
			}
			if ok {
				continue
			}
			if _, err := n.Runner.Run(ctx, "certutil", "-A", "-d", db.arg, "-t", "C,,", "-n", nick, "-a", "-i", path); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", db.name, toolHint(err)))
			}
		}
		return errors.Join(errs...)
	})
}

// Remove implements osapi.TrustStore: deletes every copy stored under the certificate's
// nickname.
func (n *NSSStore) Remove(ctx context.Context, cert *x509.Certificate) error {
	if err := osapi.CheckCert(cert); err != nil {
		return err
	}
	nick := osapi.Nickname(cert)
	dbs, _, derr := n.nssDatabases(ctx, false)
	errs := []error{derr}
	for _, db := range dbs {
		for range 10 { // a database may hold duplicates under one nickname
			ok, err := n.has(ctx, db, nick)
			if err != nil {
				return toolHint(err)
			}
			if !ok {
				break
			}
			if _, err := n.Runner.Run(ctx, "certutil", "-D", "-d", db.arg, "-n", nick); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", db.name, err))
				break
			}
		}
	}
	return errors.Join(errs...)
}

// Status implements osapi.TrustStore.
func (n *NSSStore) Status(ctx context.Context, cert *x509.Certificate) (osapi.TrustStatus, error) {
	if err := osapi.CheckCert(cert); err != nil {
		return osapi.TrustStatus{}, err
	}
	var st osapi.TrustStatus
	nick := osapi.Nickname(cert)
	dbs, pending, derr := n.nssDatabases(ctx, false)
	for _, db := range dbs {
		ok, err := n.has(ctx, db, nick)
		p := osapi.TrustPlace{Store: db.name, Trusted: ok}
		if err != nil {
			p.Note = "certutil missing: apt install libnss3-tools"
		}
		st.Places = append(st.Places, p)
	}
	for _, p := range pending {
		st.Places = append(st.Places, osapi.TrustPlace{Store: "Firefox profile " + filepath.Base(p.Dir),
			Note: "no certificate database yet; 'inspector ca install' creates it"})
	}
	if derr != nil {
		st.Places = append(st.Places, osapi.TrustPlace{Store: "Firefox profiles", Note: strings.Join(strings.Fields(derr.Error()), " ")})
	}
	return st, nil
}

// NewTrustStore returns the Linux trust stores for the current user: the system store (when
// a supported tool exists) and the NSS databases under home.
func NewTrustStore(r osapi.Runner, home string) osapi.TrustStore {
	var m osapi.MultiTrust
	if s := NewSystemStore(r); s != nil {
		m = append(m, s)
	}
	m = append(m, &NSSStore{Runner: r, Home: home})
	return m
}
