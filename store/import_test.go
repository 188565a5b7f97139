package store

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
)

// importing reports whether the file still lists an import under way.
func importing(t *testing.T, s *Store) bool {
	t.Helper()
	found := false
	if err := s.view(func(tx *bolt.Tx) error { found = tx.Bucket(bImporting) != nil; return nil }); err != nil {
		t.Fatal(err)
	}
	return found
}

// TestImportStreamChunks: an import larger than one transaction is written in chunks,
// and a failure after several chunks leaves the store as it was (all or nothing), with
// the counters back where they were; a whole import ends with no list left.
func TestImportStreamChunks(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "sessions.db"), Options{})
	defer s.Close()
	live := testSession(s.NextID(), 200, 10, 10)
	putAll(t, s, live)
	before := s.Stats()
	n := 3*importChunkSessions + 10
	boom := errors.New("entry 12300: bad")
	sawChunk := false
	ids, err := s.ImportStream(func(add func(*session.Session) error) error {
		for i := 0; i < n; i++ {
			if err := add(testSession(0, 201, 0, 100)); err != nil {
				return err
			}
			if i == 2*importChunkSessions {
				sawChunk = s.Stats().Sessions > before.Sessions && importing(t, s)
			}
		}
		return boom
	})
	if !errors.Is(err, boom) || ids != nil {
		t.Fatalf("ImportStream: %v, %d ids", err, len(ids))
	}
	if !sawChunk {
		t.Error("the import was not written in chunks as it went")
	}
	after := s.Stats()
	if after.Sessions != before.Sessions || after.Bytes != before.Bytes || importing(t, s) {
		t.Fatalf("after a failed import: %d sessions %d bytes (before %d, %d), list left %v",
			after.Sessions, after.Bytes, before.Sessions, before.Bytes, importing(t, s))
	}
	if sums, err := s.List(Query{}); err != nil || len(sums) != 1 || sums[0].ID != live.ID {
		t.Fatalf("after a failed import: %v %v", sums, err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	// The same, whole.
	ids, err = s.ImportStream(func(add func(*session.Session) error) error {
		for i := 0; i < n; i++ {
			if err := add(testSession(0, 201, 0, 100)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || len(ids) != n {
		t.Fatalf("ImportStream: %v, %d ids", err, len(ids))
	}
	if st := s.Stats(); st.Sessions != uint64(n)+1 || importing(t, s) {
		t.Fatalf("%d sessions, list left %v", st.Sessions, importing(t, s))
	}
	if got, err := s.Get(ids[n-1]); err != nil || got.Status() != 201 {
		t.Fatal(got, err)
	}
}

// spilledSession is a session whose response body is head in memory and n random bytes
// in a spill file, as har.Decode gives a large body; it returns the whole body.
func spilledSession(t *testing.T, head, n int) (*session.Session, []byte) {
	t.Helper()
	ss := testSession(0, 200, 0, 0)
	body := make([]byte, head+n)
	rand.NewChaCha8([32]byte{byte(n)}).Read(body)
	f := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(f, body[head:], 0o600); err != nil {
		t.Fatal(err)
	}
	ss.Response.Body = session.Body{Data: body[:head:head], Spilled: f, Size: int64(len(body))}
	return ss, body
}

func bodyKeys(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	if err := s.view(func(tx *bolt.Tx) error { n = tx.Bucket(bBodies).Stats().KeyN; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestImportSpilledBody: a body in a spill file (a large HAR body) is written in
// transactions of importChunkBytes ahead of its record, reads back byte-exact, counts in
// the store's size, and its file is removed; an import that fails after it leaves no
// body bytes behind.
func TestImportSpilledBody(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "sessions.db"), Options{})
	defer s.Close()
	before := s.Stats()
	ss, _ := spilledSession(t, 100_000, 3*importChunkBytes+12345)
	path := ss.Response.Body.Spilled
	small := testSession(0, 201, 10, 10)
	boom := errors.New("entry 2: bad base64")
	_, err := s.ImportStream(func(add func(*session.Session) error) error {
		if err := add(small); err != nil {
			return err
		}
		if err := add(ss); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Sessions != before.Sessions || st.Bytes != before.Bytes || importing(t, s) || bodyKeys(t, s) != 0 {
		t.Fatalf("after a failed import: %d sessions, %d bytes, %d body keys, list left %v", st.Sessions, st.Bytes, bodyKeys(t, s), importing(t, s))
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("spill file left: %v", err)
	}

	ss, body := spilledSession(t, 100_000, 3*importChunkBytes+12345)
	path = ss.Response.Body.Spilled
	ids, err := s.ImportStream(func(add func(*session.Session) error) error {
		if err := add(testSession(0, 201, 10, 10)); err != nil {
			return err
		}
		return add(ss)
	})
	if err != nil || len(ids) != 2 {
		t.Fatal(ids, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("spill file left: %v", err)
	}
	rc, err := s.OpenBody(ids[1], PartResponse)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read back %d bytes (%v), want %d", len(got), err, len(body))
	}
	g, err := s.Get(ids[1])
	if err != nil || g.Response.Body.Size != int64(len(body)) || !bytes.Equal(g.Response.Body.Data, body[:len(g.Response.Body.Data)]) || len(g.Response.Body.Data) != MaxInlineBody {
		t.Fatalf("Get: %v, %d bytes in Data, size %d", err, len(g.Response.Body.Data), g.Response.Body.Size)
	}
	if st := s.Stats(); st.Sessions != 2 || st.Bytes < int64(len(body)) || importing(t, s) {
		t.Fatalf("%d sessions, %d bytes stored for a %d-byte body, list left %v", st.Sessions, st.Bytes, len(body), importing(t, s))
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}
