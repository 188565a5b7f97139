package engine

import (
	"inspector/engine/internal/capture"
	"inspector/engine/session"
)

// peekEntry is what Peek reads of a running exchange: a copy of its session taken when
// the response head was in (on the exchange's goroutine), and the live captures of its
// bodies, read under their locks.
type peekEntry struct {
	s       *session.Session
	reqCap  *capture.Body
	respCap *capture.Body
}

// peekable registers exchange x for Peek once its response head is in. It runs on the
// exchange's goroutine, so the session is read without a race; the entry goes at the
// session's EventComplete.
func (e *Engine) peekable(x *exchange) {
	if x == nil || x.s == nil || x.s.Response == nil || x.respCap == nil || x.ws != nil {
		return
	}
	e.peeks.Store(x.s.ID, &peekEntry{s: x.s.Clone(), reqCap: x.reqBody, respCap: x.respCap})
}

// Peek returns a copy of in-flight session id with its bodies as captured so far (at most
// the capture cap each, as the finished session would hold), for views that show a stream
// while it is open (server-sent events). A body still streaming is marked Truncated: it is
// less than the whole. ok is false once the session completed (read it from the store or
// the observers then) or when it has no response head yet.
func (e *Engine) Peek(id session.ID) (*session.Session, bool) {
	v, ok := e.peeks.Load(id)
	if !ok {
		return nil, false
	}
	p := v.(*peekEntry)
	s := p.s.Clone()
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
