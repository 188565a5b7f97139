package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"inspector/engine/session"
)

// queueOnly is a store with a queue and no writer goroutine: the test plays the writer,
// so when the writer "falls behind" is up to the test.
func queueOnly(bound int64) *Store {
	s := &Store{queue: make(chan item, 16), nudge: make(chan struct{}, 1), nudgeLen: 16}
	s.opts.QueueBytes = bound
	return s
}

// takeOne does what the writer does when it takes a queued session.
func (s *Store) takeOne(t *testing.T) *session.Session {
	t.Helper()
	select {
	case it := <-s.queue:
		s.queuedBytes.Add(-it.bytes)
		if it.park.ok && s.ovf.unpark(it.s, it.park) {
			s.bodiesDropped.Add(1)
		}
		return it.s
	default:
		t.Fatal("nothing queued")
		return nil
	}
}

// TestPutNeverWaits: Put never waits for the writer (the engine calls it from its observer
// callback, which must return at once). With the writer stuck and the queue's body bound
// reached, a Put returns at once with the session queued without its bodies (counted);
// once the writer takes sessions, bodies fit again; a session bigger than the bound alone
// goes in whole; with the queue full, Put returns false at once and counts the drop.
func TestPutNeverWaits(t *testing.T) {
	s := queueOnly(5000)
	b := testSession(1, 200, 1000, 2000)
	if !s.Put(b) { // 3000 bytes queued: under the bound
		t.Fatal("first Put refused")
	}
	// The writer takes nothing: this Put must not wait for it.
	c := testSession(2, 200, 1000, 2000)
	if !s.Put(c) {
		t.Fatal("Put over the bound refused")
	}
	if got := s.takeOne(t); got != b {
		t.Fatal("queue order")
	}
	if got := s.takeOne(t); got.ID != 2 || len(got.Response.Body.Data) != 0 || !got.Response.Body.Truncated {
		t.Fatal("the session over the bound kept its body")
	}
	if s.bodiesDropped.Load() != 1 || s.queuedBytes.Load() != 0 {
		t.Errorf("bodies dropped %d, queued bytes %d", s.bodiesDropped.Load(), s.queuedBytes.Load())
	}
	// The writer took them: the next one keeps its body.
	if !s.Put(testSession(3, 200, 1000, 2000)) || len(s.takeOne(t).Response.Body.Data) != 2000 {
		t.Error("body dropped with room in the queue")
	}
	// A session bigger than the bound alone goes in at once.
	if !s.Put(testSession(4, 200, 0, 6000)) || len(s.takeOne(t).Response.Body.Data) != 6000 {
		t.Error("oversized session alone")
	}
	// A full queue: Put refuses at once and counts it.
	for i := 0; i < cap(s.queue); i++ {
		if !s.Put(testSession(session.ID(10+i), 200, 0, 0)) {
			t.Fatal("queue refused before it was full")
		}
	}
	if s.Put(testSession(99, 200, 0, 0)) || s.dropped.Load() != 1 {
		t.Errorf("full queue: dropped %d", s.dropped.Load())
	}
	if h := s.Health(); h.Healthy || h.Lost != 1 || !strings.Contains(h.LastError, "queue is full") {
		t.Errorf("health after a full queue dropped a session: %+v", h)
	}
}

// TestQueueBytesStuckWriter: when the writer does not take sessions, Put
// queues the session without its bodies (truncated, spilled parts deleted, counted) rather
// than stall the proxy, and the caller's session is not touched.
func TestQueueBytesStuckWriter(t *testing.T) {
	dir := t.TempDir()
	s := queueOnly(5000)
	if !s.Put(testSession(1, 200, 1000, 3000)) {
		t.Fatal("first Put refused")
	}
	big := testSession(2, 200, 1000, 3000)
	spill := filepath.Join(dir, "spilled-part")
	if err := os.WriteFile(spill, []byte("rest of the body"), 0o600); err != nil {
		t.Fatal(err)
	}
	big.Response.Body.Spilled = spill
	big.Response.Body.Size = 3000 + 16
	if !s.Put(big) { // goes in without bodies
		t.Fatal("Put refused")
	}
	if big.Response.Body.Data == nil || big.Response.Body.Spilled != spill || big.Flags != 0 {
		t.Error("Put changed the caller's session")
	}
	waitFor(t, "the spilled part of a dropped body to be removed", func() bool {
		_, err := os.Stat(spill)
		return os.IsNotExist(err)
	})
	if first := s.takeOne(t); len(first.Response.Body.Data) != 3000 {
		t.Error("the session queued first lost its body")
	}
	got := s.takeOne(t)
	if len(got.Request.Body.Data) != 0 || !got.Request.Body.Truncated || got.Request.Body.Size != 1000 ||
		len(got.Response.Body.Data) != 0 || !got.Response.Body.Truncated || got.Response.Body.Size != 3016 ||
		got.Response.Body.Spilled != "" || !got.Flags.Has(session.FlagReqTruncated) || !got.Flags.Has(session.FlagRespTruncated) {
		t.Errorf("queued without bodies: req size %d truncated %v, resp size %d truncated %v spilled %q, flags %b",
			got.Request.Body.Size, got.Request.Body.Truncated, got.Response.Body.Size, got.Response.Body.Truncated, got.Response.Body.Spilled, got.Flags)
	}
	if got.ID != big.ID || got.Response.Status != 200 || got.Request.URL != big.Request.URL {
		t.Errorf("the rest of the session changed: %d %d %s", got.ID, got.Response.Status, got.Request.URL)
	}
	if s.bodiesDropped.Load() != 1 || s.queuedBytes.Load() != 0 {
		t.Errorf("dropped %d, queued bytes %d", s.bodiesDropped.Load(), s.queuedBytes.Load())
	}
}

// TestQueueBytesWithTheWriter: with the real writer keeping up, the bytes it takes are
// given back, so sessions keep their bodies and stats count no drop; a stored session
// without bodies reads back as truncated.
func TestQueueBytesWithTheWriter(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "sessions.db"), Options{QueueBytes: 5000})
	for i := 0; i < 5; i++ {
		putAll(t, s, testSession(s.NextID(), 200, 1000, 3000))
	}
	cut := withoutBodies(testSession(s.NextID(), 200, 1000, 3000), ReasonStoreBehind)
	putAll(t, s, cut)
	got, err := s.Get(cut.ID)
	if err != nil || len(got.Response.Body.Data) != 0 || !got.Response.Body.Truncated || got.Response.Body.Size != 3000 ||
		!got.Flags.Has(session.FlagRespTruncated) {
		t.Errorf("session stored without bodies: %v, resp size %d truncated %v", err, got.Response.Body.Size, got.Response.Body.Truncated)
	}
	if st := s.Stats(); st.BodiesDropped != 0 || st.Dropped != 0 || st.Sessions != 6 {
		t.Errorf("stats: sessions %d dropped %d bodies dropped %d", st.Sessions, st.Dropped, st.BodiesDropped)
	}
	if q := s.queuedBytes.Load(); q != 0 {
		t.Errorf("queued bytes after flush: %d", q)
	}
}
