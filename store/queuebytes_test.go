package store

import (
	"os"
	"path/filepath"
	"testing"

	"inspector/engine/session"
)

// TestQueueBytesBound: when queued sessions hold more body bytes than Options.QueueBytes
// (the disk fell behind), Put keeps the sessions and drops their captured bodies (marked
// truncated, spilled parts deleted, counted); sessions taken by the writer free their
// share, so later bodies are kept again.
func TestQueueBytesBound(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, filepath.Join(dir, "sessions.db"), Options{QueueBytes: 5000})

	// Each session is flushed before the next: the writer has taken the earlier ones, so
	// the bound is never reached and every body is kept.
	for i := 0; i < 5; i++ {
		putAll(t, s, testSession(s.NextID(), 200, 1000, 3000))
	}
	if st := s.Stats(); st.BodiesDropped != 0 {
		t.Fatalf("bodies dropped with the writer keeping up: %+v", st)
	}

	// Over the bound: a 6000-byte body alone exceeds it.
	big := testSession(s.NextID(), 200, 1000, 5000)
	spill := filepath.Join(dir, "spilled-part")
	if err := os.WriteFile(spill, []byte("rest of the body"), 0o600); err != nil {
		t.Fatal(err)
	}
	big.Response.Body.Spilled = spill
	big.Response.Body.Size = 5000 + 16
	bodiless := testSession(s.NextID(), 204, 0, 0)
	putAll(t, s, big, bodiless)
	if big.Response.Body.Data == nil || big.Flags != 0 {
		t.Error("Put changed the caller's session")
	}
	if _, err := os.Stat(spill); !os.IsNotExist(err) {
		t.Errorf("spilled part of a dropped body still there: %v", err)
	}
	got, err := s.Get(big.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Request.Body.Data) != 0 || !got.Request.Body.Truncated || got.Request.Body.Size != 1000 ||
		len(got.Response.Body.Data) != 0 || !got.Response.Body.Truncated || got.Response.Body.Size != 5016 ||
		got.Response.Body.Spilled != "" || !got.Flags.Has(session.FlagReqTruncated) || !got.Flags.Has(session.FlagRespTruncated) {
		t.Errorf("stored without bodies: req %+v resp %+v flags %b", got.Request.Body, got.Response.Body, got.Flags)
	}
	if got.Response.Status != 200 || got.Request.URL != big.Request.URL {
		t.Errorf("the rest of the session changed: %d %s", got.Response.Status, got.Request.URL)
	}
	if st := s.Stats(); st.BodiesDropped != 1 || st.Dropped != 0 || st.Sessions != 7 {
		t.Errorf("stats %+v", st)
	}
	// The bound was given back: the next session keeps its body.
	next := testSession(s.NextID(), 200, 100, 100)
	putAll(t, s, next)
	if got, err := s.Get(next.ID); err != nil || len(got.Response.Body.Data) != 100 {
		t.Errorf("after the drop: %v %+v", err, got)
	}
}
