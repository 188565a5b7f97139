package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"inspector/engine/session"
)

// Spilling
//
// The bytes of a body beyond memory go to its spill file through a goroutine of the
// body's own (spillFile.run), which opens, writes and closes the file: the relay only
// copies them into a bounded queue. When the queue is full it waits for room while the
// disk makes progress (a slow disk slows a large body's capture down, as a synchronous
// write did), but never longer than stallAfter. When the disk stalls (no room within
// stallAfter, or an open or a write under way that long: a frozen or hung filesystem),
// the spill is given up: the body keeps what is in memory and is marked truncated with NotCaptured
// "disk stalled", and the goroutine removes the file once the disk answers again. While
// a stall lasts, bodies that start spilling are given up at once.
//
// Result (finish) waits for the queued bytes to reach the file only while the disk makes
// progress: on a healthy disk the few MiB queued at most; on a stalled one it gives up
// after stallAfter at the latest.
const (
	spillChunk     = 64 << 10 // bytes per queued write
	spillQueueBody = 4 << 20  // bytes queued per body at most
	spillQueueAll  = 64 << 20 // bytes queued across every body at most
)

// stallAfter: a disk operation of a spill writer under way this long means the disk is
// stalled. A variable for tests.
var stallAfter = time.Second

// ReasonDiskStalled is session.Body.NotCaptured of a body whose spill was given up
// because the disk did not keep up.
const ReasonDiskStalled = "disk stalled"

var (
	spillQueued atomic.Int64 // bytes queued across every spill file
	disk        diskWatch
	chunks      = sync.Pool{New: func() any { return make([]byte, 0, spillChunk) }}
)

// diskWatch notices a stalled disk across every spill writer: operations are under way and
// none has ended for stallAfter.
type diskWatch struct {
	ops     atomic.Int64 // operations under way
	settled atomic.Int64 // unix nanoseconds: an operation ended, or one began with none under way
}

func (d *diskWatch) begin() {
	if d.ops.Load() == 0 {
		d.settled.Store(time.Now().UnixNano())
	}
	d.ops.Add(1)
}

func (d *diskWatch) end() {
	d.settled.Store(time.Now().UnixNano())
	d.ops.Add(-1)
}

func (d *diskWatch) stalled() bool {
	return d.ops.Load() > 0 && time.Since(time.Unix(0, d.settled.Load())) > stallAfter
}

// spillFile receives the bytes of one body beyond the in-memory cap (see Spilling). A
// failure (a full disk, a read-only data dir, a stalled disk) gives the file up for that
// body, which is then marked truncated: capture never fails nor delays the exchange.
// The relay side (write, finish) runs under the Body's lock.
type spillFile struct {
	dir   string
	id    session.ID
	part  string
	limit int64

	// The relay's side.
	n      int64  // bytes handed to the file
	dead   bool   // given up: no more bytes go to the file
	why    string // why bytes were not spilled, when dead
	cur    []byte // bytes not queued yet
	q      chan []byte
	closed bool // q is closed
	done   chan struct{}

	queued atomic.Int64 // bytes in q or being written
	busy   atomic.Int64 // unix nanoseconds the writer's current disk operation began; 0: none

	mu        sync.Mutex
	finished  bool   // run ended (under mu)
	abandoned bool   // finish gave up: run removes the file (under mu)
	path      string // the file, once run created it; read after done
	err       error  // run's failure; read after done
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
	if s.q == nil {
		if disk.stalled() {
			s.giveUp(ReasonDiskStalled)
			return
		}
		s.q = make(chan []byte, spillQueueBody/spillChunk)
		s.done = make(chan struct{})
		go s.run(filepath.Join(s.dir, fmt.Sprintf("%d-%s.body", s.id, s.part)))
	}
	for len(p) > 0 {
		if s.cur == nil {
			s.cur = chunks.Get().([]byte)[:0]
		}
		k := min(len(p), spillChunk-len(s.cur))
		s.cur = append(s.cur, p[:k]...)
		p = p[k:]
		s.n += int64(k)
		if len(s.cur) == spillChunk && !s.send() {
			return
		}
	}
}

