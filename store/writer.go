package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"inspector/engine/session"
)

// writer is the single goroutine that commits queued sessions. See doc.go "Writing".
//
// It wakes once per batch, not once per session: the first session of a batch wakes it;
// then it sleeps until the batch's delay is over or Put, Flush or Close nudges it (the
// queue is filling, a large body waits, or somebody waits for the commit), and takes
// everything queued at once.
func (s *Store) writer() {
	defer close(s.done)
	var (
		batch      []*session.Session
		batchBytes int
	)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	commit := func(clean bool) error {
		timer.Stop()
		err := s.commitBatch(batch, clean)
		clear(batch)
		batch, batchBytes = batch[:0], 0
		return err
	}
	// take handles one queued item; it reports false when the writer must exit.
	take := func(it item) bool {
		switch {
		case it.s != nil:
			s.queuedBytes.Add(-it.bytes)
			if it.held > 0 {
				s.prepHeld.Add(-it.held)
				select {
				case s.prepFreed <- struct{}{}:
				default:
				}
			}
			batch = append(batch, it.s)
			if it.pre != nil {
				s.pre[it.s] = it.pre
			}
			batchBytes += txBodyBytes(it.s)
			if len(batch) == 1 {
				timer.Reset(batchDelay)
			}
			if len(batch) >= maxBatch || batchBytes >= maxBatchBytes {
				commit(false)
			}
		case it.stop:
			it.flush <- commit(true)
			return false
		case it.flush != nil:
			var err error
			if len(batch) > 0 {
				err = commit(false)
			}
			it.flush <- err
		}
		return true
	}
	// drain takes what is queued now, without waiting.
	drain := func() bool {
		for {
			select {
			case it := <-s.prepped:
				if !take(it) {
					return false
				}
			default:
				return true
			}
		}
	}
	for {
		if len(batch) == 0 {
			select {
			case it := <-s.prepped:
				if !take(it) || !drain() {
					return
				}
			case <-s.kick:
				commit(false) // extends the id reservation, continues eviction
			}
			continue
		}
		select {
		case <-timer.C:
			if !drain() {
				return
			}
			if len(batch) > 0 {
				commit(false)
			}
		case <-s.nudge:
			if !drain() {
				return
			}
		}
	}
}

// prepLen is the capacity of the prep stage's output (Store.prepped): enough for a batch,
// so the writer takes a whole batch at once while the prep stage works on the next.
const prepLen = maxBatch

// prepHeldMax bounds the memory the prep stage adds to the sessions it has not yet handed
// to the writer (Store.prepHeld): bodies read back from the overflow file, grams and Bloom
// filters.
const prepHeldMax = 32 << 20

// prep is the writer's first stage, a goroutine of its own: it takes queued items in
// order, reads parked bodies back from the overflow file, finds each session's grams for
// the body index (decoding its bodies: the largest part of the writer's work), and hands
// the items on to the writer, so that this work runs beside the writer's commits instead
// of before them. It exits after handing on the stop item.
func (s *Store) prep() {
	var gs gramSet
	for it := range s.queue {
		if it.s != nil {
			// What the prep stage adds to memory (bodies read back from the overflow
			// file, grams and Bloom filters) waits in prepped beside the QueueBytes the
			// queue holds: at most prepHeldMax of it, so memory stays bounded when the
			// writer falls behind.
			for s.prepHeld.Load() > prepHeldMax {
				s.prepStalls.Add(1)
				s.nudgeWriter()
				<-s.prepFreed
			}
			if it.park.ok {
				if s.ovf.unpark(it.s, it.park) {
					s.bodiesDropped.Add(1) // the overflow file could not be read back
				}
				it.held = int64(bodyBytes(it.s))
			}
			it.pre = gs.gramsOf(it.s)
			it.held += int64(4*cap(it.pre.grams) + cap(it.pre.bloom))
			s.prepHeld.Add(it.held)
		}
		s.prepped <- it
		if it.stop {
			return
		}
		if it.flush != nil || it.bytes >= nudgeBodyBytes || len(s.prepped) >= prepLen/2 {
			s.nudgeWriter()
		}
	}
}

// nudgeWriter wakes the writer before its batch delay is over. Never blocks.
func (s *Store) nudgeWriter() {
	select {
	case s.nudge <- struct{}{}:
	default:
	}
}

