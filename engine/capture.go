package engine

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"inspector/engine/session"
)

// captureBody tees a body into a capped buffer while it streams through. Bytes beyond the
// in-memory cap go to a spill file (Config.SpillDir) up to Config.SpillLimit, so the store
// can keep large bodies whole without holding them in memory; beyond that they are only
// counted and the body is marked truncated. Safe for a reader goroutine and a result call
// racing at the end of an exchange.
type captureBody struct {
	rc      io.ReadCloser
	limit   int64
	trailer func() http.Header
	spill   *spillFile // nil: no spilling
	// budget is the engine's cap on capture memory across exchanges (nil: none): the
	// buffer's capacity is taken from it as it grows, and given back by releaseBudget.
	// When it is spent the buffer stops growing and the rest of the body is spilled (or
	// counted and the body marked truncated) as beyond the per-body limit.
	budget   *captureBudget
	reserved int64 // capacity taken from budget
	released bool  // releaseBudget ran: the buffer grows no more
	// size is the body's announced length (Content-Length), or -1: the buffer is made
	// that big at once instead of growing by copies.
	size int64

	mu  sync.Mutex
	buf []byte
	n   int64
	// started: a Read returned bytes or an error; first, when not nil, is closed then
	// (see waitFirst).
	started bool
	first   chan struct{}
	err     error
	eof     bool
	doneAt  time.Time
	trailed http.Header
}

// newCaptureBody captures rc, whose announced length is size (-1: unknown).
func newCaptureBody(rc io.ReadCloser, size, limit int64, trailer func() http.Header) *captureBody {
	return &captureBody{rc: rc, size: size, limit: limit, trailer: trailer}
}

// grow makes room for k more bytes in the buffer: the announced size (within the cap) at
// once, else doubling, so a body is copied about once rather than at every append. It
// reports false when the capture budget cannot cover even the bytes needed.
func (c *captureBody) grow(k int64) bool {
	need := int64(len(c.buf)) + k
	if need <= int64(cap(c.buf)) {
		return true
	}
	if c.released {
		return false
	}
	want := max(need, 2*int64(cap(c.buf)), 4<<10)
	if c.size >= need {
		want = c.size
	}
	want = min(want, c.limit)
	if !c.budget.take(want - int64(cap(c.buf))) {
		if want = need; !c.budget.take(want - int64(cap(c.buf))) {
			return false
		}
	}
	c.reserved += want - int64(cap(c.buf))
	nb := make([]byte, len(c.buf), want)
	copy(nb, c.buf)
	c.buf = nb
	return true
}

// releaseBudget gives the buffer's capacity back to the budget: the session has left the
// engine (its observers have it) or the capture was replaced.
func (c *captureBody) releaseBudget() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.budget.give(c.reserved)
	c.reserved, c.released = 0, true
}

func (c *captureBody) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.mu.Lock()
	if !c.started && (n > 0 || err != nil) {
		c.started = true
		if c.first != nil {
			close(c.first)
		}
	}
	if n > 0 {
		c.n += int64(n)
		chunk := p[:n]
		if room := c.limit - int64(len(c.buf)); room > 0 {
			k := min(int64(n), room)
			if c.grow(k) {
				c.buf = append(c.buf, chunk[:k]...)
				chunk = chunk[k:]
			} else {
				// The engine's capture memory is spent: keep what is held, and treat
				// the rest like bytes beyond the per-body limit.
				c.limit = int64(len(c.buf))
				if !c.released {
					c.budget.capped()
				}
			}
		}
		if len(chunk) > 0 && c.spill != nil {
			c.spill.write(chunk)
		}
	}
	if err != nil && c.err == nil && !c.eof {
		if err == io.EOF {
			c.eof, c.doneAt = true, time.Now()
			if c.trailer != nil {
				if t := c.trailer(); len(t) > 0 {
					c.trailed = t.Clone()
				}
			}
		} else {
			c.err = err
		}
	}
	c.mu.Unlock()
	return n, err
}

func (c *captureBody) Close() error { return c.rc.Close() }

