package viewmodel

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"inspector/engine/session"
	"inspector/filter"
	"inspector/store"
)

// storedSession is a small complete session; every 10th is a 404 on host b.example.
func storedSession(i int) *session.Session {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
	host, status := "a.example", 200
	if i%10 == 0 {
		host, status = "b.example", 404
	}
	return &session.Session{
		Started: t0,
		Client:  session.Conn{Proto: session.HTTP1}, Upstream: session.Conn{Proto: session.HTTP1},
		Request: session.Request{Method: "GET", URL: fmt.Sprintf("https://%s/item/%d", host, i), Proto: "HTTP/1.1",
			Header: http.Header{"Accept": {"*/*"}}},
		Response: &session.Response{Status: status, Proto: "HTTP/1.1",
			Header: http.Header{"Content-Type": {"application/json"}}},
		Timings: session.Timings{RequestHeaders: t0, ResponseDone: t0.Add(5 * time.Millisecond)},
	}
}

// fillStore opens a store in dir and imports n sessions in big transactions.
func fillStore(tb testing.TB, path string, n int) *store.Store {
	tb.Helper()
	st, err := store.Open(path, store.Options{MaxSessions: max(n, 1_000_000), MaxBytes: 64 << 30})
	if err != nil {
		tb.Fatal(err)
	}
	const batch = 20_000
	for done := 0; done < n; {
		k := min(batch, n-done)
		ss := make([]*session.Session, k)
		for i := range ss {
			ss[i] = storedSession(done + i)
		}
		if _, err := st.Import(ss); err != nil {
			tb.Fatal(err)
		}
		done += k
	}
	return st
}

func openFilled(t *testing.T, n int) *store.Store {
	t.Helper()
	st := fillStore(t, filepath.Join(t.TempDir(), "sessions.db"), n)
	t.Cleanup(func() { st.Close() })
	return st
}

// waitRow reads row i of p, waiting for its page to arrive through OnPage.
func waitRow(t testing.TB, p *Pages, arrived <-chan struct{}, i int) *session.Summary {
	t.Helper()
	for {
		if r := p.At(i); r != nil {
			return r
		}
		if err := p.Err(); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		<-arrived
	}
}

func notifier(p *Pages) <-chan struct{} {
	ch := make(chan struct{}, 1)
	p.OnPage = func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return ch
}

