package viewmodel

import (
	"slices"
	"testing"

	"inspector/engine/session"
)

func rowsN(n int) []session.Summary {
	rs := make([]session.Summary, n)
	for i := range rs {
		rs[i] = session.Summary{ID: session.ID(i + 1), Status: 200 + i%3, Host: "h"}
	}
	return rs
}

func TestSelectionIsASetOfIDs(t *testing.T) {
	m := New(0)
	m.Replace(rowsN(10))
	m.SelectOnly(3)
	m.Toggle(5)
	m.Toggle(7)
	if got := m.SelectedIDs(); !slices.Equal(got, []session.ID{3, 5, 7}) {
		t.Fatalf("ids = %v", got)
	}
	if id, _ := m.Selected(); id != 7 {
		t.Fatalf("primary = %d", id)
	}
	m.Toggle(7)
	if m.IsSelected(7) || m.SelectionLen() != 2 {
		t.Fatalf("toggle off: %v", m.SelectedIDs())
	}
	if id, ok := m.Selected(); !ok || (id != 3 && id != 5) {
		t.Fatalf("primary after untoggle = %d %v", id, ok)
	}
	// Range from the anchor (7, the last toggled) back to 4.
	m.ExtendTo(4)
	if got := m.SelectedIDs(); !slices.Equal(got, []session.ID{4, 5, 6, 7}) {
		t.Fatalf("range = %v", got)
	}
	// Rows inserted and a sort change keep the same ids selected.
	m.Upsert([]session.Summary{{ID: 11, Status: 100}})
	m.SortBy(ColStatus, false)
	if got := m.SelectedIDs(); !slices.Equal(got, []session.ID{4, 5, 6, 7}) {
		t.Fatalf("after insert+sort = %v", got)
	}
	m.Delete(5)
	if got := m.SelectedIDs(); !slices.Equal(got, []session.ID{4, 6, 7}) {
		t.Fatalf("after delete = %v", got)
	}
	m.SetFilter(func(s *session.Summary) bool { return s.ID <= 3 })
	m.SelectAll()
	if got := m.SelectedIDs(); !slices.Equal(got, []session.ID{1, 2, 3}) {
		t.Fatalf("select all visible = %v", got)
	}
	m.Unselect()
	if m.SelectionLen() != 0 || m.SelectedIDs() != nil {
		t.Fatalf("unselect: %v", m.SelectedIDs())
	}
}

func TestStepExtend(t *testing.T) {
	m := New(0)
	m.Replace(rowsN(5))
	m.SelectOnly(2)
	m.StepExtend(1)
	m.StepExtend(1)
	if got := m.SelectedIDs(); !slices.Equal(got, []session.ID{2, 3, 4}) {
		t.Fatalf("extend = %v", got)
	}
	m.Step(-1)
	if got := m.SelectedIDs(); !slices.Equal(got, []session.ID{3}) {
		t.Fatalf("plain step = %v", got)
	}
}

func TestStretchWidths(t *testing.T) {
	pref := []float32{50, 100, 200}
	flex := []bool{false, true, true}
	w := StretchWidths(pref, flex, 650)
	if w[0] != 50 || w[1]+w[2] != 600 || w[2] != 2*w[1] {
		t.Fatalf("stretched = %v", w)
	}
	w = StretchWidths(pref, flex, 175)
	if sum := w[0] + w[1] + w[2]; sum > 175.01 || w[0] >= 50 {
		t.Fatalf("shrunk = %v (sum %v)", w, sum)
	}
}