// waitFirst waits until the first Read returned bytes or an error, or d passed, and
// reports whether the body failed before its first byte.
func (c *captureBody) waitFirst(d time.Duration) bool {
	c.mu.Lock()
	if !c.started {
		if c.first == nil {
			c.first = make(chan struct{})
		}
		ch := c.first
		c.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
		c.mu.Lock()
	}
	defer c.mu.Unlock()
	return c.failedEmptyLocked()
}

// failedEmpty reports whether the body failed before its first byte.
func (c *captureBody) failedEmpty() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failedEmptyLocked()
}

func (c *captureBody) failedEmptyLocked() bool { return c.n == 0 && c.err != nil }

// result returns the captured body, trailers, when EOF was reached and the first error.
// It closes the spill file; the body then names it in Spilled.
func (c *captureBody) result() (session.Body, http.Header, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := session.Body{Data: c.buf, Size: c.n}
	kept := int64(len(c.buf))
	if c.spill != nil {
		path, n := c.spill.finish()
		if n > 0 {
			b.Spilled, kept = path, kept+n
		}
		c.spill = nil
	}
	b.Truncated = c.n > kept
	return b, c.trailed, c.doneAt, c.err
}

// captureBudget caps the bytes of bodies held in memory across every running exchange
// (Config.CaptureMemory). A nil budget has no cap.
type captureBudget struct {
	limit int64
	used  atomic.Int64
	// cappedBodies counts bodies that stopped growing in memory because the budget was
	// spent (Stats.CaptureCapped).
	cappedBodies atomic.Uint64
}

func (b *captureBudget) take(n int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	if b.used.Add(n) <= b.limit {
		return true
	}
	b.used.Add(-n)
	return false
}

func (b *captureBudget) give(n int64) {
	if b != nil && n > 0 {
		b.used.Add(-n)
	}
}

func (b *captureBudget) inUse() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

func (b *captureBudget) cappedCount() uint64 {
	if b == nil {
		return 0
	}
	return b.cappedBodies.Load()
}

func (b *captureBudget) capped() {
	if b != nil {
		b.cappedBodies.Add(1)
	}
}

// newCapture captures one body of session id (part "request" or "response") with the
// engine's limits: CaptureLimit in memory within the CaptureMemory budget, the rest
// spilled up to SpillLimit.
func (e *Engine) newCapture(rc io.ReadCloser, size int64, id session.ID, part string, trailer func() http.Header) *captureBody {
	c := newCaptureBody(rc, size, e.cfg.CaptureLimit, trailer)
	c.spill = e.newSpill(id, part)
	c.budget = e.captureMem
	return c
}

// spillFile receives the bytes of one body beyond the in-memory cap. It is opened on the
// first write; a write error (disk full, read-only data dir) stops spilling for that body,
// which is then marked truncated: capture never fails the exchange.
type spillFile struct {
	dir   string
	id    session.ID
	part  string
	path  string // set when the file is created
	limit int64
	f     *os.File
	w     *bufio.Writer
	n     int64
	dead  bool
}

// newSpill returns the spill file for one body of session id, or nil when spilling is off.
func (e *Engine) newSpill(id session.ID, part string) *spillFile {
	limit := e.cfg.SpillLimit - max(e.cfg.CaptureLimit, 0)
	if e.cfg.SpillDir == "" || limit <= 0 {
		return nil
	}
	// The path is built on the first write: most bodies never spill.
	return &spillFile{dir: e.cfg.SpillDir, id: id, part: part, limit: limit}
}

func (s *spillFile) write(p []byte) {
	if s.dead {
		return
	}
	if room := s.limit - s.n; int64(len(p)) > room {
		p = p[:max(room, 0)]
	}
	if len(p) == 0 {
		return
	}
	if s.f == nil {
		s.path = filepath.Join(s.dir, fmt.Sprintf("%d-%s.body", s.id, s.part))
		f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			s.dead = true
			return
		}
		s.f, s.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	if _, err := s.w.Write(p); err != nil {
		s.dead = true
		return
	}
	s.n += int64(len(p))
}

// finish closes the file and returns its path and the bytes it holds (0 and the file
// removed when spilling failed).
func (s *spillFile) finish() (string, int64) {
	if s.f == nil {
		return "", 0
	}
	err := s.w.Flush()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil || s.dead {
		os.Remove(s.path)
		return "", 0
	}
	return s.path, s.n
}
