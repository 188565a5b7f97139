package store

import (
	"crypto/sha256"
	"encoding/binary"
	"unsafe"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
)

// Certificates
//
// A TLS connection's certificate chain is the same for every session on it, and often a
// kilobyte or more per certificate: schema 3 records (placeCertRefs, meta_codec.go) refer
// to certificates in the certs bucket instead of holding them:
//
//	certs: ref ‖ 'd' → DER              ref: certRefLen bytes, SHA-256 of the DER, truncated
//	       ref ‖ 'n' → uint64 references
//
// The reference count is the number of session records referring to the certificate;
// the writer adds a commit's references and removes those of deleted records once per
// certificate per commit (certChanges), and deletes a certificate when its count reaches
// 0. The count has its own key so that changing it rewrites 8 bytes, not the certificate.

// certRefLen is the length of a certificate reference: 128 bits of SHA-256.
const certRefLen = 16

type certRef [certRefLen]byte

// Suffixes of the two keys of a certificate.
const (
	certKeyDER   = 'd'
	certKeyCount = 'n'
)

func (b *buckets) certKey(ref *certRef, suffix byte) []byte {
	k := b.hold(certRefLen + 1)
	copy(k, ref[:])
	k[certRefLen] = suffix
	return k
}

func certRefOf(der []byte) certRef {
	h := sha256.Sum256(der)
	return certRef(h[:certRefLen])
}

// certTable collects the distinct certificates of one session record.
type certTable struct {
	refs  []certRef
	ders  [][]byte
	index []int // per certificate of the session, in encoding order: its place in refs
	cache *certCache
}

func (t *certTable) reset() {
	t.refs, t.ders, t.index = t.refs[:0], t.ders[:0], t.index[:0]
}

func (t *certTable) addConn(c *session.Conn) {
	if c.TLS == nil {
		return
	}
	for _, der := range c.TLS.Certificates {
		ref := t.cache.ref(der)
		i := 0
		for i < len(t.refs) && t.refs[i] != ref {
			i++
		}
		if i == len(t.refs) {
			t.refs = append(t.refs, ref)
			t.ders = append(t.ders, der)
		}
		t.index = append(t.index, i)
	}
}

// certCache remembers the references of certificate slices the writer has hashed, by
// their memory: the engine hands every session of a connection the same certificate
// bytes, so each is hashed once per connection, not per session. Sessions are immutable
// once put, so the same slice always holds the same bytes; the cache holds the slices
// (keeping them alive), so an address is never reused while cached. Writer goroutine
// only; a nil cache hashes every time.
type certCache struct {
	m map[uintptr]certEntry // by the address of the certificate's first byte
}

type certEntry struct {
	der []byte // the cached slice: holding it keeps its address from being reused
	ref certRef
}

const certCacheMax = 16384

func (c *certCache) ref(der []byte) certRef {
	if c == nil || len(der) == 0 {
		return certRefOf(der)
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(der)))
	if e, ok := c.m[p]; ok && len(e.der) == len(der) {
		return e.ref
	}
	if c.m == nil || len(c.m) >= certCacheMax {
		c.m = make(map[uintptr]certEntry)
	}
	r := certRefOf(der)
	c.m[p] = certEntry{der, r}
	return r
}

// certChanges are the reference count changes of one write transaction.
type certChanges struct {
	delta map[certRef]int64
	ders  map[certRef][]byte // bytes of certificates added in this transaction
}

func (c *certChanges) add(t *certTable) {
	if c.delta == nil {
		c.delta = make(map[certRef]int64)
		c.ders = make(map[certRef][]byte)
	}
	for i, ref := range t.refs {
		c.delta[ref]++
		if _, ok := c.ders[ref]; !ok {
			c.ders[ref] = t.ders[i]
		}
	}
}

// remove takes away the references of a deleted session record.
func (c *certChanges) remove(rec []byte) {
	recordCertRefs(rec, func(ref []byte) {
		if c.delta == nil {
			c.delta = make(map[certRef]int64)
			c.ders = make(map[certRef][]byte)
		}
		c.delta[certRef(ref)]--
	})
}

// apply writes the changes to the certs bucket and forgets them. Keys and values are
// carved from b's arena (bbolt keeps them until the commit).
func (c *certChanges) apply(b *buckets) error {
	for ref, d := range c.delta {
		if d == 0 {
			continue
		}
		nk := b.certKey(&ref, certKeyCount)
		n := d + int64(u64(b.certs.Get(nk)))
		if n <= 0 {
			// No record refers to it any more.
			if err := b.certs.Delete(nk); err != nil {
				return err
			}
			if err := b.certs.Delete(b.certKey(&ref, certKeyDER)); err != nil {
				return err
			}
			continue
		}
		if n == d { // new in the store
			der := c.ders[ref]
			if der == nil {
				continue // removing references to a certificate not stored
			}
			if err := b.certs.Put(b.certKey(&ref, certKeyDER), b.holdCopy(der)); err != nil {
				return err
			}
		}
		v := b.hold(8)
		binary.BigEndian.PutUint64(v, uint64(n))
		if err := b.certs.Put(nk, v); err != nil {
			return err
		}
	}
	clear(c.delta)
	clear(c.ders)
	return nil
}

// certLookup returns the certificate lookup of decodeSessionRecord for the certs bucket
// (nil when the file has none). The bytes it returns alias the transaction's memory.
func certLookup(bk *bolt.Bucket) func(ref []byte) []byte {
	if bk == nil {
		return nil
	}
	var k [certRefLen + 1]byte
	return func(ref []byte) []byte {
		copy(k[:], ref)
		k[certRefLen] = certKeyDER
		return bk.Get(k[:])
	}
}
