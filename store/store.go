package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"inspector/engine/session"
	"inspector/filter"
)

// Errors callers branch on with errors.Is.
var (
	// ErrLocked: another process (another Inspector) holds the file.
	ErrLocked = errors.New("Inspector is already running with this data directory")
	// ErrCorrupt: the file is damaged; Options.MoveAsideCorrupt starts afresh.
	ErrCorrupt = errors.New("session store is damaged")
	// ErrNotFound: no session with that id.
	ErrNotFound = errors.New("no such session")
	// ErrSchemaTooNew: the file was written by a newer Inspector with a newer schema.
	ErrSchemaTooNew = errors.New("session store was written by a newer Inspector")
	// ErrReadOnly: a write on a store opened with Options.ReadOnly.
	ErrReadOnly = errors.New("session store is open read-only")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("session store is closed")
	// ErrEmpty: a read-only Open of a 0-byte file (a store created and never written, or
	// cut to nothing): it holds no sessions. errors.Is(err, fs.ErrNotExist) is true too, so
	// readers treat it as no store yet. A writable Open makes it a new store.
	ErrEmpty error = emptyError{}
)

// errQueueFull is the health's error while Put drops sessions because the writer fell
// behind by a whole queue.
var errQueueFull = errors.New("the write queue is full (the disk is slower than the traffic): sessions dropped")

type emptyError struct{}

func (emptyError) Error() string { return "session store file is empty (0 bytes): no sessions stored" }

func (emptyError) Is(target error) bool { return target == fs.ErrNotExist }

// CompactPath is where Compact's caller writes the compacted copy of the store at path
// (inspector store compact). A writable Open removes a copy left there by a compact that
// was killed; nothing else uses that name.
func CompactPath(path string) string { return path + ".compact" }

// Options for Open. The zero value gives the defaults noted on each field.
type Options struct {
	MaxSessions int   // retention by count; default 1,000,000
	MaxBytes    int64 // retention by total stored bytes; default 4 GiB
	// MaxAge evicts sessions started longer ago than this (0: no age limit); checked at
	// each commit and by Enforce. Sessions marked Keep are never evicted (SetKeep).
	MaxAge           time.Duration
	MoveAsideCorrupt bool // rename a corrupt file to sessions.db.corrupt-TIME and start fresh
	ReadOnly         bool // no writer: Put, Delete, … fail; shares the file with other readers
	// LockTimeout bounds the wait for the file lock before Open gives ErrLocked; default 2 s.
	LockTimeout time.Duration
	// QueueSize is the capacity of Put's queue; default 16384 sessions.
	QueueSize int
	// QueueBytes bounds the body bytes held in memory by queued sessions; default 64 MiB.
	// When the writer falls behind by more, Put (which never waits) parks the bodies in the
	// overflow file, and beyond OverflowBytes keeps the session but drops its captured
	// bodies (marked truncated, counted in Stats.BodiesDropped), so memory stays bounded
	// and a slow or stuck disk never stalls traffic.
	QueueBytes int64
	// OverflowBytes bounds the overflow file (OverflowPath): bodies of sessions queued
	// beyond QueueBytes wait there for the writer instead of being dropped; default 1 GiB,
	// negative: no overflow file (such bodies are dropped at once).
	OverflowBytes int64
}

// Query selects a page of summaries.
type Query struct {
	Filter *filter.Expr // nil matches all
	After  session.ID   // only ids > After (0: no bound)
	Before session.ID   // only ids < Before (0: no bound)
	Limit  int          // 0: no limit
	Newest bool         // newest first instead of oldest first

	ctx context.Context // ListContext, CountContext: a walk ends with ctx.Err() once done
	// blooms are the store's pending sessions' Bloom filters (set by List and Count).
	blooms *pendingBlooms
}

