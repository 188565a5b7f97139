package ui

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"inspector/engine/session"
	"inspector/store"
)

// benchStoreFile builds, once per benchmark, a store of INSPECTOR_WINDOW_BENCH_N sessions
// (default 100,000) in transactions of 50,000, closes it and returns its path and newest id.
func benchStoreFile(b *testing.B) (string, session.ID) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("INSPECTOR_WINDOW_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	path := filepath.Join(b.TempDir(), "sessions.db")
	st, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	built := time.Now()
	for done := 0; done < n; {
		k := min(50_000, n-done)
		ss := make([]*session.Session, k)
		for i := range ss {
			j := done + i
			t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(j) * time.Millisecond)
			ss[i] = &session.Session{
				Started: t0, Client: session.Conn{Proto: session.HTTP1}, Upstream: session.Conn{Proto: session.HTTP1},
				Request:  session.Request{Method: "GET", URL: fmt.Sprintf("https://a.example/item/%d", j), Proto: "HTTP/1.1", Header: http.Header{}},
				Response: &session.Response{Status: 200, Proto: "HTTP/1.1", Header: http.Header{"Content-Type": {"application/json"}}},
				Timings:  session.Timings{RequestHeaders: t0, ResponseDone: t0.Add(time.Millisecond)},
			}
		}
		if _, err := st.Import(ss); err != nil {
			b.Fatal(err)
		}
		done += k
	}
	newest := st.NextID() - 1
	st.Close()
	b.Logf("built a %d-session store in %v", n, time.Since(built).Round(time.Millisecond))

	return path, newest
}

// BenchmarkWindowStartLargeStore measures opening the window over a real store of
// INSPECTOR_WINDOW_BENCH_N sessions (default 100,000; the figure is 1,000,000):
// store.Open, New and the first frame (the canvas drawn) until the newest session is a
// row on screen, all on the test goroutine as the UI goroutine. The store is built once,
// in transactions of 50,000, and reopened per iteration. The Fyne test driver draws no
// GL frame, so this is the window's own cost, not the GPU's.
func BenchmarkWindowStartLargeStore(b *testing.B) {
	path, newest := benchStoreFile(b)
	a := test.NewTempApp(b)
	var total time.Duration
	var maxAnon float64
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		st, err := store.Open(path, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		opened := time.Since(t0)
		w := test.NewWindow(nil)
		u := New(a, w, Deps{Store: st, Post: func(func()) {}}) // page builds are dropped
		w.Resize(fyne.NewSize(1200, 800))
		w.Canvas().Refresh(w.Content())
		on := false
		for _, r := range rowsOnScreen(u) {
			on = on || r.id == newest
		}
		el := time.Since(t0)
		total += el
		if !on {
			lo, hi := -1, -1
			for i := range rowsOnScreen(u) {
				if lo < 0 || i < lo {
					lo = i
				}
				hi = max(hi, i)
			}
			b.Fatalf("newest session #%d not on screen after start: rows %d..%d of %d, offset %v, size %v", newest, lo, hi, u.model.Len(), u.list.list.GetScrollOffset(), u.list.list.Size())
		}
		b.StopTimer()
		anon := rssAnonMB()
		maxAnon = max(maxAnon, anon)
		b.Logf("open %v, start to first frame with rows %v, RssAnon %.0f MB", opened.Round(time.Millisecond), el.Round(time.Millisecond), anon)
		w.Close()
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "start-ms")
	b.ReportMetric(maxAnon, "anon-MB")
}

// rssAnonMB is the process's anonymous resident memory (heap, stacks; not the store's
// memory-mapped file) from /proc/self/status, in MB; 0 where there is no procfs.
func rssAnonMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1000
		}
	}
	return 0
}

// BenchmarkSearchWindowFirstPage measures the search window over the same store: from the
// query (after the debounce) to its first page of results on screen, for a rare token
// (one URL) and a common one (every URL), with the count.
func BenchmarkSearchWindowFirstPage(b *testing.B) {
	path, newest := benchStoreFile(b)
	st, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	posts := make(chan func(), 1024)
	a := test.NewTempApp(b)
	w := test.NewTempWindow(b, nil)
	u := New(a, w, Deps{Store: st, Post: func(f func()) { posts <- f }})
	u.OpenSearch()
	s := u.search
	for _, q := range []struct{ name, text string }{
		{"rare", fmt.Sprintf("/item/%d", newest-1)},
		{"common", "a.example/item/"},
	} {
		b.Run(q.name, func(b *testing.B) {
			var first, all time.Duration
			for range b.N {
				t0 := time.Now()
				s.run(q.text)
				for len(s.hits) == 0 && !searchDone(s) {
					(<-posts)()
				}
				first += time.Since(t0)
				for !searchDone(s) {
					(<-posts)()
				}
				all += time.Since(t0)
				if len(s.hits) == 0 {
					b.Fatalf("no results for %q", q.text)
				}
			}
			b.ReportMetric(float64(first.Milliseconds())/float64(b.N), "first-page-ms")
			b.ReportMetric(float64(all.Milliseconds())/float64(b.N), "done-ms")
			b.Logf("%q: %d matches, %d shown", q.text, s.count, len(s.hits))
		})
	}
	for len(posts) > 0 {
		(<-posts)()
	}
}
