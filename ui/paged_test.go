package ui

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"inspector/engine/session"
	"inspector/store"
	"inspector/ui/viewmodel"
)

// bigStore imports n small sessions (every 10th a 404 on b.example) in big transactions.
func bigStore(t *testing.T, n int) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ss := make([]*session.Session, n)
	for i := range ss {
		t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
		host, status := "a.example", 200
		if i%10 == 0 {
			host, status = "b.example", 404
		}
		ss[i] = &session.Session{
			Started: t0, Client: session.Conn{Proto: session.HTTP1}, Upstream: session.Conn{Proto: session.HTTP1},
			Request:  session.Request{Method: "GET", URL: fmt.Sprintf("https://%s/item/%d", host, i), Proto: "HTTP/1.1", Header: http.Header{}},
			Response: &session.Response{Status: status, Proto: "HTTP/1.1", Header: http.Header{"Content-Type": {"application/json"}}},
			Timings:  session.Timings{RequestHeaders: t0, ResponseDone: t0.Add(time.Millisecond)},
		}
	}
	if _, err := st.Import(ss); err != nil {
		t.Fatal(err)
	}
	return st
}

// pagedUI opens a window over st holding maxRows rows in memory, with background results
// posted to the returned channel (the test goroutine plays the UI goroutine).
func pagedUI(t *testing.T, st *store.Store, maxRows int) (*UI, chan func()) {
	posts := make(chan func(), 256)
	u, _ := newTestUI(t, Deps{Store: st, MaxRows: maxRows, Post: func(f func()) { posts <- f }})
	return u, posts
}

// runPosts runs posted functions until done reports true.
func runPosts(posts chan func(), done func() bool) {
	for !done() {
		(<-posts)()
	}
}

func cellText(u *UI, row, col int) string {
	r := newListRow(u.list)
	r.update(row)
	return r.full[col]
}

