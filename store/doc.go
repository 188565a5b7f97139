// Package store keeps sessions in one bbolt file (DATA_DIR/sessions.db).
//
// # Schema (version 5)
//
// Every per-session key starts with the session id as 8 bytes big-endian, so cursors walk
// in capture order and one session's keys are contiguous. New files use 16 KiB pages
// (filePageSize in store.go); files made earlier keep their page size.
//
//	sessions.db
//	├── meta                         schema and counters (all values 8-byte big-endian)
//	│   ├── "version"     → 5        schema version (see migrations in schema.go)
//	│   ├── "reserved"    → id       ids up to here may have been handed out (NextID reserves ahead)
//	│   ├── "allocated"   → id       highest id handed out, as recorded by the latest commit
//	│   ├── "committed"   → id       highest id ever committed (never decreases)
//	│   ├── "count"       → n        sessions stored
//	│   ├── "bytes"       → n        stored bytes of those sessions (see putSession)
//	│   ├── "clean"       → 0|1      1 when the last writer closed the store cleanly
//	│   └── "ix…"                    body index: last segment number, the backfill range
//	│                                (lo, next, hi) and its progress (total, done)
//	├── summaries                    id → summary record (compact binary, encode.go): what a list
//	│                                row needs, plus the session's stored size; List and summary
//	│                                filters scan only this bucket
//	├── sessions                     id → session.Session without messages (headers, timings,
//	│                                TLS, error, annotations, bodies of ≤ 1 KiB): binary record
//	│                                (format byte 0x03, meta_codec.go) whose place mask says
//	│                                which bodies are inline and which other buckets hold keys of
//	│                                the session; records of schema 1 (format 0x02, JSON '{';
//	│                                all bodies in the bodies bucket) are still read; schema 5
//	│                                adds the client's PID and process name (placeProcess) to
//	│                                records and an optional tail to summaries
//	├── bodies                       id ‖ part ('q' request, 's' response) ‖ uint32 chunk → ≤ 64 KiB
//	│                                of body data as it travelled (still content-encoded), for
//	│                                bodies not inline in the record
//	├── messages                     id → JSON []session.Message (WebSocket sessions)
//	├── frames                       id ‖ uint32 batch → binary frame batch: HTTP/2 and HTTP/3 frames of
//	│                                the session, both legs, in batches as the engine delivered them
//	│                                (format in frames_codec.go; not counted in MaxBytes)
//	├── certs                        SHA-256[:16] of a TLS certificate ‖ 'd' → DER, ‖ 'n' → uint64
//	│                                reference count: certificates shared by the records that
//	│                                refer to them (certs.go; not counted in MaxBytes)
//	├── ixsegs                       uint64 segment number → lowest id, highest id, sessions, text
//	│                                bytes of one body index segment
//	├── ixdata                       uint64 segment number → the segment: an inverted list gram →
//	│                                sessions (index.go, segment2.go; not counted in MaxBytes)
//	└── ixpending                    id → empty: committed sessions not yet in a segment (files
//	                                 written before 2026-12 may hold their Bloom filters)
//
// Schema history: 1 the layout above with every body in the bodies bucket and certificates
// inside the records; 2 bodies of ≤ 1 KiB inside the record; 3 the certs bucket; 4 the body
// index (sessions stored before it are indexed in the background). Opening a
// file upgrades it in one transaction without rewriting records (old ones are read as they
// are); builds that know only an older schema refuse a newer file (ErrSchemaTooNew).
//
// # Writing
//
// Put is non-blocking: it hands the completed, immutable session to a bounded queue. A
// prep goroutine takes the queue in order, reads parked bodies back and finds each
// session's grams for the body index (decoding its bodies), and hands the sessions to the
// writer through a second queue of one batch, so that work runs beside the commits. One
// writer goroutine commits many sessions per bbolt transaction (two Puts per session of
// small bodies: record and summary), when a batch reaches
// maxBatch sessions or maxBatchBytes, or ~100 ms after its first session, or at once when a
// Flush or Close asks. The writer wakes once per batch, not per session: Put wakes it only
// for a batch's first session, when the queue passes a quarter of its size (at most
// maxBatch) or when a session holds 64 KiB of body or more.
//
// Put never blocks: the engine calls it from its observer callback, which returns at once
// (the engine's Observer contract), so the store never slows traffic down. When the queue
// is full the session is dropped and counted (Stats.Dropped), never silently. Queued
// sessions hold at most Options.QueueBytes of bodies in memory (64 MiB): beyond that Put
// appends the session's bodies to the overflow file sessions.db.overflow (one write into
// the page cache, no wait for the writer; counted in Stats.Overflowed) and queues the
// session without them; the writer's prep stage reads them back as it takes the session,
// and the file is emptied whenever every parked body is back (overflow.go). What the prep
// stage adds (bodies read back, grams, Bloom filters) waits for the writer up to 32 MiB.
// Only beyond Options.OverflowBytes (1 GiB) of parked bodies does Put queue the session
// without its bodies (marked truncated, counted in Stats.BodiesDropped), so memory and disk
// stay bounded when the disk or the CPU falls behind. The overflow file is a queue, not a
// store: a crash loses it with the queue, and a writable Open removes it. The file is
// always synced on commit (never NoSync), so after a crash (kill -9, power loss) every session committed before it is
// there; at most the batch being collected is lost. Frames queued (PutFrames) before their
// session is committed are written in the session's transaction.
//
// # Body index
//
// body: and text: (filter) narrow to candidates through an inverted index and
// confirm each candidate on its record, so results are exact. The index holds the grams
// of filter.SessionText (URL, header lines, bodies decoded and cut at filter.MaxSearchBody,
// WebSocket messages): trigrams of ASCII-lower-cased bytes, plus every five consecutive
// digits of a number. The writer gathers a session's grams when it commits the session,
// puts its id in ixpending in the same transaction, and, once about 8 MiB of
// text or 8192 sessions are gathered (or the store closes), writes them as one immutable
// segment and deletes their pending keys, in one transaction: the index is written once,
// appended, never read-modified-written. Segments are format 2 (segment2.go): posting
// lists Rice-coded (about a bit per session for a gram every session has) behind a
// delta-coded directory with a skip table; format-1 segments (8-byte directory entries,
// varint gaps) of earlier files are read as they are until retention or compact replaces
// them. A kill -9 leaves the pending keys; Open gathers
// them again. Searches test pending sessions by Bloom filters of their grams, kept in
// memory (pendingBlooms; rebuilt by Open for what a crash left pending). Deleted or replaced
// sessions keep postings in old segments (confirmation drops them); retention drops a
// segment once all its sessions are evicted; Clear empties the index; Compact rebuilds it
// in the copy. A store of schema 3 gets, on its first writable Open, a backfill range of
// the sessions it holds: a background goroutine indexes it oldest first, one segment per
// transaction that also advances the range (so a kill resumes where it stopped), while
// searches scan the part not indexed yet; IndexStatus (Stats.Index) reports "index
// building: N%". Needles shorter than 3 bytes or with non-ASCII letters (the matcher folds
// Unicode case, the grams only ASCII) are searched by a scan.
//
// # Health
//
// A commit that fails for lack of space (a full disk, a file size limit) is retried with
// the batch split in halves down to single sessions, and a single session once more
// without its bodies: the sessions that fit are stored and one large session never takes
// its batch down. Every session not stored counts in Stats.Dropped, every one stored
// without its bodies in Stats.BodiesDropped. Such a commit makes the store unhealthy
// (Health, Stats.Healthy, Stats.LastError); the next commit that stores its whole batch
// makes it healthy again and clears the error. WatchHealth delivers each change at once
// (the window shows a banner, headless mode prints a line on stderr). A commit that finds
// the file damaged (bbolt's assertions, ErrCorrupt) is not retried: Health.Damaged says a
// restart with --reset-store is needed.
//
// # Ids and "N sessions may be missing"
//
// NextID is an atomic counter. Ids are reserved on disk ahead of use ("reserved", about
// idBlock ids ahead; the writer extends it with each commit), so ids stay monotonic across
// restarts and crashes without a disk write per id. After a clean close the next run
// goes on after the last id the previous run handed out (ids 1, 2, 3, stop, start: 4).
// After a crash it starts after "reserved", leaving a gap of unused ids; that gap alone
// is not reported.
//
// Stats.Missing is reported only when the previous writer did not close cleanly. It is
// allocated − committed as both were recorded by the previous run's last commit: the ids
// that run had handed out by then but whose sessions were never committed above the
// highest committed id (in flight, queued, or in the batch the crash lost). Sessions that
// began after that last commit cannot be known and are not counted; in-flight sessions
// with ids below the highest committed id are not counted either. So it is "may be
// missing": a best estimate from what was durably recorded, not an exact loss count.
//
// # Retention and file size
//
// Options.MaxSessions and Options.MaxBytes bound the store; the writer evicts the oldest
// sessions in each commit (in bounded steps, so a large eviction never stalls capture
// for long), deleting every bucket's keys up to the newest evicted id in one backward walk. bbolt reuses freed pages but never shrinks the file: after deleting many
// sessions the file keeps its size. Compact writes a compacted copy to a new file.
//
// # Damage and locking
//
// bbolt locks the file: a second writer (another Inspector on the same data directory)
// gets ErrLocked within Options.LockTimeout. A damaged or truncated file gives ErrCorrupt
// (bbolt panics on some garbage; Open recovers and turns faults into ErrCorrupt). Damage
// inside a file whose header is intact (pages zeroed or overwritten) is looked for at
// Open: a walk of every bucket's first and last pages (where capture writes), and bbolt's
// full consistency check on files up to 64 MiB, or up to 1 GiB when the last writer did not
// close cleanly (checkAtOpen; its time grows with the keys: about 20 ms for 91 MB of 3 KB
// sessions, 175 ms for 192 MB of a million small ones). With Options.MoveAsideCorrupt the
// file is renamed to sessions.db.corrupt-TIME and a fresh store is created. Damage the
// open-time check misses and a commit meets later makes the store unhealthy with
// Health.Damaged.
//
// A 0-byte file is no store: a writable Open makes it a new one; a read-only Open gives
// ErrEmpty (which is also fs.ErrNotExist). A writable Open removes sessions.db.compact
// (CompactPath) left by a compact that was killed.
package store
