package ui

import (
	"testing"

	"inspector/store"
)

// Over a store with more sessions than the window holds, "Follow newest" (on by default)
// shows the newest session once the older ones are paged in front of the held rows
// (the bug: the list stayed at the old bottom offset, showing ids near the held count).
func TestFollowNewestShowsNewestAfterPaging(t *testing.T) {
	const n, held = 6000, 1000
	st := bigStore(t, n)
	newest, err := st.List(store.Query{Newest: true, Limit: 1})
	if err != nil || len(newest) != 1 {
		t.Fatal(err)
	}
	u, posts := pagedUI(t, st, held)
	w := u.win
	if !u.Following() {
		t.Fatal("follow newest is off by default")
	}
	runPosts(posts, func() bool { return u.model.Stored() != nil })
	if u.model.Len() != n {
		t.Fatalf("list has %d rows, want %d", u.model.Len(), n)
	}
	w.Canvas().Refresh(w.Content())
	on := rowsOnScreen(u)
	r, ok := on[n-1]
	if !ok {
		lo := n
		for i := range on {
			lo = min(lo, i)
		}
		t.Fatalf("newest row (%d) not on screen; first row shown is %d of %d", n-1, lo, n)
	}
	if r.id != newest[0].ID {
		t.Fatalf("last row shows #%d, want the newest #%d", r.id, newest[0].ID)
	}
}

// A window opened over a store that fits in memory shows the newest session at once: the
// scroll New asks for, before the list has a size, used to be lost (the window opened
// at the oldest row).
func TestFollowNewestAtStart(t *testing.T) {
	const n = 500
	st := bigStore(t, n)
	u, w := newTestUI(t, Deps{Store: st, MaxRows: 1000})
	w.Canvas().Refresh(w.Content())
	if u.model.Len() != n {
		t.Fatalf("%d rows", u.model.Len())
	}
	r, ok := rowsOnScreen(u)[n-1]
	if !ok || r.id != st.NextID()-1 {
		t.Fatalf("the newest row is not on screen at start (offset %v)", u.list.list.GetScrollOffset())
	}
	// Following off: a resize leaves the list where the user put it.
	u.setFollow(false)
	u.list.list.ScrollToTop()
	w.Resize(w.Canvas().Size().AddWidthHeight(0, 40))
	w.Canvas().Refresh(w.Content())
	if _, ok := rowsOnScreen(u)[0]; !ok {
		t.Fatal("a resize with following off scrolled away from the top")
	}
}
