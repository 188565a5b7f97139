package upstream

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// The lighter HTTP/1.1 path. An HTTP/1.1 client connection sends one request at a time,
// so its requests to an HTTP/1.1 origin need no pool and no goroutines of their own: a
// Pinned holds the one origin connection of a client connection, and a round trip on it
// writes the request and reads the response head on the caller's goroutine (net/http's
// Transport hands each request to a write goroutine and each response back from a read
// goroutine, and keeps connections in a shared pool). The response body is read by
// whoever reads resp.Body; at its end the connection is the Pinned's again.
//
// What goes on the wire is what net/http's Transport writes and accepts: the request is
// written by http.Request.Write after the Transport's header checks, the response is
// parsed by http.ReadResponse (with the Transport's response-head cap, 1xx handling and
// ResponseTimeout), so every framing rule holds. Only bodiless requests whose method is
// safe to send twice (GET, HEAD, OPTIONS, TRACE) take this path, as the Transport itself
// retries only such requests when a kept-alive connection turns out closed; the rest
// (bodies, Expect, Upgrade) go through the Transport.

// Pinned is one client connection's own HTTP/1.1 connection to an origin. The zero value
// is ready; Close closes the connection it holds and makes it take no other. It is safe
// for concurrent use (a request that finds it busy goes through the Transport).
type Pinned struct {
	mu     sync.Mutex
	busy   bool
	closed bool
	idle   *h1Conn
	pool   *h1Pool // the upstream's, set by the first round trip
}

// Close ends p with its client connection: the origin connection it holds goes to the
// upstream's idle pool (the next client connection to that origin starts with it, as
// net/http's pool would have it), and later round trips on p go through the Transport.
func (p *Pinned) Close() {
	p.mu.Lock()
	c, pool := p.idle, p.pool
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	if c != nil {
		pool.put(c)
	}
}

// take marks p busy and returns its idle connection (nil: dial one); ok is false when p
// cannot serve (closed or busy).
func (p *Pinned) take(pool *h1Pool) (c *h1Conn, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.busy {
		return nil, false
	}
	p.busy, p.pool = true, pool
	c, p.idle = p.idle, nil
	return c, true
}

// give ends a round trip: c (nil when it was closed) becomes p's idle connection.
func (p *Pinned) give(c *h1Conn) {
	p.mu.Lock()
	p.busy = false
	if p.closed && c != nil {
		p.mu.Unlock()
		p.pool.put(c)
		return
	}
	p.idle = c
	p.mu.Unlock()
}

// h1Conn is an origin connection of a Pinned.
type h1Conn struct {
	// scheme, authority, insecure and mirror (the Mirror.Key, "" for Go's ClientHello)
	// are what it was dialed for.
	scheme, authority, mirror string
	insecure                  bool
	conn                      net.Conn // *tls.Conn over a *trackedConn, or the *trackedConn itself
	raw                       *trackedConn
	lr                        headLimitReader
	br                        *bufio.Reader
	bw                        *bufio.Writer
	tls                       *tls.ConnectionState
	used                      bool
	expire                    *time.Timer // while in the idle pool

	mu       sync.Mutex
	canceled bool // the round trip's context ended: the deadline stays in the past
}

// headLimitReader reads from the connection, failing once a response head would pass the
// cap (net/http's MaxResponseHeaderBytes); off while a body is read.
type headLimitReader struct {
	r    io.Reader
	left int64
	on   bool
	max  int64
}

var errHeadTooBig = errors.New("server response headers exceeded the limit")

func (l *headLimitReader) Read(p []byte) (int, error) {
	if !l.on {
		return l.r.Read(p)
	}
	if l.left <= 0 {
		return 0, fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", l.max)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *headLimitReader) limit() {
	l.on, l.left = l.max > 0, l.max
}

// aLongTimeAgo is a deadline in the past: it ends any read or write at once.
var aLongTimeAgo = time.Unix(1, 0)

func (c *h1Conn) cancel() {
	c.mu.Lock()
	c.canceled = true
	_ = c.conn.SetDeadline(aLongTimeAgo)
	c.mu.Unlock()
}

func (c *h1Conn) setReadDeadline(t time.Time) {
	c.mu.Lock()
	if !c.canceled {
		_ = c.conn.SetReadDeadline(t)
	}
	c.mu.Unlock()
}

// pinnable says whether req may take the lighter path.
func pinnable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
	default:
		return false
	}
	if (req.Body != nil && req.Body != http.NoBody) || req.ContentLength > 0 || len(req.TransferEncoding) > 0 {
		return false
	}
	h := req.Header
	return h["Upgrade"] == nil && h["Expect"] == nil && req.URL.Host != "" &&
		(req.URL.Scheme == "http" || req.URL.Scheme == "https")
}

