package viewmodel

import (
	"context"
	"sync/atomic"
	"time"

	"inspector/engine"
	"inspector/engine/session"
)

// DefaultInterval is the Pump's default minimum time between two flushes (10 per second).
const DefaultInterval = 100 * time.Millisecond

// Batch is what the Pump hands over at a flush: the latest state of every session that
// changed since the previous flush.
type Batch struct {
	// Rows holds the latest summary per session, in the order the sessions first appeared
	// in this batch.
	Rows []session.Summary
	// Completed holds the final sessions completed in this batch (immutable, shareable).
	Completed []*session.Session
	// Resync is set when the engine dropped events for this subscriber: the receiver must
	// rebuild from its storage and Engine.InFlight before applying Rows.
	Resync bool
}

// Pump drains an engine subscription on one goroutine and coalesces its events into
// batches, so that widgets are touched at most once per Interval however fast sessions
// arrive. It never blocks the engine beyond reading the channel.
//
// Flushing is leading-edge: an event arriving after a quiet period is flushed at once;
// events arriving sooner than Interval after a flush wait for the next flush. A resync
// event flushes at once.
type Pump struct {
	// Events is the subscription channel (engine.Subscription.C).
	Events <-chan engine.Event
	// Interval is the minimum time between flushes; DefaultInterval when zero.
	Interval time.Duration
	// Flush receives each batch on the pump goroutine. It owns the batch. It must return
	// quickly (in the app it only hands the batch to fyne.Do).
	Flush func(Batch)

	flushes atomic.Uint64
	events  atomic.Uint64
}

// Flushes is the number of batches handed to Flush so far. Safe for concurrent use.
func (p *Pump) Flushes() uint64 { return p.flushes.Load() }

// EventsSeen is the number of events read so far. Safe for concurrent use.
func (p *Pump) EventsSeen() uint64 { return p.events.Load() }

// Run pumps until ctx is done or Events is closed; pending events are flushed before it
// returns on a closed channel. Run must be called once.
func (p *Pump) Run(ctx context.Context) {
	interval := p.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	var (
		pending Batch
		index   = make(map[session.ID]int)
		last    time.Time // time of the previous flush
		timer   *time.Timer
		timerC  <-chan time.Time
	)
	flush := func() {
		if timer != nil {
			timer.Stop()
			timerC = nil
		}
		if len(pending.Rows) == 0 && !pending.Resync {
			return
		}
		b := pending
		pending = Batch{}
		clear(index)
		last = time.Now()
		p.flushes.Add(1)
		p.Flush(b)
	}
	add := func(ev engine.Event) {
		p.events.Add(1)
		switch ev.Kind {
		case engine.EventResync:
			pending.Resync = true
			return
		case engine.EventComplete:
			if ev.Session != nil {
				pending.Completed = append(pending.Completed, ev.Session)
			}
		}
		if i, ok := index[ev.Summary.ID]; ok {
			pending.Rows[i] = ev.Summary
			return
		}
		index[ev.Summary.ID] = len(pending.Rows)
		pending.Rows = append(pending.Rows, ev.Summary)
	}
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-timerC:
			timerC = nil
			flush()
		case ev, ok := <-p.Events:
			if !ok {
				flush()
				return
			}
			add(ev)
			// Take whatever else is already queued without blocking.
		drain:
			for range 256 {
				select {
				case ev, ok := <-p.Events:
					if !ok {
						flush()
						return
					}
					add(ev)
				default:
					break drain
				}
			}
			if pending.Resync {
				flush()
				continue
			}
			if timerC != nil {
				continue
			}
			wait := interval - time.Since(last)
			if wait <= 0 {
				flush()
				continue
			}
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			timerC = timer.C
		}
	}
}