// Stats are the store's counters.
type Stats struct {
	Sessions uint64 `json:"sessions"`
	Bytes    int64  `json:"bytes"`     // stored bytes of sessions
	FileSize int64  `json:"file_size"` // size of sessions.db
	// Dropped counts sessions dropped: the write queue overflowed, or a commit failed.
	Dropped uint64 `json:"dropped"`
	// BodiesDropped counts sessions stored without their captured bodies because the
	// queue held more than Options.QueueBytes of bodies (the disk fell behind).
	BodiesDropped uint64 `json:"bodies_dropped"`
	// Overflowed counts sessions whose bodies waited in the overflow file because the
	// queue held Options.QueueBytes of bodies (none of them lost unless counted above).
	Overflowed uint64 `json:"overflowed"`
	// Evicted counts sessions retention removed since the store was opened, and
	// LastEviction is the latest commit that removed some (nil: none yet).
	Evicted      uint64    `json:"evicted"`
	LastEviction *Eviction `json:"last_eviction,omitempty"`
	// Missing counts ids skipped by an earlier crash ("N sessions may be missing"; doc.go).
	Missing uint64 `json:"missing"`
	// LastError is the error of the failing commits ("" when none, and again once a commit
	// stores its whole batch); their lost sessions count in Dropped.
	LastError string `json:"last_error,omitempty"`
	// Healthy is false while commits lose sessions or bodies (Store.Health has the detail
	// and Store.WatchHealth its changes); HealthSince is when that state began.
	Healthy     bool      `json:"healthy"`
	HealthSince time.Time `json:"health_since"`
	// Damaged: the failing commits met damage inside the file (Health.Damaged): restart
	// with --reset-store.
	Damaged bool `json:"damaged,omitempty"`
	// MovedAside is where Open moved a corrupt file (Options.MoveAsideCorrupt), or "".
	MovedAside string `json:"moved_aside,omitempty"`
	// Index is the body index's state ("index building: N%" while it indexes sessions
	// stored before it existed).
	Index IndexStatus `json:"index"`
}

const (
	defaultMaxSessions = 1_000_000
	defaultMaxBytes    = 4 << 30
	defaultLockTimeout = 2 * time.Second
	defaultQueueSize   = 16384
	defaultQueueBytes  = 64 << 20
	defaultOverflow    = 1 << 30

	idBlock  = 4096 // ids reserved ahead on disk
	maxBatch = 2048 // sessions per transaction
	// nudgeBodyBytes: a session with this many body bytes in memory wakes the writer at
	// once, so large bodies do not wait in the queue for the batch delay.
	nudgeBodyBytes = 64 << 10
	maxBatchBytes  = 8 << 20 // body bytes per transaction
	batchDelay     = 100 * time.Millisecond
	evictStep      = 20000 // sessions evicted per transaction at most
)

