package fingerprint

import (
	"net"
	"sync"
	"sync/atomic"
)

// Recorder keeps the first bytes that pass one way through a connection (reads or
// writes) until Stop, or until it holds Max bytes: enough for a ClientHello or an HTTP/2
// opening, never more. It is safe for concurrent use.
type Recorder struct {
	mu   sync.Mutex
	buf  []byte
	max  int
	done atomic.Bool
	// enough, when set, is asked after each chunk whether the bytes so far are enough.
	enough func([]byte) bool
}

// NewRecorder records up to max bytes; enough (may be nil) stops it early.
func NewRecorder(max int, enough func([]byte) bool) *Recorder {
	return &Recorder{max: max, enough: enough}
}

// Add records p (a chunk that passed).
func (r *Recorder) Add(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done.Load() || len(p) == 0 {
		return
	}
	n := min(len(p), r.max-len(r.buf))
	r.buf = append(r.buf, p[:n]...)
	if len(r.buf) >= r.max || (r.enough != nil && r.enough(r.buf)) {
		r.done.Store(true)
	}
}

// Bytes returns what was recorded so far (the caller must not modify it).
func (r *Recorder) Bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf
}

// Stop makes the recorder take no more bytes.
func (r *Recorder) Stop() { r.done.Store(true) }

// Done reports whether the recorder stopped taking bytes.
func (r *Recorder) Done() bool { return r.done.Load() }

// HelloComplete is an enough func for ClientHello records: true once b holds a whole
// ClientHello or can no longer become one.
func HelloComplete(b []byte) bool {
	_, err := handshakeMessage(b)
	return err != ErrIncomplete
}

// H2Complete is an enough func for an HTTP/2 opening.
func H2Complete(b []byte) bool {
	_, err := ParseH2Opening(b)
	return err != ErrNoHeaders
}

// ReadConn records what is read from a connection.
type ReadConn struct {
	net.Conn
	Rec *Recorder
}

func (c *ReadConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.Rec.Done() {
		c.Rec.Add(p[:n])
	}
	return n, err
}

// NetConn returns the wrapped connection.
func (c *ReadConn) NetConn() net.Conn { return c.Conn }

// WriteConn records what is written to a connection.
type WriteConn struct {
	net.Conn
	Rec *Recorder
}

func (c *WriteConn) Write(p []byte) (int, error) {
	if !c.Rec.Done() {
		c.Rec.Add(p)
	}
	return c.Conn.Write(p)
}

// NetConn returns the wrapped connection.
func (c *WriteConn) NetConn() net.Conn { return c.Conn }
