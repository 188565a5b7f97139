package engine

import (
	"context"
	"sync"
	"sync/atomic"
)

// Observer delivery. Observers registered with Observe are called in event order on a
// delivery goroutine of the engine's, never on an exchange's: an observer that takes its
// time (the store waiting for room in its write queue) delays later deliveries, never a
// request or response. What an undelivered backlog can hold is bounded twice: a
// completed session's in-memory bodies stay counted in Config.CaptureMemory until its
// EventComplete has been delivered (so a stalled observer makes new bodies spill to disk
// instead of growing memory), and at most maxObserverBacklog events wait; beyond that an
// event is dropped and counted in Stats.ObserverDropped (the only way an observer can
// miss an event).

// maxObserverBacklog caps the events waiting for delivery to observers.
const maxObserverBacklog = 1 << 16

type observerQueue struct {
	mu      sync.Mutex
	events  []queuedEvent // events[head:] wait, oldest first
	head    int
	running bool          // a delivery goroutine is draining events
	drained chan struct{} // closed when the running goroutine finds events empty
	dropped atomic.Uint64
}

// queuedEvent is an event waiting for its observers; x, when set, is the exchange whose
// EventComplete it is, told once the observers have it (exchange.delivered).
type queuedEvent struct {
	ev Event
	x  *exchange
}

// push queues ev for the observers and returns at once.
func (q *observerQueue) push(e *Engine, ev Event, x *exchange) {
	q.mu.Lock()
	if len(q.events)-q.head >= maxObserverBacklog {
		q.mu.Unlock()
		q.dropped.Add(1)
		x.delivered()
		return
	}
	if q.head >= 1024 && 2*q.head >= len(q.events) {
		// Reuse the delivered front rather than growing under a steady backlog.
		n := copy(q.events, q.events[q.head:])
		clear(q.events[n:])
		q.events, q.head = q.events[:n], 0
	}
	q.events = append(q.events, queuedEvent{ev: ev, x: x})
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		go q.deliver(e)
	}
}

// deliver calls the observers for every queued event, in order, until none is left.
func (q *observerQueue) deliver(e *Engine) {
	for {
		q.mu.Lock()
		if q.head == len(q.events) {
			q.events, q.head = q.events[:0], 0
			q.running = false
			if q.drained != nil {
				close(q.drained)
				q.drained = nil
			}
			q.mu.Unlock()
			return
		}
		qe := q.events[q.head]
		q.events[q.head] = queuedEvent{}
		q.head++
		q.mu.Unlock()
		for _, o := range *e.observers.Load() {
			o.Observe(qe.ev)
		}
		qe.x.delivered()
	}
}

// wait returns when every event queued so far has been delivered, or when ctx ends.
func (q *observerQueue) wait(ctx context.Context) {
	q.mu.Lock()
	if !q.running {
		q.mu.Unlock()
		return
	}
	if q.drained == nil {
		q.drained = make(chan struct{})
	}
	ch := q.drained
	q.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// delivered runs once the observers have the exchange's completed session (or it was
// dropped): its bodies leave the capture budget, and Send may return.
func (x *exchange) delivered() {
	if x == nil {
		return
	}
	x.reqBody.releaseBudget()
	x.respCap.releaseBudget()
	if x.sent != nil {
		close(x.sent)
	}
}
