package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"inspector/engine/session"
)

// The overflow file: where Put parks the bodies of sessions queued while the queue already
// holds Options.QueueBytes of bodies in memory (the writer fell behind: a segment write, a
// slow disk, a starved CPU). Put appends the bodies to DATA_DIR/sessions.db.overflow
// (one write into the page cache; it never waits for the writer) and queues the session
// without them; the writer reads them back when it takes the session into a batch
// (batches stay bounded by maxBatchBytes), so memory stays bounded and no body is lost.
// The file is emptied (truncated) whenever every parked body has been taken back, and is
// bounded by Options.OverflowBytes: beyond that, bodies are dropped as before (marked
// truncated, counted in Stats.BodiesDropped). Its bytes are only a queue: a crash loses
// them with the queued sessions, and a writable Open removes the file.

// OverflowPath is the overflow file of the store at path.
func OverflowPath(path string) string { return path + ".overflow" }

// overflow is the store's overflow file.
type overflow struct {
	path  string
	limit int64

	mu    sync.Mutex
	f     *os.File // nil until the first park, and after a failure
	end   int64    // bytes written since the file was last emptied
	held  int      // parked sessions not taken back yet
	err   error    // the last write failure (the file is not used again until Open)
	total uint64   // sessions ever parked (Stats.Overflowed)
}

// parked locates a queued session's bodies in the overflow file.
type parked struct {
	off       int64
	req, resp int // lengths of the request's and the response's Data
	ok        bool
}

// removeOverflow deletes a file left by an earlier run (its sessions were lost with it).
func removeOverflow(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing a stale overflow file: %w", err)
	}
	return nil
}

// park writes the in-memory bodies of ss to the file and returns a copy of ss without
// them and where they are; ok is false when the file is full or cannot be written.
func (o *overflow) park(ss *session.Session) (*session.Session, parked, bool) {
	req := ss.Request.Body.Data
	var resp []byte
	if ss.Response != nil {
		resp = ss.Response.Body.Data
	}
	n := int64(len(req) + len(resp))
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil || o.limit < 0 || o.end+n > o.limit {
		return nil, parked{}, false
	}
	if o.f == nil {
		f, err := os.OpenFile(o.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			o.err = err
			return nil, parked{}, false
		}
		o.f, o.end = f, 0
	}
	p := parked{off: o.end, req: len(req), resp: len(resp), ok: true}
	if _, err := o.f.WriteAt(req, p.off); err != nil {
		o.fail(err)
		return nil, parked{}, false
	}
	if _, err := o.f.WriteAt(resp, p.off+int64(len(req))); err != nil {
		o.fail(err)
		return nil, parked{}, false
	}
	o.end += n
	o.held++
	o.total++
	cp := *ss
	cp.Request.Body.Data = nil
	if ss.Response != nil {
		r := *ss.Response
		r.Body.Data = nil
		cp.Response = &r
	}
	return &cp, p, true
}

// fail stops using the file after a write error (a full disk): later sessions lose their
// bodies as without the file. Sessions already parked are still read back. Under o.mu.
func (o *overflow) fail(err error) {
	o.err = err
	if o.held == 0 {
		o.closeLocked()
	}
}

// unpark reads back the bodies of ss (a copy made by park, owned by the store) and puts
// them into it. On a read error the session keeps no bodies (marked truncated). Either
// way the parked bytes are released.
func (o *overflow) unpark(ss *session.Session, p parked) (dropped bool) {
	buf := make([]byte, p.req+p.resp)
	o.mu.Lock()
	var err error
	if o.f == nil {
		err = errors.New("overflow file closed")
	} else {
		_, err = o.f.ReadAt(buf, p.off)
	}
	o.releaseLocked()
	o.mu.Unlock()
	if err != nil {
		stripParked(ss, p)
		return true
	}
	ss.Request.Body.Data = buf[:p.req:p.req]
	if ss.Response != nil {
		ss.Response.Body.Data = buf[p.req:]
	}
	return false
}

// release drops a parked session that is not stored (the queue was full).
func (o *overflow) release() {
	o.mu.Lock()
	o.releaseLocked()
	o.mu.Unlock()
}

// releaseLocked counts a parked session taken back; with none left the file is emptied
// (or closed after a failure). Under o.mu.
func (o *overflow) releaseLocked() {
	if o.held--; o.held > 0 || o.f == nil {
		return
	}
	if o.err != nil {
		o.closeLocked()
		return
	}
	if err := o.f.Truncate(0); err != nil {
		o.err = err
		o.closeLocked()
		return
	}
	o.end = 0
}

func (o *overflow) closeLocked() {
	if o.f != nil {
		o.f.Close()
		o.f = nil
	}
}

// close removes the file (the writer has taken every queued session).
func (o *overflow) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.f != nil {
		o.closeLocked()
		os.Remove(o.path)
	}
}

// overflowed is the count of sessions ever parked.
func (o *overflow) overflowed() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.total
}

// stripParked marks the bodies park took from ss as not captured.
func stripParked(ss *session.Session, p parked) {
	if p.req > 0 {
		ss.Request.Body.Truncated = true
		ss.Flags |= session.FlagReqTruncated
	}
	if p.resp > 0 && ss.Response != nil {
		ss.Response.Body.Truncated = true
		ss.Flags |= session.FlagRespTruncated
	}
}
