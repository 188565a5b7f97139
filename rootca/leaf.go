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
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

const (
	// MaxLeafDays is the longest a leaf lasts, backdate included: the shortest lifetime any
	// browser's rules will allow for public server certificates (47 days from 2029-03-15 in
	// the CA/Browser Forum schedule Chromium enforces for roots it treats as public, which
	// includes a proxy's CA put in Android's system store).
	MaxLeafDays = 47
	// leafBackdate covers clients whose clocks run a little behind.
	leafBackdate = time.Hour
	maxLeaves    = 20000 // cache bound; the cache is dropped whole when full
)

// leafCache mints leaves with one shared ECDSA P-256 key per process: minting is then a
// single signature, and a key per host would buy nothing (every leaf chains to our CA).
type leafCache struct {
	ca      *x509.Certificate
	caKey   crypto.Signer
	leafKey *ecdsa.PrivateKey
	now     func() time.Time
	// life is a leaf's whole lifetime, NotAfter-NotBefore, backdate included.
	life atomic.Int64

	mu    sync.RWMutex
	certs map[string]*tls.Certificate
	group singleflight.Group
}

func newLeafCache(ca *x509.Certificate, caKey crypto.Signer) (*leafCache, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	lc := &leafCache{ca: ca, caKey: caKey, leafKey: k, now: time.Now, certs: map[string]*tls.Certificate{}}
	lc.life.Store(int64(MaxLeafDays * 24 * time.Hour))
	return lc, nil
}

// renewBefore is how long before its NotAfter a cached leaf is replaced: a quarter of the
// lifetime (11¾ days at 47), so a client never sees a leaf that is nearly expired.
func (lc *leafCache) renewBefore() time.Duration { return time.Duration(lc.life.Load()) / 4 }

// fresh reports whether a cached leaf may still be served at now. A leaf cut short by the
// root's own expiry is served until it expires: minting again would give the same date.
func (lc *leafCache) fresh(c *tls.Certificate, now time.Time) bool {
	if !now.Before(c.Leaf.NotAfter) || now.Before(c.Leaf.NotBefore) {
		return false
	}
	if c.Leaf.NotAfter.Equal(lc.ca.NotAfter) {
		return true
	}
	return now.Add(lc.renewBefore()).Before(c.Leaf.NotAfter) &&
		c.Leaf.NotAfter.Sub(c.Leaf.NotBefore) <= time.Duration(lc.life.Load())
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
	if ok && lc.fresh(c, lc.now()) {
		return c, nil
	}
	v, err, _ := lc.group.Do(host, func() (any, error) {
		lc.mu.RLock()
		c, ok := lc.certs[host]
		lc.mu.RUnlock()
		if ok && lc.fresh(c, lc.now()) { // minted by the call that just finished
			return c, nil
		}
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
	notBefore := now.Add(-leafBackdate)
	notAfter := notBefore.Add(time.Duration(lc.life.Load()))
	if notAfter.After(lc.ca.NotAfter) {
		notAfter = lc.ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: host, Organization: []string{"Inspector"}},
		NotBefore:             notBefore,
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
