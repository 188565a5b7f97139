package windows

import (
	"context"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"inspector/platform/osapi"
)

// Location is a system certificate store location.
type Location int

const (
	// CurrentUser is the user's store: no administrator rights needed (Windows shows its
	// own confirmation dialog when a root is added).
	CurrentUser Location = iota
	// LocalMachine is the machine's store: needs an elevated process.
	LocalMachine
)

func (l Location) String() string {
	if l == LocalMachine {
		return "LocalMachine"
	}
	return "CurrentUser"
}

// CertStore is one opened system certificate store ("ROOT").
type CertStore interface {
	// Add adds a DER certificate, replacing an existing copy.
	Add(der []byte) error
	// Has reports whether a certificate with this SHA-1 thumbprint is in the store.
	Has(sha1 []byte) (bool, error)
	// Delete removes every certificate with this SHA-1 thumbprint; it returns how many.
	// A store may stage deletions until Commit (Wine's crypt32 does).
	Delete(sha1 []byte) (int, error)
	// Commit writes staged changes to the store's backing (the registry). Windows writes
	// at once and commits nothing; Wine's crypt32 writes a deletion only on commit (a
	// system store closed without one keeps the certificate).
	Commit() error
	Close() error
}

// OpenStore opens the named system store at a location.
type OpenStore func(loc Location, name string) (CertStore, error)

// TrustStore trusts the CA in the Root store of the current user, of the machine when
// Elevated, and in Firefox through its enterprise-roots preference.
type TrustStore struct {
	Open OpenStore
	// Elevated reports whether the process runs with administrator rights.
	Elevated func() bool
	// Persisted is a second read path, independent of crypt32's store view: whether the
	// backing of a store (HKCU or HKLM\Software\Microsoft\SystemCertificates\ROOT) still
	// holds the certificate. Remove checks it after deleting; nil skips the check.
	Persisted func(loc Location, sha1 []byte) (bool, error)
	Firefox   osapi.FirefoxEnterpriseRoots
}

// RootStore is the name of the trusted root store.
const RootStore = "ROOT"

func (t *TrustStore) elevated() bool { return t.Elevated != nil && t.Elevated() }

func (t *TrustStore) with(loc Location, f func(CertStore) error) error {
	s, err := t.Open(loc, RootStore)
	if err != nil {
		return fmt.Errorf("opening the %s Root store: %w", loc, err)
	}
	err = f(s)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

func (t *TrustStore) locations() []Location {
	if t.elevated() {
		return []Location{CurrentUser, LocalMachine}
	}
	return []Location{CurrentUser}
}

// Install implements osapi.TrustStore.
func (t *TrustStore) Install(_ context.Context, cert *x509.Certificate) error {
	if err := osapi.CheckCert(cert); err != nil {
		return err
	}
	for _, loc := range t.locations() {
		err := t.with(loc, func(s CertStore) error {
			if ok, err := s.Has(osapi.SHA1(cert)); err != nil || ok {
				return err
			}
			return s.Add(cert.Raw)
		})
		if err != nil {
			return err
		}
	}
	return t.Firefox.Install()
}

// Remove implements osapi.TrustStore. A copy in the machine store that this unelevated
// process cannot delete is reported as a NeedsRootError with the command to run.
func (t *TrustStore) Remove(_ context.Context, cert *x509.Certificate) error {
	if err := osapi.CheckCert(cert); err != nil {
		return err
	}
	var errs []error
	thumb := osapi.SHA1(cert)
	for _, loc := range []Location{CurrentUser, LocalMachine} {
		err := t.with(loc, func(s CertStore) error {
			ok, err := t.holds(s, loc, thumb)
			if err != nil || !ok {
				return err
			}
			if loc == LocalMachine && !t.elevated() {
				return &osapi.NeedsRootError{Store: "Windows LocalMachine Root store",
					Command: "certutil -delstore Root " + hex.EncodeToString(thumb) + "   (in an administrator prompt)"}
			}
			if _, err := s.Delete(thumb); err != nil {
				return err
			}
			if err := s.Commit(); err != nil {
				return fmt.Errorf("committing the removal: %w", err)
			}
			return nil
		})
		if err == nil {
			err = t.checkGone(loc, thumb)
		}
		errs = append(errs, err)
	}
	errs = append(errs, t.Firefox.Remove())
	return errors.Join(errs...)
}

// holds reports whether loc's own store holds a copy: by the registry when Persisted is
// set (crypt32's CurrentUser view also lists LocalMachine's copies), else by crypt32.
func (t *TrustStore) holds(s CertStore, loc Location, thumb []byte) (bool, error) {
	if t.Persisted != nil {
		return t.Persisted(loc, thumb)
	}
	return s.Has(thumb)
}

// checkGone proves a removal from loc by a second read path: Persisted (the registry key
// of loc's own store) when set, else a fresh crypt32 open. The registry is checked rather
// than crypt32's view because the CurrentUser Root view also lists the LocalMachine copies.
func (t *TrustStore) checkGone(loc Location, thumb []byte) error {
	if t.Persisted == nil {
		var still bool
		if err := t.with(loc, func(s CertStore) (err error) {
			still, err = s.Has(thumb)
			return err
		}); err != nil {
			return err
		}
		if still {
			return fmt.Errorf("the %s Root store still lists the certificate after removing it", loc)
		}
		return nil
	}
	still, err := t.Persisted(loc, thumb)
	if err != nil {
		return fmt.Errorf("checking the %s registry store: %w", loc, err)
	}
	if still {
		return fmt.Errorf("the %s Root store kept the certificate after removing it: %s still exists", loc, RegistryPath(loc, thumb))
	}
	return nil
}

// RegistryPath is the registry key holding a certificate of the loc Root store.
func RegistryPath(loc Location, thumb []byte) string {
	root := `HKCU`
	if loc == LocalMachine {
		root = `HKLM`
	}
	return root + `\Software\Microsoft\SystemCertificates\ROOT\Certificates\` + strings.ToUpper(hex.EncodeToString(thumb))
}

// Status implements osapi.TrustStore.
func (t *TrustStore) Status(_ context.Context, cert *x509.Certificate) (osapi.TrustStatus, error) {
	if err := osapi.CheckCert(cert); err != nil {
		return osapi.TrustStatus{}, err
	}
	var st osapi.TrustStatus
	for _, loc := range []Location{CurrentUser, LocalMachine} {
		p := osapi.TrustPlace{Store: "Windows " + loc.String() + " Root store"}
		err := t.with(loc, func(s CertStore) error {
			ok, err := s.Has(osapi.SHA1(cert))
			p.Trusted = ok
			return err
		})
		if err != nil {
			p.Note = oneLine(err.Error())
		} else if t.Persisted != nil && loc == LocalMachine {
			// crypt32 and the registry must agree; LocalMachine only, as the CurrentUser
			// view includes LocalMachine's copies.
			if reg, rerr := t.Persisted(loc, osapi.SHA1(cert)); rerr == nil && reg != p.Trusted {
				p.Note = fmt.Sprintf("crypt32 and the registry disagree: registry copy present=%v", reg)
			}
		}
		st.Places = append(st.Places, p)
	}
	st.Places = append(st.Places, t.Firefox.Places()...)
	return st, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
