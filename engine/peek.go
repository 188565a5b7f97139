package engine

import (
	"sync"

	"inspector/engine/internal/capture"
	"inspector/engine/session"
)

// peekEntry is what Peek reads of a running exchange: its session, which the exchange
// leaves alone from its response head to its end (freeze), and the live captures of its
// bodies, read under their locks. The session is copied only when somebody peeks: most
// exchanges are never peeked, and a copy per exchange cost 4% of the proxy's CPU.
type peekEntry struct {
	mu      sync.Mutex
	live    *session.Session // until freeze
	snap    *session.Session // taken at freeze, only when the entry was peeked
	peeked  bool
	reqCap  *capture.Body
	respCap *capture.Body
}

// freeze is called by the exchange before it changes its session again (its end): a
// session that was peeked is copied once more, so later peeks still see it until the
// session is complete.
func (p *peekEntry) freeze() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.peeked {
		p.snap = p.live.Clone()
	}
	p.live = nil
	p.mu.Unlock()
}

// session returns a copy of the entry's session, nil when it froze unpeeked (it is
// completing: the observers and the store have it next).
func (p *peekEntry) session() *session.Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.live != nil:
		p.peeked = true
		return p.live.Clone()
	case p.snap != nil:
		return p.snap.Clone()
	}
	return nil
}

// peekable registers exchange x for Peek once its response head is in. It runs on the
// exchange's goroutine, so the session is read without a race; the entry goes at the
// session's EventComplete.
func (e *Engine) peekable(x *exchange) {
	if x == nil || x.s == nil || x.s.Response == nil || x.respCap == nil || x.ws != nil {
		return
	}
	x.peek = &peekEntry{live: x.s, reqCap: x.reqBody, respCap: x.respCap}
	e.peeks.Store(x.s.ID, x.peek)
}

// Peek returns a copy of in-flight session id with its bodies as captured so far (at most
// the capture cap each, as the finished session would hold), for views that show a stream
// while it is open (server-sent events). A body still streaming is marked Truncated: it is
// less than the whole. ok is false once the session completed (read it from the store or
// the observers then), when it has no response head yet, or when it is completing and
// nobody peeked at it before.
func (e *Engine) Peek(id session.ID) (*session.Session, bool) {
	v, ok := e.peeks.Load(id)
	if !ok {
		return nil, false
	}
	p := v.(*peekEntry)
	s := p.session()
	if s == nil {
		return nil, false
	}
	if b, open := p.reqCap.Snapshot(); b != nil {
		s.Request.Body = *b
		s.Request.Body.Truncated = s.Request.Body.Truncated || open
	}
	if b, open := p.respCap.Snapshot(); b != nil {
		s.Response.Body = *b
		s.Response.Body.Truncated = s.Response.Body.Truncated || open
	}
	return s, true
}
