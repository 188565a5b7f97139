// Package conn is the engine's connection layer: one table of the client connections an
// engine serves, whoever accepted them (the proxy listener, an entry point's listener
// wrapped with Table.Listener, a connection handed to Engine.ServeConn).
//
// The table is the only registry of client connections. It holds:
//
//   - the cap (Config.MaxConns): a capped listener's connection takes a slot when accepted
//     and gives it back when closed, before its socket is closed, so a client that sees
//     the close and reconnects at once finds the slot free;
//   - eviction at the cap: a new connection takes the slot of the one that has waited
//     longest for a request head (an idle keep-alive connection, a client trickling a head
//     in, a tunnel still waiting for its first byte or TLS handshake, an HTTP/2 connection
//     with no stream open) or has been an idle tunnel longest; only when every connection
//     is busy is the new one answered 503 and closed. Idle and half-sent connections can
//     therefore never lock clients out;
//   - the count Stats reports: every connection in the table, hijacked, tunnelled or
//     served, is counted once, from its accept to its close;
//   - shutdown: CloseAll cuts every connection, and one tracked after it is closed at once.
//
// Every connection in the table is a *Conn, the one wrapper that carries what the
// engine knows about it (SetInfo) and its state at the cap. The engine's own layers on
// top (sniffing, TLS, framing, frame taps) reach it with Of, through NetConn.
package conn

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMax is the default cap on concurrent capped connections.
const DefaultMax = 4096

// DefaultTunnelIdleAfter is how long a tunnel must have relayed nothing, either way, to
// count as idle at the cap.
const DefaultTunnelIdleAfter = time.Second

// OverloadResponse is what a connection refused at the cap is answered.
const OverloadResponse = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Connection: close\r\nContent-Length: 63\r\n\r\nInspector has too many open connections; try again in a while.\n"

// Table is the connection table. Its methods are safe for concurrent use.
type Table struct {
	max             int
	tunnelIdleAfter time.Duration
	logf            func(string, ...any)

	mu     sync.Mutex
	conns  map[*Conn]struct{}
	slots  int                   // capped connections in conns
	held   map[net.Conn]struct{} // Hold's: outside the table, cut by CloseAll
	closed bool
}

// NewTable returns a table capping its listeners' connections at max (DefaultMax when
// max <= 0). A tunnel silent for tunnelIdleAfter (DefaultTunnelIdleAfter when <= 0) is
// idle at the cap. logf receives a line for every eviction and refusal.
func NewTable(max int, tunnelIdleAfter time.Duration, logf func(string, ...any)) *Table {
	if max <= 0 {
		max = DefaultMax
	}
	if tunnelIdleAfter <= 0 {
		tunnelIdleAfter = DefaultTunnelIdleAfter
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &Table{max: max, tunnelIdleAfter: tunnelIdleAfter, logf: logf, conns: map[*Conn]struct{}{}, held: map[net.Conn]struct{}{}}
}

// Max is the cap.
func (t *Table) Max() int { return t.max }

// Open counts the connections in the table: accepted or tracked, not yet closed.
func (t *Table) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

// Listener returns a listener whose connections are *Conn in t, capped (see the package
// comment). It is used by one Accept loop; closing it closes ln.
func (t *Table) Listener(ln net.Listener) net.Listener { return &listener{Listener: ln, t: t} }

type listener struct {
	net.Listener
	t *Table
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.t.admit(c); lc != nil {
			return lc, nil
		}
		l.t.logf("refused a connection from %s: %d connections open and busy (Config.MaxConns)", c.RemoteAddr(), l.t.max)
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = c.Write([]byte(OverloadResponse))
		_ = c.Close()
	}
}

// admit gives c a slot, making room when the table is full; nil when every slot is busy.
func (t *Table) admit(c net.Conn) *Conn {
	if lc := t.add(c, true); lc != nil {
		return lc
	}
	if !t.evictWaiting() {
		return nil
	}
	return t.add(c, true)
}

// add puts c in the table (taking a slot when capped), or returns nil when capped and
// the slots are all taken. After CloseAll, c is added closed.
func (t *Table) add(c net.Conn, capped bool) *Conn {
	lc := &Conn{Conn: c, t: t, capped: capped}
	t.mu.Lock()
	if capped && t.slots >= t.max {
		t.mu.Unlock()
		return nil
	}
	closed := t.closed
	t.conns[lc] = struct{}{}
	if capped {
		t.slots++
	}
	t.mu.Unlock()
	if closed {
		lc.Close()
	}
	return lc
}

// Track puts c in the table without taking a slot (it is counted and cut by CloseAll but
// never evicted) and returns the connection to use in its place: c itself when it already
// is or wraps a *Conn (see Of; its layers, such as bytes already read, stay), else c
// wrapped in a new *Conn. After CloseAll, c is closed at once.
func (t *Table) Track(c net.Conn) net.Conn {
	if Of(c) != nil {
		return c
	}
	return t.add(c, false)
}

