package filter

import (
	"slices"
	"testing"

	"inspector/engine/session"
)

// TestProcessTerms: process: is a case-insensitive name glob (".exe" optional), pid: a
// number comparison; sessions without a known process match neither.
func TestProcessTerms(t *testing.T) {
	mk := func(pid int, name string) *session.Session {
		return &session.Session{Client: session.Conn{PID: pid, Process: name},
			Request: session.Request{Method: "GET", URL: "http://example.com/"}}
	}
	ss := []*session.Session{mk(4242, "curl"), mk(77, "Firefox-ESR"), mk(9001, "curl.exe"), mk(0, "")}
	tests := []struct {
		expr string
		want []int
	}{
		{"process:curl", []int{0, 2}},
		{"process:CURL", []int{0, 2}},
		{"process:curl.exe", []int{2}},
		{"process:fire*", []int{1}},
		{"process:*", []int{0, 1, 2}},
		{"-process:curl", []int{1, 3}},
		{"pid:4242", []int{0}},
		{"pid:>1000", []int{0, 2}},
		{"pid:<100", []int{1}},
		{"pid:1-100000", []int{0, 1, 2}},
		{"process:curl pid:>5000", []int{2}},
	}
	for _, tc := range tests {
		e, err := Parse(tc.expr)
		if err != nil {
			t.Fatalf("%q: %v", tc.expr, err)
		}
		var got []int
		for i, s := range ss {
			if e.Match(s) {
				got = append(got, i)
			}
			sum := s.Summarize()
			if e.MatchSummary(&sum) != e.Match(s) {
				t.Errorf("%q: summary and session disagree on %d", tc.expr, i)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q matched %v, want %v", tc.expr, got, tc.want)
		}
	}
	for _, bad := range []string{"pid:abc", "pid:", "process:"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q parsed; want an error", bad)
		}
	}
}
