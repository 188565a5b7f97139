// Package viewmodel is the plain-Go model under the session list: a filtered, sorted
// index of session summaries with a selection, and the Pump that turns engine events into
// coalesced batches. It imports no Fyne package, so it is tested without a display.
//
// # Concurrency
//
// A Model is not safe for concurrent use: it is owned by the UI goroutine (in the app,
// everything that touches it runs inside fyne.Do or a widget callback). The Pump runs on
// its own goroutine and hands batches to a callback; that callback must move them onto
// the UI goroutine before applying them to a Model.
package viewmodel

import (
	"slices"
	"sort"

	"inspector/engine/session"
)

// Matcher decides whether a row is shown. A nil Matcher shows every row.
type Matcher func(*session.Summary) bool

// DefaultMax is the default number of rows a Model keeps in memory.
const DefaultMax = 100_000

// Change says what an operation did to the visible rows, so the view can decide between
// a cheap refresh and a full reset (and whether "follow newest" should scroll).
type Change struct {
	Reset   bool // the visible set was rebuilt (filter, sort, resync, eviction)
	Added   int  // rows added to the model (visible or not)
	Updated int  // existing rows whose contents changed
	Evicted int  // rows dropped to respect the Max bound
}

// Any reports whether anything changed.
func (c Change) Any() bool { return c.Reset || c.Added > 0 || c.Updated > 0 || c.Evicted > 0 }

// Model holds up to Max summaries (the newest ones; in-flight rows are never evicted),
// the visible subset in display order, and the selection. The zero value is not usable;
// call New.
type Model struct {
	max     int
	rows    map[session.ID]*session.Summary
	order   []*session.Summary // every row, ascending ID
	view    []*session.Summary // visible rows, ascending by (sort column, ID)
	match   Matcher
	sortCol Column
	desc    bool

	selected    session.ID
	hasSelected bool
	sel         map[session.ID]struct{} // the selected ids (selection.go)
	anchor      session.ID              // where a Shift-extended range starts
	evicted     uint64

	// stored pages the sessions older than the rows held (see SetStored); nil when none.
	stored *Pages
}

// New returns an empty model keeping at most max rows (DefaultMax if max <= 0), sorted
// by ID ascending (capture order), showing every row.
func New(max int) *Model {
	if max <= 0 {
		max = DefaultMax
	}
	return &Model{max: max, rows: make(map[session.ID]*session.Summary)}
}

// Len is the number of visible rows: the held rows that match, plus, while sorted by #
// (ColID), the older stored rows of the Pages set with SetStored.
func (m *Model) Len() int { return m.storedLen() + len(m.view) }

// storedLen is the number of stored rows shown before the held ones (in ascending order).
func (m *Model) storedLen() int {
	if m.stored == nil || m.sortCol != ColID {
		return 0
	}
	return m.stored.Len()
}

// SetStored installs p (nil: none) as the rows older than every held row: while sorted
// by #, they come before the held rows (after them when descending), fetched a page at a
// time. The caller builds p with the same filter as the Model's matcher and with
// p.Hi() below the oldest held stored row, so no row appears twice. The previous Pages
// is closed. Sorting by another column orders only the held rows (Paged reports whether
// stored rows are hidden by that).
func (m *Model) SetStored(p *Pages) Change {
	if m.stored != nil && m.stored != p {
		m.stored.Close()
	}
	m.stored = p
	return Change{Reset: true}
}

// Stored returns the Pages set with SetStored, or nil.
func (m *Model) Stored() *Pages { return m.stored }

// Paged reports how many stored rows the Pages cover and whether they are shown (they
// are not while sorted by a column other than #).
func (m *Model) Paged() (rows int, shown bool) {
	if m.stored == nil {
		return 0, true
	}
	return m.stored.Len(), m.sortCol == ColID
}

// NewestID is the highest id held (0 when none): the widest number the # column shows.
func (m *Model) NewestID() session.ID {
	if len(m.order) == 0 {
		return 0
	}
	return m.order[len(m.order)-1].ID
}

// Total is the number of rows held, visible or not.
func (m *Model) Total() int { return len(m.order) }

// Evicted counts rows dropped from memory to respect the bound since New.
func (m *Model) Evicted() uint64 { return m.evicted }

