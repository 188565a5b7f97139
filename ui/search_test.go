package ui

import (
	"fmt"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"inspector/store"
)

// searchDone reports whether the query in s has streamed and counted.
func searchDone(s *searchWindow) bool { return s.pending == 0 && s.count >= 0 }

// wantURLMatches counts bigStore's sessions whose URL contains sub.
func wantURLMatches(n int, sub string) int {
	c := 0
	for i := range n {
		host := "a.example"
		if i%10 == 0 {
			host = "b.example"
		}
		if strings.Contains(fmt.Sprintf("https://%s/item/%d", host, i), sub) {
			c++
		}
	}
	return c
}

// searchUI opens the window over a store of n sessions (1000 held in memory), once the
// stored pages are in, and its search window.
func searchUI(t *testing.T, n int) (*UI, *searchWindow, chan func()) {
	u, posts := pagedUI(t, bigStore(t, n), 1000)
	if n > 1000 {
		runPosts(posts, func() bool { return u.model.Stored() != nil })
	}
	u.OpenSearch()
	if u.search == nil {
		t.Fatal("no search window")
	}
	return u, u.search, posts
}

func TestSearchEverythingNewestFirstWithSnippet(t *testing.T) {
	const n = 3000
	u, s, posts := searchUI(t, n)
	test.Type(s.entry, "ITEM/12") // text: ignores case
	runPosts(posts, func() bool { return s.query == "ITEM/12" && searchDone(s) })
	if s.runs != 1 {
		t.Fatalf("%d queries for one burst of typing, want 1 (debounced)", s.runs)
	}
	want := wantURLMatches(n, "item/12") // 111: more than one page of results
	if want <= searchPage {
		t.Fatalf("fixture too small: %d", want)
	}
	if s.count != want || len(s.hits) != want {
		t.Fatalf("count %d, hits %d, want %d (err %v)", s.count, len(s.hits), want, s.err)
	}
	for i, h := range s.hits {
		if i > 0 && h.sum.ID >= s.hits[i-1].sum.ID {
			t.Fatalf("hit %d (#%d) not older than hit %d (#%d)", i, h.sum.ID, i-1, s.hits[i-1].sum.ID)
		}
		if !strings.Contains(h.sum.URL, "item/12") {
			t.Fatalf("hit %q does not match", h.sum.URL)
		}
	}
	h := s.hits[0]
	if !h.ok || h.snip.Part != "url" || h.snip.Text[h.snip.Start:h.snip.End] != "item/12" {
		t.Fatalf("snippet of the newest hit = %+v", h.snip)
	}
	segs := snippetSegments(&h)
	mark := segs[2].(*widget.TextSegment)
	if mark.Text != "item/12" || !mark.Style.TextStyle.Bold {
		t.Fatalf("highlighted segment = %q bold=%v", mark.Text, mark.Style.TextStyle.Bold)
	}
	if got := s.status.Text; got != fmt.Sprintf("%d matches", want) {
		t.Fatalf("status %q", got)
	}

	// Enter selects the newest result in the main list.
	s.entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if id, ok := u.model.Selected(); !ok || id != h.sum.ID {
		t.Fatalf("Enter selected #%d %v, want #%d", id, ok, h.sum.ID)
	}
}

func TestSearchEverythingNewerQueryCancelsOlder(t *testing.T) {
	const n = 3000
	_, s, posts := searchUI(t, n)
	first := s.run("item/1")
	second := s.run("item/29")
	if first.Err() == nil {
		t.Fatal("the older query was not cancelled")
	}
	if second.Err() != nil {
		t.Fatal("the newer query is cancelled")
	}
	runPosts(posts, func() bool { return searchDone(s) })
	want := wantURLMatches(n, "item/29")
	if s.count != want || len(s.hits) != want {
		t.Fatalf("count %d hits %d, want %d", s.count, len(s.hits), want)
	}
	for _, h := range s.hits {
		if !strings.Contains(h.sum.URL, "item/29") {
			t.Fatalf("a result of the cancelled query is shown: %q", h.sum.URL)
		}
	}
	// An empty query clears the results; a bad store is reported, not a crash.
	s.run("")
	if len(s.hits) != 0 || s.status.Text != "" {
		t.Fatalf("empty query: %d hits, status %q", len(s.hits), s.status.Text)
	}
}

func TestSearchEverythingWithoutStoreSaysSo(t *testing.T) {
	u, _ := newTestUI(t, Deps{})
	u.OpenSearch()
	u.search.run("x")
	if !strings.Contains(u.search.status.Text, "needs the capture store") {
		t.Fatalf("status %q", u.search.status.Text)
	}
}

// Choosing an old result scrolls the main list to it even when its stored page is not in
// memory.
func TestSearchEverythingChoosesAnOldStoredRow(t *testing.T) {
	u, s, posts := searchUI(t, 20_000)
	s.run("item/123") // 123, 1230-1239, 12300-12399
	runPosts(posts, func() bool { return searchDone(s) })
	last := len(s.hits) - 1
	if last < 0 || !strings.HasSuffix(s.hits[last].sum.URL, "/item/123") {
		t.Fatalf("%d hits", len(s.hits))
	}
	id := s.hits[last].sum.ID
	if u.model.IndexOf(id) >= 0 {
		t.Fatal("fixture: the oldest hit's page is in memory")
	}
	s.list.Select(last)
	if sel, ok := u.model.Selected(); !ok || sel != id {
		t.Fatalf("selected #%d %v, want #%d", sel, ok, id)
	}
	w := u.win
	w.Canvas().Refresh(w.Content())
	i := u.model.IndexOf(id)
	if r, ok := rowsOnScreen(u)[i]; i < 0 || !ok || r.id != id {
		t.Fatalf("the chosen row (index %d) is not on screen", i)
	}
}

// Edit ▸ Search everything… (Ctrl+Shift+F) opens the search window.
func TestSearchEverythingMenuItem(t *testing.T) {
	u, w := newTestUI(t, Deps{Store: bigStore(t, 10)})
	it := menuItem(t, editMenu(t, w, "Edit"), "Search everything…")
	want := shortcut(fyne.KeyF, fyne.KeyModifierShortcutDefault|fyne.KeyModifierShift).ShortcutName()
	if sc, ok := it.Shortcut.(interface{ ShortcutName() string }); !ok || sc.ShortcutName() != want {
		t.Fatalf("shortcut = %v, want %s", it.Shortcut, want)
	}
	it.Action()
	if u.search == nil || windowTitled(u.app, "Search everything") == nil {
		t.Fatal("no search window")
	}
	u.search.win.Close()
	if u.search != nil {
		t.Fatal("the closed window is still the search window")
	}
}

// buildingStore is a real store whose index reports a backfill in progress (a store of
// the old schema cannot be made from outside the store package).
type buildingStore struct{ *store.Store }

func (buildingStore) IndexStatus() store.IndexStatus {
	return store.IndexStatus{Building: true, Percent: 42, Available: true}
}

func TestSearchEverythingSaysWhileTheIndexBuilds(t *testing.T) {
	posts := make(chan func(), 64)
	u, _ := newTestUI(t, Deps{Store: buildingStore{bigStore(t, 50)}, Post: func(f func()) { posts <- f }})
	u.OpenSearch()
	s := u.search
	s.run("item/4")
	runPosts(posts, func() bool { return searchDone(s) })
	want := fmt.Sprintf("%d matches · index building: 42%% — results may be partial", wantURLMatches(50, "item/4"))
	if s.status.Text != want {
		t.Fatalf("status %q, want %q", s.status.Text, want)
	}
}
