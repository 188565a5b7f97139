package store

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
)

func testFrames(leg string, t0 time.Time, n int) []session.Frame {
	fs := make([]session.Frame, n)
	for i := range fs {
		fs[i] = session.Frame{Leg: leg, Dir: "in", Time: t0.Add(time.Duration(i) * time.Millisecond).UTC(), Proto: session.HTTP2,
			ConnID: 3, Stream: 1, Type: "DATA", Flags: "END_STREAM", Length: i}
	}
	fs[0].Type, fs[0].Headers = "HEADERS", []session.HeaderField{{Name: ":method", Value: "GET"}}
	return fs
}

func TestFramesStoredWithTheirSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s := openTest(t, path, Options{})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	id := s.NextID()
	// Frames may arrive before their session is committed: they wait for it.
	up := testFrames("upstream", t0.Add(time.Microsecond), 3)
	if !s.PutFrames(id, up) {
		t.Fatal("PutFrames refused")
	}
	putAll(t, s, testSession(id, 200, 10, 10))
	client := testFrames("client", t0, 4)
	s.PutFrames(id, client)
	if err := s.FlushFrames(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Frames(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 {
		t.Fatalf("got %d frames, want 7", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i].Time.Before(got[i-1].Time) {
			t.Fatalf("frames not in time order at %d", i)
		}
	}
	if !reflect.DeepEqual(got[0], client[0]) || !reflect.DeepEqual(got[1], up[0]) {
		t.Fatalf("frames changed in storage:\n%+v\n%+v", got[0], got[1])
	}

	// A session without frames, and one that does not exist.
	id2 := s.NextID()
	putAll(t, s, testSession(id2, 200, 0, 0))
	if fs, err := s.Frames(id2); err != nil || len(fs) != 0 {
		t.Fatalf("session without frames: %v %v", fs, err)
	}
	if _, err := s.Frames(9999); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}

	// They survive a reopen, and go with their session.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, path, Options{})
	if fs, _ := s.Frames(id); len(fs) != 7 {
		t.Fatalf("after reopen: %d frames", len(fs))
	}
	if err := s.Delete(id); err != nil {
		t.Fatal(err)
	}
	// Frames for a deleted session are dropped, not stored as orphans.
	s.PutFrames(id, testFrames("client", t0, 2))
	if err := s.FlushFrames(); err != nil {
		t.Fatal(err)
	}
	if s.FramesDropped() != 2 {
		t.Fatalf("dropped %d, want 2", s.FramesDropped())
	}
	if err := s.view(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bFrames).Cursor().First(); k != nil {
			t.Errorf("frames bucket not empty after delete: key %x", k)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestPutFramesBadInput(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "s.db"), Options{})
	if s.PutFrames(0, testFrames("client", time.Now(), 1)) {
		t.Error("id 0 accepted")
	}
	if s.PutFrames(5, nil) {
		t.Error("no frames accepted")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.PutFrames(5, testFrames("client", time.Now(), 1)) {
		t.Error("PutFrames after Close accepted")
	}
}

// TestFramesQueuedBeforeTheirSessionShareItsCommit: frames queued before their session is
// put are committed by the session writer with it (Flush alone makes them readable), and
// frames arriving later still get a batch of their own after the first.
func TestFramesQueuedBeforeTheirSessionShareItsCommit(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "s.db"), Options{})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := []session.ID{s.NextID(), s.NextID(), s.NextID()}
	s.PutFrames(ids[0], testFrames("upstream", t0, 3))
	s.PutFrames(ids[2], testFrames("upstream", t0, 5))
	for _, id := range ids {
		if !s.Put(testSession(id, 200, 1, 1)) {
			t.Fatal("Put refused")
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{3, 0, 5} {
		got, err := s.Frames(ids[i])
		if err != nil || len(got) != want {
			t.Fatalf("session %d after Flush: %d frames (%v), want %d", ids[i], len(got), err, want)
		}
	}
	// A late batch goes through the frames goroutine and lands after the first one.
	s.PutFrames(ids[0], testFrames("client", t0.Add(time.Second), 2))
	if err := s.FlushFrames(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Frames(ids[0])
	if err != nil || len(got) != 5 || got[4].Leg != "client" {
		t.Fatalf("after the late batch: %d frames, %v", len(got), err)
	}
	if n := s.FramesDropped(); n != 0 {
		t.Fatalf("%d frames dropped", n)
	}
}
