package ui

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
	"inspector/ui/viewmodel"
)

func heapMB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / 1e6
}

// BenchmarkOpenLargeBody selects a session with a 3 MB single-line JSON body, then one
// with a 50 MB binary body, in the detail pane, the test goroutine playing the UI
// goroutine: every step it runs (the selection, each result handed over by the
// formatter) is timed, and the largest is reported as max-ui-block-ms (target < 50 ms),
// with the heap growth once the view is shown (target < 50 MB; the bodies themselves are
// in memory before).
func BenchmarkOpenLargeBody(b *testing.B) {
	for _, tc := range []struct {
		name, kind string
		size       int
		view       string
	}{{"json-3MB-one-line", "json", 3_000_000, "JSON"}, {"binary-50MB", "bin", 50_000_000, "Hex"}} {
		b.Run(tc.name, func(b *testing.B) {
			posts := make(chan func(), 64)
			u, w := newTestUI(b, Deps{Post: func(f func()) { posts <- f }})
			u.detail.inline = false
			w.Resize(fyne.NewSize(1280, 820))
			big := largeBodySession(1, tc.kind, tc.size)
			other := mkSession(2, "a.example", "/small", 200, "text/plain", "small")
			u.ShowSessions([]*session.Session{big, other})
			body := u.detail.resp.body
			var maxBlock time.Duration
			var growth float64
			timed := func(f func()) {
				t0 := time.Now()
				f()
				maxBlock = max(maxBlock, time.Since(t0))
			}
			for i := 0; i < b.N; i++ {
				u.SelectID(2)
				for v, ok := body.View(); !ok || v.Name != "Text"; v, ok = body.View() {
					(<-posts)()
				}
				before := heapMB()
				timed(func() { u.SelectID(1) })
				for v, ok := body.View(); !ok || v.Name != tc.view; v, ok = body.View() {
					timed(<-posts)
				}
				timed(func() { w.Canvas().Refresh(w.Content()); body.text.list.Refresh() })
				growth = max(growth, heapMB()-before)
			}
			b.ReportMetric(float64(maxBlock.Microseconds())/1000, "max-ui-block-ms")
			b.ReportMetric(growth, "heap-growth-MB")
		})
	}
}

// BenchmarkClickToDetailUnderLoad runs sessions through a real engine at about 1,000 a
// second (bounded workers, paced) while the test goroutine, playing the UI goroutine,
// applies the pump's batches and clicks a visible row every 20 ms: the time from the
// click until the detail pane shows the session with its body formatted is reported
// as p50 and p95 (target p95 <= 100 ms), with the arrival rate achieved.
func BenchmarkClickToDetailUnderLoad(b *testing.B) {
	o := et.StartOrigin(b, et.OriginH1Plain, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q,"items":[1,2,3,4,5,6,7,8,9,10]}`, r.URL.Path)
	}))
	p := et.StartProxy(b, nil, o)
	for i := 0; i < b.N; i++ {
		posts := make(chan func(), 1024)
		u, w := newTestUI(b, Deps{Engine: p.Engine, Post: func(f func()) { posts <- f }})
		u.detail.inline = false
		w.Resize(fyne.NewSize(1280, 820))
		sub := p.Subscribe(8192)
		before := p.Engine.Stats().Sessions
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		pump := &viewmodel.Pump{Events: sub.C, Flush: func(bt viewmodel.Batch) { posts <- func() { u.ApplyBatch(bt) } }}
		go pump.Run(ctx)

		// Load: 8 workers, each pacing 125 requests a second.
		var wg sync.WaitGroup
		var sent sync.Map
		for k := 0; k < 8; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := p.Client(b, et.ClientH1)
				tick := time.NewTicker(8 * time.Millisecond)
				defer tick.Stop()
				for n := 0; ; n++ {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
					resp, err := c.Get(fmt.Sprintf("%s/w%d/%d", o.URL, k, n))
					if err == nil {
						resp.Body.Close()
						sent.Store(fmt.Sprint(k, n), true)
					}
				}
			}()
		}
		var lat []time.Duration
		click := time.NewTicker(20 * time.Millisecond)
		var pending session.ID
		var clickedAt time.Time
		done := func() bool {
			if pending == 0 || u.detail.shown != pending {
				return false
			}
			v, ok := u.detail.resp.body.View()
			return ok && v.Name == "JSON"
		}
	loop:
		for {
			select {
			case <-ctx.Done():
				break loop
			case f := <-posts:
				f()
			case <-click.C:
				if pending != 0 {
					continue // still waiting for the last click
				}
				if n := u.model.Len(); n > 0 {
					// A row on screen: following newest, the last 30.
					i := n - 1 - rand.IntN(min(n, 30))
					if r := u.model.At(i); r != nil && !r.InFlight {
						pending, clickedAt = r.ID, time.Now()
						u.list.click(i, 0)
					}
				}
			}
			if done() {
				lat = append(lat, time.Since(clickedAt))
				pending = 0
			}
		}
		click.Stop()
		cancel()
		wg.Wait()
		sub.Close()
		st := p.Engine.Stats()
		slices.Sort(lat)
		if len(lat) == 0 {
			b.Fatal("no click completed")
		}
		b.ReportMetric(float64(st.Sessions-before)/3, "sessions/s")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
		b.ReportMetric(float64(len(lat)), "clicks")
		_ = engine.EventComplete
	}
}
