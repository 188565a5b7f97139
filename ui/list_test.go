package ui

import (
	"math"
	"testing"
)

// TestRowPitchIsWholePixels: the list places rows at float32 offsets; at a million rows
// (20 million px) float32 steps by 2 px, and a fractional pitch drifted the rows so far
// that the newest session ended below the view with "follow newest" on.
func TestRowPitchIsWholePixels(t *testing.T) {
	u, _ := newTestUI(t, Deps{})
	for _, d := range []Density{Compact, Comfortable} {
		u.SetDensity(d)
		if h := u.list.rowHeight(); h != float32(math.Trunc(float64(h))) {
			t.Fatalf("density %v: row pitch %v px", d, h)
		}
	}
}
