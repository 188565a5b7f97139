package store

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"inspector/engine/session"
)

func putN(t *testing.T, s *Store, n int, started time.Time) []session.ID {
	t.Helper()
	var ids []session.ID
	for range n {
		ss := testSession(s.NextID(), 200, 10, 100)
		if !started.IsZero() {
			ss.Started = started
		}
		s.Put(ss)
		ids = append(ids, ss.ID)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	return ids
}

func storedIDs(t *testing.T, s *Store) []session.ID {
	t.Helper()
	sums, err := s.List(Query{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []session.ID
	for _, x := range sums {
		ids = append(ids, x.ID)
	}
	return ids
}

// TestRetentionCountsEvictionsAndKeepsKept: eviction at a count limit is counted and
// announced, and never removes a session marked Keep.
func TestRetentionCountsEvictionsAndKeepsKept(t *testing.T) {
	t.Parallel()
	s := openTest(t, filepath.Join(t.TempDir(), "sessions.db"), Options{MaxSessions: 10})
	first := putN(t, s, 5, time.Time{})
	if err := s.SetKeep(first[1], true); err != nil {
		t.Fatal(err)
	}
	putN(t, s, 10, time.Time{})
	ids := storedIDs(t, s)
	if len(ids) != 10 || !slices.Contains(ids, first[1]) || slices.Contains(ids, first[0]) {
		t.Fatalf("stored %v, want the kept #%d and the 9 newest", ids, first[1])
	}
	st := s.Stats()
	if st.Evicted != 5 || st.LastEviction == nil {
		t.Fatalf("Evicted = %d, last %+v; want 5", st.Evicted, st.LastEviction)
	}
	if msg := st.LastEviction.Message(); !strings.Contains(msg, "old session") || !strings.HasSuffix(msg, "removed to stay under 10 sessions") {
		t.Errorf("message %q", msg)
	}
	got, err := s.Get(first[1])
	if err != nil || !got.Flags.Has(session.FlagKept) {
		t.Fatalf("kept session: %v, flags %v", err, got)
	}
	if kept, _ := s.Kept(); !slices.Equal(kept, []session.ID{first[1]}) {
		t.Errorf("Kept() = %v", kept)
	}
	keysOutside(t, s, map[session.ID]bool{ids[0]: true, ids[1]: true, ids[2]: true, ids[3]: true, ids[4]: true,
		ids[5]: true, ids[6]: true, ids[7]: true, ids[8]: true, ids[9]: true})

	// What a lower limit would remove, before it is set: the kept session stays aside.
	if n, err := s.PlanEviction(Limits{MaxSessions: 4}); err != nil || n != 6 {
		t.Errorf("PlanEviction(4) = %d, %v; want 6", n, err)
	}
	// Unkept, it goes with the next eviction.
	if err := s.SetKeep(first[1], false); err != nil {
		t.Fatal(err)
	}
	putN(t, s, 1, time.Time{})
	if ids := storedIDs(t, s); slices.Contains(ids, first[1]) || len(ids) != 10 {
		t.Errorf("after unkeep: %v", ids)
	}
	if err := s.SetKeep(9999, true); err == nil {
		t.Error("SetKeep of an unknown id succeeded")
	}
}

// TestRetentionByAgeAndBytes: sessions older than MaxAge go at the next commit or
// Enforce; a byte limit names itself.
func TestRetentionByAgeAndBytes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	old := putN(t, s, 3, time.Now().Add(-3*time.Hour))
	if err := s.SetKeep(old[2], true); err != nil {
		t.Fatal(err)
	}
	fresh := putN(t, s, 2, time.Now())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened with an age limit: nothing goes until a commit or Enforce.
	s = openTest(t, path, Options{MaxAge: time.Hour})
	if n, err := s.Enforce(); err != nil || n != 2 {
		t.Fatalf("Enforce = %d, %v; want 2", n, err)
	}
	want := append([]session.ID{old[2]}, fresh...)
	if ids := storedIDs(t, s); !slices.Equal(ids, want) {
		t.Fatalf("stored %v, want %v", ids, want)
	}
	if st := s.Stats(); st.Evicted != 2 || st.LastEviction.Reason != "older than 1 hour" {
		t.Fatalf("stats %d %+v", st.Evicted, st.LastEviction)
	}

	b := openTest(t, filepath.Join(t.TempDir(), "sessions.db"), Options{MaxBytes: 2 << 10})
	putN(t, b, 40, time.Time{})
	if st := b.Stats(); st.Evicted == 0 || st.LastEviction.Reason != "to stay under 2 KiB" || st.Bytes > 2<<10 {
		t.Fatalf("bytes: %+v %+v", st, st.LastEviction)
	}
}

// TestImportPastTheLimitIsCounted (issue 26 item 7): an import that pushes the store past
// its limit counts what it evicted, its own first sessions included.
func TestImportPastTheLimitIsCounted(t *testing.T) {
	t.Parallel()
	s := openTest(t, filepath.Join(t.TempDir(), "sessions.db"), Options{MaxSessions: 10})
	putN(t, s, 4, time.Time{})
	ids, err := s.ImportStream(func(add func(*session.Session) error) error {
		for range 15 {
			if err := add(testSession(0, 200, 1, 1)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || len(ids) != 15 {
		t.Fatal(ids, err)
	}
	if st := s.Stats(); st.Evicted != 9 || st.Sessions != 10 {
		t.Fatalf("after import: evicted %d, sessions %d; want 9 and 10", st.Evicted, st.Sessions)
	}
}

func TestRetentionFormats(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"4GiB": 4 << 30, "500MB": 500e6, "1.5G": 3 << 29, "123456": 123456, " 2 mib ": 2 << 20} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1G", "0", "lots", "1Q"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "12h": 12 * time.Hour, "1h30m": 90 * time.Minute} {
		if got, err := ParseAge(in); err != nil || got != want {
			t.Errorf("ParseAge(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "-3d", "soon", "0s"} {
		if _, err := ParseAge(bad); err == nil {
			t.Errorf("ParseAge(%q) accepted", bad)
		}
	}
	if got := (Eviction{Count: 12000, Reason: "to stay under " + FormatSize(4<<30)}).Message(); got != "12,000 old sessions removed to stay under 4 GiB" {
		t.Errorf("message %q", got)
	}
	if FormatAge(30*24*time.Hour) != "30 days" || Thousands(1000000) != "1,000,000" {
		t.Error("formats")
	}
}
