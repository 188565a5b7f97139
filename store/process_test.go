package store

import (
	"bytes"
	"path/filepath"
	"testing"

	"inspector/engine/session"
	"inspector/filter"
)

// TestProcessAttributionStored: a session's client PID and process name survive a real
// bbolt file (record and summary), the list's summaries carry them, process: and pid:
// filter the list, and a reopened store still has them.
func TestProcessAttributionStored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openTest(t, path, Options{})
	a := testSession(1, 200, 10, 10)
	a.Client.PID, a.Client.Process = 4242, "curl"
	b := testSession(2, 200, 10, 10) // no process known
	c := testSession(3, 200, 10, 10)
	c.Client.PID, c.Client.Process = 77, "firefox-esr"
	for _, ss := range []*session.Session{a, b, c} {
		if !s.Put(ss) {
			t.Fatal("Put refused")
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store) {
		t.Helper()
		got, err := s.Get(1)
		if err != nil || got.Client.PID != 4242 || got.Client.Process != "curl" {
			t.Fatalf("Get(1) client = %+v, %v", got.Client, err)
		}
		if got, err := s.Get(2); err != nil || got.Client.PID != 0 || got.Client.Process != "" {
			t.Fatalf("Get(2) client = %+v, %v", got.Client, err)
		}
		for _, tc := range []struct {
			expr string
			want []session.ID
		}{{"process:curl", []session.ID{1}}, {"pid:77", []session.ID{3}}, {"process:*", []session.ID{1, 3}}, {"-process:*", []session.ID{2}}} {
			f, err := filter.Parse(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			sums, err := s.List(Query{Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			var ids []session.ID
			for _, sum := range sums {
				ids = append(ids, sum.ID)
				if sum.ID == 1 && (sum.PID != 4242 || sum.Process != "curl") {
					t.Errorf("summary of 1: pid %d process %q", sum.PID, sum.Process)
				}
			}
			if len(ids) != len(tc.want) || (len(ids) > 0 && ids[0] != tc.want[0]) || (len(ids) > 1 && ids[1] != tc.want[1]) {
				t.Errorf("%s: listed %v, want %v", tc.expr, ids, tc.want)
			}
		}
	}
	check(s)
	s.Close()
	check(openTest(t, path, Options{}))
}

// TestProcessCodecOldRecords: a record or summary without process attribution is encoded
// exactly as before (no place bit, no tail), so older files read the same, and decodes
// with PID 0; a summary with the tail decodes it, and its first fields stay where older
// readers look for them.
func TestProcessCodecOldRecords(t *testing.T) {
	ss := testSession(5, 200, 10, 10)
	rec := appendSessionMeta(nil, ss)
	if recordPlace(rec)&placeProcess != 0 {
		t.Fatal("placeProcess set on a session without a process")
	}
	ss.Client.PID, ss.Client.Process = 9, "wget"
	rec2 := appendSessionMeta(nil, ss)
	if recordPlace(rec2)&placeProcess == 0 {
		t.Fatal("placeProcess not set")
	}
	if got, err := decodeSessionMeta(rec); err != nil || got.Client.PID != 0 {
		t.Fatalf("old record: %+v, %v", got, err)
	}
	if got, err := decodeSessionMeta(rec2); err != nil || got.Client.PID != 9 || got.Client.Process != "wget" {
		t.Fatalf("new record: %+v, %v", got, err)
	}
	// A damaged tail is refused, not misread.
	if _, err := decodeSessionMeta(rec2[:len(rec2)-1]); err == nil {
		t.Fatal("truncated record decoded")
	}

	sum := ss.Summarize()
	sum.PID, sum.Process = 0, ""
	old := encodeSummary(nil, &sum, 123)
	sum.PID, sum.Process = 9, "wget"
	cur := encodeSummary(nil, &sum, 123)
	if !bytes.HasPrefix(cur, old) {
		t.Fatal("the process tail is not a pure suffix of the older summary format")
	}
	var got session.Summary
	if n, err := decodeSummary(5, old, &got, false); err != nil || n != 123 || got.PID != 0 || got.Process != "" {
		t.Fatalf("old summary: %+v %d %v", got, n, err)
	}
	if _, err := decodeSummary(5, cur, &got, false); err != nil || got.PID != 9 || got.Process != "wget" {
		t.Fatalf("new summary: %+v %v", got, err)
	}
	if _, err := decodeSummary(5, cur[:len(cur)-2], &got, false); err == nil {
		t.Fatal("truncated summary tail decoded")
	}
}

// WebSocket messages seen beyond those kept (issue 26) are stored with the session.
func TestMessagesSeenStored(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := testSession(s.NextID(), 101, 0, 0)
	a.Flags |= session.FlagWebSocket
	a.Messages = []session.Message{{Time: a.Started, FromClient: true, Opcode: 1, Data: []byte("hi"), Size: 2}}
	a.MessagesSeen = 12345
	b := testSession(s.NextID(), 200, 0, 0)
	putAll(t, s, a, b)
	if rec := appendSessionMeta(nil, b); recordPlace(rec)&placeExtras != 0 {
		t.Fatal("placeMessagesSeen set on a session that kept every message")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, path, Options{ReadOnly: true})
	got, err := s.Get(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if seen, kept := got.MessageCounts(); seen != 12345 || kept != 1 {
		t.Fatalf("seen %d kept %d, want 12345 and 1", seen, kept)
	}
	if got, err := s.Get(b.ID); err != nil || got.MessagesSeen != 0 {
		t.Fatalf("session without lost messages: seen %d, %v", got.MessagesSeen, err)
	}
}
