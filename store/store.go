// Package store keeps sessions in one bbolt file (DATA_DIR/sessions.db).
package store

import (
	"errors"

	"inspector/engine/filter"
	"inspector/engine/session"
)

// Errors callers branch on with errors.Is.
var (
	// ErrLocked: another process (another Inspector) holds the file.
	ErrLocked = errors.New("Inspector is already running with this data directory")
	// ErrCorrupt: the file is damaged; Options.MoveAsideCorrupt starts afresh.
	ErrCorrupt = errors.New("session store is damaged")
	// ErrNotFound: no session with that id.
	ErrNotFound = errors.New("no such session")
)

// Options for Open.
type Options struct {
	MaxSessions      int   // retention by count; default 1,000,000
	MaxBytes         int64 // retention by total stored bytes; default 4 GiB
	MoveAsideCorrupt bool  // rename a corrupt file to sessions.db.corrupt-TIME and start fresh
	ReadOnly         bool
}

// Query selects a page of summaries.
type Query struct {
	Filter *filter.Expr // nil matches all
	After  session.ID   // only ids > After (0: no bound)
	Before session.ID   // only ids < Before (0: no bound)
	Limit  int          // 0: no limit
	Newest bool         // newest first instead of oldest first
}

// Stats are the store's counters.
type Stats struct {
	Sessions uint64
	Bytes    int64  // stored bytes of sessions
	FileSize int64  // size of sessions.db
	Dropped  uint64 // sessions dropped because the write queue overflowed
	Missing  uint64 // ids skipped by an earlier crash ("N sessions may be missing")
}

// Store is the session store. Its methods are safe for concurrent use.
type Store struct{}

// Open opens or creates the store at path.
func Open(path string, opts Options) (*Store, error) {
	return nil, errors.New("store: not implemented yet")
}

// Close flushes queued sessions and closes the file.
func (s *Store) Close() error { return nil }

// NextID allocates the next session id (monotonic across restarts). Safe for concurrent use.
func (s *Store) NextID() session.ID { return 0 }

// Put queues a completed session for writing. It never blocks; when the queue is full the
// session is dropped and counted in Stats.Dropped, and Put returns false.
func (s *Store) Put(ss *session.Session) bool { return false }

// Flush waits until every session queued before the call is committed.
func (s *Store) Flush() error { return nil }

// Get loads one session in full.
func (s *Store) Get(id session.ID) (*session.Session, error) { return nil, ErrNotFound }

// List returns a page of summaries.
func (s *Store) List(q Query) ([]session.Summary, error) { return nil, nil }

// Count counts the sessions matching f (nil: all).
func (s *Store) Count(f *filter.Expr) (int, error) { return 0, nil }

// Delete removes sessions; Clear removes all.
func (s *Store) Delete(ids ...session.ID) error { return nil }
func (s *Store) Clear() error                   { return nil }

// Stats returns the counters.
func (s *Store) Stats() Stats { return Stats{} }
