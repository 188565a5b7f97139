//go:build windows

package windows

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"inspector/platform/osapi"

	xwin "golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

// regKey is the real RegistryKey.
type regKey struct{ k registry.Key }

// OpenInternetSettings opens HKCU\...\Internet Settings for reading and writing.
func OpenInternetSettings() (RegistryKey, error) {
	k, _, err := registry.CreateKey(registry.CURRENT_USER, InternetSettingsPath, registry.QUERY_VALUE|registry.SET_VALUE)
	if err != nil {
		return nil, fmt.Errorf("opening HKCU\\%s: %w", InternetSettingsPath, err)
	}
	return regKey{k}, nil
}

func (r regKey) GetDWORD(name string) (uint32, bool, error) {
	v, _, err := r.k.GetIntegerValue(name)
	if errors.Is(err, registry.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return uint32(v), true, nil
}

func (r regKey) GetString(name string) (string, bool, error) {
	v, _, err := r.k.GetStringValue(name)
	if errors.Is(err, registry.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return v, true, nil
}

func (r regKey) SetDWORD(name string, v uint32) error  { return r.k.SetDWordValue(name, v) }
func (r regKey) SetString(name string, v string) error { return r.k.SetStringValue(name, v) }

func (r regKey) Delete(name string) error {
	err := r.k.DeleteValue(name)
	if errors.Is(err, registry.ErrNotExist) {
		return nil
	}
	return err
}

var (
	wininet                = xwin.NewLazySystemDLL("wininet.dll")
	procInternetSetOptionW = wininet.NewProc("InternetSetOptionW")
)

const (
	internetOptionRefresh         = 37
	internetOptionSettingsChanged = 39
)

// RefreshWinINet tells running WinINet apps to re-read the proxy settings.
func RefreshWinINet() error {
	if err := procInternetSetOptionW.Find(); err != nil {
		return err
	}
	for _, opt := range []uintptr{internetOptionSettingsChanged, internetOptionRefresh} {
		r, _, e := procInternetSetOptionW.Call(0, opt, 0, 0)
		if r == 0 {
			return fmt.Errorf("InternetSetOptionW(%d): %w", opt, e)
		}
	}
	return nil
}

// NewProxyBackend returns the WinINet backend on the real registry.
func NewProxyBackend() (*WinINet, error) {
	k, err := OpenInternetSettings()
	if err != nil {
		return nil, err
	}
	return &WinINet{Key: k, Refresh: RefreshWinINet}, nil
}

// sysStore is the real CertStore.
type sysStore struct{ h xwin.Handle }

const certEncoding = xwin.X509_ASN_ENCODING | xwin.PKCS_7_ASN_ENCODING

// OpenSystemStore opens a system certificate store with crypt32's CertOpenStore.
func OpenSystemStore(loc Location, name string) (CertStore, error) {
	flags := uint32(xwin.CERT_SYSTEM_STORE_CURRENT_USER)
	if loc == LocalMachine {
		flags = xwin.CERT_SYSTEM_STORE_LOCAL_MACHINE
	}
	n, err := xwin.UTF16PtrFromString(name)
	if err != nil {
		return nil, err
	}
	h, err := xwin.CertOpenStore(xwin.CERT_STORE_PROV_SYSTEM_W, 0, 0, flags, uintptr(unsafe.Pointer(n)))
	if err != nil {
		return nil, err
	}
	return &sysStore{h}, nil
}

func (s *sysStore) Add(der []byte) error {
	if len(der) == 0 {
		return errors.New("empty certificate")
	}
	c, err := xwin.CertCreateCertificateContext(certEncoding, &der[0], uint32(len(der)))
	if err != nil {
		return fmt.Errorf("parsing the certificate: %w", err)
	}
	defer xwin.CertFreeCertificateContext(c)
	return xwin.CertAddCertificateContextToStore(s.h, c, xwin.CERT_STORE_ADD_REPLACE_EXISTING, nil)
}

func (s *sysStore) find(sha1 []byte) (*xwin.CertContext, error) {
	if len(sha1) == 0 {
		return nil, errors.New("empty thumbprint")
	}
	blob := xwin.CryptHashBlob{Size: uint32(len(sha1)), Data: &sha1[0]}
	c, err := xwin.CertFindCertificateInStore(s.h, certEncoding, 0, xwin.CERT_FIND_SHA1_HASH, unsafe.Pointer(&blob), nil)
	if err != nil {
		if errors.Is(err, syscall.Errno(xwin.CRYPT_E_NOT_FOUND)) {
			return nil, nil
		}
		return nil, err
	}
	return c, nil
}

func (s *sysStore) Has(sha1 []byte) (bool, error) {
	c, err := s.find(sha1)
	if c != nil {
		xwin.CertFreeCertificateContext(c)
	}
	return c != nil, err
}

func (s *sysStore) Delete(sha1 []byte) (int, error) {
	n := 0
	for {
		c, err := s.find(sha1)
		if err != nil || c == nil {
			return n, err
		}
		// CertDeleteCertificateFromStore frees the context, also on failure.
		if err := xwin.CertDeleteCertificateFromStore(c); err != nil {
			return n, err
		}
		n++
	}
}

var procCertControlStore = xwin.NewLazySystemDLL("crypt32.dll").NewProc("CertControlStore")

const certStoreCtrlCommit = 3 // CERT_STORE_CTRL_COMMIT

// Commit implements CertStore with CertControlStore(CERT_STORE_CTRL_COMMIT). Wine's
// registry provider stages deletions and writes them only on a commit or when its last
// reference goes; a system store's child survives CertCloseStore while a deleted context
// holds it, so without a commit the certificate stays in the registry.
func (s *sysStore) Commit() error {
	if err := procCertControlStore.Find(); err != nil {
		return err
	}
	r, _, e := procCertControlStore.Call(uintptr(s.h), 0, certStoreCtrlCommit, 0)
	if r == 0 {
		return fmt.Errorf("CertControlStore(COMMIT): %w", e)
	}
	return nil
}

func (s *sysStore) Close() error { return xwin.CertCloseStore(s.h, 0) }

// NewTrustStore returns the real Windows trust store: crypt32 Root stores and the Firefox
// profiles under %APPDATA%.
func NewTrustStore() *TrustStore {
	appdata := os.Getenv("APPDATA")
	home, _ := os.UserHomeDir()
	return &TrustStore{
		Open:     OpenSystemStore,
		Elevated: func() bool { return xwin.GetCurrentProcessToken().IsElevated() },
		Persisted: func(loc Location, sha1 []byte) (bool, error) {
			return registryHas(loc, RootStore, sha1)
		},
		Firefox: osapi.FirefoxEnterpriseRoots{Roots: osapi.FirefoxRoots("windows", home, appdata)},
	}
}
