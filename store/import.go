package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
)

// bImporting lists (as keys, no values) the ids an import under way has stored: they are
// deleted if the import fails or the process dies before it ends (rollbackImport at Open).
var bImporting = []byte("importing")

const (
	importChunkBytes    = 16 << 20 // body bytes per import transaction
	importChunkSessions = 4096     // sessions per import transaction
)

// Import stores sessions (e.g. from a HAR file): all of them or, on error, none. It
// assigns each a new id with NextID, writing it into the session, so the caller must own
// them (not yet shared). It returns the new ids in order.
func (s *Store) Import(sessions []*session.Session) ([]session.ID, error) {
	return s.ImportStream(func(add func(*session.Session) error) error {
		for i, ss := range sessions {
			if ss == nil {
				return fmt.Errorf("import: session %d is nil", i)
			}
			if err := add(ss); err != nil {
				return err
			}
		}
		return nil
	})
}

// ImportStream is Import for a stream of sessions: read calls add with each session in
// turn (har.Decode's callback can be add). Sessions are written in transactions of up to
// 16 MiB of bodies as they come, so memory stays bounded for any number of sessions; the
// ids written are listed in the file until the import ends, and if read or a write fails
// (or the process dies: the next Open), every session of the import is deleted again, so
// the import is still all or none. Its sessions are visible to readers while it runs.
// Imports run one at a time. add returns the error of a failed write; read should return
// it.
func (s *Store) ImportStream(read func(add func(*session.Session) error) error) ([]session.ID, error) {
	if s.readOnly {
		return nil, ErrReadOnly
	}
	s.importMu.Lock()
	defer s.importMu.Unlock()
	if err := s.Flush(); err != nil {
		return nil, err
	}
	var (
		ids     []session.ID
		pending []*session.Session
		bytes   int
		written bool // a chunk is in the file: the importing list exists
	)
	chunk := func(final bool) error {
		if len(pending) == 0 && !(final && written) {
			return nil
		}
		err := s.update(func(b *buckets, count uint64, total int64) (uint64, int64, error) {
			var list *bolt.Bucket // nil: the import ends in this transaction
			if !final {
				var err error
				if list, err = b.meta.Tx().CreateBucketIfNotExists(bImporting); err != nil {
					return 0, 0, err
				}
			}
			committed := u64(b.meta.Get(kCommitted))
			for _, ss := range pending {
				n, err := putSession(b, ss)
				if err != nil {
					return 0, 0, fmt.Errorf("import: %w", err)
				}
				count++
				total += n
				committed = max(committed, uint64(ss.ID))
				if list != nil {
					if err := list.Put(b.holdCopy(idKey(ss.ID)), nil); err != nil {
						return 0, 0, err
					}
				}
			}
			if final && written {
				if err := b.meta.Tx().DeleteBucket(bImporting); err != nil {
					return 0, 0, err
				}
			}
			if err := b.meta.Put(kCommitted, u64Bytes(committed)); err != nil {
				return 0, 0, err
			}
			count, total, _, err := s.evict(b, count, total)
			return count, total, err
		})
		if err != nil {
			return err
		}
		written = !final
		clear(pending)
		pending, bytes = pending[:0], 0
		return nil
	}
	err := read(func(ss *session.Session) error {
		if ss == nil {
			return errors.New("import: nil session")
		}
		ss.ID = s.NextID()
		ids = append(ids, ss.ID)
		pending = append(pending, ss)
		bytes += bodyBytes(ss)
		if bytes >= importChunkBytes || len(pending) >= importChunkSessions {
			return chunk(false)
		}
		return nil
	})
	if err == nil {
		err = chunk(true)
	}
	if err != nil {
		if written {
			if rerr := s.update(rollbackImport); rerr != nil {
				err = fmt.Errorf("%w; removing the sessions imported so far failed (the next start removes them): %v", err, rerr)
			}
		}
		return nil, err
	}
	return ids, nil
}

// rollbackImport deletes the sessions an import that did not end left (bImporting) and
// the list.
func rollbackImport(b *buckets, count uint64, total int64) (uint64, int64, error) {
	tx := b.meta.Tx()
	list := tx.Bucket(bImporting)
	if list == nil {
		return count, total, nil
	}
	err := list.ForEach(func(k, _ []byte) error {
		if len(k) != 8 {
			return nil
		}
		stored, ok, err := deleteSession(b, session.ID(binary.BigEndian.Uint64(k)))
		if ok {
			count--
			total -= stored
		}
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	return count, total, tx.DeleteBucket(bImporting)
}

// rollbackImportAtOpen runs rollbackImport in Open's write transaction.
func rollbackImportAtOpen(tx *bolt.Tx) error {
	if tx.Bucket(bImporting) == nil {
		return nil
	}
	b := txBuckets(tx)
	count, total, err := rollbackImport(b, u64(b.meta.Get(kCount)), int64(u64(b.meta.Get(kBytes))))
	if err != nil {
		return err
	}
	if err := b.finish(); err != nil {
		return err
	}
	return putMeta(b.meta, kCount, count, kBytes, total)
}