func TestListPagesEveryStoredSession(t *testing.T) {
	const n = 20_000
	st := bigStore(t, n)
	all, err := st.List(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	u, posts := pagedUI(t, st, 1000)
	if u.model.Len() != 1000 {
		t.Fatalf("before the page index arrives the list shows %d held rows, want 1000", u.model.Len())
	}
	runPosts(posts, func() bool { return u.model.Stored() != nil })
	if u.model.Len() != n {
		t.Fatalf("list has %d rows, want every stored session (%d)", u.model.Len(), n)
	}
	if s := u.status.Text(); !strings.Contains(s, fmt.Sprintf("%d sessions (1000 in memory", n)) || !strings.Contains(s, "paged from the store") {
		t.Fatalf("status = %q", s)
	}
	// The host tree counts the paged rows too.
	if got := strings.Join(u.hosts.Lines(), "|"); got != fmt.Sprintf("All hosts (%d)|a.example (%d)|b.example (%d)", n, n-n/10, n/10) {
		t.Fatalf("host tree = %q", got)
	}
	// Row 1000 is before the pages warmed by the index scan (the newest 64 pages) and off
	// screen: a placeholder, then the row once its page has arrived.
	if got := cellText(u, 1000, 0); got != "…" {
		t.Fatalf("uncached row shows %q, want the placeholder", got)
	}
	want := fmt.Sprint(all[1000].ID)
	runPosts(posts, func() bool { return cellText(u, 1000, 0) == want })
	// A held row and a warm stored row show directly.
	if got := cellText(u, n-1, 0); got != fmt.Sprint(all[n-1].ID) {
		t.Fatalf("newest row = %q", got)
	}
	if got := cellText(u, 18_000, 0); got != fmt.Sprint(all[18_000].ID) {
		t.Fatalf("row 18000 = %q", got)
	}
	// Selecting a stored row shows it in the detail pane (the list follows the newest
	// rows: row 5's page is fetched on demand first).
	runPosts(posts, func() bool { return u.model.At(5) != nil })
	u.list.click(5, 0)
	if id, ok := u.model.Selected(); !ok || id != all[5].ID {
		t.Fatalf("selected %d %v, want %d", id, ok, all[5].ID)
	}

	// Live sessions append after every stored one.
	live := all[n-1]
	live.ID = st.NextID()
	live.URL = "https://live.example/now"
	old := u.model.Stored()
	u.ApplyBatch(viewmodel.Batch{Rows: []session.Summary{live}})
	// The window held 1,000 rows: the live one evicts the oldest held rows, and the pages
	// extend over them in the background.
	runPosts(posts, func() bool { return u.model.Stored() != old })
	if u.model.Len() != n+1 || u.model.At(n).ID != live.ID {
		t.Fatalf("after a live row: Len %d", u.model.Len())
	}

	// A filter narrows held and stored rows alike.
	u.filter.entry.SetText("status:404")
	runPosts(posts, func() bool { p := u.model.Stored(); return p != nil && p.Filter() != nil })
	if u.model.Len() != n/10 {
		t.Fatalf("status:404 shows %d rows, want %d", u.model.Len(), n/10)
	}
	if got := u.hosts.Lines()[0]; got != fmt.Sprintf("All hosts (%d)", n+1) {
		t.Fatalf("a filter shrank the host tree: %q", got)
	}
	// The quick text joins the store's filter as a URL phrase.
	u.filter.quick.SetText("/item/1")
	runPosts(posts, func() bool {
		p := u.model.Stored()
		return p != nil && strings.Contains(p.Filter().String(), `"/item/1"`)
	})
	wantN := 0
	for i := 0; i < n; i += 10 {
		if strings.Contains(fmt.Sprintf("https://b.example/item/%d", i), "/item/1") {
			wantN++
		}
	}
	if u.model.Len() != wantN {
		t.Fatalf("status:404 + quick /item/1 shows %d rows, want %d", u.model.Len(), wantN)
	}

	// Sorting by another column orders the held rows only, and the status bar says so.
	u.filter.quick.SetText("")
	u.filter.entry.SetText("")
	runPosts(posts, func() bool { p := u.model.Stored(); return p != nil && p.Filter() == nil })
	u.list.SortBy(viewmodel.ColStatus)
	if u.model.Len() != u.model.Total() || u.model.Total() > 1000 {
		t.Fatalf("sorted by status: %d rows, want the %d held", u.model.Len(), u.model.Total())
	}
	if s := u.status.Text(); !strings.Contains(s, "sort by # to page through") {
		t.Fatalf("status = %q", s)
	}
}

func TestSmallStoreIsNotPaged(t *testing.T) {
	st := bigStore(t, 300)
	u, _ := newTestUI(t, Deps{Store: st, MaxRows: 1000})
	if u.model.Stored() != nil || u.model.Len() != 300 {
		t.Fatalf("a store smaller than the window was paged: %d rows", u.model.Len())
	}
}

func TestHostTreeGroupsByDomain(t *testing.T) {
	st := openStore(t,
		mkSession(0, "api.shop.example", "/a", 200, "application/json", "{}"),
		mkSession(0, "api.shop.example", "/b", 200, "application/json", "{}"),
		mkSession(0, "cdn.shop.example", "/logo.png", 200, "image/png", "x"),
		mkSession(0, "10.0.0.7", "/health", 200, "text/plain", "ok"),
		mkSession(0, "localhost", "/", 200, "text/html", "<p>"),
	)
	u, _ := newTestUI(t, Deps{Store: st})
	want := []string{
		"All hosts (5)",
		"10.0.0.7 (1)",
		"localhost (1)",
		"shop.example (3)",
		"  api.shop.example (2)",
		"  cdn.shop.example (1)",
	}
	if got := u.hosts.Lines(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("host tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !u.hosts.isBranch("g:shop.example") || u.hosts.isBranch("g:localhost") {
		t.Fatal("branches wrong")
	}
	// Selecting a domain filters to its hosts; a host to that host; All clears.
	u.hosts.tree.Select("g:shop.example")
	if u.model.Len() != 3 {
		t.Fatalf("domain selected: %d rows, want 3", u.model.Len())
	}
	u.hosts.tree.Select("h:cdn.shop.example")
	if u.model.Len() != 1 || u.model.At(0).Host != "cdn.shop.example" {
		t.Fatalf("host selected: %d rows", u.model.Len())
	}
	u.hosts.tree.Select("g:localhost")
	if u.model.Len() != 1 || u.model.At(0).Host != "localhost" {
		t.Fatalf("single-host group selected: %d rows", u.model.Len())
	}
	u.hosts.tree.Select(hostAll)
	if u.model.Len() != 5 {
		t.Fatalf("all hosts: %d rows", u.model.Len())
	}
}

// At start the window holds the newest startRows rows at once; the rest of the held rows
// arrive off the UI goroutine and are merged with what came in meanwhile, then the older
// sessions are paged. A reload before they arrive wins over them.
func TestStartShowsTheNewestRowsFirst(t *testing.T) {
	const n, held = 6000, 4000
	st := bigStore(t, n)
	u, posts := pagedUI(t, st, held)
	if u.model.Len() != startRows {
		t.Fatalf("at start the list shows %d rows, want the newest %d", u.model.Len(), startRows)
	}
	if r := u.model.At(u.model.Len() - 1); r.ID != session.ID(n) {
		t.Fatalf("the last row at start is %d, want the newest session %d", r.ID, n)
	}
	// A session that arrives before the rest of the held rows stays.
	live := session.Summary{ID: n + 1, Method: "GET", Host: "live.example", Status: 200}
	u.changed(u.model.Upsert([]session.Summary{live}))
	runPosts(posts, func() bool { return u.model.Total() > startRows+1 })
	if got := u.model.Total(); got != held {
		t.Fatalf("held %d rows after the rest arrived, want %d (the newest, the live one among them)", got, held)
	}
	if r, ok := u.model.Get(n + 1); !ok || r.Host != "live.example" {
		t.Fatal("the session that arrived meanwhile was dropped")
	}
	runPosts(posts, func() bool { return u.model.Stored() != nil })
	if u.model.Len() != n+1 {
		t.Fatalf("list has %d rows, want every stored session and the live one (%d)", u.model.Len(), n+1)
	}

	// A reload before the held rows arrive: their late merge is dropped.
	u2, posts2 := pagedUI(t, st, held)
	u2.Reload()
	want := u2.model.Total()
	f := <-posts2 // the start's late rows (or the reload's page index): run every post
	f()
	runPosts(posts2, func() bool { return u2.model.Stored() != nil })
	if u2.model.Total() != want || want != held {
		t.Fatalf("after a reload the window holds %d rows (reload gave %d), want %d", u2.model.Total(), want, held)
	}
}
