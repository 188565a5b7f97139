package store

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"inspector/engine/session"
)

// TestPlanEvictionDetailMatchesEviction: the plan Settings shows names exactly the
// sessions that applying the limits then removes (ids, count, bytes, oldest start), passes
// over kept sessions, and the kept session survives the eviction.
func TestPlanEvictionDetailMatchesEviction(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "s.db"), Options{})
	old := time.Date(2020, 1, 2, 3, 4, 0, 0, time.Local)
	ids := putN(t, s, 4, old)
	ids = append(ids, putN(t, s, 8, time.Now())...)
	if err := s.SetKeep(ids[1], true); err != nil {
		t.Fatal(err)
	}
	bytesBefore := s.Stats().Bytes
	p, err := s.PlanEvictionDetail(Limits{MaxSessions: 5})
	if err != nil {
		t.Fatal(err)
	}
	// 12 stored, 1 kept: 7 go (ids[0], ids[2..7]), the kept one passed over.
	if p.Count != 7 || p.First != ids[0] || p.Last != ids[7] || p.Kept != 1 || !p.Oldest.Equal(old) || p.Bytes <= 0 {
		t.Fatalf("plan %+v", p)
	}
	msg := p.Message()
	for _, w := range []string{"7 sessions", "#" + itoa(ids[0]) + "–#" + itoa(ids[7]), "oldest from 2020-01-02 03:04", "to stay under 5 sessions", "kept sessions are never removed"} {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q lacks %q", msg, w)
		}
	}
	// The limits the plan defaults (4 GiB) are the ones SetLimits applies.
	if p.Limits.MaxBytes != defaultMaxBytes {
		t.Errorf("plan limits %+v", p.Limits)
	}
	n, err := s.SetLimits(Limits{MaxSessions: 5})
	if err != nil || n != p.Count {
		t.Fatalf("SetLimits removed %d (%v), plan said %d", n, err, p.Count)
	}
	if freed := bytesBefore - s.Stats().Bytes; freed != p.Bytes {
		t.Errorf("plan said %d bytes, applying freed %d", p.Bytes, freed)
	}
	got := storedIDs(t, s)
	want := []session.ID{ids[1], ids[8], ids[9], ids[10], ids[11]}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("after apply %v, want %v", got, want)
	}
	if p, _ := s.PlanEvictionDetail(Limits{MaxSessions: 5}); p.Count != 0 || !strings.HasPrefix(p.Message(), "Nothing will be removed") {
		t.Errorf("second plan %+v", p)
	}
	// An age limit: the rest are new, nothing old is left but the kept one.
	if p, _ := s.PlanEvictionDetail(Limits{MaxAge: 24 * time.Hour}); p.Count != 0 || p.Kept != 1 {
		t.Errorf("age plan %+v", p)
	}
}

func itoa(id session.ID) string { return strconv.FormatUint(uint64(id), 10) }
