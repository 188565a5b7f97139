// Package rootca creates, loads and exports Inspector's per-install root CA and mints the
// leaf certificates the proxy shows to clients.
//
// Files (PRODUCT.md "Data directory"): DIR/root.pem (certificate) and DIR/root-key.pem
// (PKCS#8 private key, mode 0600), DIR itself 0700. A CA is created on first use and never
// replaced silently: a damaged or half-present pair is an error the user must resolve.
package rootca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// File names inside the CA directory.
const (
	CertFile = "root.pem"
	KeyFile  = "root-key.pem"
)

// ErrDamaged is wrapped by Load when the CA files exist but cannot be used.
var ErrDamaged = errors.New("root CA files are damaged")

// CA is a loaded root CA. Its methods are safe for concurrent use.
type CA struct {
	cert    *x509.Certificate
	key     crypto.Signer
	pemData []byte
	leaves  *leafCache
}

// Load loads the CA from dir, creating a new one (and dir) when neither file exists.
func Load(dir string) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	switch {
	case errors.Is(certErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist):
		return create(dir)
	case certErr != nil:
		return nil, fmt.Errorf("%w: %s: %v (move the folder %s aside to create a new CA)", ErrDamaged, certPath, certErr, dir)
	case keyErr != nil:
		return nil, fmt.Errorf("%w: %s: %v (move the folder %s aside to create a new CA)", ErrDamaged, keyPath, keyErr, dir)
	}
	ca, err := parse(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v (move the folder %s aside to create a new CA; clients trusting the old one must trust the new one)", ErrDamaged, dir, err, dir)
	}
	if fi, err := os.Stat(keyPath); err == nil && fi.Mode().Perm()&0o077 != 0 {
		// Tighten a key someone loosened; refuse nothing, the key is still ours.
		_ = os.Chmod(keyPath, 0o600)
	}
	return ca, nil
}

func parse(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, errors.New("root.pem holds no PEM certificate")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("root.pem: %v", err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("root-key.pem holds no PEM key")
	}
	var key any
	switch kb.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(kb.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(kb.Bytes)
	default:
		err = fmt.Errorf("unexpected PEM block %q", kb.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("root-key.pem: %v", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("root-key.pem: key cannot sign")
	}
	if !publicKeysEqual(signer.Public(), cert.PublicKey) {
		return nil, errors.New("root-key.pem does not belong to root.pem")
	}
	if !cert.IsCA {
		return nil, errors.New("root.pem is not a CA certificate")
	}
	return newCA(cert, signer, certPEM)
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}

func create(dir string) (*CA, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create CA folder: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create CA folder: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			CommonName:         "Inspector local debugging CA (" + shortHash(serial.Bytes()) + ")",
			Organization:       []string{"Inspector"},
			OrganizationalUnit: []string{"Local HTTPS debugging CA for " + host + "; not for any other use"},
		},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	// Key first, created exclusively with 0600, so a racing second process fails instead of
	// overwriting, and a crash leaves a key without a cert (reported as damaged), never the
	// reverse with a lost key.
	if err := writeExclusive(filepath.Join(dir, KeyFile), keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeExclusive(filepath.Join(dir, CertFile), certPEM, 0o644); err != nil {
		return nil, err
	}
	return newCA(cert, key, certPEM)
}

func writeExclusive(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func newCA(cert *x509.Certificate, key crypto.Signer, certPEM []byte) (*CA, error) {
	lc, err := newLeafCache(cert, key)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, pemData: certPEM, leaves: lc}, nil
}

func randomSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func shortHash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:4])
}

// Cert returns the root certificate. Callers must not modify it.
func (c *CA) Cert() *x509.Certificate { return c.cert }

// PEM returns the root certificate in PEM form.
func (c *CA) PEM() []byte { return c.pemData }

// RootDER returns the root certificate in DER form.
func (c *CA) RootDER() []byte { return c.cert.Raw }

// Fingerprint is the SHA-256 of the root certificate's DER, hex encoded.
func (c *CA) Fingerprint() string {
	h := sha256.Sum256(c.cert.Raw)
	return hex.EncodeToString(h[:])
}

// LeafFor returns a leaf certificate for host (a DNS name or an IP literal), minted on
// first use and cached. Concurrent calls for one host mint once. The returned value is
// shared: callers must not modify it.
func (c *CA) LeafFor(host string) (*tls.Certificate, error) { return c.leaves.get(host) }

// SetLeafDays sets how long the leaves minted from now on last, backdate included:
// 1 to MaxLeafDays days. Cached leaves that last longer are minted again on their next use.
func (c *CA) SetLeafDays(days int) error {
	if days < 1 || days > MaxLeafDays {
		return fmt.Errorf("leaf lifetime %d days: must be 1 to %d days (browsers refuse longer ones)", days, MaxLeafDays)
	}
	c.leaves.life.Store(int64(time.Duration(days) * 24 * time.Hour))
	return nil
}

// LeafLifetime is how long a leaf minted now lasts, NotAfter-NotBefore.
func (c *CA) LeafLifetime() time.Duration { return time.Duration(c.leaves.life.Load()) }

// Remove deletes the CA files in dir (and dir when it is then empty).
func Remove(dir string) error {
	for _, f := range []string{KeyFile, CertFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	_ = os.Remove(dir)
	return nil
}

// SPKIHash is the base64 SHA-256 of the root's SubjectPublicKeyInfo, the form Chromium's
// --ignore-certificate-errors-spki-list takes.
func (c *CA) SPKIHash() string {
	h := sha256.Sum256(c.cert.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(h[:])
}
