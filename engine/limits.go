package engine

import (
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxConns is the default cap on concurrent client connections (Config.MaxConns).
const DefaultMaxConns = 4096

// limitListener caps the connections accepted and not yet closed. At the cap, a new
// connection takes the slot of the one that has waited longest for a request head (an idle
// keep-alive connection, or one trickling a head in: slowloris; or a CONNECT tunnel
// waiting for its first byte or TLS handshake) or been an idle tunnel longest, which is
// closed; only when every connection is busy (a request in progress, a tunnel relaying)
// is the new one answered 503 and closed. So idle or half-sent connections can never lock clients out, and the header
// timeout is not the only thing that frees their slots. It is used by one Accept loop.
type limitListener struct {
	net.Listener
	sem  chan struct{}
	logf func(string, ...any)
	open *atomic.Int64 // the engine's count of client connections (Stats.Connections)

	mu    sync.Mutex
	conns map[*limitConn]struct{}
}

func newLimitListener(ln net.Listener, max int, logf func(string, ...any), open *atomic.Int64) *limitListener {
	if max <= 0 {
		max = DefaultMaxConns
	}
	return &limitListener{Listener: ln, sem: make(chan struct{}, max), logf: logf, open: open, conns: map[*limitConn]struct{}{}}
}

const overloadResponse = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Connection: close\r\nContent-Length: 63\r\n\r\nInspector has too many open connections; try again in a while.\n"

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.take() || (l.evictWaiting() && l.take()) {
			lc := &limitConn{Conn: c}
			lc.release = func() {
				l.mu.Lock()
				delete(l.conns, lc)
				l.mu.Unlock()
				<-l.sem
				l.open.Add(-1) // after the slot is free: one who sees the count finds it so
			}
			l.mu.Lock()
			l.conns[lc] = struct{}{}
			l.mu.Unlock()
			l.open.Add(1)
			return lc, nil
		}
		l.logf("refused a connection from %s: %d connections open and busy (Config.MaxConns)", c.RemoteAddr(), cap(l.sem))
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = c.Write([]byte(overloadResponse))
		_ = c.Close()
	}
}

func (l *limitListener) take() bool {
	select {
	case l.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

// evictWaiting closes the connection that has waited longest for a request head (or been
// an idle tunnel longest) and reports whether there was one.
func (l *limitListener) evictWaiting() bool {
	var victim *limitConn
	var oldest int64
	now := time.Now().UnixNano()
	l.mu.Lock()
	for c := range l.conns {
		if w := c.evictable(now); w != 0 && (victim == nil || w < oldest) {
			victim, oldest = c, w
		}
	}
	l.mu.Unlock()
	if victim == nil {
		return false
	}
	l.logf("closed %s, waiting for a request head or idle since %s, to make room (Config.MaxConns)",
		victim.RemoteAddr(), time.Unix(0, oldest).Format(time.RFC3339Nano))
	_ = victim.Close() // gives its slot back before returning
	return true
}

// limitConn gives its slot back when closed (once, whoever closes it: the server, a
// tunnel, a TLS or HTTP/2 layer above it), before its socket is closed: a client that
// sees the close and reconnects at once finds the slot free.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
	// waiting is when the connection began waiting for a request head (UnixNano), or 0
	// while it is busy. The framing check sets it (setWaiting).
	waiting atomic.Int64
	// active: net/http is serving a request on it (its read-ahead while a handler runs
	// also waits for a head, but the connection is busy).
	active atomic.Bool
	// tunnelLast is when the opaque tunnel on it last relayed a byte (UnixNano), 0 when
	// it carries none: a tunnel silent for tunnelIdleAfter is idle (see tunnel.go).
	tunnelLast atomic.Int64
}

// serverState follows net/http's connection states (http.Server.ConnState).
func (c *limitConn) serverState(st http.ConnState) {
	if c != nil {
		c.active.Store(st == http.StateActive)
	}
}

// evictable reports since when the connection has been waiting for a request head (or,
// after CONNECT, for its first byte or TLS handshake) while nothing runs on it, or since
// when its tunnel has been idle; else 0. now is UnixNano.
func (c *limitConn) evictable(now int64) int64 {
	if c.active.Load() {
		return 0
	}
	if w := c.waiting.Load(); w != 0 {
		return w
	}
	if last := c.tunnelLast.Load(); last != 0 && now-last >= int64(tunnelIdleAfter) {
		return last
	}
	return 0
}

func (c *limitConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// countConn wraps c, a client connection not accepted by a limitListener (one handed to
// ServeConn by an entry point without LimitListener), so that it is counted in
// Stats.Connections until closed without taking a slot. A connection that already has
// one is returned as is.
func countConn(c net.Conn, open *atomic.Int64) net.Conn {
	if limitOf(c) != nil {
		return c
	}
	open.Add(1)
	return &limitConn{Conn: c, release: func() { open.Add(-1) }}
}

// CloseWrite half-closes the connection when the underlying one can (tunnels use it).
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// limitOf finds the client connection's limitConn under the layers the engine puts on it
// (TLS, sniffing, framing), or nil.
func limitOf(c net.Conn) *limitConn {
	for {
		switch x := c.(type) {
		case *limitConn:
			return x
		case *framingConn:
			c = x.Conn
		case *clientConn:
			c = x.Conn
		case *tls.Conn:
			c = x.NetConn()
		case *h2Tap:
			c = x.Conn
		case interface{ NetConn() net.Conn }: // an entry point's own wrapper
			c = x.NetConn()
		default:
			return nil
		}
	}
}

// setWaiting marks the connection as waiting for a request head (evictable at the cap) or
// busy.
func (c *limitConn) setWaiting(waiting bool) {
	if c == nil {
		return
	}
	if !waiting {
		c.waiting.Store(0)
	} else if c.waiting.Load() == 0 {
		c.waiting.Store(time.Now().UnixNano())
	}
}

// checkProxyAuth enforces Config.ProxyAuth on a request to the proxy listener (CONNECT or
// absolute-form). Without valid Basic credentials it answers 407 and returns false. With
// them it removes Proxy-Authorization, so credentials never reach origins or sessions.
func (e *Engine) checkProxyAuth(w http.ResponseWriter, r *http.Request) bool {
	want := e.cfg.ProxyAuth
	if want == "" {
		return true
	}
	got := r.Header.Get("Proxy-Authorization")
	scheme, cred, _ := strings.Cut(got, " ")
	ok := false
	if strings.EqualFold(scheme, "Basic") {
		if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred)); err == nil {
			ok = subtle.ConstantTimeCompare(dec, []byte(want)) == 1
		}
	}
	r.Header.Del("Proxy-Authorization")
	if !ok {
		w.Header().Set("Proxy-Authenticate", `Basic realm="Inspector"`)
		w.Header().Set("Connection", "close")
		http.Error(w, "Inspector needs proxy credentials (Proxy-Authorization: Basic). Remote access turns them on; see the password file in the data directory.", http.StatusProxyAuthRequired)
		return false
	}
	return true
}

// hold tracks c as a connection Close must cut (like hijacked ones) until release is
// called: for a connection between its hijacking and its hand-off, such as during a TLS
// handshake a client may stall. A connection held after Close began is closed at once.
func (e *Engine) hold(c net.Conn) (release func()) {
	e.trackHijacked(c, true)
	if e.closed.Load() {
		c.Close()
	}
	return func() { e.trackHijacked(c, false) }
}
