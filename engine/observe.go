package engine

import (
	"context"
	"sync"
	"sync/atomic"
)

// Observers: see the section "Observer delivery" in doc.go.

// maxObserverBacklog caps the events waiting for delivery to observers.
const maxObserverBacklog = 1 << 16

type observerQueue struct {
	mu      sync.Mutex
	events  []queuedEvent // events[head:] wait, oldest first
	head    int
	running bool          // events wait or are being delivered
	drained chan struct{} // closed when the deliverer finds events empty
	dropped atomic.Uint64

	// The deliverer is one goroutine, started with the first event and woken through
	// wake; Close stops it (stop) after the backlog is delivered. An event published after
	// that gets a deliverer of its own.
	started    bool
	stopped    bool
	delivering bool // a deliverAll is running: one at a time keeps the order
	wake       chan struct{}
	stop       chan struct{}
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
	q.running = true
	switch {
	case q.stopped:
		spawn := !q.delivering
		q.delivering = true
		q.mu.Unlock()
		if spawn {
			go q.deliverAll(e, true)
		}
		return
	case !q.started:
		q.started = true
		q.wake, q.stop = make(chan struct{}, 1), make(chan struct{})
		go q.loop(e)
	}
	wake := q.wake
	q.mu.Unlock()
	select {
	case wake <- struct{}{}:
	default: // already woken
	}
}

// loop is the deliverer: it delivers what is queued each time it is woken, until stopped.
func (q *observerQueue) loop(e *Engine) {
	for {
		select {
		case <-q.wake:
			q.deliverAll(e, false)
		case <-q.stop:
			q.deliverAll(e, false)
			return
		}
	}
}

// deliverAll calls the observers for every queued event, in order, until none is left.
// One runs at a time: owned says the caller already took the turn (delivering), else it
// takes it or leaves the work to the one running.
func (q *observerQueue) deliverAll(e *Engine, owned bool) {
	if !owned {
		q.mu.Lock()
		if q.delivering {
			q.mu.Unlock()
			return
		}
		q.delivering = true
		q.mu.Unlock()
	}
	for {
		q.mu.Lock()
		if q.head == len(q.events) {
			q.events, q.head = q.events[:0], 0
			q.running, q.delivering = false, false
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
		ev := withProcess(qe.ev)
		for _, o := range *e.observers.Load() {
			o.Observe(ev)
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

// close stops the deliverer once it has delivered what is queued (it keeps delivering
// while an observer blocks; the goroutine then ends when that observer returns).
func (q *observerQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started && !q.stopped {
		close(q.stop)
	}
	q.stopped = true
}

// delivered runs once the observers have the exchange's completed session (or it was
// dropped): its bodies leave the capture budget, and Send may return.
func (x *exchange) delivered() {
	if x == nil {
		return
	}
	x.reqBody.ReleaseBudget()
	x.respCap.ReleaseBudget()
	if x.sent != nil {
		close(x.sent)
	}
}
