// Package osapi holds the vocabulary shared by the platform package and its per-OS
// implementations (platform/linux, platform/darwin, platform/windows): the command Runner,
// the TrustStore and ProxyBackend interfaces and their status types.
//
// It exists so that the OS packages and the platform selector can share types without an
// import cycle; users import package platform, which re-exports everything here.
// It imports only the standard library and never fyne.io/...
package osapi

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// TrustStore trusts a root certificate in one or more OS or browser certificate stores.
//
// Implementations must be safe for use by one goroutine at a time; the CLI and the UI call
// them from one place. Every method may run OS commands and can take seconds (and, on macOS
// and Windows, show a system confirmation dialog); call them off the UI thread.
type TrustStore interface {
	// Install trusts cert. It is idempotent: installing an already trusted certificate
	// succeeds and changes nothing visible. When a store needs privileges the process
	// lacks, the error is (or wraps) a *NeedsRootError carrying the exact command to run.
	Install(ctx context.Context, cert *x509.Certificate) error
	// Remove removes everything Install added for cert. Removing a certificate that is not
	// installed succeeds.
	Remove(ctx context.Context, cert *x509.Certificate) error
	// Status reports, for every store this TrustStore manages, whether cert is trusted there.
	Status(ctx context.Context, cert *x509.Certificate) (TrustStatus, error)
}

// TrustStatus lists the stores a TrustStore manages and whether the certificate is trusted
// in each.
type TrustStatus struct {
	Places []TrustPlace `json:"places"`
}

// TrustPlace is one store.
type TrustPlace struct {
	// Store names the store for people, e.g. "system (/usr/local/share/ca-certificates)".
	Store string `json:"store"`
	// Trusted is true when the certificate is installed (and trusted) there.
	Trusted bool `json:"trusted"`
	// Note explains a state that needs action ("needs root", "certutil missing: apt install
	// libnss3-tools"); empty when there is nothing to say.
	Note string `json:"note,omitempty"`
}

// Trusted reports whether the certificate is trusted in at least one store.
func (s TrustStatus) Trusted() bool {
	for _, p := range s.Places {
		if p.Trusted {
			return true
		}
	}
	return false
}

// String is one line per store, e.g. "trusted      system (/usr/local/share/ca-certificates)".
func (s TrustStatus) String() string {
	if len(s.Places) == 0 {
		return "no certificate stores found"
	}
	var b strings.Builder
	for i, p := range s.Places {
		if i > 0 {
			b.WriteByte('\n')
		}
		state := "not trusted"
		if p.Trusted {
			state = "trusted"
		}
		fmt.Fprintf(&b, "%-12s %s", state, p.Store)
		if p.Note != "" {
			fmt.Fprintf(&b, " (%s)", p.Note)
		}
	}
	return b.String()
}

// NeedsRootError says a store can only be changed with administrator rights. Command is the
// exact shell command a user can run to do it by hand.
type NeedsRootError struct {
	Store   string
	Command string
}

func (e *NeedsRootError) Error() string {
	return fmt.Sprintf("%s needs administrator rights; run: %s", e.Store, e.Command)
}

// ErrToolMissing is wrapped by errors about a missing OS tool (certutil, gsettings, ...).
var ErrToolMissing = errors.New("tool not installed")

// ProxyBackend reads and changes one OS proxy configuration (GNOME, KDE, WinINet, one
// macOS network service set). The journaling and crash recovery live in package platform;
// a backend only knows how to capture, apply and restore settings.
//
// Implementations are used by one goroutine at a time.
type ProxyBackend interface {
	// Name is a stable identifier stored in the journal ("gnome", "kde", "wininet",
	// "networksetup").
	Name() string
	// Snapshot captures every setting Apply may change, as JSON to be stored in the journal
	// and later given to Restore (possibly by another process after a crash).
	Snapshot(ctx context.Context) (json.RawMessage, error)
	// Apply points the configuration at the HTTP proxy addr (host:port) for http and https,
	// bypassing Bypass hosts, and disables auto-configuration.
	Apply(ctx context.Context, addr string) error
	// Restore puts back exactly the settings of a Snapshot.
	Restore(ctx context.Context, saved json.RawMessage) error
	// Describe summarises the current settings for people, e.g. "manual http 127.0.0.1:8080".
	Describe(ctx context.Context) (string, error)
}

// Bypass are the hosts Apply exempts from the proxy on every OS.
var Bypass = []string{"localhost", "127.0.0.1", "::1"}

// Fingerprint is the lowercase hex SHA-256 of the certificate's DER.
func Fingerprint(cert *x509.Certificate) string {
	s := sha256.Sum256(cert.Raw)
	return hex.EncodeToString(s[:])
}

// SHA1 is the SHA-1 of the certificate's DER, the thumbprint Windows and macOS use to find it.
func SHA1(cert *x509.Certificate) []byte {
	s := sha1.Sum(cert.Raw)
	return s[:]
}

// Nickname is the name under which the certificate is stored in NSS databases and files:
// unique per CA so that two installs never collide.
func Nickname(cert *x509.Certificate) string {
	return "Inspector Root CA " + Fingerprint(cert)[:16]
}

// CheckCert rejects a nil or empty certificate with a clear error.
func CheckCert(cert *x509.Certificate) error {
	if cert == nil || len(cert.Raw) == 0 {
		return errors.New("no certificate given")
	}
	if !cert.IsCA {
		return fmt.Errorf("certificate %q is not a CA certificate", cert.Subject.CommonName)
	}
	return nil
}

// Warning marks a non-fatal problem of a ProxyBackend call: the settings were changed
// (the registry or configuration is the truth) but a courtesy step failed, such as
// telling running apps to re-read them. Callers report it and carry on.
type Warning struct{ Err error }

func (w *Warning) Error() string { return w.Err.Error() }
func (w *Warning) Unwrap() error { return w.Err }

// Warn wraps err as a *Warning; nil stays nil.
func Warn(err error) error {
	if err == nil {
		return nil
	}
	return &Warning{Err: err}
}

// IsWarning reports whether err is only a warning (a *Warning anywhere in its chain and
// nothing else joined to it).
func IsWarning(err error) bool {
	var w *Warning
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if e != nil && !IsWarning(e) {
				return false
			}
		}
		return len(j.Unwrap()) > 0
	}
	return errors.As(err, &w)
}
