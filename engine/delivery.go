package engine

import (
	"net/http"
	"strconv"
	"time"

	"inspector/engine/session"
)

// Delivery: see the section "Delivery" in doc.go.

// flushThreshold is the size of the smallest buffer between a handler and the client's
// connection (net/http's HTTP/1 response buffer, 2 KiB).
const flushThreshold = 2 << 10

// holdHead bounds how long a flush of a proxied response's head waits for the body's
// first read (see clientWriter.FlushError).
const holdHead = 100 * time.Millisecond

// clientWriter is the ResponseWriter an exchange writes its response to (see above).
// Unwrap lets http.ResponseController reach the connection's writer for Hijack.
//
// For a proxied response (hold) it also keeps the head back until the first body byte,
// a flush, or the end of the handler, so that an origin body failing before its first
// byte can still be answered with a 502 that says why, instead of a head followed by a
// cut connection (see exchange.answerBrokenBody). It is used by the handler's goroutine,
// and by the reverse proxy's flush timer under the proxy's own lock, never at once.
type clientWriter struct {
	http.ResponseWriter
	x      *exchange
	proto  string // the client's protocol (session.HTTP1, HTTP2, HTTP3)
	hold   bool   // keep the final head back (held) until the first byte or flush
	held   int    // the status of a head kept back, 0 when none is
	headed bool
	want   int64 // the response's Content-Length as sent, -1 when it has none
	n      int64 // body bytes written
	// handed: all want bytes were written and flushed while the client was there.
	handed bool
}

func (w *clientWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *clientWriter) WriteHeader(code int) {
	if code >= 200 && !w.headed {
		w.head()
		if w.hold {
			w.held = code
			return
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// release sends a head kept back.
func (w *clientWriter) release() {
	if code := w.held; code != 0 {
		w.held = 0
		w.ResponseWriter.WriteHeader(code)
	}
}

// FlushError sends what is buffered. A flush of a head kept back before any body byte
// (the reverse proxy flushes a streamed response's head at once, from a timer) first
// waits up to holdHead for the body's first read; when that read failed, the head stays
// back for the handler to answer 502 instead.
func (w *clientWriter) FlushError() error {
	if w.held != 0 && w.n == 0 && w.x.respCap != nil && w.x.respCap.WaitFirst(holdHead) {
		return nil
	}
	w.release()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// flushPartial sends the head and body bytes still buffered before the handler aborts on
// a body the origin broke off: the client gets what it would have got from the origin
// directly, the head and the bytes that came, then the close (HTTP/1) or the stream's
// reset. Without it net/http drops its response buffer on the abort, and a short
// response reaches the client as nothing at all.
func (w *clientWriter) flushPartial() {
	if w.held != 0 || w.n == 0 || w.ResponseWriter == nil {
		return
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *clientWriter) head() {
	w.headed, w.want = true, -1
	if v := w.Header().Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			w.want = n
		}
	}
}

func (w *clientWriter) Write(p []byte) (int, error) {
	if !w.headed {
		w.head()
	}
	w.release()
	if w.want < flushThreshold || w.n+int64(len(p)) != w.want {
		n, err := w.ResponseWriter.Write(p)
		w.n += int64(n)
		return n, err
	}
	// The last bytes of the body (see Delivery above).
	rc := http.NewResponseController(w.ResponseWriter)
	if w.proto != session.HTTP1 {
		w.handed = rc.Flush() == nil
		n, err := w.ResponseWriter.Write(p)
		w.n += int64(n)
		return n, err
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	w.handed = err == nil && rc.Flush() == nil
	return n, err
}

// deliveredBeforeLeaving reports, for a client that went away before the handler
// returned or a copy to it that failed, whether it had been handed the whole response
// first (see above).
func (x *exchange) deliveredBeforeLeaving() bool {
	if x.s == nil || x.s.Response == nil || x.failed || !x.cw.handed {
		return false
	}
	if x.s.Client.Proto == session.HTTP1 {
		return x.info.framing != nil && !x.info.framing.wroteAfterGone()
	}
	return true
}
