package rootca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

const (
	leafValidity = 397 * 24 * time.Hour // within what browsers accept for server certificates
	leafRenew    = 24 * time.Hour       // re-mint when a cached leaf expires sooner than this
	maxLeaves    = 20000                // cache bound; the cache is dropped whole when full
)

// leafCache mints leaves with one shared ECDSA P-256 key per process: minting is then a
// single signature, and a key per host would buy nothing (every leaf chains to our CA).
type leafCache struct {
	ca      *x509.Certificate
	caKey   crypto.Signer
	leafKey *ecdsa.PrivateKey
	now     func() time.Time

	mu    sync.RWMutex
	certs map[string]*tls.Certificate
	group singleflight.Group
}

func newLeafCache(ca *x509.Certificate, caKey crypto.Signer) (*leafCache, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &leafCache{ca: ca, caKey: caKey, leafKey: k, now: time.Now, certs: map[string]*tls.Certificate{}}, nil
}

func normalizeHost(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

func (lc *leafCache) get(host string) (*tls.Certificate, error) {
	host = normalizeHost(host)
	lc.mu.RLock()
	c, ok := lc.certs[host]
	lc.mu.RUnlock()
	if ok && lc.now().Add(leafRenew).Before(c.Leaf.NotAfter) {
		return c, nil
	}
	v, err, _ := lc.group.Do(host, func() (any, error) {
		c, err := lc.mint(host)
		if err != nil {
			return nil, err
		}
		lc.mu.Lock()
		if len(lc.certs) >= maxLeaves {
			lc.certs = map[string]*tls.Certificate{}
		}
		lc.certs[host] = c
		lc.mu.Unlock()
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*tls.Certificate), nil
}

func (lc *leafCache) mint(host string) (*tls.Certificate, error) {
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := lc.now()
	notAfter := now.Add(leafValidity)
	if notAfter.After(lc.ca.NotAfter) {
		notAfter = lc.ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: host, Organization: []string{"Inspector"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, lc.ca, lc.leafKey.Public(), lc.caKey)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{
		Certificate: [][]byte{der, lc.ca.Raw},
		PrivateKey:  lc.leafKey,
		Leaf:        leaf,
	}, nil
}