// send queues s.cur. When the queues are full it waits for room while the writer makes
// progress (a slow disk slows the capture of a large body down, as a synchronous write
// would), but never longer than stallAfter: when the disk stalled (no room by then, or
// an operation under way that long) it gives the file up and reports false.
func (s *spillFile) send() bool {
	n := int64(len(s.cur))
	var deadline *time.Timer
	defer func() {
		if deadline != nil {
			deadline.Stop()
		}
	}()
	for spillQueued.Add(n) > spillQueueAll {
		spillQueued.Add(-n)
		if disk.stalled() || s.stuck() {
			s.giveUp(ReasonDiskStalled)
			return false
		}
		if deadline == nil {
			deadline = time.NewTimer(stallAfter)
		}
		select {
		case <-deadline.C:
			s.giveUp(ReasonDiskStalled)
			return false
		case <-time.After(time.Millisecond): // the queue of every body drains in chunks
		}
	}
	if disk.stalled() || s.stuck() {
		spillQueued.Add(-n)
		s.giveUp(ReasonDiskStalled)
		return false
	}
	s.queued.Add(n)
	select {
	case s.q <- s.cur:
		s.cur = nil
		return true
	default:
	}
	if deadline == nil {
		deadline = time.NewTimer(stallAfter)
	}
	select {
	case s.q <- s.cur:
		s.cur = nil
		return true
	case <-deadline.C:
		s.queued.Add(-n)
		spillQueued.Add(-n)
		s.giveUp(ReasonDiskStalled)
		return false
	}
}

// stuck reports whether the writer's current operation has been under way for stallAfter.
func (s *spillFile) stuck() bool {
	b := s.busy.Load()
	return b != 0 && time.Since(time.Unix(0, b)) > stallAfter
}

// giveUp stops spilling: the writer, if started, drops what is queued and removes the file.
func (s *spillFile) giveUp(why string) {
	s.dead, s.why = true, why
	if s.cur != nil {
		chunks.Put(s.cur[:0])
		s.cur = nil
	}
	if s.q == nil {
		return
	}
	s.mu.Lock()
	s.abandoned = !s.finished
	s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.q)
	}
}

// run is the spill's writer goroutine: it creates the file on the first chunk, writes
// the chunks in order, and closes the file when the queue is closed; the file is removed
// when a write failed or the spill was given up.
func (s *spillFile) run(path string) {
	var (
		f   *os.File
		err error
	)
	for chunk := range s.q {
		if err == nil && !s.isAbandoned() {
			if f == nil {
				s.op(func() { f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600) })
				if err != nil {
					f = nil
				}
			}
			if err == nil {
				s.op(func() { _, err = f.Write(chunk) })
			}
		}
		n := int64(len(chunk))
		s.queued.Add(-n)
		spillQueued.Add(-n)
		chunks.Put(chunk[:0])
	}
	if f != nil {
		s.op(func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		})
	}
	if err == nil && f != nil {
		s.path = path
	}
	s.err = err
	s.mu.Lock()
	s.finished = true
	drop := s.abandoned || err != nil
	s.mu.Unlock()
	close(s.done)
	if drop && f != nil {
		s.op(func() { os.Remove(path) })
	}
}

func (s *spillFile) isAbandoned() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.abandoned
}

// op runs one disk operation, watched for stalls.
func (s *spillFile) op(fn func()) {
	disk.begin()
	s.busy.Store(time.Now().UnixNano())
	fn()
	s.busy.Store(0)
	disk.end()
}

// stallPoll is how often finish looks at a writer that has not finished yet.
const stallPoll = 20 * time.Millisecond

// finish ends the spill and returns the file's path and the bytes it holds (0 when
// nothing was spilled or the spill was given up: see why). It waits for the writer only
// while the disk makes progress.
func (s *spillFile) finish() (string, int64) {
	if s.q == nil {
		return "", 0
	}
	if !s.dead && len(s.cur) > 0 {
		s.send()
	}
	if !s.closed {
		s.closed = true
		close(s.q)
	}
	if s.dead {
		return "", 0
	}
	var tick *time.Ticker
	for {
		select {
		case <-s.done:
			if tick != nil {
				tick.Stop()
			}
			if s.err != nil || s.path == "" {
				s.dead = true
				if s.err != nil {
					s.why = "spill file: " + s.err.Error()
				}
				return "", 0
			}
			return s.path, s.n
		default:
		}
		if tick == nil {
			tick = time.NewTicker(stallPoll)
		}
		select {
		case <-s.done:
			continue
		case <-tick.C:
		}
		if s.stuck() {
			s.mu.Lock()
			finished := s.finished
			s.abandoned = !finished
			s.mu.Unlock()
			if !finished {
				tick.Stop()
				s.dead, s.why = true, ReasonDiskStalled
				return "", 0
			}
			// It ended just now: done is being closed.
		}
	}
}
