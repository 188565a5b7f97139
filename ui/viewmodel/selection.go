package viewmodel

import (
	"slices"

	"inspector/engine/session"
)

// The model's selection is a set of session ids (never row indexes, so it stays on the
// same sessions when rows are inserted, sorted or filtered) with a primary id (the one
// the detail pane shows, Selected) and an anchor for Shift-extended ranges.

// selSet is lazily allocated.
func (m *Model) selSet() map[session.ID]struct{} {
	if m.sel == nil {
		m.sel = make(map[session.ID]struct{})
	}
	return m.sel
}

// SelectOnly makes id the whole selection (a plain click).
func (m *Model) SelectOnly(id session.ID) {
	clear(m.selSet())
	m.sel[id] = struct{}{}
	m.selected, m.hasSelected, m.anchor = id, true, id
}

// Toggle adds id to the selection or removes it (Ctrl-click). The primary moves to id
// when added; when removed, to another selected id if any.
func (m *Model) Toggle(id session.ID) {
	s := m.selSet()
	if _, ok := s[id]; ok {
		delete(s, id)
		m.anchor = id
		if m.selected == id {
			m.hasSelected = false
			for _, other := range m.SelectedIDs() {
				m.selected, m.hasSelected = other, true
				break
			}
		}
		return
	}
	s[id] = struct{}{}
	m.selected, m.hasSelected, m.anchor = id, true, id
}

// ExtendTo selects the visible rows from the anchor to id inclusive, in display order
// (Shift-click, Shift+Up/Down); id becomes the primary. Without a visible anchor it is a
// plain SelectOnly. Stored rows whose page is not in memory are skipped.
func (m *Model) ExtendTo(id session.ID) {
	a, b := m.IndexOf(m.anchor), m.IndexOf(id)
	if a < 0 || b < 0 {
		m.SelectOnly(id)
		return
	}
	if a > b {
		a, b = b, a
	}
	s := m.selSet()
	clear(s)
	for i := a; i <= b; i++ {
		if r := m.At(i); r != nil {
			s[r.ID] = struct{}{}
		}
	}
	s[id] = struct{}{}
	m.selected, m.hasSelected = id, true
}

// SelectAll selects every visible row held in memory (Ctrl+A). Stored rows paged from the
// store are included when their page is in memory.
func (m *Model) SelectAll() {
	s := m.selSet()
	clear(s)
	for _, r := range m.view {
		s[r.ID] = struct{}{}
	}
	if sn := m.storedLen(); sn > 0 {
		for i := 0; i < sn; i++ {
			if m.stored.Cached(i) {
				if r := m.stored.At(i); r != nil {
					s[r.ID] = struct{}{}
				}
			}
		}
	}
	if !m.hasSelected || !m.IsSelected(m.selected) {
		for id := range s {
			m.selected, m.hasSelected, m.anchor = id, true, id
			break
		}
	}
}

// IsSelected reports whether id is in the selection.
func (m *Model) IsSelected(id session.ID) bool {
	if m.sel == nil {
		return m.hasSelected && m.selected == id
	}
	_, ok := m.sel[id]
	return ok
}

// SelectedIDs returns the selected ids in ascending (capture) order.
func (m *Model) SelectedIDs() []session.ID {
	if len(m.sel) == 0 {
		if m.hasSelected {
			return []session.ID{m.selected}
		}
		return nil
	}
	ids := make([]session.ID, 0, len(m.sel))
	for id := range m.sel {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// SelectionLen is the number of selected sessions.
func (m *Model) SelectionLen() int {
	if len(m.sel) == 0 && m.hasSelected {
		return 1
	}
	return len(m.sel)
}