// Store is the session store. Its methods are safe for concurrent use.
//
// Sessions handed to Put belong to the store's writer from then on only for reading: the
// store never modifies them. Values returned by Get and List are fresh copies the caller
// owns.
type Store struct {
	path     string
	db       *bolt.DB
	file     *os.File              // bbolt's file, for closeDB
	broken   atomic.Pointer[error] // set when a write transaction panicked (writeTx)
	opts     Options
	readOnly bool
	ret      retention // eviction counters and the age limit (retention.go)

	next      atomic.Uint64 // last id handed out
	reserved  atomic.Uint64 // ids up to here are reserved on disk
	reserveMu sync.Mutex

	mu     sync.RWMutex // guards closed against Put/Flush
	closed bool
	queue  chan item
	// prepped is the prep stage's output: queued items in order, sessions with their
	// bodies read back from the overflow file and their grams found (writer.go).
	prepped chan item
	// prepHeld is the memory the prep stage added to the items in prepped (item.held);
	// the writer signals prepFreed as it takes them.
	prepHeld   atomic.Int64
	prepFreed  chan struct{}
	prepStalls atomic.Uint64 // times the prep stage waited for prepFreed (tests)
	kick       chan struct{}
	nudge      chan struct{} // wakes the writer within a batch (nudgeWriter)
	// queuedBytes is the body bytes of queued sessions, bounded by Options.QueueBytes.
	queuedBytes   atomic.Int64
	bodiesDropped atomic.Uint64
	ovf           overflow // bodies beyond QueueBytes (overflow.go)
	// nudgeLen is the queue length at which Put wakes the writer early.
	nudgeLen int
	done     chan struct{} // closed when the writer exits

	count      atomic.Uint64
	bytes      atomic.Int64
	dropped    atomic.Uint64
	missing    uint64
	movedAside string
	lastErr    atomic.Pointer[string]
	// remove takes spill files for removeLater's goroutine, started on first use.
	remove      chan string
	removerOnce sync.Once

	health   health
	importMu sync.Mutex // one ImportStream at a time

	frames frameWriter // HTTP/2 and HTTP/3 frames (frames.go)

	// arena and scratch are the writer goroutine's reused buffers (buckets.arena).
	arena, scratch []byte
	certCache      certCache // writer goroutine only (certs.go)
	framesBuf      [][]session.Frame
	// pre is the grams of the sessions in the writer's batch (item.pre).
	pre map[*session.Session]*sessionGrams

	// ix gathers the body index's next segment (index.go); used inside write
	// transactions only, under ixMu (writeTx).
	ix   ixBuilder
	ixMu sync.Mutex
	// blooms are the pending sessions' Bloom filters (s.ix.blooms; index.go).
	blooms pendingBlooms
	// ixStop ends the backfill of an older store's sessions; ixDone is closed when it
	// has ended.
	ixStop, ixDone chan struct{}
	ixErr          atomic.Pointer[error]
}

type item struct {
	s     *session.Session
	bytes int64  // body bytes of s, counted in Store.queuedBytes
	park  parked // where s's bodies wait in the overflow file (park.ok)
	flush chan error
	stop  bool
	pre   *sessionGrams // s's grams, found by the writer's prep stage
	held  int64         // memory the prep stage added: bodies read back, grams (prepHeldMax)
}

// Open opens or creates the store at path. A second writer on the same file gets
// ErrLocked after Options.LockTimeout; a damaged file gives ErrCorrupt (or, with
// Options.MoveAsideCorrupt, is renamed aside and a fresh store is created: see
// Stats.MovedAside); a file from a newer Inspector gives ErrSchemaTooNew.
func Open(path string, opts Options) (*Store, error) {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = defaultMaxSessions
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = defaultMaxBytes
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = defaultLockTimeout
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = defaultQueueSize
	}
	if opts.QueueBytes <= 0 {
		opts.QueueBytes = defaultQueueBytes
	}
	if opts.OverflowBytes == 0 {
		opts.OverflowBytes = defaultOverflow
	}
	s, err := open(path, opts)
	if err != nil && errors.Is(err, ErrCorrupt) && opts.MoveAsideCorrupt && !opts.ReadOnly {
		aside := path + ".corrupt-" + time.Now().Format("20060102-150405.000")
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, fmt.Errorf("%w; moving it aside failed: %v", err, rerr)
		}
		s, err = open(path, opts)
		if err == nil {
			s.movedAside = aside
		}
	}
	return s, err
}

