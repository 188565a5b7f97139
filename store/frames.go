package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
)

// Frames
//
// HTTP/2 and HTTP/3 frames arrive apart from their session (the engine delivers them when
// a stream ends, once per leg) and are kept in the frames bucket as batches:
// id ‖ uint32 seq → a compact binary batch (frames_codec.go). PutFrames queues them
// without blocking. Frames queued when their session is committed go into the session
// writer's transaction (takeFrames); a frames goroutine commits the rest (frames that
// arrive after their session) about every frameCommitEvery. A batch for a session
// not committed yet waits for it (up to frameWaitMax); a batch for a session that was
// deleted or evicted is dropped. Deleting a session deletes its frames (deleteSession).
// Frames do not count towards Options.MaxBytes.
const (
	frameCommitEvery = 200 * time.Millisecond
	frameWaitMax     = 10 * time.Second
	maxPendingFrames = 200_000
)

type frameWriter struct {
	mu      sync.Mutex
	pending map[session.ID]*pendingFrames
	n       int
	stopped bool
	flushes []chan error
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	dropped atomic.Uint64
}

type pendingFrames struct {
	frames []session.Frame
	since  time.Time
}

// startLocked starts the frames goroutine on first use; w.mu is held.
func (w *frameWriter) startLocked(s *Store) {
	if w.stop != nil {
		return
	}
	w.pending = map[session.ID]*pendingFrames{}
	w.kick = make(chan struct{}, 1)
	w.stop = make(chan struct{})
	w.done = make(chan struct{})
	go w.run(s)
}

// PutFrames queues frames of session id for storage and returns at once; it reports
// false when the frames were dropped (read-only or closed store, or too many pending).
// It is safe for concurrent use and takes ownership of frames: the caller must not touch
// the slice or its array (spare capacity included) afterwards; the frames are not copied,
// and a session's later frames may be appended in place. The engine's FrameSink hands
// over each slice once and keeps no reference to it.
func (s *Store) PutFrames(id session.ID, frames []session.Frame) bool {
	if s.readOnly || len(frames) == 0 || id == 0 {
		return false
	}
	w := &s.frames
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.n+len(frames) > maxPendingFrames {
		w.dropped.Add(uint64(len(frames)))
		return false
	}
	w.startLocked(s)
	if p := w.pending[id]; p == nil {
		w.pending[id] = &pendingFrames{since: time.Now(), frames: frames} // owned: no copy
	} else {
		p.frames = appendOwned(p.frames, frames)
	}
	w.n += len(frames)
	return true
}

// appendOwned appends b to a, which PutFrames owns: in place when a has room, else into
// a new array of exactly the combined length (a session's second delivery, the other leg,
// is usually the last: append's doubling would leave a larger array than needed).
func appendOwned(a, b []session.Frame) []session.Frame {
	if len(a)+len(b) <= cap(a) {
		return append(a, b...)
	}
	out := make([]session.Frame, len(a)+len(b))
	copy(out[copy(out, a):], b)
	return out
}

// takeFrames removes and returns the queued frames of the sessions in batch, in batch
// order (nil entries for sessions without frames), so the writer stores them in the
// transaction that stores their sessions. It returns nil when none of them has frames.
func (w *frameWriter) takeFrames(batch []*session.Session, out [][]session.Frame) [][]session.Frame {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) == 0 {
		return nil
	}
	found := false
	for _, ss := range batch {
		var f []session.Frame
		if p := w.pending[ss.ID]; p != nil {
			delete(w.pending, ss.ID)
			w.n -= len(p.frames)
			f, found = p.frames, true
		}
		out = append(out, f)
	}
	if !found {
		return nil
	}
	return out
}

// putNewFrames stores frames of a session put in this same transaction (so it has no
// stored batch yet: sequence 0).
func putNewFrames(b *buckets, id session.ID, frames []session.Frame) error {
	b.scratch = appendFrames(b.scratch[:0], frames)
	key := b.hold(12)
	binary.BigEndian.PutUint64(key, uint64(id))
	binary.BigEndian.PutUint32(key[8:], 0)
	return b.frames.Put(key, b.holdCopy(b.scratch))
}

// FlushFrames commits the queued frames of sessions already committed and returns when
// that is done. Call Flush first so the sessions themselves are committed.
func (s *Store) FlushFrames() error {
	if s.readOnly {
		return nil
	}
	w := &s.frames
	ch := make(chan error, 1)
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return ErrClosed
	}
	w.startLocked(s)
	w.flushes = append(w.flushes, ch)
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
	return <-ch
}

