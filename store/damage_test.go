package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"inspector/engine/session"
	"inspector/store/storetest"
)

// damagedStore writes a store of n sessions, closes it cleanly and zeroes the pages from
// a quarter of the file to three quarters (every other page; bbolt's meta pages and the
// meta bucket are intact),
// as a disk that lost writes would leave it. It returns the path.
func damagedStore(t testing.TB, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openTest(t, path, Options{})
	var batch []*session.Session
	for i := 0; i < n; i++ {
		batch = append(batch, testSession(s.NextID(), 200, 100, 3000))
	}
	putAll(t, s, batch...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	storetest.ZeroInside(t, path, int64(pageSize()))
	return path
}

// TestOpenDamagedInside: a store whose pages past the header were zeroed after a clean
// close fails to open with ErrCorrupt (it used to open and then fail every commit); with
// MoveAsideCorrupt the file is moved aside and a fresh store takes sessions; read-only
// opens (inspector sessions) say it is damaged too.
func TestOpenDamagedInside(t *testing.T) {
	path := damagedStore(t, 300)
	s, err := Open(path, Options{})
	if err == nil {
		s.Close()
		t.Fatal("a store with zeroed pages opened")
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open: %v, want ErrCorrupt naming the file", err)
	}
	t.Logf("Open: %v", err)
	if _, err := Open(path, Options{ReadOnly: true}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read-only Open: %v, want ErrCorrupt", err)
	}
	s, err = Open(path, Options{MoveAsideCorrupt: true})
	if err != nil {
		t.Fatalf("MoveAsideCorrupt: %v", err)
	}
	defer s.Close()
	st := s.Stats()
	if st.MovedAside == "" || st.Sessions != 0 {
		t.Fatalf("moved aside %q, %d sessions", st.MovedAside, st.Sessions)
	}
	if _, err := os.Stat(st.MovedAside); err != nil {
		t.Fatalf("the damaged file is not where Stats says: %v", err)
	}
	for i := 0; i < 50; i++ {
		putAll(t, s, testSession(s.NextID(), 200, 100, 3000))
	}
	if st := s.Stats(); st.Sessions != 50 || st.Dropped != 0 || !st.Healthy {
		t.Fatalf("fresh store: %+v", st)
	}
}

// BenchmarkOpenCheck measures Open of a cleanly closed store of 20,000 sessions (about 66
// MB) with bbolt's full consistency check (checkAtOpen).
func BenchmarkOpenCheck(b *testing.B) {
	defer func(a int64) { checkAllBytes = a }(checkAllBytes)
	checkAllBytes = 1 << 40
	path := filepath.Join(b.TempDir(), "sessions.db")
	s := openTest(b, path, Options{})
	for i := 0; i < 20; i++ {
		var batch []*session.Session
		for j := 0; j < 1000; j++ {
			batch = append(batch, testSession(s.NextID(), 200, 100, 3000))
		}
		putAll(b, s, batch...)
	}
	s.Close()
	fi, _ := os.Stat(path)
	b.Logf("%d MB", fi.Size()>>20)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := Open(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// TestOpenDamagedEdges: on files too large for the full check at Open, the walk of each
// bucket's first and last pages still finds damage where capture writes.
func TestOpenDamagedEdges(t *testing.T) {
	defer func(a, u int64) { checkAllBytes, checkUncleanBytes = a, u }(checkAllBytes, checkUncleanBytes)
	checkAllBytes, checkUncleanBytes = 0, 0
	path := damagedStore(t, 300)
	s, err := Open(path, Options{})
	if err == nil {
		s.Close()
		t.Fatal("a store with zeroed pages opened")
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v, want ErrCorrupt", err)
	}
	t.Logf("Open: %v", err)
}

// TestEmptyFile: a 0-byte sessions.db read-only is "empty, no sessions" (ErrEmpty, which
// readers treat as no store yet: it used to be "bad file descriptor"); opened for writing
// it becomes a new store.
func TestEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, Options{ReadOnly: true})
	if !errors.Is(err, ErrEmpty) || !errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "bad file descriptor") {
		t.Fatalf("read-only Open of a 0-byte file: %v", err)
	}
	s := openTest(t, path, Options{})
	putAll(t, s, testSession(s.NextID(), 200, 1, 1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := openTest(t, path, Options{ReadOnly: true})
	defer r.Close()
	if n := r.Stats().Sessions; n != 1 {
		t.Fatalf("%d sessions", n)
	}
}

// TestStaleCompactRemoved: a compacted copy left by a killed compact (sessions.db.compact)
// is removed by the next writable Open, not kept until the next compact.
func TestStaleCompactRemoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openTest(t, path, Options{})
	s.Close()
	stale := CompactPath(path)
	if err := os.WriteFile(stale, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	r := openTest(t, path, Options{ReadOnly: true})
	r.Close()
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("a read-only Open removed the copy: %v", err)
	}
	s = openTest(t, path, Options{})
	defer s.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale compact copy still there: %v", err)
	}
	// Compact still works with the name.
	if err := s.Compact(stale); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedWhileRunning: damage a commit meets (the file's pages zeroed under the
// running store) is not retried in parts: the batch is counted lost and the health says
// damaged, with the error, until a restart with MoveAsideCorrupt.
func TestDamagedWhileRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openTest(t, path, Options{})
	for i := 0; i < 20; i++ {
		putAll(t, s, testSession(s.NextID(), 200, 100, 3000))
	}
	watch, stop := s.WatchHealth()
	defer stop()
	if h := <-watch; !h.Healthy {
		t.Fatalf("health at start: %+v", h)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	ps := int64(pageSize())
	if _, err := f.WriteAt(make([]byte, fi.Size()-2*ps), 2*ps); err != nil { // all but the meta pages
		t.Fatal(err)
	}
	f.Close()
	s.Put(testSession(s.NextID(), 200, 100, 3000))
	s.Put(testSession(s.NextID(), 200, 100, 3000))
	if err := s.Flush(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Flush on a damaged file: %v, want ErrCorrupt", err)
	}
	h := <-watch
	if h.Healthy || !h.Damaged || h.Lost != 2 || h.LastError == "" {
		t.Fatalf("health after a commit met damage: %+v", h)
	}
	if st := s.Stats(); st.Healthy || !st.Damaged || st.Dropped != 2 || st.LastError == "" {
		t.Fatalf("stats: %+v", st)
	}
	s.Close()
	s, err = Open(path, Options{MoveAsideCorrupt: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st := s.Stats(); st.MovedAside == "" || !st.Healthy {
		t.Fatalf("after restart: %+v", st)
	}
}
