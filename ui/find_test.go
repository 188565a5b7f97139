package ui

import (
	"image/color"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

// TestFindMarksOnlyTheMatch: find marks the match's own columns, not its whole row; a
// match that wraps is marked on both rows; the current match is orange, the others
// yellow, and moving on moves the orange.
func TestFindMarksOnlyTheMatch(t *testing.T) {
	u, w := newTestUI(t, Deps{})
	tv := newTextView(u)
	w.SetContent(tv.box)
	w.Resize(fyne.NewSize(600, 400))
	cols := tv.colsFor(tv.box.Size().Width)
	// Row 0: "\tkey needle", row 1 and 2: a needle wrapped across the row end.
	text := "\tkey needle\n" + strings.Repeat("x", cols-3) + "needle tail"
	tv.set(text)
	if n := tv.find("NEEDLE"); n != 2 {
		t.Fatalf("%d matches, want 2", n)
	}
	w.Canvas().Refresh(w.Content())
	rows := map[int]*textRow{}
	for i := range 3 {
		r := tv.list.CreateItem().(*textRow) // a row as the list draws it
		tv.updateRow(i, r)
		test.WidgetRenderer(r).Layout(fyne.NewSize(tv.list.Size().Width, r.MinSize().Height))
		rows[i] = r
	}
	cw := tv.charWidth()
	for i, r := range rows {
		if r.bg.FillColor != color.Transparent {
			t.Fatalf("row %d's whole background is marked", i)
		}
	}
	check := func(row, k, from, to int, fill color.Color) {
		t.Helper()
		r := rows[row]
		if len(r.marks) <= k {
			t.Fatalf("row %d: %d marks", row, len(r.marks))
		}
		m, rect := r.marks[k], r.rects[k]
		if m.from != from || m.to != to {
			t.Fatalf("row %d mark %d: columns %d..%d, want %d..%d", row, k, m.from, m.to, from, to)
		}
		if got := rect.Size().Width; got < float32(to-from)*cw-0.5 || got > float32(to-from)*cw+0.5 {
			t.Fatalf("row %d mark %d is %v px wide, want %v", row, k, got, float32(to-from)*cw)
		}
		if rect.FillColor != fill {
			t.Fatalf("row %d mark %d colour %v, want %v", row, k, rect.FillColor, fill)
		}
	}
	check(0, 0, 8, 14, currentMatch) // after a tab drawn as four columns and "key "
	check(1, 0, cols-3, cols, otherMatch)
	check(2, 0, 0, 3, otherMatch)
	if len(rows[2].marks) != 1 {
		t.Fatalf("row 2 has %d marks", len(rows[2].marks))
	}
	tv.next(1)
	tv.updateRow(0, rows[0])
	tv.updateRow(1, rows[1])
	if rows[0].rects[0].FillColor != otherMatch || rows[1].rects[0].FillColor != currentMatch {
		t.Fatal("the current match did not move to the second one")
	}
	// Clearing the find leaves no mark.
	tv.find("")
	tv.updateRow(0, rows[0])
	if len(rows[0].marks) != 0 {
		t.Fatalf("after clearing: %d marks", len(rows[0].marks))
	}
}
