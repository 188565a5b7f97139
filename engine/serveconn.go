package engine

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ConnSource says where a connection handed to ServeConn came from.
type ConnSource struct {
	// Via names the entry point, e.g. "socks5", "transparent", "wireguard"; it is the
	// Proto of the CONNECT request the session records in its place.
	Via string
	// Client, when set, names the client (a launched program, a device); sessions carry it
	// as their process name, and no process lookup runs.
	Client string
}

// ErrLoop is returned by ServeConn for a target that is one of Inspector's own addresses.
var ErrLoop = errors.New("Inspector refuses to connect to its own addresses (a proxy loop or a request to its control API)")

// ServeConn serves a client connection accepted by another entry point (a SOCKS5 or
// transparent listener, a WireGuard peer) as if its client had sent CONNECT target and
// been answered 200: the first bytes are sniffed, TLS is decrypted with a leaf for the SNI
// (or target's host), HTTP/1.1 and h2 are served, and anything else is an opaque tunnel to
// target, exactly as inside a CONNECT tunnel, with every exchange recorded.
//
// target is host:port. A target that is one of the engine's own addresses is refused with
// ErrLoop and c is closed. ServeConn returns once the connection is handed off or has
// ended; it counts c in Stats.Connections but not against Config.MaxConns: wrap the entry
// point's listener with LimitListener for that (a wrapper the entry point puts on such a
// connection should expose it with a NetConn method, as *tls.Conn does, or it is counted
// twice). c is closed by ServeConn's path in every case, and by Close.
func (e *Engine) ServeConn(c net.Conn, target string, src ConnSource) error {
	c = e.conns.Track(c) // counted until closed, cut by Close
	host, port, err := net.SplitHostPort(target)
	if err != nil || host == "" || !validPort(port) {
		c.Close()
		return fmt.Errorf("ServeConn: target %q is not host:port", target)
	}
	if e.closed.Load() {
		c.Close()
		return net.ErrClosed
	}
	if e.isReserved(host, port) {
		c.Close()
		return ErrLoop
	}
	via := src.Via
	if via == "" {
		via = "HTTP/1.1"
	}
	info := &connInfo{id: e.connIDs.Add(1), accepted: time.Now(), target: target, vetted: !isCertHost(host)}
	if src.Client != "" {
		p := &procLookup{done: make(chan struct{}), name: src.Client}
		close(p.done)
		info.proc = p
	} else {
		info.proc = e.lookupProcess(c)
	}
	e.setInfo(c, info)
	connect := &http.Request{Method: http.MethodConnect, Proto: via, Host: target, Header: http.Header{}}
	cc := &clientConn{Conn: c, r: bufio.NewReader(c), info: info}
	e.serveTunnelled(cc, connect, target, host, time.Now())
	return nil
}

// LimitListener caps the connections accepted from ln at Config.MaxConns, with the same
// eviction of idle connections as the proxy listener. Use it for the listeners whose
// connections go to ServeConn. The cap is the engine's: the proxy listener's connections
// and those of every LimitListener share it.
func (e *Engine) LimitListener(ln net.Listener) net.Listener {
	return e.conns.Listener(ln)
}

// Reserved reports whether addr (host:port) is one of the engine's own addresses, which
// ServeConn and the proxy refuse as a loop. Entry points that pick a target by name use
// it to check the address a connection really went to.
func (e *Engine) Reserved(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	return err == nil && e.isReserved(host, port)
}