// buckets are the data buckets of one write transaction.
type buckets struct {
	meta, sums, sess, bodies, msgs, frames, certs *bolt.Bucket
	// pending is the body index's list of sessions not in a segment yet (nil in files
	// without an index); ix gathers the trigrams of the sessions put (index.go).
	pending *bolt.Bucket
	ix      *ixBuilder
	// pre is the grams of sessions found by the prep stage (Store.pre).
	pre map[*session.Session]*sessionGrams
	// prestored is the body bytes an import wrote ahead of a session's record
	// (importSpilled), counted in its stored size.
	prestored map[*session.Session]int64

	// certTbl is the certificate table of the record being written; certCh gathers the
	// transaction's certificate reference changes, applied by finish (certs.go).
	certTbl *certTable
	certCh  *certChanges

	// arena holds keys and values put in this transaction: bbolt keeps references to
	// them until the commit, so they are carved from it (see hold) rather than allocated
	// one by one. The writer goroutine reuses its arena from one commit to the next.
	arena []byte
	// scratch is a reused encoding buffer; its bytes are copied into the arena.
	scratch []byte
}

// hold returns n bytes of the arena, valid until the transaction ends.
func (b *buckets) hold(n int) []byte {
	if cap(b.arena)-len(b.arena) < n {
		// A new block, twice the last up to arenaMax, so the writer's arena soon holds a
		// whole commit and later commits allocate nothing; the old block stays alive as
		// long as bbolt references it.
		size := min(max(arenaBlock, 2*cap(b.arena)), arenaMax)
		b.arena = make([]byte, 0, max(size, n))
	}
	i := len(b.arena)
	b.arena = b.arena[:i+n]
	return b.arena[i : i+n : i+n]
}

// bodyKey is bodyKey in the arena.
func (b *buckets) bodyKey(id session.ID, part byte, chunk uint32) []byte {
	k := b.hold(13)
	binary.BigEndian.PutUint64(k, uint64(id))
	k[8] = part
	binary.BigEndian.PutUint32(k[9:], chunk)
	return k
}

// encode returns what enc appends to an empty slice, in the arena: it encodes straight
// into the arena's free space when the result fits, else copies it in.
func (b *buckets) encode(enc func(dst []byte) []byte) []byte {
	free := b.arena[len(b.arena):cap(b.arena)]
	p := enc(free[:0])
	if len(p) <= len(free) && (len(p) == 0 || &p[0] == &free[0]) {
		b.arena = b.arena[:len(b.arena)+len(p)]
		return p[:len(p):len(p)]
	}
	return b.holdCopy(p)
}

// holdCopy returns a copy of p in the arena.
func (b *buckets) holdCopy(p []byte) []byte {
	c := b.hold(len(p))
	copy(c, p)
	return c
}

const (
	arenaBlock = 64 << 10
	arenaMax   = 8 << 20 // the largest arena the writer keeps between commits
)

func txBuckets(tx *bolt.Tx) *buckets {
	return &buckets{
		meta:    tx.Bucket(bMeta),
		sums:    tx.Bucket(bSummaries),
		sess:    tx.Bucket(bSessions),
		bodies:  tx.Bucket(bBodies),
		msgs:    tx.Bucket(bMessages),
		frames:  tx.Bucket(bFrames),
		certs:   tx.Bucket(bCerts),
		pending: tx.Bucket(bIxPending),
		certTbl: &certTable{},
		certCh:  &certChanges{},
	}
}

// finish applies the transaction's pending certificate reference changes.
func (b *buckets) finish() error {
	return b.certCh.apply(b)
}

// commitBatch commits batch (see commit) and, when that fails for a reason other than a
// damaged or closed file (a full disk, a file size limit), retries it split in halves down
// to single sessions, and a single session without its bodies, so the sessions that fit
// are stored and one large session never takes its batch down. Every session not stored
// counts in Stats.Dropped, every one stored without its bodies in Stats.BodiesDropped, and
// the outcome sets the store's health (health.go). It returns the first commit's error.
func (s *Store) commitBatch(batch []*session.Session, clean bool) error {
	frames := s.frames.takeFrames(batch, s.framesBuf[:0])
	err := s.commit(batch, frames, clean)
	var lost, stripped uint64
	if err != nil {
		if len(batch) > 0 && !errors.Is(err, ErrCorrupt) && !errors.Is(err, berrors.ErrDatabaseNotOpen) {
			if lost, stripped = s.commitSplit(batch, frames); lost+stripped == 0 {
				err = nil // every part fitted on its own
			}
			if clean {
				if cerr := s.commit(nil, nil, true); cerr != nil {
					err = errors.Join(err, cerr)
				}
			}
		} else {
			lost = uint64(len(batch))
			for i := range frames {
				s.frames.dropped.Add(uint64(len(frames[i])))
			}
		}
	}
	s.dropped.Add(lost)
	s.bodiesDropped.Add(stripped)
	switch {
	case err != nil:
		s.healthFailed(err, lost, stripped)
	case len(batch) > 0:
		s.healthOK()
	}
	removeSpills(batch)
	clear(s.pre)
	clear(frames)
	s.framesBuf = frames[:0]
	return err
}

