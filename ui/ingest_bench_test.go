package ui

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"inspector/engine/session"
	"inspector/store"
	"inspector/ui/viewmodel"
)

// BenchmarkClickToDetailUnderIngest measures the window while the store takes 5,000
// sessions a second (1–16 KB JSON bodies, the body index on) for INSPECTOR_INGEST_SECS
// seconds (default 10; the figure is 60): the test goroutine is the UI goroutine,
// applies the new rows every 100 ms as the engine pump does, and every 50 ms clicks a
// random held row; a click's latency runs until the detail pane shows that session
// (loaded from the store off the UI goroutine, most rows being older than the window's
// cache). It reports the p50/p95/max click-to-detail and the store's dropped sessions
// and bodies.
func BenchmarkClickToDetailUnderIngest(b *testing.B) {
	secs := 10
	if v, err := strconv.Atoi(os.Getenv("INSPECTOR_INGEST_SECS")); err == nil && v > 0 {
		secs = v
	}
	const rate = 5000
	for range b.N {
		st, err := store.Open(filepath.Join(b.TempDir(), "sessions.db"), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		posts := make(chan func(), 1<<16)
		a := test.NewTempApp(b)
		w := test.NewTempWindow(b, nil)
		u := New(a, w, Deps{Store: st, Post: func(f func()) { posts <- f }})
		w.Resize(fyne.NewSize(1280, 820))

		type put struct {
			sum session.Summary
			s   *session.Session
		}
		fresh := make(chan put, 1<<16)
		stop := make(chan struct{})
		ingested := make(chan int, 1)
		go func() { // the engine's side: sessions completing at rate, paced per millisecond
			rng := rand.New(rand.NewPCG(1, 2))
			bodies := make([]string, 256) // made up front: the generator's cost is not the window's
			for i := range bodies {
				bodies[i] = jsonBody(rng, 1<<10+rng.IntN(15<<10))
			}
			n := 0
			start := time.Now()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					ingested <- n
					return
				case now := <-tick.C:
					due := int(now.Sub(start).Seconds() * rate)
					for ; n < due; n++ {
						s := mkSession(0, fmt.Sprintf("api%d.example", n%40), fmt.Sprintf("/v1/items/%d", n), 200, "application/json", bodies[n%len(bodies)])
						s.ID = st.NextID()
						st.Put(s)
						select {
						case fresh <- put{s.Summarize(), s}:
						default: // the window fell behind: it resyncs in the real pump; here the row is skipped
						}
					}
				}
			}
		}()

		var lat []time.Duration
		var pending session.ID
		var clicked time.Time
		apply := time.NewTicker(100 * time.Millisecond)
		click := time.NewTicker(50 * time.Millisecond)
		end := time.After(time.Duration(secs) * time.Second)
		rng := rand.New(rand.NewPCG(3, 4))
		check := func() {
			if pending != 0 && u.detail.shown == pending && !strings.Contains(u.detail.title.Text, "loading") {
				lat = append(lat, time.Since(clicked))
				pending = 0
			}
		}
	loop:
		for {
			select {
			case f := <-posts:
				f()
				check()
			case <-apply.C:
				var batch []session.Summary
				var done []*session.Session
				for len(fresh) > 0 {
					p := <-fresh
					batch, done = append(batch, p.sum), append(done, p.s)
				}
				if len(batch) > 0 {
					u.ApplyBatch(viewmodel.Batch{Rows: batch, Completed: done})
				}
			case <-click.C:
				if pending != 0 || u.model.Total() < 1000 {
					continue
				}
				i := rng.IntN(u.model.Len())
				r := u.model.At(i)
				if r == nil {
					continue
				}
				pending, clicked = r.ID, time.Now()
				u.SelectID(r.ID)
				check()
			case <-end:
				break loop
			}
		}
		close(stop)
		n := <-ingested
		st.Flush()
		stats := st.Stats()
		st.Close()
		if len(lat) == 0 {
			b.Fatal("no click was measured")
		}
		slices.Sort(lat)
		pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
		b.Logf("%d s at %d/s: %d sessions put, %d dropped, %d without bodies; %d clicks: p50 %v, p95 %v, max %v",
			secs, rate, n, stats.Dropped, stats.BodiesDropped, len(lat), pct(0.5).Round(time.Microsecond), pct(0.95).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
		b.ReportMetric(float64(pct(0.95).Microseconds())/1000, "p95-ms")
		b.ReportMetric(float64(stats.Dropped+stats.BodiesDropped), "drops")
	}
}

// jsonBody is a JSON document of about n bytes.
func jsonBody(rng *rand.Rand, n int) string {
	var sb strings.Builder
	sb.WriteString(`{"items":[`)
	for i := 0; sb.Len() < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":%d,"name":"item-%x","price":%d.%02d,"tags":["t%d","t%d"]}`, rng.IntN(1e6), rng.Uint32(), rng.IntN(500), rng.IntN(100), rng.IntN(90), rng.IntN(90))
	}
	sb.WriteString(`]}`)
	return sb.String()
}
