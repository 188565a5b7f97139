package capture

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"inspector/engine/session"
)

// Body tees a body into a capped buffer while it streams through. Bytes beyond the
// in-memory cap go to a spill file (Options.SpillDir) up to Options.SpillLimit, so the store
// can keep large bodies whole without holding them in memory; beyond that they are only
// counted and the body is marked truncated. Safe for a reader goroutine and a result call
// racing at the end of an exchange.
type Body struct {
	rc      io.ReadCloser
	limit   int64
	trailer func() http.Header
	spill   *spillFile // nil: no spilling
	// budget is the engine's cap on capture memory across exchanges (nil: none): the
	// buffer's capacity is taken from it as it grows, and given back by ReleaseBudget.
	// When it is spent the buffer stops growing and the rest of the body is spilled (or
	// counted and the body marked truncated) as beyond the per-body limit.
	budget   *Budget
	reserved int64 // capacity taken from budget
	released bool  // ReleaseBudget ran: the buffer grows no more
	// size is the body's announced length (Content-Length), or -1: the buffer is made
	// that big at once instead of growing by copies.
	size int64

	mu  sync.Mutex
	buf []byte
	n   int64
	// started: a Read returned bytes or an error; first, when not nil, is closed then
	// (see WaitFirst).
	started bool
	first   chan struct{}
	err     error
	eof     bool
	doneAt  time.Time
	trailed http.Header
}

// newBody captures rc, whose announced length is size (-1: unknown).
func newBody(rc io.ReadCloser, size, limit int64, trailer func() http.Header) *Body {
	return &Body{rc: rc, size: size, limit: limit, trailer: trailer}
}

// grow makes room for k more bytes in the buffer: the announced size (within the cap) at
// once, else doubling, so a body is copied about once rather than at every append. It
// reports false when the capture budget cannot cover even the bytes needed.
func (c *Body) grow(k int64) bool {
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

// ReleaseBudget gives the buffer's capacity back to the budget: the session has left the
// engine (its observers have it) or the capture was replaced.
func (c *Body) ReleaseBudget() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.budget.give(c.reserved)
	c.reserved, c.released = 0, true
}

func (c *Body) Read(p []byte) (int, error) {
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

func (c *Body) Close() error { return c.rc.Close() }

// WaitFirst waits until the first Read returned bytes or an error, or d passed, and
// reports whether the body failed before its first byte.
func (c *Body) WaitFirst(d time.Duration) bool {
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

// FailedEmpty reports whether the body failed before its first byte.
func (c *Body) FailedEmpty() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failedEmptyLocked()
}

func (c *Body) failedEmptyLocked() bool { return c.n == 0 && c.err != nil }

// Result returns the captured body, trailers, when EOF was reached and the first error.
// It closes the spill file; the body then names it in Spilled.
func (c *Body) Result() (session.Body, http.Header, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := session.Body{Data: c.buf, Size: c.n}
	kept := int64(len(c.buf))
	var why string
	if c.spill != nil {
		path, n := c.spill.finish()
		if n > 0 {
			b.Spilled, kept = path, kept+n
		}
		why = c.spill.why
		c.spill = nil
	}
	b.Truncated = c.n > kept
	if b.Truncated && why != "" {
		b.NotCaptured = why
	}
	return b, c.trailed, c.doneAt, c.err
}

// Budget caps the bytes of bodies held in memory across every running exchange
// (the engine's Config.CaptureMemory). A nil budget has no cap.
type Budget struct {
	limit int64
	used  atomic.Int64
	// cappedBodies counts bodies that stopped growing in memory because the budget was
	// spent (Stats.CaptureCapped).
	cappedBodies atomic.Uint64
}

func (b *Budget) take(n int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	if b.used.Add(n) <= b.limit {
		return true
	}
	b.used.Add(-n)
	return false
}

func (b *Budget) give(n int64) {
	if b != nil && n > 0 {
		b.used.Add(-n)
	}
}

func (b *Budget) InUse() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

func (b *Budget) CappedCount() uint64 {
	if b == nil {
		return 0
	}
	return b.cappedBodies.Load()
}

func (b *Budget) capped() {
	if b != nil {
		b.cappedBodies.Add(1)
	}
}

// Snapshot copies the bytes captured so far, and reports whether the body is still open
// (neither EOF nor an error yet). A nil capture gives nil.
func (c *Body) Snapshot() (*session.Body, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b := &session.Body{Data: append([]byte(nil), c.buf...), Size: c.n}
	b.Truncated = c.n > int64(len(c.buf)) && c.spill == nil
	return b, !c.eof && c.err == nil
}

// Options are the limits of one body's capture.
type Options struct {
	// Limit caps the bytes kept in memory.
	Limit int64
	// Budget is the cap on capture memory shared by every body (nil: none).
	Budget *Budget
	// SpillDir receives the bytes beyond Limit (or beyond what Budget allowed), up to
	// SpillLimit bytes, in a file named "ID-PART.body"; empty: no spilling, such bytes
	// are counted and the body marked truncated.
	SpillDir   string
	SpillLimit int64
	ID         session.ID
	Part       string // "request" or "response"
}

// New captures rc, whose announced length is size (-1: unknown), with o's limits;
// trailer, when not nil, is read at EOF for the body's trailers. Read the body through
// the returned value.
func New(rc io.ReadCloser, size int64, trailer func() http.Header, o Options) *Body {
	c := newBody(rc, size, o.Limit, trailer)
	c.budget = o.Budget
	if o.SpillDir != "" && o.SpillLimit > 0 {
		// The path is built on the first write: most bodies never spill.
		c.spill = &spillFile{dir: o.SpillDir, id: o.ID, part: o.Part, limit: o.SpillLimit}
	}
	return c
}

// NewBudget is a budget of limit bytes.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }
