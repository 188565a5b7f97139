package engine

import (
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// DefaultMaxConns is the default cap on concurrent client connections (Config.MaxConns).
const DefaultMaxConns = 4096

// limitListener caps the connections accepted and not yet closed. Over the cap a new
// connection is answered at once with 503 and closed, so a flood of idle or half-sent
// connections (slowloris) cannot make the listener stop accepting for everyone: the
// header timeout frees their slots. It is used by one Accept loop.
type limitListener struct {
	net.Listener
	sem  chan struct{}
	logf func(string, ...any)
}

func newLimitListener(ln net.Listener, max int, logf func(string, ...any)) *limitListener {
	if max <= 0 {
		max = DefaultMaxConns
	}
	return &limitListener{Listener: ln, sem: make(chan struct{}, max), logf: logf}
}

const overloadResponse = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Connection: close\r\nContent-Length: 63\r\n\r\nInspector has too many open connections; try again in a while.\n"

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.sem <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
		default:
			l.logf("refused a connection from %s: %d connections open (Config.MaxConns)", c.RemoteAddr(), cap(l.sem))
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Write([]byte(overloadResponse))
			_ = c.Close()
		}
	}
}

// limitConn gives its slot back when closed (once, whoever closes it: the server, a
// tunnel, a TLS or HTTP/2 layer above it).
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes the connection when the underlying one can (tunnels use it).
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
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
