package viewmodel

import (
	"slices"
	"testing"

	"inspector/engine/session"
)

// TestProcessColumn: the Process column shows the client's process name (or its PID when
// only that is known), is on by default, and sorts by name then PID.
func TestProcessColumn(t *testing.T) {
	if Columns[ColProcess].Hidden || Columns[ColProcess].Flex || Columns[ColProcess].Width > 100 {
		t.Fatalf("Process column %+v: want shown by default, narrow", Columns[ColProcess])
	}
	a, b, c, d := sum(1, "x", 200), sum(2, "x", 200), sum(3, "x", 200), sum(4, "x", 200)
	a.PID, a.Process = 4242, "curl"
	b.PID = 99
	c.PID, c.Process = 7, "curl"
	d.PID, d.Process = 1, "firefox"
	for _, tc := range []struct {
		s    session.Summary
		want string
	}{{a, "curl"}, {b, "pid 99"}, {d, "firefox"}, {sum(5, "x", 200), ""}} {
		if got := CellText(&tc.s, ColProcess); got != tc.want {
			t.Errorf("CellText(pid %d %q) = %q, want %q", tc.s.PID, tc.s.Process, got, tc.want)
		}
	}
	m := New(0)
	m.Upsert([]session.Summary{a, b, c, d})
	m.SortBy(ColProcess, false)
	if got := ids(m); !slices.Equal(got, []session.ID{2, 3, 1, 4}) {
		t.Fatalf("by process = %v", got)
	}
}
