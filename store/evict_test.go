package store

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
)

// keysOutside reports keys of any per-session bucket whose session is not in keep, and
// certificate reference counts that differ from the records' references.
func keysOutside(t *testing.T, s *Store, keep map[session.ID]bool) {
	t.Helper()
	checkCertCounts(t, s)
	s.view(func(tx *bolt.Tx) error {
		for _, name := range v1Buckets {
			c := tx.Bucket(name).Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if !keep[keyID(k)] {
					t.Errorf("bucket %s holds a key of session %d, which is not stored", name, keyID(k))
				}
			}
		}
		return nil
	})
}

// TestEvictionLeavesNothing: eviction by count deletes the oldest keys of every bucket;
// sessions of every shape (schema 1 records with chunked bodies, inline bodies, large
// bodies, messages, frames stored with the session and after it) go without leaving keys,
// a stray frames key older than every session goes with them, and the stored bytes stay
// in step.
func TestEvictionLeavesNothing(t *testing.T) {
	t.Run("clean", func(t *testing.T) { testEviction(t, false) })
	t.Run("stray key", func(t *testing.T) { testEviction(t, true) })
}

func testEviction(t *testing.T, stray bool) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	legacy := []*session.Session{testSession(1, 200, 10, 70<<10), testSession(2, 200, 5, 5)}
	legacy[1].Messages = []session.Message{{Opcode: 1, Data: []byte("m"), Size: 1}}
	writeV1(t, path, legacy, map[session.ID][]session.Frame{2: testFrames("client", time.Unix(1, 0), 2)}, nil)
	if stray {
		// A frames key of an id below every session (left by some earlier damage).
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(bFrames).Put(frameKey(idKey(0), 0), appendFrames(nil, testFrames("client", time.Unix(1, 0), 1)))
		})
		db.Close()
	}

	const limit = 6
	s := openTest(t, path, Options{MaxSessions: limit})
	var all []*session.Session
	for i := range 20 {
		var ss *session.Session
		switch i % 4 {
		case 0:
			ss = testSession(s.NextID(), 200, 10, 10)
		case 1:
			ss = testSession(s.NextID(), 200, 3000, 100<<10)
		case 2:
			ss = testSession(s.NextID(), 101, 0, 0)
			ss.Messages = []session.Message{{Opcode: 1, Data: []byte("hello"), Size: 5}}
		case 3:
			ss = testSession(s.NextID(), 200, 1, 1)
			if !s.PutFrames(ss.ID, testFrames("client", time.Unix(2, 0), 3)) { // queued before the session
				t.Fatal("PutFrames refused")
			}
		}
		putAll(t, s, ss)
		all = append(all, ss)
		if i%3 == 0 {
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			// Frames after the session was committed go in their own commit.
			s.PutFrames(ss.ID, testFrames("upstream", time.Unix(3, 0), 2))
			if err := s.FlushFrames(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushFrames(); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(Query{})
	if err != nil || len(list) != limit || list[0].ID != all[len(all)-limit].ID {
		t.Fatalf("kept %v (err %v), want the newest %d", ids(list), err, limit)
	}
	keep := map[session.ID]bool{}
	for _, sum := range list {
		keep[sum.ID] = true
	}
	keysOutside(t, s, keep)
	for _, ss := range all[len(all)-limit:] {
		got, err := s.Get(ss.ID)
		if err != nil || len(got.Response.Body.Data) != len(ss.Response.Body.Data) || len(got.Messages) != len(ss.Messages) {
			t.Fatalf("Get(%d) after eviction: %v", ss.ID, err)
		}
	}
	// The stored bytes still add up: deleting the rest leaves exactly 0.
	for id := range keep {
		if err := s.Delete(id); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Sessions != 0 || st.Bytes != 0 {
		t.Fatalf("after deleting the kept sessions: %+v", st)
	}
	keysOutside(t, s, nil)
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestEvictionAcrossPages: lowering the limit of a store evicts thousands of sessions in
// one commit, across many pages and levels of every bucket, in steps of evictStep at most.
func TestEvictionAcrossPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openTest(t, path, Options{})
	const n = 3000
	for i := range n {
		ss := testSession(s.NextID(), 200, 20, 300)
		if i%10 == 0 {
			ss.Response.Body = session.Body{Data: make([]byte, 5000), Size: 5000}
		}
		putAll(t, s, ss)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, path, Options{MaxSessions: 100})
	// A commit applies retention.
	putAll(t, s, testSession(s.NextID(), 200, 1, 1))
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(Query{})
	if err != nil || len(list) != 100 || list[0].ID != n-98 {
		t.Fatalf("kept %d sessions from %v (err %v)", len(list), ids(list[:min(1, len(list))]), err)
	}
	keep := map[session.ID]bool{}
	for _, sum := range list {
		keep[sum.ID] = true
	}
	keysOutside(t, s, keep)
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// checkCertCounts: the certs bucket holds exactly the certificates session records refer
// to, each with the number of records referring to it.
func checkCertCounts(t *testing.T, s *Store) {
	t.Helper()
	s.view(func(tx *bolt.Tx) error {
		want := map[certRef]uint64{}
		c := tx.Bucket(bSessions).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if !recordCertRefs(v, func(ref []byte) { want[certRef(ref)]++ }) {
				t.Errorf("session %d: malformed certificate table", keyID(k))
			}
		}
		got := map[certRef]uint64{}
		c = tx.Bucket(bCerts).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(k) != certRefLen+1 {
				t.Errorf("certs: bad key %x", k)
				continue
			}
			ref := certRef(k[:certRefLen])
			switch k[certRefLen] {
			case certKeyCount:
				got[ref] = u64(v)
				if der := tx.Bucket(bCerts).Get(append(k[:certRefLen:certRefLen], certKeyDER)); der == nil || certRefOf(der) != ref {
					t.Errorf("certs: count of %x without its certificate", ref)
				}
			case certKeyDER:
				if tx.Bucket(bCerts).Get(append(k[:certRefLen:certRefLen], certKeyCount)) == nil {
					t.Errorf("certs: certificate %x without a count", ref)
				}
			default:
				t.Errorf("certs: bad key %x", k)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("certificate reference counts %v, records refer %v", got, want)
		}
		return nil
	})
}

// TestCertificatesShared: sessions of one connection share its certificates in the
// certs bucket; reference counts follow Put, Import, SetMark, Delete, eviction and Clear,
// and every session reads its own certificates back.
func TestCertificatesShared(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "sessions.db"), Options{MaxSessions: 8})
	chainA := [][]byte{[]byte("leaf certificate A"), []byte("intermediate certificate")}
	chainB := [][]byte{[]byte("leaf certificate B"), []byte("intermediate certificate")}
	mk := func(chain [][]byte, clientToo bool) *session.Session {
		ss := testSession(s.NextID(), 200, 1, 1)
		ss.Upstream.TLS.Certificates = chain
		ss.Client.TLS.Certificates = nil
		if clientToo {
			ss.Client.TLS.Certificates = [][]byte{chain[1], []byte("client certificate")}
		}
		return ss
	}
	var all []*session.Session
	for i := range 6 {
		ss := mk(chainA, i == 2)
		if i%2 == 1 {
			ss = mk(chainB, false)
		}
		all = append(all, ss)
	}
	putAll(t, s, all...)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	checkCertCounts(t, s)
	s.view(func(tx *bolt.Tx) error {
		if n := tx.Bucket(bCerts).Stats().KeyN; n != 2*4 {
			t.Errorf("%d certificates stored, want 4 distinct", n)
		}
		return nil
	})
	for _, want := range all {
		got, err := s.Get(want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Upstream.TLS.Certificates, want.Upstream.TLS.Certificates) ||
			!reflect.DeepEqual(got.Client.TLS.Certificates, want.Client.TLS.Certificates) {
			t.Fatalf("session %d certificates: %q / %q", want.ID, got.Upstream.TLS.Certificates, got.Client.TLS.Certificates)
		}
	}
	if err := s.SetMark(all[2].ID, "red", ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(all[0].ID, all[3].ID); err != nil {
		t.Fatal(err)
	}
	checkCertCounts(t, s)
	if _, err := s.Import([]*session.Session{mk(chainB, true)}); err != nil {
		t.Fatal(err)
	}
	checkCertCounts(t, s)
	// Eviction: 8 more sessions with a third chain push all the others out.
	for range 8 {
		putAll(t, s, mk([][]byte{[]byte("leaf certificate C")}, false))
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	checkCertCounts(t, s)
	s.view(func(tx *bolt.Tx) error {
		if n := tx.Bucket(bCerts).Stats().KeyN; n != 2*1 {
			t.Errorf("%d certificates stored after eviction, want 1", n)
		}
		return nil
	})
	if err := s.Clear(); err != nil {
		t.Fatal(err)
	}
	checkCertCounts(t, s)
	putAll(t, s, mk(chainA, false))
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	checkCertCounts(t, s)
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}