// At returns the visible row at display index i. The pointer stays valid until the next
// call that changes the model; callers must not modify the row. It returns nil for a
// stored row whose page is not in memory yet (show a placeholder: the page is being
// fetched and the Pages' OnPage callback fires when it arrives).
func (m *Model) At(i int) *session.Summary {
	if m.desc {
		i = m.Len() - 1 - i
	}
	if sn := m.storedLen(); i < sn {
		return m.stored.At(i)
	} else {
		i -= sn
	}
	return m.view[i]
}

// Get returns the row with the given id, visible or not.
func (m *Model) Get(id session.ID) (*session.Summary, bool) {
	r, ok := m.rows[id]
	return r, ok
}

// IndexOf returns the display index of id, or -1 when it is not visible.
func (m *Model) IndexOf(id session.ID) int {
	r, ok := m.rows[id]
	var i int
	if ok {
		j, found := m.search(r)
		if !found {
			return -1
		}
		i = m.storedLen() + j
	} else {
		if m.storedLen() == 0 {
			return -1
		}
		if i = m.stored.IndexOf(id); i < 0 {
			return -1
		}
	}
	if m.desc {
		return m.Len() - 1 - i
	}
	return i
}

// search finds r in view by binary search on the sort order.
func (m *Model) search(r *session.Summary) (int, bool) {
	i := sort.Search(len(m.view), func(i int) bool { return m.cmp(m.view[i], r) >= 0 })
	return i, i < len(m.view) && m.view[i].ID == r.ID
}

func (m *Model) cmp(a, b *session.Summary) int {
	if c := compare(a, b, m.sortCol); c != 0 {
		return c
	}
	return cmpOrdered(a.ID, b.ID)
}

func (m *Model) visible(r *session.Summary) bool { return m.match == nil || m.match(r) }

// SetFilter replaces the matcher (nil shows everything) and rebuilds the visible rows.
func (m *Model) SetFilter(match Matcher) Change {
	m.match = match
	m.rebuild()
	return Change{Reset: true}
}

// SortBy orders the visible rows by column c, descending if desc; ties go by ID in the
// same direction.
func (m *Model) SortBy(c Column, desc bool) Change {
	if c < 0 || c >= NumColumns {
		c = ColID
	}
	m.desc = desc
	if c != m.sortCol {
		m.sortCol = c
		m.sortView()
	}
	return Change{Reset: true}
}

// Sort returns the current sort column and direction.
func (m *Model) Sort() (Column, bool) { return m.sortCol, m.desc }

// Held returns a copy of every held row, in ID order.
func (m *Model) Held() []session.Summary {
	out := make([]session.Summary, len(m.order))
	for i, r := range m.order {
		out[i] = *r
	}
	return out
}

// Replace drops every row and loads rows (in any order; duplicates keep the last). It is
// the resync path: rows from the store followed by the engine's in-flight ones.
func (m *Model) Replace(rows []session.Summary) Change {
	m.rows = make(map[session.ID]*session.Summary, len(rows))
	m.order = m.order[:0]
	for i := range rows {
		if r, ok := m.rows[rows[i].ID]; ok {
			*r = rows[i]
			continue
		}
		r := new(session.Summary)
		*r = rows[i]
		m.rows[r.ID] = r
		m.order = append(m.order, r)
	}
	slices.SortFunc(m.order, func(a, b *session.Summary) int { return cmpOrdered(a.ID, b.ID) })
	ch := Change{Reset: true, Added: len(m.order)}
	ch.Evicted = m.evict()
	m.rebuild()
	return ch
}

// Upsert adds new rows and replaces existing ones by ID. A batch of rows newer than every
// held row, in ID order, sorted by ID, costs O(len(rows)); anything else rebuilds the
// visible index.
func (m *Model) Upsert(rows []session.Summary) Change {
	var ch Change
	rebuild := false
	for i := range rows {
		s := &rows[i]
		if r, ok := m.rows[s.ID]; ok {
			was := m.visible(r)
			key := m.sortCol != ColID && compare(r, s, m.sortCol) != 0
			*r = *s
			if was != m.visible(r) || (was && key) {
				rebuild = true
			}
			ch.Updated++
			continue
		}
		r := new(session.Summary)
		*r = *s
		m.rows[r.ID] = r
		ch.Added++
		if n := len(m.order); n == 0 || m.order[n-1].ID < r.ID {
			m.order = append(m.order, r)
		} else {
			j, _ := slices.BinarySearchFunc(m.order, r.ID, func(e *session.Summary, id session.ID) int { return cmpOrdered(e.ID, id) })
			m.order = slices.Insert(m.order, j, r)
			rebuild = true
		}
		if rebuild || !m.visible(r) {
			continue
		}
		if n := len(m.view); n == 0 || m.cmp(m.view[n-1], r) < 0 {
			m.view = append(m.view, r)
		} else {
			rebuild = true
		}
	}
	if ev := m.evict(); ev > 0 {
		ch.Evicted = ev
		rebuild = true
	}
	if rebuild {
		m.rebuild()
		ch.Reset = true
	}
	return ch
}

