package engine

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"

	"inspector/engine/internal/ws"
	"inspector/engine/session"
)

// MessageObserver is told of every WebSocket message an upgraded session relays, in order
// per direction, as the message completes. It runs on the relay goroutine of that direction
// while the tap's lock is held, so it must return at once (queue and return) and must not
// call back into the Engine. The message's Data is the observer's to keep (a copy, capped at
// the capture limit; Size counts every byte).
type MessageObserver func(id session.ID, m session.Message)

// ObserveMessages adds a WebSocket message observer. Observers see messages as they were
// forwarded: with message hooks (AddMessageHook) that is after the hooks, marked
// Modified or Dropped; without, every frame as it came.
func (e *Engine) ObserveMessages(o MessageObserver) {
	e.hooksMu.Lock()
	defer e.hooksMu.Unlock()
	appendTo(&e.msgObs, o)
}

// appendTo stores a copy of the list in p with v appended (copy on write: readers load
// the list without a lock).
func appendTo[T any](p *atomic.Pointer[[]T], v T) {
	var cur []T
	if l := p.Load(); l != nil {
		cur = *l
	}
	n := append(append([]T(nil), cur...), v)
	p.Store(&n)
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

// WebSocketMessage is one whole WebSocket data message as a MessageHook sees it: the
// payload of all its frames, unmasked and joined.
type WebSocketMessage struct {
	Session    session.ID
	URL        string // the upgrade request's URL
	FromClient bool   // client→origin; false: origin→client
	// Opcode is 1 (text) or 2 (binary). A hook may change it; the message is forwarded
	// with the opcode it has when the hooks are done.
	Opcode int
	// Data is the payload. A hook replaces it (m.Data = newBytes) rather than writing into
	// it: a hook that fails has its replacement undone.
	Data []byte
	// Drop, set by a hook, keeps the message from the peer (later hooks do not run).
	Drop bool
}

// MessageHook runs for every WebSocket data message of an upgraded session, in order per
// direction, on the relay, before the message is forwarded. It may replace m.Data and
// m.Opcode or set m.Drop. A hook that returns an error (or whose text is not UTF-8, or
// whose opcode is not 1 or 2) has its changes undone; the error is recorded on the
// message (session.Message.HookError) and later hooks still run.
//
// Control frames (ping, pong) are forwarded at once, never held behind a hook; close
// frames stay in order after the messages before them. Messages compressed with
// permessage-deflate (RSV1 set), or larger than 4 MiB, are passed on unmodified without
// calling the hooks (their record says why). A hooked message is forwarded as one frame
// whatever its fragmentation was. The two directions run concurrently; ctx ends when
// the WebSocket does. While a hook runs, later data messages of that direction wait.
type MessageHook interface {
	OnMessage(ctx context.Context, m *WebSocketMessage) error
}

// MessageHookFunc adapts a function to MessageHook.
type MessageHookFunc func(ctx context.Context, m *WebSocketMessage) error

func (h MessageHookFunc) OnMessage(ctx context.Context, m *WebSocketMessage) error { return h(ctx, m) }

// AddMessageHook appends a WebSocket message hook. It applies to WebSockets that open
// after the call. With no message hook, the relay copies bytes as they come.
func (e *Engine) AddMessageHook(h MessageHook) {
	e.hooksMu.Lock()
	defer e.hooksMu.Unlock()
	appendTo(&e.msgHooks, h)
}

// RemoveMessageHook removes h (compared with ==), added by AddMessageHook. WebSockets
// already open keep the hooks they started with.
func (e *Engine) RemoveMessageHook(h MessageHook) {
	e.hooksMu.Lock()
	defer e.hooksMu.Unlock()
	p := e.msgHooks.Load()
	if p == nil {
		return
	}
	var n []MessageHook
	for _, x := range *p {
		if x != h {
			n = append(n, x)
		}
	}
	e.msgHooks.Store(&n)
}

// newWSTapFor returns the tap of a session's upgraded connection rwc: the cheap copying
// tap, or a relay that parses frames and runs the message hooks when there are any.
func (e *Engine) newWSTapFor(rwc io.ReadWriteCloser, s *session.Session, req *http.Request) *ws.Tap {
	t := ws.NewTap(rwc, e.cfg.CaptureLimit, e.messageNotifier(s.ID))
	if p := e.msgHooks.Load(); p != nil && len(*p) > 0 {
		hooks := make([]ws.Hook, len(*p))
		for i, h := range *p {
			hooks[i] = wsHook{h}
		}
		t.StartRelay(req.Context(), hooks, s.ID, req.URL.String())
	}
	return t
}

// wsHook is a MessageHook as the relay sees it: ws.Message is WebSocketMessage field for
// field, so the hook gets the relay's message itself, not a copy.
type wsHook struct{ h MessageHook }

func (w wsHook) OnMessage(ctx context.Context, m *ws.Message) error {
	return w.h.OnMessage(ctx, (*WebSocketMessage)(m))
}