// FramesDropped counts frames PutFrames could not keep.
func (s *Store) FramesDropped() uint64 { return s.frames.dropped.Load() }

// close commits what is queued and stops the frames goroutine; the session writer
// has already committed its last batch.
func (w *frameWriter) close() {
	w.mu.Lock()
	w.stopped = true // no new frames; the final round commits what is queued
	started := w.stop != nil
	w.mu.Unlock()
	if !started {
		return
	}
	close(w.stop)
	<-w.done
}

func (w *frameWriter) run(s *Store) {
	defer close(w.done)
	t := time.NewTicker(frameCommitEvery)
	defer t.Stop()
	for {
		final := false
		select {
		case <-t.C:
		case <-w.kick:
		case <-w.stop:
			final = true
		}
		w.mu.Lock()
		batch := w.pending
		w.pending = map[session.ID]*pendingFrames{}
		w.n = 0
		flushes := w.flushes
		w.flushes = nil
		w.mu.Unlock()
		var err error
		if len(batch) > 0 {
			var keep map[session.ID]*pendingFrames
			keep, err = s.commitFrames(batch, final)
			if len(keep) > 0 {
				w.mu.Lock()
				for id, p := range keep {
					if q := w.pending[id]; q != nil {
						p.frames = append(p.frames, q.frames...)
					}
					w.pending[id] = p
					w.n += len(p.frames)
				}
				w.mu.Unlock()
			}
		}
		for _, ch := range flushes {
			ch <- err
		}
		if final {
			return
		}
	}
}

// commitFrames writes the batches of committed sessions and returns those still waiting
// for their session.
func (s *Store) commitFrames(batch map[session.ID]*pendingFrames, final bool) (map[session.ID]*pendingFrames, error) {
	keep := map[session.ID]*pendingFrames{}
	now := time.Now()
	err := s.writeTx(func(tx *bolt.Tx) error {
		meta, sums, fb := tx.Bucket(bMeta), tx.Bucket(bSummaries), tx.Bucket(bFrames)
		var buf []byte
		committed := session.ID(u64(meta.Get(kCommitted)))
		for id, p := range batch {
			key := idKey(id)
			if id > committed {
				if !final && now.Sub(p.since) < frameWaitMax {
					keep[id] = p
				} else {
					s.frames.dropped.Add(uint64(len(p.frames)))
				}
				continue
			}
			if sums.Get(key) == nil {
				s.frames.dropped.Add(uint64(len(p.frames)))
				continue // deleted or evicted
			}
			buf = appendFrames(buf[:0], p.frames)
			// bbolt keeps a reference to the value until the commit: copy it.
			if err := fb.Put(frameKey(key, nextFrameSeq(fb, key)), append([]byte(nil), buf...)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.frames.dropped.Add(uint64(countFrames(batch)))
		return nil, fmt.Errorf("storing frames: %w", err)
	}
	return keep, nil
}

func countFrames(m map[session.ID]*pendingFrames) (n int) {
	for _, p := range m {
		n += len(p.frames)
	}
	return n
}

func frameKey(idk []byte, seq uint32) []byte {
	return binary.BigEndian.AppendUint32(append([]byte(nil), idk...), seq)
}

// nextFrameSeq returns the sequence number after the last batch of a session.
func nextFrameSeq(fb *bolt.Bucket, idk []byte) uint32 {
	c := fb.Cursor()
	next := append(append([]byte(nil), idk...), 0xff, 0xff, 0xff, 0xff, 0xff)
	k, _ := c.Seek(next)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	if k == nil || !bytes.HasPrefix(k, idk) || len(k) != len(idk)+4 {
		return 0
	}
	return binary.BigEndian.Uint32(k[len(idk):]) + 1
}

// Frames returns the stored HTTP/2 and HTTP/3 frames of a session in time order, both
// legs; an empty result means none were captured. ErrNotFound when there is no such
// session.
func (s *Store) Frames(id session.ID) ([]session.Frame, error) {
	var out []session.Frame
	err := s.view(func(tx *bolt.Tx) error {
		key := idKey(id)
		if tx.Bucket(bSummaries).Get(key) == nil {
			return ErrNotFound
		}
		c := tx.Bucket(bFrames).Cursor()
		for k, v := c.Seek(key); k != nil && bytes.HasPrefix(k, key); k, v = c.Next() {
			batch, err := decodeFrames(v)
			if err != nil {
				return fmt.Errorf("%w: frames of session %d: %v", ErrCorrupt, id, err)
			}
			out = append(out, batch...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

var jsonUnmarshal = json.Unmarshal