func open(path string, opts Options) (*Store, error) {
	var size int64
	if fi, err := os.Stat(path); err == nil {
		size = fi.Size()
	} else if opts.ReadOnly || !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if size == 0 && opts.ReadOnly {
		return nil, fmt.Errorf("%s: %w", path, ErrEmpty)
	}
	db, file, err := openBolt(path, opts)
	if err != nil {
		return nil, err
	}
	s := &Store{path: path, db: db, file: file, opts: opts, readOnly: opts.ReadOnly}
	s.health.init(time.Now())
	err, panicked := guardPanic(func() error {
		check := func(tx *bolt.Tx) error {
			if size > 0 && tx.Size() > size {
				return fmt.Errorf("%w: file is truncated (%d of %d bytes)", ErrCorrupt, size, tx.Size())
			}
			return checkAtOpen(tx)
		}
		if s.readOnly {
			return db.View(func(tx *bolt.Tx) error {
				if err := check(tx); err != nil {
					return err
				}
				if err := validate(tx); err != nil {
					return err
				}
				meta := tx.Bucket(bMeta)
				s.count.Store(u64(meta.Get(kCount)))
				s.bytes.Store(int64(u64(meta.Get(kBytes))))
				return nil
			})
		}
		return db.Update(func(tx *bolt.Tx) error {
			if err := check(tx); err != nil {
				return err
			}
			if err := migrate(tx); err != nil {
				return err
			}
			if err := validate(tx); err != nil {
				return err
			}
			if err := rollbackImportAtOpen(tx); err != nil {
				return err
			}
			meta := tx.Bucket(bMeta)
			committed := u64(meta.Get(kCommitted))
			if u64(meta.Get(kClean)) == 0 {
				if a := u64(meta.Get(kAllocated)); a > committed {
					s.missing = a - committed
				}
			}
			// A clean close recorded every id its run handed out ("allocated"): ids go
			// on right after it (and after any stored id). After a crash the ids the
			// last run may have handed out, up to "reserved", are skipped.
			reserved := u64(meta.Get(kReserved))
			next := reserved
			if u64(meta.Get(kClean)) == 1 {
				next = max(committed, u64(meta.Get(kAllocated)))
				if k, _ := tx.Bucket(bSummaries).Cursor().Last(); len(k) == 8 {
					next = max(next, binary.BigEndian.Uint64(k))
				}
			}
			reserved = max(reserved, next+idBlock)
			s.next.Store(next)
			s.reserved.Store(reserved)
			s.count.Store(u64(meta.Get(kCount)))
			s.bytes.Store(int64(u64(meta.Get(kBytes))))
			return putMeta(meta, kReserved, reserved, kAllocated, committed, kClean, 0)
		})
	})
	if err != nil {
		if panicked && !s.readOnly {
			s.broken.Store(&err) // the writer lock may be held: do not wait for it
		}
		s.closeDB()
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrSchemaTooNew) && errors.Is(err, errBadRecord) {
			err = fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !s.readOnly {
		// We hold the lock: no compact of this file is running. A copy left by one that was
		// killed (as large as the store) goes.
		if err := os.Remove(CompactPath(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			db.Close()
			return nil, fmt.Errorf("removing a stale compact copy: %w", err)
		}
		if err := removeOverflow(OverflowPath(path)); err != nil {
			db.Close()
			return nil, err
		}
		s.ovf = overflow{path: OverflowPath(path), limit: opts.OverflowBytes}
		s.queue = make(chan item, opts.QueueSize)
		s.prepped = make(chan item, prepLen)
		s.prepFreed = make(chan struct{}, 1)
		s.pre = map[*session.Session]*sessionGrams{}
		s.kick = make(chan struct{}, 1)
		s.nudge = make(chan struct{}, 1)
		s.nudgeLen = max(1, min(maxBatch, opts.QueueSize/4))
		s.done = make(chan struct{})
		s.ix.blooms = &s.blooms
		if err := s.openIndex(); err != nil {
			db.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		go s.prep()
		go s.writer()
	}
	return s, nil
}

// Open's consistency check (checkAtOpen) reads every page of files up to checkAllBytes
// (BenchmarkOpenCheck: about 20 ms for 91 MB of 3 KB sessions; a million small sessions,
// 192 MB, take 175 ms), and of files up to checkUncleanBytes when
// the last writer did not close the file cleanly. Every file gets the edge walk.
var (
	checkAllBytes     int64 = 64 << 20
	checkUncleanBytes int64 = 1 << 30
)

// checkAtOpen looks for damage inside the file (pages zeroed or overwritten), which
// otherwise opens fine and then fails every commit: it walks the first and last pages of
// every bucket, the pages capture writes to (appends at the end, eviction at the start),
// and, on files small enough (see checkAllBytes), runs bbolt's full consistency check.
// What it finds is ErrCorrupt.
func checkAtOpen(tx *bolt.Tx) error {
	err := tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
		c := bk.Cursor()
		c.First()
		c.Last()
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	clean := false
	if meta := tx.Bucket(bMeta); meta != nil {
		clean = u64(meta.Get(kClean)) == 1
	}
	if tx.Size() > checkUncleanBytes || tx.Size() > checkAllBytes && clean {
		return nil
	}
	var first error
	n := 0
	for err := range tx.Check() {
		if first == nil {
			first = err
		}
		n++
	}
	switch {
	case n == 1:
		return fmt.Errorf("%w: consistency check: %v", ErrCorrupt, first)
	case n > 1:
		return fmt.Errorf("%w: consistency check: %v (and %d more problems)", ErrCorrupt, first, n-1)
	}
	return nil
}

// openBolt opens the file, turning lock timeouts into ErrLocked and bbolt's errors,
// panics and memory faults on damaged files into ErrCorrupt.
func openBolt(path string, opts Options) (db *bolt.DB, file *os.File, err error) {
	// file is kept to release the lock if bbolt panics half-way through Open, or a later
	// write transaction panics (see writeTx).
	err = guard(func() error {
		var e error
		db, e = bolt.Open(path, 0o600, &bolt.Options{
			Timeout:      opts.LockTimeout,
			ReadOnly:     opts.ReadOnly,
			FreelistType: bolt.FreelistMapType,
			// New files only: an existing file keeps the page size it was made with.
			PageSize: pageSize(),
			OpenFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
				f, err := os.OpenFile(name, flag, mode)
				file = f
				return f, err
			},
		})
		return e
	})
	if err != nil && db == nil && file != nil {
		// bbolt panicked half-way (a recovered fault): its mapping of the file leaks, but
		// the lock must not, or moving the file aside and reopening would find it locked.
		releaseLock(file)
		file.Close() // an error here means bbolt closed it already
	}
	switch {
	case err == nil:
		return db, file, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, nil, fmt.Errorf("%s: %w", path, ErrLocked)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, fs.ErrNotExist):
		return nil, nil, err
	case errors.Is(err, ErrCorrupt):
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	default:
		// ErrInvalid, ErrChecksum, ErrVersionMismatch, short files, mmap of garbage sizes.
		return nil, nil, fmt.Errorf("%s: %w: %v", path, ErrCorrupt, err)
	}
}

// guard runs f turning panics and memory faults (bbolt reading a damaged file) into
// ErrCorrupt.
func guard(f func() error) error {
	err, _ := guardPanic(f)
	return err
}

// guardPanic is guard that also reports whether f panicked.
func guardPanic(f func() error) (err error, panicked bool) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			err, panicked = fmt.Errorf("%w: %v", ErrCorrupt, r), true
		}
	}()
	return f(), false
}