// commitSplit commits batch in halves after its commit failed; it returns how many
// sessions were lost and how many were stored without their bodies.
func (s *Store) commitSplit(batch []*session.Session, frames [][]session.Frame) (lost, stripped uint64) {
	if len(batch) == 1 {
		if hasBodies(batch[0]) {
			var f [][]session.Frame // frames are small: they stay unless the session goes
			if frames != nil {
				f = frames[:1]
			}
			if s.commit([]*session.Session{withoutBodies(batch[0], "the store could not write it")}, f, false) == nil {
				return 0, 1
			}
		}
		if frames != nil {
			s.frames.dropped.Add(uint64(len(frames[0])))
		}
		return 1, 0
	}
	half := len(batch) / 2
	for _, part := range [][2]int{{0, half}, {half, len(batch)}} {
		b := batch[part[0]:part[1]]
		var f [][]session.Frame
		if frames != nil {
			f = frames[part[0]:part[1]]
		}
		if s.commit(b, f, false) == nil {
			continue
		}
		l, st := s.commitSplit(b, f)
		lost, stripped = lost+l, stripped+st
	}
	return lost, stripped
}

// commit writes batch (with frames[i], the queued frames of batch[i], when frames is not
// nil), applies retention and records the id marks in one transaction. clean marks the
// file as cleanly closed. It changes the counters only when the transaction commits.
func (s *Store) commit(batch []*session.Session, frames [][]session.Frame, clean bool) error {
	var count uint64
	var total int64
	var reserved uint64
	over := false
	err := s.writeTx(func(tx *bolt.Tx) error {
		b := txBuckets(tx)
		b.arena, b.scratch = s.arena[:0], s.scratch
		b.certTbl.cache = &s.certCache
		b.ix, b.pre = &s.ix, s.pre
		defer func() { s.arena, s.scratch = b.arena, b.scratch }()
		// Ids grow, so appends fill pages fully.
		b.sums.FillPercent, b.sess.FillPercent, b.bodies.FillPercent = 1, 1, 1
		count = u64(b.meta.Get(kCount))
		total = int64(u64(b.meta.Get(kBytes)))
		committed := u64(b.meta.Get(kCommitted))
		if frames != nil {
			b.frames.FillPercent = 1
		}
		for i, ss := range batch {
			// Every stored id is ≤ committed, so a larger id needs no delete.
			if uint64(ss.ID) <= committed {
				if old, ok, err := deleteSession(b, ss.ID); err != nil {
					return err
				} else if ok {
					count--
					total -= old
				}
			}
			n, err := putSession(b, ss)
			if err != nil {
				return fmt.Errorf("session %d: %w", ss.ID, err)
			}
			count++
			total += n
			committed = max(committed, uint64(ss.ID))
			if frames != nil && len(frames[i]) > 0 {
				if err := putNewFrames(b, ss.ID, frames[i]); err != nil {
					return fmt.Errorf("frames of session %d: %w", ss.ID, err)
				}
			}
		}
		var err error
		count, total, over, err = s.evict(b, count, total)
		if err != nil {
			return err
		}
		if err := ixFlush(b, clean); err != nil {
			return fmt.Errorf("body index: %w", err)
		}
		if err := b.finish(); err != nil {
			return err
		}
		alloc := s.next.Load()
		reserved = max(u64(b.meta.Get(kReserved)), alloc+idBlock)
		cleanV := uint64(0)
		if clean {
			cleanV = 1
		}
		return putMeta(b.meta, kCount, count, kBytes, total, kCommitted, committed,
			kAllocated, alloc, kReserved, reserved, kClean, cleanV)
	})
	if err != nil {
		return err
	}
	s.count.Store(count)
	s.bytes.Store(total)
	s.raiseReserved(reserved)
	if over && !clean {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// evict removes the oldest sessions while the store is over a limit, at most evictStep
// per call; over reports that more remain to evict. It finds the newest id to evict by
// walking the summaries from the oldest, then deletes every key up to that id in each
// bucket, walking backwards from it: no search per key (bbolt's cursor stays valid going
// backwards over deleted keys, not forwards).
func (s *Store) evict(b *buckets, count uint64, total int64) (uint64, int64, bool, error) {
	pol := s.retentionPolicy()
	over := func() bool { return count > uint64(s.opts.MaxSessions) || total > s.opts.MaxBytes }
	old := func(v []byte) bool { return pol.cutoff != 0 && v != nil && summaryStarted(v) < pol.cutoff }
	c := b.sums.Cursor()
	k, v := c.First()
	if k == nil || !over() && !old(v) {
		return count, total, false, nil
	}
	kept := b.meta.Tx().Bucket(bKept)
	var last, firstKept session.ID
	n, scanned := 0, 0
	reason := ""
	for ; k != nil && scanned < 2*evictStep; k, v = c.Next() {
		isOver := over()
		if !isOver && !old(v) {
			break
		}
		if n == evictStep {
			break
		}
		scanned++
		id := keyID(k)
		if kept != nil && kept.Get(k[:8]) != nil {
			if firstKept == 0 {
				firstKept = id
			}
			continue
		}
		if reason == "" {
			reason = s.evictReason(isOver, count, total)
		}
		last = id
		count--
		total -= summaryStored(v)
		n++
	}
	if n == 0 {
		return count, total, false, nil
	}
	var keep func(id session.ID) bool
	if firstKept != 0 {
		keep = func(id session.ID) bool { return kept.Get(idKey(id)) != nil }
	}
	for _, bk := range []*bolt.Bucket{b.sums, b.sess, b.bodies, b.msgs, b.frames} {
		var onDelete func(v []byte)
		if bk == b.sess {
			onDelete = b.certCh.remove
		}
		if err := deleteThroughExcept(bk, last, keep, onDelete); err != nil {
			return count, total, false, err
		}
	}
	ixLast := last
	if firstKept != 0 && firstKept <= last {
		ixLast = firstKept - 1 // a segment holding a kept session stays searchable
	}
	if err := evictIndex(b, ixLast); err != nil {
		return count, total, false, err
	}
	s.ret.note(uint64(n), reason)
	return count, total, n == evictStep && (over() || old(v)), nil
}

// deleteThrough deletes every key of bk whose session id is ≤ last, calling onDelete (if
// not nil) with each value first.
func deleteThrough(bk *bolt.Bucket, last session.ID, onDelete func(v []byte)) error {
	return deleteThroughExcept(bk, last, nil, onDelete)
}

// deleteThroughExcept is deleteThrough leaving the keys of the sessions keep reports
// (nil: none).
func deleteThroughExcept(bk *bolt.Bucket, last session.ID, keep func(session.ID) bool, onDelete func(v []byte)) error {
	c := bk.Cursor()
	var k, v []byte
	if last == math.MaxUint64 {
		k, v = c.Last()
	} else if k, _ = c.Seek(idKey(last + 1)); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for ; k != nil; k, v = c.Prev() {
		if len(k) >= 8 && keyID(k) > last {
			break
		}
		if keep != nil && len(k) >= 8 && keep(keyID(k)) {
			continue
		}
		if onDelete != nil {
			onDelete(v)
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// putSession writes ss into the buckets and returns its stored size.
func putSession(b *buckets, ss *session.Session) (int64, error) {
	if err := checkSessionMeta(ss); err != nil {
		return 0, err
	}
	key := b.hold(8)
	binary.BigEndian.PutUint64(key, uint64(ss.ID))
	meta := b.encode(func(dst []byte) []byte { return appendSessionRecord(dst, ss, b.certTbl) })
	place := recordPlace(meta)
	if place&placeCertRefs != 0 {
		b.certCh.add(b.certTbl)
	}
	stored := int64(len(meta)) + 8 + b.prestored[ss]
	if err := b.sess.Put(key, meta); err != nil {
		return 0, err
	}
	if place&placeRequestInline == 0 {
		n, err := putBody(b, ss.ID, PartRequest, &ss.Request.Body)
		if err != nil {
			return 0, err
		}
		stored += n
	}
	if ss.Response != nil && place&placeResponseInline == 0 {
		n, err := putBody(b, ss.ID, PartResponse, &ss.Response.Body)
		if err != nil {
			return 0, err
		}
		stored += n
	}
	if place&placeMessages != 0 {
		m, err := json.Marshal(ss.Messages)
		if err != nil {
			return 0, err
		}
		if err := b.msgs.Put(key, m); err != nil {
			return 0, err
		}
		stored += int64(len(m)) + 8
	}
	sum := ss.Summarize()
	sum.InFlight = false
	rec := b.encode(func(dst []byte) []byte {
		rec := encodeSummary(dst, &sum, stored)
		stored += int64(len(rec)) + 8
		return encodeSummary(rec[:0], &sum, stored)
	})
	if err := b.sums.Put(key, rec); err != nil {
		return 0, err
	}
	return stored, ixPut(b, key, ss, b.pre[ss])
}

// putBody stores a body's captured bytes and, when the engine spilled the rest to a file
// (Body.Spilled), the file's bytes after them, in chunks.
func putBody(b *buckets, id session.ID, part byte, body *session.Body) (int64, error) {
	bk := b.bodies
	var n int64
	data := body.Data
	i := uint32(0)
	for ; len(data) > 0; i++ {
		c := data[:min(len(data), chunkSize)]
		data = data[len(c):]
		// bbolt keeps the value until commit; the session is immutable, so no copy.
		if err := bk.Put(b.bodyKey(id, part, i), c); err != nil {
			return 0, err
		}
		n += int64(len(c)) + 13
	}
	if body.Spilled == "" || body.Spilled == SpilledInStore {
		return n, nil
	}
	f, err := os.Open(body.Spilled)
	if err != nil {
		return n, nil // gone (cleaned up, disk trouble): the session keeps what was captured
	}
	defer f.Close()
	for ; ; i++ {
		c := make([]byte, chunkSize) // must stay valid until commit
		k, err := io.ReadFull(f, c)
		if k > 0 {
			if err := bk.Put(bodyKey(id, part, i), c[:k]); err != nil {
				return 0, err
			}
			n += int64(k) + 13
		}
		if err != nil {
			return n, nil // io.EOF or ErrUnexpectedEOF: the end of the file
		}
	}
}

// txBodyBytes is the memory a session's bodies take in a write transaction: the bytes in
// memory and those read from its spill files (bbolt holds every value until the commit),
// so a batch of sessions with large spilled bodies is committed a few at a time rather
// than gigabytes at once.
func txBodyBytes(ss *session.Session) int {
	n := 0
	for _, b := range [...]*session.Body{&ss.Request.Body, responseBody(ss)} {
		if b == nil {
			continue
		}
		n += len(b.Data)
		if b.Spilled != "" && b.Spilled != SpilledInStore && b.Size > int64(len(b.Data)) {
			n += int(min(b.Size-int64(len(b.Data)), 1<<40))
		}
	}
	return n
}

// SpilledInStore is session.Body.Spilled of a stored body whose bytes beyond Data are in
// the store: read them with OpenBody.
const SpilledInStore = "store"

// removeSpills deletes the engine's spill files of sessions once they are committed (or
// dropped).
func removeSpills(batch []*session.Session) {
	for _, ss := range batch {
		if p := ss.Request.Body.Spilled; p != "" && p != SpilledInStore {
			os.Remove(p)
		}
		if ss.Response != nil {
			if p := ss.Response.Body.Spilled; p != "" && p != SpilledInStore {
				os.Remove(p)
			}
		}
	}
}

// deleteSession removes every key of id and returns its stored size; ok is false when
// it was not stored.
func deleteSession(b *buckets, id session.ID) (stored int64, ok bool, err error) {
	key := idKey(id)
	v := b.sums.Get(key)
	if v == nil {
		return 0, false, nil
	}
	stored = summaryStored(v)
	if err := b.sums.Delete(key); err != nil {
		return 0, false, err
	}
	if err := deleteRest(b, key); err != nil {
		return 0, false, err
	}
	return stored, true, nil
}

// summaryStored is the stored size recorded in a summary record (0 if unreadable).
func summaryStored(v []byte) int64 {
	if len(v) > 1 {
		if x, n := binary.Uvarint(v[1:]); n > 0 {
			return int64(x)
		}
	}
	return 0
}

// deleteRest removes the keys of the session key outside the summaries bucket: its
// record, and the messages and bodies the record's place mask says may exist, and frames.
func deleteRest(b *buckets, key []byte) error {
	place := byte(placeLegacy)
	c := b.sess.Cursor()
	if k, v := c.Seek(key); k != nil && bytes.Equal(k, key) {
		place = recordPlace(v)
		b.certCh.remove(v)
		if err := c.Delete(); err != nil {
			return err
		}
	}
	if place&placeMessages != 0 {
		if err := b.msgs.Delete(key); err != nil {
			return err
		}
	}
	if b.pending != nil {
		if err := b.pending.Delete(key); err != nil {
			return err
		}
	}
	if place&placeBodies != 0 {
		if err := deletePrefix(b.bodies, key); err != nil {
			return err
		}
	}
	return deletePrefix(b.frames, key)
}

func deletePrefix(bk *bolt.Bucket, prefix []byte) error {
	c := bk.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
