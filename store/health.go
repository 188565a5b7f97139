package store

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Health is whether the store is storing what it is given (doc.go "Health").
type Health struct {
	// Healthy is false from a commit that lost sessions (or their bodies), or a Put that
	// found the queue full, until a commit stores every session of its batch again.
	// Bodies Put leaves out when the queue holds Options.QueueBytes (Stats.BodiesDropped)
	// do not change it: that is the memory bound at work, not a failing store.
	Healthy bool `json:"healthy"`
	// Since is when the store entered this state (Open, when it started failing, or when it
	// recovered).
	Since time.Time `json:"since"`
	// LastError is the error of the failing commits; "" once the store recovered.
	LastError string `json:"last_error,omitempty"`
	// Damaged: the failure is damage inside the file, not lack of space: restarting with
	// Options.MoveAsideCorrupt (--reset-store) moves it aside.
	Damaged bool `json:"damaged,omitempty"`
	// Lost and BodiesLost count the sessions not stored (failed commits, a full queue), and
	// stored without their bodies by failed commits, since the store started failing (when
	// healthy again: during the last failing spell).
	Lost       uint64 `json:"lost"`
	BodiesLost uint64 `json:"bodies_lost"`
}

// health is the store's Health and its watchers.
type health struct {
	failing  atomic.Bool // !cur.Healthy, read without the lock on the writer's fast path
	mu       sync.Mutex
	cur      Health
	watchers map[chan Health]struct{}
}

func (h *health) init(now time.Time) {
	h.cur = Health{Healthy: true, Since: now}
}

// get returns the current health.
func (h *health) get() Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// change applies f to the health and hands the result to every watcher. Watchers never
// block it: each channel holds the latest value only.
func (h *health) change(f func(*Health)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(&h.cur)
	h.failing.Store(!h.cur.Healthy)
	for ch := range h.watchers {
		select {
		case <-ch:
		default:
		}
		ch <- h.cur
	}
}

// healthFailed records a commit that lost sessions (lost) or bodies (stripped).
func (s *Store) healthFailed(err error, lost, stripped uint64) {
	now := time.Now()
	s.setErr(err)
	s.health.change(func(h *Health) {
		if h.Healthy {
			*h = Health{Since: now}
		}
		h.LastError = err.Error()
		h.Damaged = h.Damaged || errors.Is(err, ErrCorrupt)
		h.Lost += lost
		h.BodiesLost += stripped
	})
}

// healthOK records a commit that stored its whole batch: a failing store has recovered.
func (s *Store) healthOK() {
	if !s.health.failing.Load() {
		return
	}
	now := time.Now()
	s.lastErr.Store(nil)
	s.health.change(func(h *Health) {
		h.Healthy, h.Since, h.LastError, h.Damaged = true, now, "", false
	})
}

// Health returns the store's current health.
func (s *Store) Health() Health { return s.health.get() }

// WatchHealth returns a channel that receives the store's health each time it changes
// (a failing commit, recovery), holding only the latest value, and a function that stops
// the watch. The store never waits for a watcher. The channel first receives the current
// health.
func (s *Store) WatchHealth() (<-chan Health, func()) {
	ch := make(chan Health, 1)
	h := &s.health
	h.mu.Lock()
	if h.watchers == nil {
		h.watchers = make(map[chan Health]struct{})
	}
	h.watchers[ch] = struct{}{}
	ch <- h.cur
	h.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.watchers, ch)
			h.mu.Unlock()
		})
	}
}
