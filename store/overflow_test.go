package store

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"inspector/engine/session"
	"inspector/filter"
)

// TestOverflowParksBodies: with the writer stuck and the queue's body bound reached, Put
// returns at once and the session's bodies wait in the overflow file; the writer gets
// them back whole, the caller's session is untouched, and the file is emptied once every
// parked body is taken back.
func TestOverflowParksBodies(t *testing.T) {
	dir := t.TempDir()
	s := queueOnly(5000)
	s.ovf = overflow{path: filepath.Join(dir, "sessions.db.overflow"), limit: 1 << 20}
	first := testSession(1, 200, 1000, 2000)
	over := []*session.Session{testSession(2, 200, 1000, 3000), testSession(3, 200, 0, 2500)}
	if !s.Put(first) {
		t.Fatal("first Put refused")
	}
	for _, ss := range over {
		if !s.Put(ss) {
			t.Fatalf("Put(%d) over the bound refused", ss.ID)
		}
	}
	if len(over[0].Response.Body.Data) != 3000 || len(over[0].Request.Body.Data) != 1000 {
		t.Fatal("Put changed the caller's session")
	}
	// The file's writer goroutine writes them (Put does not wait for the disk).
	waitFor(t, "the overflow file to hold the parked bodies", func() bool {
		fi, err := os.Stat(s.ovf.path)
		return err == nil && fi.Size() == 1000+3000+2500
	})
	if got := s.takeOne(t); got != first {
		t.Fatal("queue order")
	}
	for _, want := range over {
		got := s.takeOne(t)
		if got.ID != want.ID || !bytes.Equal(got.Request.Body.Data, want.Request.Body.Data) ||
			!bytes.Equal(got.Response.Body.Data, want.Response.Body.Data) || got.Response.Body.Truncated || got.Flags != 0 {
			t.Fatalf("session %d back from the overflow file: req %d resp %d bytes, truncated %v, flags %b",
				want.ID, len(got.Request.Body.Data), len(got.Response.Body.Data), got.Response.Body.Truncated, got.Flags)
		}
	}
	if s.bodiesDropped.Load() != 0 || s.ovf.overflowed() != 2 || s.queuedBytes.Load() != 0 {
		t.Errorf("bodies dropped %d, overflowed %d, queued bytes %d", s.bodiesDropped.Load(), s.ovf.overflowed(), s.queuedBytes.Load())
	}
	waitFor(t, "the overflow file to be emptied once drained", func() bool {
		fi, err := os.Stat(s.ovf.path)
		return err == nil && fi.Size() == 0
	})
	s.ovf.close()
	if _, err := os.Stat(s.ovf.path); !os.IsNotExist(err) {
		t.Errorf("overflow file left after close: %v", err)
	}
}

// TestOverflowBound: past Options.OverflowBytes the bodies are dropped as without the file
// (marked truncated, counted), and a queue-full drop of a parked session frees its place.
func TestOverflowBound(t *testing.T) {
	s := queueOnly(1000)
	s.ovf = overflow{path: filepath.Join(t.TempDir(), "ovf"), limit: 5000}
	putN := func(id session.ID) {
		if !s.Put(testSession(id, 200, 0, 2000)) {
			t.Fatalf("Put(%d) refused", id)
		}
	}
	putN(1) // in memory (alone over the bound)
	putN(2) // parked: 2000
	putN(3) // parked: 4000
	putN(4) // 6000 > 5000: dropped
	if s.ovf.overflowed() != 2 || s.bodiesDropped.Load() != 1 {
		t.Fatalf("overflowed %d, bodies dropped %d", s.ovf.overflowed(), s.bodiesDropped.Load())
	}
	for id := session.ID(1); id <= 4; id++ {
		got := s.takeOne(t)
		if keep := id != 4; keep != (len(got.Response.Body.Data) == 2000) || keep == got.Response.Body.Truncated {
			t.Errorf("session %d: %d bytes, truncated %v", id, len(got.Response.Body.Data), got.Response.Body.Truncated)
		}
	}
	// Drained: the file is empty again and has room.
	putN(5)
	putN(6)
	if s.ovf.overflowed() != 3 || s.bodiesDropped.Load() != 1 {
		t.Errorf("after draining: overflowed %d, bodies dropped %d", s.ovf.overflowed(), s.bodiesDropped.Load())
	}
	// Fill the queue; the session a full queue refuses gives its parked bytes back.
	for i := 0; len(s.queue) < cap(s.queue); i++ {
		s.Put(testSession(session.ID(10+i), 200, 0, 0))
	}
	held := s.ovf.held
	if s.Put(testSession(99, 200, 0, 2000)) || s.ovf.held != held {
		t.Errorf("full queue: parked sessions %d → %d", held, s.ovf.held)
	}
}