// evictWaiting closes the capped connection that has waited longest for a request head
// (or been an idle tunnel longest) and reports whether there was one.
func (t *Table) evictWaiting() bool {
	var victim *Conn
	var oldest int64
	now := time.Now().UnixNano()
	t.mu.Lock()
	for c := range t.conns {
		if !c.capped {
			continue
		}
		if w := c.evictable(now); w != 0 && (victim == nil || w < oldest) {
			victim, oldest = c, w
		}
	}
	t.mu.Unlock()
	if victim == nil {
		return false
	}
	t.logf("closed %s, waiting for a request head or idle since %s, to make room (Config.MaxConns)",
		victim.RemoteAddr(), time.Unix(0, oldest).Format(time.RFC3339Nano))
	_ = victim.Close() // gives its slot back before returning
	return true
}

// Hold makes CloseAll cut c until release is called, for a connection in no table yet
// (one an entry point is still handshaking with); a connection in the table needs
// nothing. After CloseAll, c is closed at once.
func (t *Table) Hold(c net.Conn) (release func()) {
	if Of(c) != nil {
		return func() {}
	}
	t.mu.Lock()
	closed := t.closed
	if !closed {
		t.held[c] = struct{}{}
	}
	t.mu.Unlock()
	if closed {
		c.Close()
	}
	return func() {
		t.mu.Lock()
		delete(t.held, c)
		t.mu.Unlock()
	}
}

// CloseAll closes every connection in the table (and every one held); connections added
// later are closed at once.
func (t *Table) CloseAll() {
	t.mu.Lock()
	t.closed = true
	all := make([]net.Conn, 0, len(t.conns)+len(t.held))
	for c := range t.conns {
		all = append(all, c)
	}
	for c := range t.held {
		all = append(all, c)
	}
	t.mu.Unlock()
	for _, c := range all {
		c.Close()
	}
}

func (t *Table) remove(c *Conn) {
	t.mu.Lock()
	if _, ok := t.conns[c]; ok {
		delete(t.conns, c)
		if c.capped {
			t.slots--
		}
	}
	t.mu.Unlock()
}

// Conn is a client connection in a table. It leaves the table when closed (once,
// whoever closes it: the server, a tunnel, a TLS or HTTP/2 layer above it), before its
// socket is closed.
type Conn struct {
	net.Conn
	t      *Table
	capped bool
	once   sync.Once
	meta   atomic.Pointer[meta]

	// waiting is when the connection began waiting for a request head (UnixNano), or 0
	// while it is busy.
	waiting atomic.Int64
	// active: a server is running a request on it (its read-ahead while a handler runs
	// also waits for a head, but the connection is busy).
	active atomic.Bool
	// tunnelLast is when the opaque tunnel on it last relayed a byte (UnixNano), 0 when
	// it carries none.
	tunnelLast atomic.Int64
}

type meta struct {
	info    any
	onClose func()
}

// SetInfo records what the engine knows about the connection, and a function Close
// runs first (before the slot is given back), e.g. to hand on resources tied to it.
// onClose may be nil.
func (c *Conn) SetInfo(info any, onClose func()) { c.meta.Store(&meta{info, onClose}) }

// Info is what SetInfo recorded, or nil.
func (c *Conn) Info() any {
	if m := c.meta.Load(); m != nil {
		return m.info
	}
	return nil
}

// NetConn is the connection c wraps.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// Close runs the SetInfo hook, leaves the table (freeing the slot), then closes the
// socket. Later calls only close the socket again.
func (c *Conn) Close() error {
	c.once.Do(func() {
		if m := c.meta.Load(); m != nil && m.onClose != nil {
			m.onClose()
		}
		c.t.remove(c)
	})
	return c.Conn.Close()
}

// CloseWrite half-closes the connection when the underlying one can (tunnels use it),
// and closes it otherwise.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// SetActive marks a request as running on the connection (true) or not.
func (c *Conn) SetActive(active bool) {
	if c != nil {
		c.active.Store(active)
	}
}

// SetWaiting marks the connection as waiting for a request head, its first byte or a TLS
// handshake (evictable at the cap) or busy. It keeps the time waiting began.
func (c *Conn) SetWaiting(waiting bool) {
	if c == nil {
		return
	}
	if !waiting {
		c.waiting.Store(0)
	} else if c.waiting.Load() == 0 {
		c.waiting.Store(time.Now().UnixNano())
	}
}

// TunnelRelayed records when the opaque tunnel on the connection last relayed a byte
// (UnixNano); 0 says it carries no tunnel (any more).
func (c *Conn) TunnelRelayed(at int64) {
	if c != nil {
		c.tunnelLast.Store(at)
	}
}

// evictable reports since when the connection has been waiting while nothing runs on
// it, or since when its tunnel has been idle; else 0. now is UnixNano.
func (c *Conn) evictable(now int64) int64 {
	if c.active.Load() {
		return 0
	}
	if w := c.waiting.Load(); w != 0 {
		return w
	}
	if last := c.tunnelLast.Load(); last != 0 && now-last >= int64(c.t.tunnelIdleAfter) {
		return last
	}
	return 0
}

// Of finds the *Conn under the layers put on a connection, each of which exposes the one
// below with a NetConn method (as *tls.Conn does); nil when there is none.
func Of(c net.Conn) *Conn {
	for c != nil {
		switch x := c.(type) {
		case *Conn:
			return x
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return nil
		}
	}
	return nil
}
