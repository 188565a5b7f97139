package viewmodel

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"inspector/engine"
	"inspector/engine/session"
)

// collector records flushes with their (fake) times.
type collector struct {
	mu      sync.Mutex
	batches []Batch
	times   []time.Time
}

func (c *collector) flush(b Batch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches = append(c.batches, b)
	c.times = append(c.times, time.Now())
}

// snapshot returns copies of the batches and times under the lock.
func (c *collector) snapshot() ([]Batch, []time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Batch(nil), c.batches...), append([]time.Time(nil), c.times...)
}

func TestPumpCoalescesAndBoundsRefreshes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ch := make(chan engine.Event, 64)
		var c collector
		p := &Pump{Events: ch, Flush: c.flush}
		done := make(chan struct{})
		go func() { p.Run(context.Background()); close(done) }()

		// 10,000 sessions, each begin + complete, one every 500µs: 5 s of traffic.
		const n = 10_000
		start := time.Now()
		for i := 1; i <= n; i++ {
			s := session.Summary{ID: session.ID(i), InFlight: true}
			ch <- engine.Event{Kind: engine.EventBegin, Summary: s}
			s.InFlight, s.Status = false, 200
			ch <- engine.Event{Kind: engine.EventComplete, Summary: s, Session: &session.Session{ID: s.ID}}
			time.Sleep(500 * time.Microsecond) // the traffic's arrival rate, in fake time
		}
		close(ch)
		<-done
		elapsed := time.Since(start)

		maxFlushes := int(elapsed/DefaultInterval) + 2
		if len(c.batches) > maxFlushes {
			t.Fatalf("%d flushes for %v of traffic, want at most %d", len(c.batches), elapsed, maxFlushes)
		}
		for i := 1; i < len(c.times); i++ {
			if gap := c.times[i].Sub(c.times[i-1]); gap < DefaultInterval && i != len(c.times)-1 {
				t.Fatalf("flush %d only %v after the previous", i, gap)
			}
		}
		// Every session arrives exactly once per batch, in its final state at the end.
		final := map[session.ID]session.Summary{}
		completed := 0
		for _, b := range c.batches {
			seen := map[session.ID]bool{}
			for _, r := range b.Rows {
				if seen[r.ID] {
					t.Fatalf("id %d twice in one batch", r.ID)
				}
				seen[r.ID] = true
				final[r.ID] = r
			}
			completed += len(b.Completed)
		}
		if len(final) != n || completed != n {
			t.Fatalf("saw %d sessions, %d completed; want %d", len(final), completed, n)
		}
		for id, r := range final {
			if r.InFlight || r.Status != 200 {
				t.Fatalf("session %d ended in state %+v", id, r)
			}
		}
		if p.EventsSeen() != 2*n || p.Flushes() != uint64(len(c.batches)) {
			t.Fatalf("counters: events %d flushes %d", p.EventsSeen(), p.Flushes())
		}
		t.Logf("%d events over %v -> %d refreshes", 2*n, elapsed, len(c.batches))
	})
}

func TestPumpFlushesQuietEventAtOnceAndResyncImmediately(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ch := make(chan engine.Event)
		var c collector
		p := &Pump{Events: ch, Flush: c.flush}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { p.Run(ctx); close(done) }()

		t0 := time.Now()
		ch <- engine.Event{Kind: engine.EventBegin, Summary: session.Summary{ID: 1}}
		synctest.Wait()
		batches, times := c.snapshot()
		if len(batches) != 1 || !times[0].Equal(t0) {
			t.Fatalf("a lone event was not flushed at once: %d batches", len(batches))
		}
		// Within the interval: held back, then flushed by the timer.
		ch <- engine.Event{Kind: engine.EventUpdate, Summary: session.Summary{ID: 1, Status: 200}}
		synctest.Wait()
		if batches, _ = c.snapshot(); len(batches) != 1 {
			t.Fatal("second event flushed inside the interval")
		}
		time.Sleep(DefaultInterval)
		synctest.Wait()
		if batches, _ = c.snapshot(); len(batches) != 2 || batches[1].Rows[0].Status != 200 {
			t.Fatalf("timer flush missing: %d batches", len(batches))
		}
		// A resync inside the interval goes at once.
		ch <- engine.Event{Kind: engine.EventResync}
		synctest.Wait()
		if batches, _ = c.snapshot(); len(batches) != 3 || !batches[2].Resync {
			t.Fatalf("resync not flushed at once: %d batches", len(batches))
		}
		cancel()
		<-done
	})
}

// BenchmarkPump10kEvents pushes 10,000 events as fast as the channel takes them and
// reports the refreshes they caused (bounded by elapsed/Interval + 1).
func BenchmarkPump10kEvents(b *testing.B) {
	var total, flushes uint64
	for b.Loop() {
		ch := make(chan engine.Event, 1024)
		p := &Pump{Events: ch, Flush: func(Batch) {}}
		done := make(chan struct{})
		start := time.Now()
		go func() { p.Run(context.Background()); close(done) }()
		for i := 1; i <= 10_000; i++ {
			ch <- engine.Event{Kind: engine.EventComplete, Summary: session.Summary{ID: session.ID(i)}}
		}
		close(ch)
		<-done
		if bound := uint64(time.Since(start)/DefaultInterval) + 2; p.Flushes() > bound {
			b.Fatalf("%d refreshes, bound %d", p.Flushes(), bound)
		}
		total++
		flushes += p.Flushes()
	}
	b.ReportMetric(float64(flushes)/float64(total), "refreshes/10k-events")
}
