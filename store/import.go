package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

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
		// prestored is the body bytes written ahead of their sessions' records.
		prestored map[*session.Session]int64
	)
	chunk := func(final bool) error {
		if len(pending) == 0 && !(final && written) {
			return nil
		}
		err := s.update(func(b *buckets, count uint64, total int64) (uint64, int64, error) {
			b.prestored = prestored
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
		for _, ss := range pending {
			delete(prestored, ss)
		}
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
		if hasSpillFile(ss) {
			// A body in a file (har.Limits.SpillDir): written ahead of the record, a
			// transaction of 16 MiB at a time, so its bytes are never all in memory.
			if err := chunk(false); err != nil {
				removeSpills([]*session.Session{ss})
				return err
			}
			n, err := s.importSpilled(ss)
			removeSpills([]*session.Session{ss})
			if err != nil {
				return err
			}
			written = true
			if prestored == nil {
				prestored = map[*session.Session]int64{}
			}
			prestored[ss] = n
		}
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
		removeSpills(pending)
		if written {
			if rerr := s.update(rollbackImport); rerr != nil {
				err = fmt.Errorf("%w; removing the sessions imported so far failed (the next start removes them): %v", err, rerr)
			}
		}
		return nil, err
	}
	return ids, nil
}

func hasSpillFile(ss *session.Session) bool {
	for _, b := range [...]*session.Body{&ss.Request.Body, responseBody(ss)} {
		if b != nil && b.Spilled != "" && b.Spilled != SpilledInStore {
			return true
		}
	}
	return false
}

// importSpilled writes the bytes of ss's bodies that are in spill files into the bodies
// bucket, after the chunks Data will take, in transactions of importChunkBytes, listing
// ss.ID as importing; each such body's Spilled becomes SpilledInStore. It returns the
// bytes stored, for the session's record. The files are removed once written.
func (s *Store) importSpilled(ss *session.Session) (int64, error) {
	var stored int64
	for _, part := range [...]struct {
		b    *session.Body
		part byte
	}{{&ss.Request.Body, PartRequest}, {responseBody(ss), PartResponse}} {
		body := part.b
		if body == nil || body.Spilled == "" || body.Spilled == SpilledInStore {
			continue
		}
		f, err := os.Open(body.Spilled)
		if err != nil {
			return 0, fmt.Errorf("import: %w", err)
		}
		next := uint32((len(body.Data) + chunkSize - 1) / chunkSize)
		for eof := false; !eof; {
			err = s.update(func(b *buckets, count uint64, total int64) (uint64, int64, error) {
				list, err := b.meta.Tx().CreateBucketIfNotExists(bImporting)
				if err != nil {
					return 0, 0, err
				}
				if err := list.Put(idKey(ss.ID), nil); err != nil {
					return 0, 0, err
				}
				for n := 0; n < importChunkBytes; {
					c := make([]byte, chunkSize) // must stay valid until commit
					k, rerr := io.ReadFull(f, c)
					if k > 0 {
						if err := b.bodies.Put(bodyKey(ss.ID, part.part, next), c[:k]); err != nil {
							return 0, 0, err
						}
						next++
						n += k
						stored += int64(k) + 13
					}
					if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
						eof = true
						break
					}
					if rerr != nil {
						return 0, 0, fmt.Errorf("import: reading a spilled body: %w", rerr)
					}
				}
				return count, total, nil
			})
			if err != nil {
				f.Close()
				return 0, err
			}
		}
		f.Close()
		os.Remove(body.Spilled)
		body.Spilled = SpilledInStore
	}
	return stored, nil
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
		} else if err == nil {
			// Body bytes written ahead of a record that never was (importSpilled).
			err = deletePrefix(b.bodies, k)
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
