package filter

import (
	"testing"

	"inspector/engine/session"
)

func TestClientTerm(t *testing.T) {
	t.Parallel()
	launched := &session.Summary{Process: "chromium-2 (launched)"}
	own := &session.Summary{Process: "chromium"}
	for q, want := range map[string][2]bool{
		"client:chromium":   {true, false},
		"client:chromium-2": {true, false},
		"client:chromium-1": {false, false},
		"client:yes":        {true, false},
		"client:firefox":    {false, false},
		"client:chrom*":     {true, false},
	} {
		f := MustParse(q)
		if got := [2]bool{f.MatchSummary(launched), f.MatchSummary(own)}; got != want {
			t.Errorf("%s: launched %v, own process %v; want %v", q, got[0], got[1], want)
		}
	}
	if _, err := Parse("client:"); err == nil {
		t.Fatal("client: without a value accepted")
	}
}