// writeTx runs f in a bbolt write transaction, turning panics (bbolt meeting a damaged
// file) into ErrCorrupt. bbolt's rollback after such a panic can panic as well and leave
// its writer lock held, so every later write transaction (and DB.Close) would wait
// forever: after a panic the store is broken, its writes fail at once with that error,
// and Close releases the file without bbolt.
func (s *Store) writeTx(f func(*bolt.Tx) error) error {
	if p := s.broken.Load(); p != nil {
		return *p
	}
	// ixMu keeps the writer's index builder in step with the transactions that use it:
	// what a transaction did to it (a segment written, the index cleared) is applied only
	// when that transaction commits.
	s.ixMu.Lock()
	defer s.ixMu.Unlock()
	err, panicked := guardPanic(func() error { return s.db.Update(f) })
	s.ix.settle(err == nil)
	s.ret.settle(err == nil)
	if panicked {
		s.broken.CompareAndSwap(nil, &err)
	}
	return err
}

// closeDB closes the bbolt file, or, when a write transaction panicked (writeTx), releases
// its lock and descriptor without bbolt (its mapping stays until the process ends).
func (s *Store) closeDB() error {
	if p := s.broken.Load(); p != nil {
		releaseLock(s.file)
		s.file.Close()
		return *p
	}
	return s.db.Close()
}

