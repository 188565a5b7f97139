// Package darwin implements certificate trust and system proxy settings for macOS: the
// login keychain through the security tool, Firefox's enterprise-roots preference, and the
// web and secure-web proxies of every enabled network service through networksetup.
//
// Every OS change goes through an osapi.Runner so the exact command lines are unit-tested
// with a fake on any OS; the package has no build constraint for that reason.
package darwin

import (
	"context"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"inspector/platform/osapi"
)

// Keychain trusts the CA in one keychain (the login keychain by default) with
// "security add-trusted-cert -r trustRoot", which asks the user to confirm.
type Keychain struct {
	Runner osapi.Runner
	// Path is the keychain file, e.g. ~/Library/Keychains/login.keychain-db.
	Path    string
	Firefox osapi.FirefoxEnterpriseRoots
	// TempDir is where the certificate file given to security is written ("" = os.TempDir).
	TempDir string
}

// NewTrustStore returns the login keychain of the user whose home is home, with the
// Firefox profiles under it.
func NewTrustStore(r osapi.Runner, home string) *Keychain {
	return &Keychain{
		Runner:  r,
		Path:    filepath.Join(home, "Library", "Keychains", "login.keychain-db"),
		Firefox: osapi.FirefoxEnterpriseRoots{Roots: osapi.FirefoxRoots("darwin", home, "")},
	}
}

func (k *Keychain) withCertFile(cert *x509.Certificate, f func(path string) error) error {
	tf, err := os.CreateTemp(k.TempDir, "inspector-ca-*.pem")
	if err != nil {
		return err
	}
	defer os.Remove(tf.Name())
	_, err = tf.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}))
	if cerr := tf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return f(tf.Name())
}

// thumb is the SHA-1 in the upper-case hex security prints and accepts.
func thumb(cert *x509.Certificate) string {
	return strings.ToUpper(hex.EncodeToString(osapi.SHA1(cert)))
}

func (k *Keychain) has(ctx context.Context, cert *x509.Certificate) (bool, error) {
	out, err := k.Runner.Run(ctx, "security", "find-certificate", "-a", "-Z", "-c", cert.Subject.CommonName, k.Path)
	if err != nil {
		// security exits non-zero when nothing matches.
		if _, ok := err.(*osapi.ExitError); ok {
			return false, nil
		}
		return false, err
	}
	return strings.Contains(strings.ToUpper(string(out)), "SHA-1 HASH: "+thumb(cert)), nil
}

// Install implements osapi.TrustStore.
func (k *Keychain) Install(ctx context.Context, cert *x509.Certificate) error {
	if err := osapi.CheckCert(cert); err != nil {
		return err
	}
	ok, err := k.has(ctx, cert)
	if err != nil {
		return err
	}
	if !ok {
		err = k.withCertFile(cert, func(path string) error {
			_, err := k.Runner.Run(ctx, "security", "add-trusted-cert", "-r", "trustRoot", "-k", k.Path, path)
			return err
		})
		if err != nil {
			return fmt.Errorf("login keychain: %w", err)
		}
	}
	return k.Firefox.Install()
}

// Remove implements osapi.TrustStore: the trust setting, then every copy in the keychain.
func (k *Keychain) Remove(ctx context.Context, cert *x509.Certificate) error {
	if err := osapi.CheckCert(cert); err != nil {
		return err
	}
	ok, err := k.has(ctx, cert)
	if err != nil {
		return err
	}
	if ok {
		// The trust setting goes first; it fails harmlessly when there is none.
		_ = k.withCertFile(cert, func(path string) error {
			_, err := k.Runner.Run(ctx, "security", "remove-trusted-cert", path)
			return err
		})
		for range 10 {
			if _, err := k.Runner.Run(ctx, "security", "delete-certificate", "-Z", thumb(cert), k.Path); err != nil {
				return fmt.Errorf("login keychain: %w", err)
			}
			if ok, err := k.has(ctx, cert); err != nil || !ok {
				break
			}
		}
	}
	return k.Firefox.Remove()
}

// Status implements osapi.TrustStore.
func (k *Keychain) Status(ctx context.Context, cert *x509.Certificate) (osapi.TrustStatus, error) {
	if err := osapi.CheckCert(cert); err != nil {
		return osapi.TrustStatus{}, err
	}
	ok, err := k.has(ctx, cert)
	p := osapi.TrustPlace{Store: "macOS login keychain", Trusted: ok}
	if err != nil {
		p.Note = err.Error()
	}
	st := osapi.TrustStatus{Places: []osapi.TrustPlace{p}}
	st.Places = append(st.Places, k.Firefox.Places()...)
	return st, nil
}
