package conn

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// recordingListener hands out real TCP connections whose Close notes how many
// connections the table still counted at that moment.
type recordingListener struct {
	net.Listener
	t          *Table
	openAtSock chan int
}

type recordingConn struct {
	net.Conn
	l *recordingListener
}

func (c *recordingConn) Close() error {
	select {
	case c.l.openAtSock <- c.l.t.Open():
	default:
	}
	return c.Conn.Close()
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, l: l}, nil
}

// serve starts a listener on 127.0.0.1:0 capped by tb; accepted receives each accepted
// connection.
func serve(t *testing.T, tb *Table) (addr string, accepted chan *Conn, rec *recordingListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec = &recordingListener{Listener: ln, t: tb, openAtSock: make(chan int, 16)}
	cl := tb.Listener(rec)
	t.Cleanup(func() { cl.Close() })
	accepted = make(chan *Conn, 16)
	go func() {
		for {
			c, err := cl.Accept()
			if err != nil {
				return
			}
			accepted <- c.(*Conn)
		}
	}()
	return ln.Addr().String(), accepted, rec
}

func held(tb *Table) int {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.slots
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func next(t *testing.T, accepted chan *Conn) *Conn {
	t.Helper()
	select {
	case c := <-accepted:
		return c
	case <-time.After(30 * time.Second):
		t.Fatal("no connection accepted")
		return nil
	}
}

// closedByPeer reports whether the other end closed c (EOF or a reset), reading what it
// was sent first.
func closedByPeer(t *testing.T, c net.Conn) (string, bool) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	b, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return string(b), false
	}
	return string(b), true
}

func TestSlotIsFreeBeforeTheSocketCloses(t *testing.T) {
	t.Parallel()
	tb := NewTable(1, 0, t.Logf)
	addr, accepted, rec := serve(t, tb)
	dial(t, addr)
	c := next(t, accepted)
	if n := tb.Open(); n != 1 {
		t.Fatalf("open: %d, want 1", n)
	}
	hookOpen := -1
	c.SetInfo("info", func() { hookOpen = tb.Open() })
	if c.Info() != "info" {
		t.Fatalf("info: %v", c.Info())
	}
	c.Close()
	if hookOpen != 1 {
		t.Errorf("the close hook ran with %d connections counted, want 1 (before the slot is given back)", hookOpen)
	}
	if n := <-rec.openAtSock; n != 0 {
		t.Errorf("the socket closed while the table still counted %d connections", n)
	}
	c.Close() // again: the slot is given back once
	if tb.Open() != 0 || held(tb) != 0 {
		t.Errorf("after two closes: open %d, slots %d", tb.Open(), held(tb))
	}
	// The freed slot takes a new client without evicting or refusing anyone.
	dial(t, addr)
	next(t, accepted)
}

func TestAtTheCapTheLongestWaitingMakesRoom(t *testing.T) {
	t.Parallel()
	tb := NewTable(3, time.Hour, t.Logf)
	addr, accepted, _ := serve(t, tb)
	var clients []net.Conn
	var conns []*Conn
	for range 3 {
		clients = append(clients, dial(t, addr))
		conns = append(conns, next(t, accepted))
	}
	conns[0].SetActive(true)
	conns[0].SetWaiting(true) // a read-ahead while a request runs: busy
	conns[2].SetWaiting(true)
	conns[1].SetWaiting(true)
	conns[1].waiting.Store(conns[2].waiting.Load() + 1) // began waiting later than conns[2]
	dial(t, addr)
	next(t, accepted)
	if _, closed := closedByPeer(t, clients[2]); !closed {
		t.Fatal("the connection waiting longest was not closed")
	}
	if tb.Open() != 3 {
		t.Fatalf("open: %d, want 3", tb.Open())
	}
	// Now conns[1] waits; mark it busy: nothing can make room, the next client gets 503.
	conns[1].SetWaiting(false)
	got, closed := closedByPeer(t, dial(t, addr))
	if !closed || got != OverloadResponse {
		t.Fatalf("with every connection busy: closed %v, %q", closed, got)
	}
	if tb.Open() != 3 {
		t.Fatalf("open after a refusal: %d, want 3", tb.Open())
	}
}

func TestIdleTunnelsMakeRoom(t *testing.T) {
	t.Parallel()
	const after = time.Minute
	tb := NewTable(2, after, t.Logf)
	addr, accepted, _ := serve(t, tb)
	a, b := dial(t, addr), dial(t, addr)
	ca, cb := next(t, accepted), next(t, accepted)
	now := time.Now()
	ca.TunnelRelayed(now.UnixNano())                 // relaying: busy
	cb.TunnelRelayed(now.Add(-2 * after).UnixNano()) // silent for longer than after: idle
	dial(t, addr)
	next(t, accepted)
	if _, closed := closedByPeer(t, b); !closed {
		t.Fatal("the idle tunnel was not closed")
	}
	ca.TunnelRelayed(0) // the tunnel ended; the connection is busy otherwise
	got, _ := closedByPeer(t, dial(t, addr))
	if got != OverloadResponse {
		t.Fatalf("no idle connection left, got %q", got)
	}
	_ = a
}

