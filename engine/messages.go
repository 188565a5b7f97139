package engine

import (
	"inspector/engine/session"
)

// MessageObserver is told of every WebSocket message an upgraded session relays, in order
// per direction, as the message completes. It runs on the relay goroutine of that direction
// while the tap's lock is held, so it must return at once (queue and return) and must not
// call back into the Engine. The message's Data is the observer's to keep (a copy, capped at
// the capture limit; Size counts every byte).
type MessageObserver func(id session.ID, m session.Message)

// ObserveMessages adds a WebSocket message observer. Messages are observed, not changed:
// the relay forwards every frame as it came.
func (e *Engine) ObserveMessages(o MessageObserver) {
	e.hooksMu.Lock()
	defer e.hooksMu.Unlock()
	var cur []MessageObserver
	if p := e.msgObs.Load(); p != nil {
		cur = *p
	}
	n := append(append([]MessageObserver(nil), cur...), o)
	e.msgObs.Store(&n)
}

// messageNotifier returns the function a session's WebSocket tap calls per message, or nil
// when nobody observes messages.
func (e *Engine) messageNotifier(id session.ID) func(session.Message) {
	p := e.msgObs.Load()
	if p == nil || len(*p) == 0 {
		return nil
	}
	obs := *p
	return func(m session.Message) {
		for _, o := range obs {
			mc := m
			mc.Data = append([]byte(nil), m.Data...)
			o(id, mc)
		}
	}
}
