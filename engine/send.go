package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"inspector/engine/session"
)

// SendOptions tune Send.
type SendOptions struct {
	// ReplayOf links the new session to the one it replays (session.Session.ReplayOf).
	ReplayOf session.ID
}

type sendKey struct{}

// sendState carries Send's options into the pipeline and the session back out.
type sendState struct {
	opts      SendOptions
	s         *session.Session
	delivered chan struct{} // closed once the observers have s
	err       *HookError    // the hook error that ended the exchange, if one did
}

// Send runs req through the engine as if a client had sent it to the proxy: the same
// hooks, upstream transports, capture and events, so the result is an ordinary session
// (published to observers and stored: Send returns once the observers have it, or ctx
// ends). req.URL must be absolute (http or https). The
// response body is read to the end and discarded (the session holds what capture kept).
// It is safe for concurrent use; the composer and replay use it. When a hook's error
// ended the exchange, Send returns the session and that error (a *HookError wrapping the
// hook's value: errors.Is(err, hookErr) holds); other failures are in the session's
// Error.
func (e *Engine) Send(ctx context.Context, req *http.Request, opts SendOptions) (s *session.Session, err error) {
	if !req.URL.IsAbs() || (req.URL.Scheme != "http" && req.URL.Scheme != "https") {
		return nil, fmt.Errorf("send: need an absolute http or https URL, got %q", req.URL)
	}
	if !e.capture.Load() {
		return nil, errors.New("send: capture is off")
	}
	st := &sendState{opts: opts, delivered: make(chan struct{})}
	ctx = context.WithValue(ctx, sendKey{}, st)
	ctx = context.WithValue(ctx, connInfoKey{}, &connInfo{accepted: time.Now()})
	r := req.Clone(ctx)
	if r.Host == "" {
		r.Host = req.URL.Host
	}
	if r.RemoteAddr == "" {
		r.RemoteAddr = "inspector"
	}
	r.RequestURI = ""
	if r.Proto == "" {
		r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	w := &discardWriter{h: http.Header{}}
	func() {
		defer func() {
			if p := recover(); p != nil && p != http.ErrAbortHandler {
				err = fmt.Errorf("send: %v", p)
			}
		}()
		e.serveExchange(w, r)
	}()
	if st.s == nil {
		if err == nil {
			err = fmt.Errorf("send: the request was not recorded (status %d)", w.code)
		}
		return nil, err
	}
	select { // so the session is stored (handed to the observers) when Send returns
	case <-st.delivered:
	case <-ctx.Done():
	}
	if err == nil && st.err != nil {
		err = fmt.Errorf("send: %w", st.err)
	}
	return st.s, err
}

// discardWriter is the ResponseWriter of Send: it keeps the status and drops the body.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 || w.code < 200 {
		w.code = code
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return len(p), nil
}
func (w *discardWriter) Flush() {}