// TestOverflowNoBodyLostWithIndex: the writer is held (a write transaction is open) while
// 6,000 sessions with 4–32 KB bodies (a tenth br or zstd) are put with a 32 KiB queue
// bound: every session is stored with its exact bodies, the body index finds a rare
// token of a session whose body waited in the overflow file, and Close removes the file.
func TestOverflowNoBodyLostWithIndex(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.db")
	s, err := Open(path, Options{QueueBytes: 32 << 10, QueueSize: 8192, MaxBytes: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(1, 2))
	pool := benchPool(t, r, newBenchVocab(r, 2000), 40, 4<<10, 32<<10)
	ids := make([]session.ID, 6000) // taken first: beyond its reservation NextID writes
	for i := range ids {
		ids[i] = s.NextID()
	}
	tx, err := s.db.Begin(true) // holds the writer: it cannot commit meanwhile
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() // on a failure before the rollback below
	var put []*session.Session
	for _, id := range ids {
		ss, _ := benchIndexSession(r, pool, id)
		if !s.Put(ss) {
			t.Fatalf("Put(%d) refused", ss.ID)
		}
		put = append(put, ss)
	}
	_, ovfErr := os.Stat(OverflowPath(path))
	// The prep stage reads parked bodies back (and finds their grams) only up to
	// prepHeldMax while the writer cannot take them: it stalls there, holding no more
	// than one session's beyond the bound.
	for deadline := time.Now().Add(10 * time.Second); s.prepStalls.Load() == 0; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("the prep stage never stalled: %d bytes read back held, %d items in prepped", s.prepHeld.Load(), len(s.prepped))
		}
	}
	if held := s.prepHeld.Load(); held > prepHeldMax+256<<10 || len(s.prepped) == cap(s.prepped) {
		t.Fatalf("prep stage holds %d bytes read back (bound %d), %d items", held, prepHeldMax, len(s.prepped))
	}
	tx.Rollback()
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Dropped != 0 || st.BodiesDropped != 0 || st.Sessions != 6000 || st.Overflowed < 4000 {
		t.Fatalf("stats: sessions %d, dropped %d, bodies dropped %d, overflowed %d", st.Sessions, st.Dropped, st.BodiesDropped, st.Overflowed)
	}
	if ovfErr != nil {
		t.Errorf("no overflow file while the writer was held: %v", ovfErr)
	}
	var parkedID session.ID
	for _, want := range put {
		got, err := s.Get(want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Response.Body.Data, want.Response.Body.Data) || got.Response.Body.Truncated || got.Flags.Has(session.FlagRespTruncated) {
			t.Fatalf("session %d: %d of %d body bytes, truncated %v", want.ID, len(got.Response.Body.Data), len(want.Response.Body.Data), got.Response.Body.Truncated)
		}
		if want.Response.Header.Get("Content-Encoding") == "" {
			parkedID = want.ID // the last identity body: put long after the bound was reached
		}
	}
	n, err := s.Count(filter.MustParse("body:tk" + benchToken(parkedID)))
	if err != nil || n != 1 {
		t.Errorf("body: search for a token of session %d: %d, %v", parkedID, n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(OverflowPath(path)); !os.IsNotExist(err) {
		t.Errorf("overflow file left after Close: %v", err)
	}
}

// TestOverflowStaleFileRemovedAtOpen: a file left by a run that was killed holds only
// queued bytes of lost sessions; a writable Open removes it.
func TestOverflowStaleFileRemovedAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	if err := os.WriteFile(OverflowPath(path), []byte("bodies of a killed run"), 0o600); err != nil {
		t.Fatal(err)
	}
	openTest(t, path, Options{})
	if _, err := os.Stat(OverflowPath(path)); !os.IsNotExist(err) {
		t.Errorf("stale overflow file kept: %v", err)
	}
}

// waitFor polls cond until it holds, for at most 30 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