// Delete removes rows by id (for "delete selected" and store deletions).
func (m *Model) Delete(ids ...session.ID) Change {
	n := 0
	for _, id := range ids {
		if _, ok := m.rows[id]; ok {
			delete(m.rows, id)
			n++
		}
	}
	if n == 0 {
		return Change{}
	}
	m.order = slices.DeleteFunc(m.order, func(r *session.Summary) bool { _, ok := m.rows[r.ID]; return !ok })
	for _, id := range ids {
		delete(m.sel, id)
	}
	if m.hasSelected {
		if _, ok := m.rows[m.selected]; !ok {
			m.hasSelected = false
		}
	}
	m.rebuild()
	return Change{Reset: true}
}

// evict drops the oldest complete rows when more than max are held, down to 90% of max
// so that a steady stream evicts in chunks rather than on every batch.
func (m *Model) evict() int {
	if len(m.order) <= m.max {
		return 0
	}
	target := m.max - m.max/10
	drop := len(m.order) - target
	kept := m.order[:0]
	n := 0
	for _, r := range m.order {
		if n < drop && !r.InFlight && !(m.hasSelected && r.ID == m.selected) {
			delete(m.rows, r.ID)
			n++
			continue
		}
		kept = append(kept, r)
	}
	clear(m.order[len(kept):])
	m.order = kept
	m.evicted += uint64(n)
	return n
}

func (m *Model) rebuild() {
	m.view = m.view[:0]
	for _, r := range m.order {
		if m.visible(r) {
			m.view = append(m.view, r)
		}
	}
	if m.sortCol != ColID {
		m.sortView()
	}
}

func (m *Model) sortView() { slices.SortFunc(m.view, m.cmp) }

// Select makes id the only selected session; the selection is kept across filter and
// sort changes (it is a set of ids, see SelectOnly).
func (m *Model) Select(id session.ID) { m.SelectOnly(id) }

// Unselect clears the selection.
func (m *Model) Unselect() {
	m.hasSelected = false
	clear(m.sel)
}

// Selected returns the selected id, if any (it may be filtered out of view).
func (m *Model) Selected() (session.ID, bool) { return m.selected, m.hasSelected }

// Step moves the selection by delta visible rows (next: +1, previous: -1), clamped to the
// visible range, and returns the new display index, or -1 when nothing is visible. With
// no visible selection it selects the first row (delta > 0) or the last (delta < 0).
func (m *Model) Step(delta int) int { return m.step(delta, false) }

// StepExtend is Step that extends the selection from its anchor (Shift+Up/Down).
func (m *Model) StepExtend(delta int) int { return m.step(delta, true) }

func (m *Model) step(delta int, extend bool) int {
	n := m.Len()
	if n == 0 {
		return -1
	}
	i := -1
	if m.hasSelected {
		i = m.IndexOf(m.selected)
	}
	switch {
	case i < 0 && delta >= 0:
		i = 0
	case i < 0:
		i = n - 1
	default:
		i = min(max(i+delta, 0), n-1)
	}
	if r := m.At(i); r != nil {
		if extend {
			m.ExtendTo(r.ID)
		} else {
			m.Select(r.ID)
		}
	}
	return i
}

// VisibleIDs returns the ids of the visible rows held in memory, in display order (the
// stored pages are not included: read those from the store).
func (m *Model) VisibleIDs() []session.ID {
	ids := make([]session.ID, len(m.view))
	for i := range ids {
		if m.desc {
			ids[i] = m.view[len(m.view)-1-i].ID
		} else {
			ids[i] = m.view[i].ID
		}
	}
	return ids
}

// OldestComplete returns the id of the oldest held row that is not in flight.
func (m *Model) OldestComplete() (session.ID, bool) {
	for _, r := range m.order {
		if !r.InFlight {
			return r.ID, true
		}
	}
	return 0, false
}

// Hosts returns each host held with its row count, for the host tree.
func (m *Model) Hosts() map[string]int {
	h := make(map[string]int)
	for _, r := range m.order {
		h[HostKey(r)]++
	}
	return h
}
