package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
	"inspector/filter"
)

// Get loads one session in full (bodies and messages included). The result is a fresh
// value the caller owns.
func (s *Store) Get(id session.ID) (*session.Session, error) {
	var ss *session.Session
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		ss, err = loadSession(tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ss, nil
}

func loadSession(tx *bolt.Tx, id session.ID) (*session.Session, error) {
	key := idKey(id)
	v := tx.Bucket(bSessions).Get(key)
	if v == nil {
		return nil, fmt.Errorf("session %d: %w", id, ErrNotFound)
	}
	ss, place, err := decodeSessionRecord(v, certLookup(tx.Bucket(bCerts)))
	if err != nil {
		return nil, fmt.Errorf("%w: session %d: %v", ErrCorrupt, id, err)
	}
	bodies := tx.Bucket(bBodies)
	if place&placeRequestInline == 0 {
		ss.Request.Body.Data = readBody(bodies, id, PartRequest)
	}
	if ss.Response != nil && place&placeResponseInline == 0 {
		ss.Response.Body.Data = readBody(bodies, id, PartResponse)
	}
	if place&placeMessages != 0 {
		if m := tx.Bucket(bMessages).Get(key); m != nil {
			if err := json.Unmarshal(m, &ss.Messages); err != nil {
				return nil, fmt.Errorf("%w: messages of session %d: %v", ErrCorrupt, id, err)
			}
		}
	}
	return ss, nil
}

// MaxInlineBody bounds the body bytes Get returns in Body.Data; a longer stored body
// (spilled by the engine) is read in full with OpenBody.
const MaxInlineBody = 8 << 20

func readBody(bk *bolt.Bucket, id session.ID, part byte) []byte {
	prefix := bodyKey(id, part, 0)[:9]
	var data []byte
	c := bk.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(data) < MaxInlineBody; k, v = c.Next() {
		data = append(data, v[:min(len(v), MaxInlineBody-len(data))]...)
	}
	return data
}

// OpenBody streams the stored body of one part (PartRequest or PartResponse) of a
// session, one chunk per short read transaction, so a large body is never held in
// memory at once. A session without that body gives an empty reader. The reader is not
// safe for concurrent use.
func (s *Store) OpenBody(id session.ID, part byte) (io.ReadCloser, error) {
	if part != PartRequest && part != PartResponse {
		return nil, fmt.Errorf("store: unknown body part %q", part)
	}
	var inline []byte
	isInline := false
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bSessions).Get(idKey(id))
		if v == nil {
			return fmt.Errorf("session %d: %w", id, ErrNotFound)
		}
		bit := byte(placeRequestInline)
		if part == PartResponse {
			bit = placeResponseInline
		}
		if recordPlace(v)&bit == 0 {
			return nil
		}
		ss, _, err := decodeSessionRecord(v, certLookup(tx.Bucket(bCerts)))
		if err != nil {
			return fmt.Errorf("%w: session %d: %v", ErrCorrupt, id, err)
		}
		isInline = true
		if part == PartRequest {
			inline = ss.Request.Body.Data
		} else if ss.Response != nil {
			inline = ss.Response.Body.Data
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if isInline {
		// A small body kept in the session record (meta_codec.go): already a copy.
		return io.NopCloser(bytes.NewReader(inline)), nil
	}
	return &bodyReader{s: s, id: id, part: part}, nil
}

type bodyReader struct {
	s     *Store
	id    session.ID
	part  byte
	chunk uint32
	buf   []byte
	eof   bool
}

func (r *bodyReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.eof {
			return 0, io.EOF
		}
		err := r.s.view(func(tx *bolt.Tx) error {
			v := tx.Bucket(bBodies).Get(bodyKey(r.id, r.part, r.chunk))
			if v == nil {
				r.eof = true
				return nil
			}
			r.buf = append(r.buf[:0], v...)
			return nil
		})
		if err != nil {
			return 0, err
		}
		r.chunk++
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *bodyReader) Close() error { r.eof, r.buf = true, nil; return nil }

// List returns a page of summaries, fresh values the caller owns. Summary-only filters
// scan the summaries bucket without loading sessions; filters that need more (header:,
// body:) load each candidate session.
func (s *Store) List(q Query) ([]session.Summary, error) {
	var out []session.Summary
	err := s.view(func(tx *bolt.Tx) error {
		q.blooms = &s.blooms
		return scan(tx, q, func(sum *session.Summary) bool {
			out = append(out, *sum)
			return q.Limit <= 0 || len(out) < q.Limit
		})
	})
	return out, err
}

// ListContext is List that gives up with ctx.Err() once ctx is done (a search a newer
// query replaces).
func (s *Store) ListContext(ctx context.Context, q Query) ([]session.Summary, error) {
	q.ctx = ctx
	return s.List(q)
}

// CountContext is Count that gives up with ctx.Err() once ctx is done.
func (s *Store) CountContext(ctx context.Context, f *filter.Expr) (int, error) {
	n := 0
	err := s.view(func(tx *bolt.Tx) error {
		return scan(tx, Query{Filter: f, ctx: ctx, blooms: &s.blooms}, func(*session.Summary) bool { n++; return true })
	})
	return n, err
}

// cancelled reports the query's context error, checked every 64 steps of a walk.
func (q *Query) cancelled(step int) error {
	if q.ctx == nil || step&63 != 0 {
		return nil
	}
	return q.ctx.Err()
}

// Count counts the sessions matching f (nil: all).
func (s *Store) Count(f *filter.Expr) (int, error) {
	if f == nil {
		return int(s.count.Load()), nil
	}
	n := 0
	err := s.view(func(tx *bolt.Tx) error {
		return scan(tx, Query{Filter: f, blooms: &s.blooms}, func(*session.Summary) bool { n++; return true })
	})
	return n, err
}

// Each calls fn with every matching session in full, in id order (q.Newest and q.Limit
// apply), loading one session at a time, for exports. Each read transaction is short:
// summaries are listed in pages first. fn may stop the walk by returning an error, which
// Each returns.
func (s *Store) Each(q Query, fn func(*session.Session) error) error {
	const page = 512
	limit := q.Limit
	done := 0
	for {
		pq := q
		pq.Limit = page
		if limit > 0 {
			pq.Limit = min(page, limit-done)
		}
		sums, err := s.List(pq)
		if err != nil {
			return err
		}
		for _, sum := range sums {
			ss, err := s.Get(sum.ID)
			if errors.Is(err, ErrNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				return err
			}
			if err := fn(ss); err != nil {
				return err
			}
			done++
		}
		if len(sums) < pq.Limit || (limit > 0 && done >= limit) {
			return nil
		}
		last := sums[len(sums)-1].ID
		if q.Newest {
			q.Before = last
		} else {
			q.After = last
		}
	}
}

// scan walks the summaries of q in order, calling emit with a copied summary for each
// match until emit returns false.
func scan(tx *bolt.Tx, q Query, emit func(*session.Summary) bool) error {
	c := tx.Bucket(bSummaries).Cursor()
	var k, v []byte
	step := c.Next
	if q.Newest {
		step = c.Prev
		if q.Before != 0 {
			k, v = c.Seek(idKey(q.Before))
			if k == nil {
				k, v = c.Last()
			} else if keyID(k) >= q.Before {
				k, v = c.Prev()
			}
		} else {
			k, v = c.Last()
		}
	} else {
		k, v = c.Seek(idKey(q.After + 1))
		if q.After == 0 {
			k, v = c.First()
		}
	}
	f := q.Filter
	if plan := planFor(f); plan != nil && tx.Bucket(bIxSegs) != nil {
		return scanIndexed(tx, q, plan, emit)
	}
	aliasMatch := f != nil && !f.NeedsSession()
	var sum session.Summary
	for i := 0; k != nil; k, v = step() {
		if err := q.cancelled(i); err != nil {
			return err
		}
		i++
		id := keyID(k)
		if (q.After != 0 && id <= q.After) || (q.Before != 0 && id >= q.Before) {
			break
		}
		switch {
		case f == nil:
		case aliasMatch:
			if _, err := decodeSummary(id, v, &sum, true); err != nil {
				return fmt.Errorf("%w: %v", ErrCorrupt, err)
			}
			if !f.MatchSummary(&sum) {
				continue
			}
		default:
			ss, err := loadSession(tx, id)
			if err != nil {
				return err
			}
			if !f.Match(ss) {
				continue
			}
		}
		if _, err := decodeSummary(id, v, &sum, false); err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if !emit(&sum) {
			break
		}
	}
	return nil
}

// update runs f in a write transaction after committing queued sessions, then refreshes
// the counters.
func (s *Store) update(f func(b *buckets, count uint64, total int64) (uint64, int64, error)) error {
	if s.readOnly {
		return ErrReadOnly
	}
	if err := s.Flush(); err != nil {
		return err
	}
	var count uint64
	var total int64
	err := s.writeTx(func(tx *bolt.Tx) error {
		b := txBuckets(tx)
		b.ix = &s.ix
		var err error
		count, total, err = f(b, u64(b.meta.Get(kCount)), int64(u64(b.meta.Get(kBytes))))
		if err != nil {
			return err
		}
		if err := ixFlush(b, false); err != nil {
			return fmt.Errorf("body index: %w", err)
		}
		if err := b.finish(); err != nil {
			return err
		}
		return putMeta(b.meta, kCount, count, kBytes, total)
	})
	if err != nil {
		return err
	}
	s.count.Store(count)
	s.bytes.Store(total)
	return nil
}

// Delete removes sessions (committing queued ones first). Ids not stored are ignored.
func (s *Store) Delete(ids ...session.ID) error {
	return s.update(func(b *buckets, count uint64, total int64) (uint64, int64, error) {
		for _, id := range ids {
			stored, ok, err := deleteSession(b, id)
			if err != nil {
				return 0, 0, err
			}
			if ok {
				count--
				total -= stored
			}
		}
		return count, total, nil
	})
}

// Clear removes all sessions, including those queued before the call. Ids keep growing.
func (s *Store) Clear() error {
	return s.update(func(b *buckets, _ uint64, _ int64) (uint64, int64, error) {
		tx := b.meta.Tx()
		for _, name := range dataBuckets {
			if err := tx.DeleteBucket(name); err != nil {
				return 0, 0, err
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return 0, 0, err
			}
		}
		if err := resetIndex(tx, 1, 0, 0); err != nil {
			return 0, 0, err
		}
		b.ix.reset = true
		return 0, 0, nil
	})
}

// SetMark sets the user's mark and comment of a stored session.
func (s *Store) SetMark(id session.ID, mark, comment string) error {
	return s.update(func(b *buckets, count uint64, total int64) (uint64, int64, error) {
		ss, err := loadSession(b.meta.Tx(), id)
		if err != nil {
			return 0, 0, err
		}
		ss.Mark, ss.Comment = mark, comment
		old, _, err := deleteSession(b, id)
		if err != nil {
			return 0, 0, err
		}
		n, err := putSession(b, ss)
		return count, total - old + n, err
	})
}