// validRequest applies the Transport's checks to what it would write.
func validRequest(req *http.Request) error {
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("net/http: invalid header field name %q", k)
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("net/http: invalid header field value for %q", k)
			}
		}
	}
	if !httpguts.ValidHostHeader(req.Host) && req.Host != "" {
		return errors.New("http: invalid Host header")
	}
	return nil
}

// roundTripPinned runs req on p's connection (dialing one when p holds none, or one for
// another origin). ok is false when p could not take it: the caller uses the Transport.
func (u *Upstream) roundTripPinned(p *Pinned, req *http.Request, insecure bool, authority string, m *Mirror) (resp *http.Response, ok bool, err error) {
	c, ok := p.take(&u.idle)
	if !ok {
		return nil, false, nil
	}
	if err := validRequest(req); err != nil {
		p.give(c)
		return nil, true, err
	}
	mkey := ""
	if m != nil && req.URL.Scheme == "https" {
		mkey = m.Key
	}
	if c != nil && (c.scheme != req.URL.Scheme || c.authority != authority || c.insecure != insecure || c.mirror != mkey) {
		u.idle.put(c) // another origin's (a hook or rule moved the request)
		c = nil
	}
	if c != nil && c.stale() {
		c.conn.Close()
		c = nil
	}
	if c == nil {
		c = u.idle.get(req.URL.Scheme, authority, insecure, mkey)
	}
	ctx := req.Context()
	for attempt := 0; ; attempt++ {
		if c == nil {
			if c, err = u.dialH1(ctx, req, authority, insecure, m); err != nil {
				p.give(nil)
				return nil, true, err
			}
		}
		reused := c.used
		resp, err = u.exchangeH1(p, c, req)
		if err == nil {
			return resp, true, nil
		}
		c.conn.Close()
		var re retryable
		if !reused || attempt > 0 || ctx.Err() != nil || !errors.As(err, &re) {
			p.give(nil)
			if ctx.Err() != nil {
				return nil, true, ctx.Err()
			}
			var r retryable
			if errors.As(err, &r) {
				err = r.err
			}
			return nil, true, err
		}
		c = nil // a kept-alive connection the origin had closed: once more on a new one
	}
}

// retryable marks a failure of a kept-alive connection before any response byte (the
// origin closed it while idle).
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

// dialH1 connects to authority for req (TLS offering only http/1.1 for https), reporting
// the TLS handshake to the context's trace (DNS and connect come from net's own trace).
func (u *Upstream) dialH1(ctx context.Context, req *http.Request, authority string, insecure bool, m *Mirror) (*h1Conn, error) {
	nc, err := u.DialContext(ctx, "tcp", authority)
	if err != nil {
		return nil, err
	}
	raw := nc.(*trackedConn)
	c := &h1Conn{scheme: req.URL.Scheme, authority: authority, insecure: insecure, conn: raw, raw: raw}
	if req.URL.Scheme == "https" {
		cfg := u.h1TLS[0]
		if insecure {
			cfg = u.h1TLS[1]
		}
		if m != nil {
			c.mirror = m.Key
		}
		tc, st, err := u.handshake(ctx, raw, req.URL.Hostname(), insecure, cfg, m, []string{"http/1.1"})
		if err != nil {
			return nil, err
		}
		c.conn, c.tls = tc, &st
	}
	c.lr = headLimitReader{r: c.conn, max: int64(u.cfg.MaxHeaderBytes)}
	c.br = bufio.NewReader(&c.lr)
	c.bw = bufio.NewWriter(c.conn)
	return c, nil
}

// exchangeH1 writes req on c and reads the response head. On success the response body
// (or, without one, the head) gives c back to p when it ends.
func (u *Upstream) exchangeH1(p *Pinned, c *h1Conn, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	trace := httptrace.ContextClientTrace(ctx)
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: c.conn, Reused: c.used, WasIdle: c.used})
	}
	reused := c.used
	c.used = true
	stop := context.AfterFunc(ctx, c.cancel)
	fail := func(err error, beforeResponse bool) (*http.Response, error) {
		stop()
		if beforeResponse && reused {
			return nil, retryable{err}
		}
		return nil, err
	}
	err := req.Write(c.bw)
	if err == nil {
		err = c.bw.Flush()
	}
	if trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{Err: err})
	}
	if err != nil {
		return fail(err, true)
	}
	if t := u.cfg.ResponseTimeout; t > 0 {
		c.setReadDeadline(time.Now().Add(t))
	}
	var resp *http.Response
	for n1xx := 0; ; n1xx++ {
		c.lr.limit()
		if _, err := c.br.Peek(1); err != nil {
			return fail(err, n1xx == 0)
		}
		if n1xx == 0 && trace != nil && trace.GotFirstResponseByte != nil {
			trace.GotFirstResponseByte()
		}
		if resp, err = http.ReadResponse(c.br, req); err != nil {
			return fail(err, false)
		}
		code := resp.StatusCode
		if code < 100 || code >= 200 {
			break
		}
		if code == http.StatusSwitchingProtocols || n1xx >= 5 {
			return fail(fmt.Errorf("net/http: unexpected %d response to a request without Upgrade", code), false)
		}
		if trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(code, textproto.MIMEHeader(resp.Header)); err != nil {
				return fail(err, false)
			}
		}
	}
	c.lr.on = false
	c.setReadDeadline(time.Time{})
	resp.TLS = c.tls
	b := &pinnedBody{rc: resp.Body, p: p, c: c, stop: stop, keep: !resp.Close && !req.Close, ctx: ctx}
	if resp.Body == http.NoBody {
		b.finish(true)
		return resp, nil
	}
	resp.Body = b
	return resp, nil
}

