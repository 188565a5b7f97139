package ui

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"inspector/engine/session"
	"inspector/store"
)

// BenchmarkWindowStartLargeStore measures opening the window over a real store of
// INSPECTOR_WINDOW_BENCH_N sessions (default 100,000; the figure is 1,000,000):
// store.Open, New and the first frame (the canvas drawn) until the newest session is a
// row on screen, all on the test goroutine as the UI goroutine. The store is built once,
// in transactions of 50,000, and reopened per iteration. The Fyne test driver draws no
// GL frame, so this is the window's own cost, not the GPU's.
func BenchmarkWindowStartLargeStore(b *testing.B) {
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

	a := test.NewTempApp(b)
	var total time.Duration
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
		b.Logf("open %v, start to first frame with rows %v", opened.Round(time.Millisecond), el.Round(time.Millisecond))
		w.Close()
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "start-ms")
}