func (s *Store) view(f func(tx *bolt.Tx) error) error {
	return guard(func() error { return s.db.View(f) })
}

func putMeta(meta *bolt.Bucket, kv ...any) error {
	for i := 0; i < len(kv); i += 2 {
		var v uint64
		switch x := kv[i+1].(type) {
		case uint64:
			v = x
		case int:
			v = uint64(x)
		case int64:
			v = uint64(x)
		}
		if err := meta.Put(kv[i].([]byte), u64Bytes(v)); err != nil {
			return err
		}
	}
	return nil
}

// Path is the file's path.
func (s *Store) Path() string { return s.path }

// Close commits queued sessions, marks the file cleanly closed and closes it. Later Put
// calls return false; later reads fail.
func (s *Store) Close() error {
	if s.readOnly {
		return s.closeDB()
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.remove != nil {
		close(s.remove) // no Put sends any more
	}
	close(s.ixStop)
	<-s.ixDone
	ch := make(chan error, 1)
	s.queue <- item{stop: true, flush: ch}
	s.nudgeWriter()
	err := <-ch
	<-s.done
	s.ovf.close()
	s.frames.close()
	if cerr := s.closeDB(); cerr != nil && s.broken.Load() == nil {
		err = errors.Join(err, cerr)
	}
	return err
}

// reserveBytes counts n body bytes as queued and reports whether they fit under
// Options.QueueBytes; it never waits. A session bigger than the bound alone fits when
// nothing else is queued. On false the bytes are not counted.
func (s *Store) reserveBytes(n int64) bool {
	if q := s.queuedBytes.Add(n); q <= s.opts.QueueBytes || q == n {
		return true
	}
	s.queuedBytes.Add(-n)
	return false
}

// ReasonStoreBehind is session.Body.NotCaptured of a body the store left out because it
// fell behind: its queue and its overflow file were full, or the disk did not keep up.
const ReasonStoreBehind = "the store fell behind"

// withoutBodies returns a copy of ss whose captured bodies are left out (marked
// truncated, NotCaptured why), for when the queue holds too many body bytes or a commit
// with them failed. The caller removes the spill files of ss.
func withoutBodies(ss *session.Session, why string) *session.Session {
	cp := *ss
	drop := func(b session.Body, flag session.Flags) session.Body {
		if len(b.Data) > 0 || b.Spilled != "" {
			b.Data, b.Spilled, b.Truncated = nil, "", true
			if b.NotCaptured == "" {
				b.NotCaptured = why
			}
			cp.Flags |= flag
		}
		return b
	}
	cp.Request.Body = drop(ss.Request.Body, session.FlagReqTruncated)
	if ss.Response != nil {
		r := *ss.Response
		r.Body = drop(r.Body, session.FlagRespTruncated)
		cp.Response = &r
	}
	return &cp
}

// hasBodies reports whether ss holds captured body bytes (in memory or spilled).
func hasBodies(ss *session.Session) bool {
	r := ss.Response
	return len(ss.Request.Body.Data) > 0 || ss.Request.Body.Spilled != "" ||
		r != nil && (len(r.Body.Data) > 0 || r.Body.Spilled != "")
}

func bodyBytes(ss *session.Session) int {
	n := len(ss.Request.Body.Data)
	if ss.Response != nil {
		n += len(ss.Response.Body.Data)
	}
	return n
}

// NextID allocates the next session id (monotonic across restarts). Safe for concurrent
// use. It does not touch the disk unless a burst outruns the ids reserved ahead (then one
// short synchronous reservation). A read-only store returns 0.
func (s *Store) NextID() session.ID {
	if s.readOnly {
		return 0
	}
	id := s.next.Add(1)
	r := s.reserved.Load()
	if id <= r {
		if id+idBlock/2 > r {
			select {
			case s.kick <- struct{}{}:
			default:
			}
		}
		return session.ID(id)
	}
	s.reserveMu.Lock()
	defer s.reserveMu.Unlock()
	if id > s.reserved.Load() {
		want := id + idBlock
		err := s.writeTx(func(tx *bolt.Tx) error {
			meta := tx.Bucket(bMeta)
			if cur := u64(meta.Get(kReserved)); cur > want {
				want = cur
			}
			return meta.Put(kReserved, u64Bytes(want))
		})
		if err != nil {
			// The store is closed or failing: the id is still unique in this run, but
			// the session will not be stored anyway.
			s.setErr(fmt.Errorf("reserving ids: %w", err))
			return session.ID(id)
		}
		s.raiseReserved(want)
	}
	return session.ID(id)
}

func (s *Store) raiseReserved(v uint64) {
	for {
		cur := s.reserved.Load()
		if v <= cur || s.reserved.CompareAndSwap(cur, v) {
			return
		}
	}
}

func (s *Store) setErr(err error) {
	msg := err.Error()
	s.lastErr.Store(&msg)
}

// Put queues a completed session for writing. It never blocks (the engine calls it from
// its observer callback, which must return at once): when the queue is full the session
// is dropped and counted in Stats.Dropped, and Put returns false; when queued sessions
// already hold Options.QueueBytes of bodies, the session's bodies wait in the overflow
// file (overflow.go: one write into the page cache, no wait for the writer), and only
// when that is full too is the session queued without its bodies (marked truncated,
// counted in Stats.BodiesDropped). The session must
// be complete and is never modified by the store. A nil session, an id of 0, a closed or
// read-only store also give false (not counted as dropped). Putting an id that is
// already stored replaces it.
func (s *Store) Put(ss *session.Session) bool {
	if ss == nil || ss.ID == 0 || s.readOnly {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return false
	}
	n := int64(bodyBytes(ss))
	var pk parked
	if n > 0 && !s.reserveBytes(n) {
		if cp, p, ok := s.ovf.park(ss); ok {
			ss, n, pk = cp, 0, p
		} else {
			s.removeLater(ss)
			ss, n = withoutBodies(ss, ReasonStoreBehind), 0
			s.bodiesDropped.Add(1)
		}
	}
	select {
	case s.queue <- item{s: ss, bytes: n, park: pk}:
		if len(s.queue) >= s.nudgeLen || n >= nudgeBodyBytes {
			s.nudgeWriter()
		}
		return true
	default:
		s.queuedBytes.Add(-n)
		if pk.ok {
			s.ovf.release()
		}
		s.dropped.Add(1)
		s.removeLater(ss)
		s.healthFailed(errQueueFull, 1, 0)
		return false
	}
}

// removeLater deletes the engine's spill files of a session Put does not store (or
// stores without its bodies) on a goroutine of its own: Put never waits on the disk. When
// too many wait (the disk is stalled), the files stay until the next start clears the
// spill folder.
func (s *Store) removeLater(ss *session.Session) {
	for _, b := range [...]*session.Body{&ss.Request.Body, responseBody(ss)} {
		if b == nil || b.Spilled == "" || b.Spilled == SpilledInStore {
			continue
		}
		s.removerOnce.Do(func() {
			s.remove = make(chan string, 4096)
			go func() {
				for p := range s.remove {
					os.Remove(p)
				}
			}()
		})
		select {
		case s.remove <- b.Spilled:
		default:
		}
	}
}

func responseBody(ss *session.Session) *session.Body {
	if ss.Response == nil {
		return nil
	}
	return &ss.Response.Body
}

// Flush waits until every session queued before the call is committed, and returns the
// error of that commit, if any.
func (s *Store) Flush() error {
	if s.readOnly {
		return nil
	}
	ch := make(chan error, 1)
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	s.queue <- item{flush: ch} // may wait for room; the writer keeps draining
	s.nudgeWriter()
	s.mu.RUnlock()
	return <-ch
}

// Stats returns the counters.
func (s *Store) Stats() Stats {
	st := Stats{
		Sessions:      s.count.Load(),
		Bytes:         s.bytes.Load(),
		Dropped:       s.dropped.Load(),
		BodiesDropped: s.bodiesDropped.Load(),
		Overflowed:    s.ovf.overflowed(),
		Missing:       s.missing,
		MovedAside:    s.movedAside,
		Evicted:       s.ret.evicted.Load(),
		LastEviction:  s.ret.last.Load(),
	}
	if p := s.lastErr.Load(); p != nil {
		st.LastError = *p
	}
	h := s.health.get()
	st.Healthy, st.HealthSince, st.Damaged = h.Healthy, h.Since, h.Damaged
	if fi, err := os.Stat(s.path); err == nil {
		st.FileSize = fi.Size()
	}
	st.Index = s.IndexStatus()
	return st
}

// Check runs bbolt's full consistency check (slow on large files: it reads every page)
// and returns every problem found, joined, or nil. On a writable store it holds the
// write lock meanwhile (commits wait): bbolt compares the pages with the live free list,
// so a commit during a check (the writer, the index backfill) would look like damage.
func (s *Store) Check() error {
	var errs []error
	check := func(tx *bolt.Tx) error {
		for e := range tx.Check() {
			errs = append(errs, e)
		}
		return errCheckDone
	}
	var err error
	if s.readOnly {
		err = s.view(check)
	} else {
		err = s.writeTx(check)
	}
	if errors.Is(err, errCheckDone) {
		err = nil
	}
	return errors.Join(append(errs, err)...)
}

// errCheckDone rolls back Check's transaction.
var errCheckDone = errors.New("check done")

// Compact writes a compacted copy of the store to dst, which must not exist. bbolt never
// shrinks its file; replace sessions.db by the copy while Inspector is not running to
// reclaim the space. It runs in a read transaction: capture goes on meanwhile, and
// sessions committed after it started are not in the copy.
func (s *Store) Compact(dst string) error {
	if err := s.Flush(); err != nil && !errors.Is(err, ErrClosed) {
		return err
	}
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("compact: %s already exists", dst)
	}
	out, err := bolt.Open(dst, 0o600, &bolt.Options{Timeout: s.opts.LockTimeout, PageSize: pageSize(), FreelistType: bolt.FreelistMapType})
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	err = guard(func() error { return bolt.Compact(out, s.db, 64<<20) })
	if err == nil {
		// The copy's body index is rebuilt from its records: no postings of deleted
		// sessions, segments packed full.
		err = out.Update(func(tx *bolt.Tx) error {
			meta := tx.Bucket(bMeta)
			if meta == nil {
				return fmt.Errorf("compact: copy has no meta bucket")
			}
			if v, err := schemaVersion(tx); err != nil || v < 4 {
				return err // a read-only store of an older schema: copied as it is
			}
			if err := reindexAll(tx); err != nil {
				return err
			}
			return meta.Put(kClean, u64Bytes(1))
		})
	}
	if err == nil {
		err = guard(func() error { return backfill(out.View, out.Update, nil) })
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// filePageSize is the bbolt page size of new files. bbolt writes every dirty page of a
// commit with its own pwrite and splits nodes at page boundaries: 16 KiB pages (instead
// of the usual 4 KiB) take a quarter of the write calls and node spills per commit under
// load, for a little more written per commit when capture trickles (a commit rewrites the
// last page of each bucket it touches). BenchmarkIngest: about 20% less CPU per session.
const filePageSize = 16 << 10

func pageSize() int { return max(filePageSize, os.Getpagesize()) }