func TestPagesCoverEveryStoredSession(t *testing.T) {
	const n = 50_000
	st := openFilled(t, n)
	all, err := st.List(store.Query{})
	if err != nil || len(all) != n {
		t.Fatalf("listed %d, %v", len(all), err)
	}
	p, err := BuildPages(context.Background(), st, nil, 0, 256, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	arrived := notifier(p)
	if p.Len() != n || p.Hi() != all[n-1].ID {
		t.Fatalf("Len %d Hi %d, want %d and %d", p.Len(), p.Hi(), n, all[n-1].ID)
	}
	// The last pages are warm from the index scan: no fetch.
	if r := p.At(n - 1); r == nil || r.ID != all[n-1].ID {
		t.Fatalf("row %d = %+v", n-1, r)
	}
	if p.Fetches() != 0 {
		t.Fatalf("%d fetches for a warm page", p.Fetches())
	}
	// Rows far away are placeholders until their page arrives, then exact.
	for _, i := range []int{0, 31_337, 12_800, 256 * 100, 256*100 - 1} {
		r := waitRow(t, p, arrived, i)
		if r.ID != all[i].ID || r.URL != all[i].URL {
			t.Fatalf("row %d = id %d %s, want id %d %s", i, r.ID, r.URL, all[i].ID, all[i].URL)
		}
	}
	// Every row of a fetched page is served from memory, and IndexOf finds them.
	before := p.Fetches()
	for i := 256 * 100; i < 256*101; i++ {
		if r := p.At(i); r == nil || r.ID != all[i].ID {
			t.Fatalf("row %d of a cached page: %+v", i, r)
		}
		if j := p.IndexOf(all[i].ID); j != i {
			t.Fatalf("IndexOf(%d) = %d, want %d", all[i].ID, j, i)
		}
	}
	if p.Fetches() != before {
		t.Fatalf("cached page fetched again")
	}
	// The LRU holds at most 8 pages: touching 20 others evicts page 100.
	for pg := 150; pg < 170; pg++ {
		waitRow(t, p, arrived, pg*256)
	}
	if p.Cached(256 * 100) {
		t.Fatal("page 100 still cached after 20 newer pages with a cache of 8")
	}
	if p.At(-1) != nil || p.At(n) != nil {
		t.Fatal("out-of-range rows are not nil")
	}
}

func TestPagesWithFilter(t *testing.T) {
	const n = 50_000
	st := openFilled(t, n)
	f, err := filter.Parse("status:404 host:b.example")
	if err != nil {
		t.Fatal(err)
	}
	want, err := st.List(store.Query{Filter: f})
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildPages(context.Background(), st, f, 0, 100, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	arrived := notifier(p)
	if p.Len() != n/10 || len(want) != n/10 {
		t.Fatalf("Len %d, store matches %d, want %d", p.Len(), len(want), n/10)
	}
	if h := p.Hosts(); len(h) != 1 || h["b.example"] != n/10 {
		t.Fatalf("hosts = %v", h)
	}
	for _, i := range []int{0, 4_999, 2_500, 1_234} {
		r := waitRow(t, p, arrived, i)
		if r.ID != want[i].ID || r.Status != 404 {
			t.Fatalf("row %d = %+v, want id %d", i, r, want[i].ID)
		}
	}
}

func TestModelPagesBeforeHeldRowsAndLiveAppend(t *testing.T) {
	const n = 50_000
	st := openFilled(t, n)
	// The window: the newest 1,000 stored rows held in memory, as the UI loads them.
	window, err := st.List(store.Query{Newest: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	m := New(5000)
	m.Replace(window)
	oldest := window[len(window)-1].ID
	p, err := BuildPages(context.Background(), st, nil, oldest-1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	arrived := notifier(p)
	m.SetStored(p)
	if m.Len() != n {
		t.Fatalf("Len = %d, want every stored session %d", m.Len(), n)
	}
	all, _ := st.List(store.Query{})
	for _, i := range []int{0, 48_999, 49_000, n - 1, 20_000} {
		var r *session.Summary
		for r = m.At(i); r == nil; r = m.At(i) {
			<-arrived
		}
		if r.ID != all[i].ID {
			t.Fatalf("At(%d) = %d, want %d", i, r.ID, all[i].ID)
		}
	}
	// Live sessions append after the stored and held rows.
	live := sum(all[n-1].ID+1, "live.example", 200)
	ch := m.Upsert([]session.Summary{live})
	if ch.Added != 1 || m.Len() != n+1 || m.At(n).ID != live.ID {
		t.Fatalf("after live append: %+v Len %d last %+v", ch, m.Len(), m.At(n))
	}
	if i := m.IndexOf(live.ID); i != n {
		t.Fatalf("IndexOf(live) = %d", i)
	}
	// Descending by # puts the live row first and the oldest stored row last.
	m.SortBy(ColID, true)
	if m.At(0).ID != live.ID {
		t.Fatalf("desc first = %d", m.At(0).ID)
	}
	var r *session.Summary
	for r = m.At(n); r == nil; r = m.At(n) {
		<-arrived
	}
	if r.ID != all[0].ID {
		t.Fatalf("desc last = %d, want %d", r.ID, all[0].ID)
	}
	// Step walks into the stored rows.
	m.Select(all[0].ID)
	if i := m.IndexOf(all[0].ID); i != n {
		t.Fatalf("IndexOf(oldest) desc = %d", i)
	}
	if i := m.Step(-1); i != n-1 {
		t.Fatalf("Step(-1) = %d", i)
	}
	// Sorting by another column orders only the held rows and says so.
	m.SortBy(ColStatus, false)
	if rows, shown := m.Paged(); rows != n-1000 || shown {
		t.Fatalf("Paged = %d %v while sorted by status", rows, shown)
	}
	if m.Len() != 1001 {
		t.Fatalf("Len sorted by status = %d, want the 1001 held rows", m.Len())
	}
	// Resync: a new index replaces (and closes) the old one.
	m.SortBy(ColID, false)
	p2, err := BuildPages(context.Background(), st, nil, oldest-1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	m.SetStored(p2)
	if p.At(30_000) != nil || p.Cached(30_000) || len(p.queue) != 0 {
		t.Fatal("closed pages still queue fetches")
	}
	if m.Len() != n+1 || m.Stored() != p2 {
		t.Fatalf("after resync Len %d", m.Len())
	}
}

type failingLister struct{ calls int }

func (f *failingLister) List(q store.Query) ([]session.Summary, error) {
	f.calls++
	if f.calls > 2 {
		return nil, errors.New("disk on fire")
	}
	out := make([]session.Summary, 0, q.Limit)
	for id := q.After + 1; len(out) < max(q.Limit, 1) && id < 1000; id++ {
		out = append(out, session.Summary{ID: id})
	}
	if q.Newest {
		return []session.Summary{{ID: 999}}, nil
	}
	return out, nil
}

func TestPagesErrors(t *testing.T) {
	if _, err := BuildPages(context.Background(), nil, nil, 0, 0, 0); err == nil {
		t.Fatal("BuildPages without a store succeeded")
	}
	// The third List call (second page of the index scan) fails: BuildPages says so.
	if _, err := BuildPages(context.Background(), &failingLister{}, nil, 0, 100, 2); err == nil || err.Error() != "disk on fire" {
		t.Fatalf("BuildPages error = %v", err)
	}
	// A cancelled build stops with the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := BuildPages(ctx, &failingLister{}, nil, 0, 100, 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled BuildPages error = %v", err)
	}
	// An empty store gives empty pages.
	st := openFilled(t, 0)
	p, err := BuildPages(context.Background(), st, nil, 0, 0, 0)
	if err != nil || p.Len() != 0 || p.At(0) != nil {
		t.Fatalf("empty store: %v %d", err, p.Len())
	}
}

func TestPagesFetchErrorIsReported(t *testing.T) {
	fl := &failingLister{}
	p, err := BuildPages(context.Background(), fl, nil, 0, 1000, 1) // calls 1 (newest) and 2 (one page of 999)
	if err != nil {
		t.Fatal(err)
	}
	if p.Len() != 999 {
		t.Fatalf("Len %d", p.Len())
	}
	arrived := notifier(p)
	clear(p.cache) // drop the warm page
	p.lru.Init()
	if p.At(5) != nil {
		t.Fatal("row of a dropped page served")
	}
	<-arrived
	if p.Err() == nil || p.At(5) != nil {
		t.Fatalf("fetch error not reported: %v", p.Err())
	}
}

func TestPagesExtendMatchesAFreshIndex(t *testing.T) {
	const n = 20_000
	st := openFilled(t, n)
	all, _ := st.List(store.Query{})
	f, _ := filter.Parse("-status:404")
	for _, cut := range []int{10_239, 10_000} { // the first ends on a full page of 256 matches or not
		p, err := BuildPages(context.Background(), st, f, all[cut].ID, 256, 16)
		if err != nil {
			t.Fatal(err)
		}
		q, err := p.Extend(context.Background(), all[n-1].ID)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := BuildPages(context.Background(), st, f, all[n-1].ID, 256, 16)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(q.Hosts(), fresh.Hosts()) {
			t.Fatalf("cut %d: extended hosts %v, fresh %v", cut, q.Hosts(), fresh.Hosts())
		}
		if q.Len() != fresh.Len() || !slices.Equal(q.anchor, fresh.anchor) || q.lo != fresh.lo {
			t.Fatalf("cut %d: extended Len %d anchors %d, fresh Len %d anchors %d", cut, q.Len(), len(q.anchor), fresh.Len(), len(fresh.anchor))
		}
		arrived := notifier(q)
		for _, i := range []int{0, 9_000, fresh.Len() - 1} {
			a, b := waitRow(t, q, arrived, i), waitRow(t, fresh, notifier(fresh), i)
			if a.ID != b.ID {
				t.Fatalf("cut %d row %d: extended %d, fresh %d", cut, i, a.ID, b.ID)
			}
		}
		if _, err := q.Extend(context.Background(), all[0].ID); err == nil {
			t.Fatal("Extend below the covered range succeeded")
		}
		p.Close()
		q.Close()
		fresh.Close()
	}
}