// wrapper is an entry point's own layer over a connection, exposing it with NetConn.
type wrapper struct{ net.Conn }

func (w wrapper) NetConn() net.Conn { return w.Conn }

func TestTrackCountsWithoutASlotAndOfFindsTheEntry(t *testing.T) {
	t.Parallel()
	tb := NewTable(1, 0, t.Logf)
	addr, accepted, _ := serve(t, tb)
	dial(t, addr)
	capped := next(t, accepted)
	// A connection from elsewhere is counted without a slot: the cap is full, yet it is
	// tracked, and it is never evicted.
	other, peer := net.Pipe()
	t.Cleanup(func() { other.Close(); peer.Close() })
	tracked := tb.Track(wrapper{other}).(*Conn)
	tracked.SetWaiting(true)
	if tb.Open() != 2 || held(tb) != 1 {
		t.Fatalf("open %d slots %d, want 2 and 1", tb.Open(), held(tb))
	}
	// Through any layer exposing NetConn (an entry point's wrapper, *tls.Conn), Of and
	// Track find the same entry: nothing is counted twice.
	layered := tls.Client(wrapper{capped}, &tls.Config{InsecureSkipVerify: true})
	if Of(layered) != capped {
		t.Fatal("Of does not see through the layers")
	}
	if tb.Track(layered) != net.Conn(layered) {
		t.Fatal("Track replaced a connection already in the table (its layers would be lost)")
	}
	if Of(other) != nil {
		t.Fatal("Of found an entry for a connection outside the table")
	}
	if tb.Open() != 2 {
		t.Fatalf("open %d, want 2", tb.Open())
	}
	tracked.Close()
	if tb.Open() != 1 || held(tb) != 1 {
		t.Fatalf("after closing the tracked one: open %d slots %d", tb.Open(), held(tb))
	}
}

func TestCloseAllCutsEveryConnectionAndLaterOnes(t *testing.T) {
	t.Parallel()
	tb := NewTable(4, 0, t.Logf)
	addr, accepted, _ := serve(t, tb)
	a := dial(t, addr)
	next(t, accepted)
	b := dial(t, addr)
	next(t, accepted)
	tb.CloseAll()
	for _, c := range []net.Conn{a, b} {
		if _, closed := closedByPeer(t, c); !closed {
			t.Fatal("a connection survived CloseAll")
		}
	}
	late := tb.Track(dial(t, addr))
	if _, err := late.Write([]byte("x")); err == nil {
		t.Fatal("a connection tracked after CloseAll is open")
	}
	if tb.Open() != 0 {
		t.Fatalf("open after CloseAll: %d", tb.Open())
	}
}

// TestRefusalIsAnHTTPResponse: the 503 a refused client reads is well-formed HTTP.
func TestRefusalIsAnHTTPResponse(t *testing.T) {
	t.Parallel()
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(OverloadResponse)), nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("%v %v", resp, err)
	}
	b, _ := io.ReadAll(resp.Body)
	if int64(len(b)) != resp.ContentLength {
		t.Fatalf("body %d bytes, Content-Length %d", len(b), resp.ContentLength)
	}
}

func TestHoldIsCutByCloseAllUntilReleased(t *testing.T) {
	t.Parallel()
	tb := NewTable(4, 0, t.Logf)
	held, heldPeer := net.Pipe()
	released, releasedPeer := net.Pipe()
	t.Cleanup(func() { held.Close(); heldPeer.Close(); released.Close(); releasedPeer.Close() })
	tb.Hold(held)
	tb.Hold(released)()
	if tb.Open() != 0 {
		t.Fatalf("held connections are counted: %d", tb.Open())
	}
	tb.CloseAll()
	if _, err := held.Write([]byte("x")); err == nil {
		t.Fatal("a held connection survived CloseAll")
	}
	go releasedPeer.Read(make([]byte, 1))
	if _, err := released.Write([]byte("x")); err != nil {
		t.Fatalf("a released connection was cut: %v", err)
	}
	late, latePeer := net.Pipe()
	t.Cleanup(func() { latePeer.Close() })
	tb.Hold(late)
	if _, err := late.Write([]byte("x")); err == nil {
		t.Fatal("a connection held after CloseAll is open")
	}
}
