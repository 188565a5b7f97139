package ui

import (
	"context"
	"mime"
	"slices"
	"time"

	"inspector/engine"
	"inspector/engine/session"
)

var _ Peeker = (*engine.Engine)(nil) // the real engine shows open streams live

// Peeker is an Engine that reads an in-flight session's bodies captured so far
// (*engine.Engine's Peek). With it, a selected server-sent-events stream is shown live.
type Peeker interface {
	Peek(id session.ID) (*session.Session, bool)
}

// liveEvery is how often the detail re-reads an open event stream.
const liveEvery = 250 * time.Millisecond

// stopLive ends the live refresh of the shown session, if any.
func (d *detailPane) stopLive() {
	if d.liveCancel != nil {
		d.liveCancel()
		d.liveCancel = nil
	}
}

// startLive refreshes the detail of in-flight session id while its response is an open
// text/event-stream: every liveEvery it peeks the engine off the UI goroutine and, when
// more bytes came, re-renders the response body (views made on the partial body, which
// Peek marks partial). It stops when the session completes (ApplyBatch then shows the
// stored one), when its response is not an event stream, or when another session is
// shown.
func (d *detailPane) startLive(id session.ID) {
	d.stopLive()
	p, ok := d.u.deps.Engine.(Peeker)
	if !ok {
		return
	}
	eng := d.u.deps.Engine
	ctx, cancel := context.WithCancel(context.Background())
	d.liveCancel = cancel
	gen := d.loadGen
	go func() {
		t := time.NewTicker(liveEvery)
		defer t.Stop()
		seen, last := false, int64(-1)
		for {
			s, ok := p.Peek(id)
			switch {
			case ok && !isEventStream(s):
				return
			case ok && s.Response.Body.Size != last:
				first := !seen
				seen, last = true, s.Response.Body.Size
				d.u.post(func() {
					if ctx.Err() == nil && gen == d.loadGen && d.shown == id {
						d.renderLive(s, first)
					}
				})
			case !ok && (seen || !slices.ContainsFunc(eng.InFlight(), func(r session.Summary) bool { return r.ID == id })):
				return // completed (or gone): the stored session is shown from now on
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// renderLive shows a peeked in-flight session: all of it the first time, then only the
// response body (the headers do not change while the body streams).
func (d *detailPane) renderLive(s *session.Session, first bool) {
	if first {
		d.render(s)
		d.setNotesEnabled(false) // not stored yet
	} else {
		r := s.Response
		d.resp.body.setFor(r.Header, r.Body, bodyViewOptions{URL: s.Request.URL, Trailer: r.Trailer})
	}
	d.title.SetText(Summary(s) + "  — live, stream open")
}

// isEventStream reports whether s has a text/event-stream response head.
func isEventStream(s *session.Session) bool {
	if s == nil || s.Response == nil {
		return false
	}
	mt, _, err := mime.ParseMediaType(s.Response.Header.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}