// pinnedBody is a response body on a pinned connection: at its end the connection goes
// back to the Pinned (or is closed when the response or the request asked for that, or
// the body did not end cleanly).
type pinnedBody struct {
	rc   io.ReadCloser
	p    *Pinned
	c    *h1Conn
	stop func() bool
	keep bool
	ctx  context.Context
	mu   sync.Mutex
	done bool
}

func (b *pinnedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.finish(true)
	} else if err != nil {
		if b.ctx.Err() != nil {
			err = b.ctx.Err()
		}
		b.finish(false)
	}
	return n, err
}

func (b *pinnedBody) Close() error {
	b.finish(false)
	return nil
}

// finish hands the connection back once: reusable when whole and not cancelled.
func (b *pinnedBody) finish(whole bool) {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return
	}
	b.done = true
	b.mu.Unlock()
	live := b.stop() // false: the context ended, the connection's deadline is spent
	if whole && b.keep && live && b.c.br.Buffered() == 0 {
		_ = b.rc.Close()
		b.p.give(b.c)
		return
	}
	b.c.conn.Close() // first: closing a body net/http did not read to its end drains it
	_ = b.rc.Close()
	b.p.give(nil)
}

// h1Pool keeps the origin connections of ended client connections for the next ones
// (bounded like net/http's idle pool: per origin and in all, closed after IdleTimeout).
type h1Pool struct {
	mu    sync.Mutex
	conns map[h1Key][]*h1Conn
	n     int
	shut  bool
}

type h1Key struct {
	scheme, authority string
	insecure          bool
	mirror            string
}

const (
	h1IdlePerHost = 64
	h1IdleMax     = 1024
	h1IdleTimeout = 90 * time.Second
)

// put keeps c for reuse, or closes it when the pool is full or shut.
func (p *h1Pool) put(c *h1Conn) {
	if p == nil {
		c.conn.Close()
		return
	}
	k := h1Key{c.scheme, c.authority, c.insecure, c.mirror}
	p.mu.Lock()
	if p.shut || p.n >= h1IdleMax || len(p.conns[k]) >= h1IdlePerHost {
		p.mu.Unlock()
		c.conn.Close()
		return
	}
	if p.conns == nil {
		p.conns = map[h1Key][]*h1Conn{}
	}
	p.conns[k] = append(p.conns[k], c)
	p.n++
	c.expire = time.AfterFunc(h1IdleTimeout, func() {
		if p.remove(k, c) {
			c.conn.Close()
		}
	})
	p.mu.Unlock()
}

// remove takes c out of the pool; false when somebody took it first.
func (p *h1Pool) remove(k h1Key, c *h1Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.conns[k]
	for i, e := range l {
		if e == c {
			p.conns[k] = append(l[:i], l[i+1:]...)
			p.n--
			return true
		}
	}
	return false
}

// get returns the most recently kept live connection to the origin, nil when none.
func (p *h1Pool) get(scheme, authority string, insecure bool, mirror string) *h1Conn {
	k := h1Key{scheme, authority, insecure, mirror}
	for {
		p.mu.Lock()
		l := p.conns[k]
		if len(l) == 0 {
			p.mu.Unlock()
			return nil
		}
		c := l[len(l)-1]
		p.conns[k] = l[:len(l)-1]
		p.n--
		p.mu.Unlock()
		c.expire.Stop()
		if !c.stale() {
			return c
		}
		c.conn.Close()
	}
}

// close closes every kept connection; later ones are closed when put.
func (p *h1Pool) close() {
	p.mu.Lock()
	all := p.conns
	p.conns, p.n, p.shut = nil, 0, true
	p.mu.Unlock()
	for _, l := range all {
		for _, c := range l {
			c.expire.Stop()
			c.conn.Close()
		}
	}
}
