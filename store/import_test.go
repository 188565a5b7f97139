package store

import (
	"errors"
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
