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
// slow disk, a starved CPU). Put hands the bodies to the file's writer goroutine, which
// appends them to DATA_DIR/sessions.db.overflow (Put never waits for the disk nor for the
// store's writer), and queues the session without them; the writer reads them back when
// it takes the session into a batch (batches stay bounded by maxBatchBytes), so memory
// stays bounded and no body is lost. Bodies waiting for the file's writer are bounded by
// parkQueueMax: when the disk does not keep up, later bodies are dropped.
// The file is emptied (truncated) whenever every parked body has been taken back, and is
// bounded by Options.OverflowBytes: beyond that, bodies are dropped as before (marked
// truncated, counted in Stats.BodiesDropped). Its bytes are only a queue: a crash loses
// them with the queued sessions, and a writable Open removes the file.

// OverflowPath is the overflow file of the store at path.
func OverflowPath(path string) string { return path + ".overflow" }

// overflow is the store's overflow file. Put must never wait on the disk, so park only
// reserves room and queues the bodies (at most parkQueueMax bytes) for a writer goroutine
// of the file's own; the prep stage waits for a parked session's write before reading it
// back. mu guards the accounting and is never held across a disk operation; io guards
// the file.
type overflow struct {
	path  string
	limit int64

	mu      sync.Mutex
	end     int64 // bytes reserved since the file was last emptied
	held    int   // parked sessions not taken back yet
	failed  bool  // a disk operation failed: the file is not used again until Open
	total   uint64
	jobs    []parkJob // for the writer goroutine, in order
	queued  int64     // body bytes in jobs and being written
	running bool
	stop    bool
	wake    chan struct{}
	stopped chan struct{}

	io  sync.Mutex
	f   *os.File // nil until the first write, and after a failure
	err error    // the last disk failure
}

// parkQueueMax bounds the body bytes parked but not yet written to the overflow file:
// beyond it (the disk does not keep up) Put drops bodies as when the file is full.
const parkQueueMax = 64 << 20

// parkJob is one write for the overflow writer: a parked session's bodies at off, or
// (truncate) emptying the file.
type parkJob struct {
	off       int64
	req, resp []byte
	t         *parkTicket
	truncate  bool
}

// parkTicket tells the prep stage when a parked session's bodies are in the file.
type parkTicket struct {
	done chan struct{}
	ok   bool // set before done is closed
}

// parked locates a queued session's bodies in the overflow file.
type parked struct {
	off       int64
	req, resp int // lengths of the request's and the response's Data
	ok        bool
	t         *parkTicket
}

// removeOverflow deletes a file left by an earlier run (its sessions were lost with it).
func removeOverflow(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing a stale overflow file: %w", err)
	}
	return nil
}

// park queues the in-memory bodies of ss for the file and returns a copy of ss without
// them and where they will be; ok is false when the file is full, failed, or the bodies
// queued for it already hold parkQueueMax bytes. It never waits on the disk.
func (o *overflow) park(ss *session.Session) (*session.Session, parked, bool) {
	req := ss.Request.Body.Data
	var resp []byte
	if ss.Response != nil {
		resp = ss.Response.Body.Data
	}
	n := int64(len(req) + len(resp))
	o.mu.Lock()
	if o.failed || o.limit < 0 || o.end+n > o.limit || o.queued+n > parkQueueMax {
		o.mu.Unlock()
		return nil, parked{}, false
	}
	p := parked{off: o.end, req: len(req), resp: len(resp), ok: true, t: &parkTicket{done: make(chan struct{})}}
	o.addLocked(parkJob{off: p.off, req: req, resp: resp, t: p.t})
	o.queued += n
	o.end += n
	o.held++
	o.total++
	o.mu.Unlock()
	cp := *ss
	cp.Request.Body.Data = nil
	if ss.Response != nil {
		r := *ss.Response
		r.Body.Data = nil
		cp.Response = &r
	}
	return &cp, p, true
}

// addLocked queues j for the writer goroutine, starting it on first use. Under o.mu.
func (o *overflow) addLocked(j parkJob) {
	o.jobs = append(o.jobs, j)
	if !o.running {
		o.running = true
		o.wake = make(chan struct{}, 1)
		o.stopped = make(chan struct{})
		go o.run()
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// run is the overflow file's writer goroutine.
func (o *overflow) run() {
	defer close(o.stopped)
	for {
		o.mu.Lock()
		for len(o.jobs) == 0 && !o.stop {
			o.mu.Unlock()
			<-o.wake
			o.mu.Lock()
		}
		jobs := o.jobs
		o.jobs = nil
		stop := o.stop
		o.mu.Unlock()
		for i := range jobs {
			j := &jobs[i]
			err := o.write(j)
			o.mu.Lock()
			o.queued -= int64(len(j.req) + len(j.resp))
			if err != nil {
				o.failed = true
			}
			o.mu.Unlock()
			if j.t != nil {
				j.t.ok = err == nil
				close(j.t.done)
			}
			*j = parkJob{}
		}
		if stop && len(jobs) == 0 {
			return
		}
	}
}

// write does one job on the file.
func (o *overflow) write(j *parkJob) error {
	o.io.Lock()
	defer o.io.Unlock()
	if j.truncate {
		if o.f == nil {
			return nil
		}
		if o.err != nil {
			o.f.Close()
			o.f = nil
			return nil
		}
		if err := o.f.Truncate(0); err != nil {
			o.err = err
			o.f.Close()
			o.f = nil
			return err
		}
		return nil
	}
	if o.err != nil {
		return o.err
	}
	if o.f == nil {
		f, err := os.OpenFile(o.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			o.err = err
			return err
		}
		o.f = f
	}
	if _, err := o.f.WriteAt(j.req, j.off); err != nil {
		o.err = err
		return err
	}
	if _, err := o.f.WriteAt(j.resp, j.off+int64(len(j.req))); err != nil {
		o.err = err
		return err
	}
	return nil
}

// unpark waits until the bodies of ss (a copy made by park, owned by the store) are in
// the file, reads them back and puts them into it. On a failure the session keeps no
// bodies (marked truncated). Either way the parked bytes are released.
func (o *overflow) unpark(ss *session.Session, p parked) (dropped bool) {
	<-p.t.done
	buf := make([]byte, p.req+p.resp)
	err := errors.New("writing the overflow file failed")
	if p.t.ok {
		o.io.Lock()
		if o.f == nil {
			err = errors.New("overflow file closed")
		} else {
			_, err = o.f.ReadAt(buf, p.off)
		}
		o.io.Unlock()
	}
	o.release()
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

// release counts a parked session taken back (or not stored: the queue was full); with
// none left the file is emptied (or closed after a failure) by the writer goroutine,
// before any later write.
func (o *overflow) release() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.held--; o.held > 0 {
		return
	}
	o.end = 0
	o.addLocked(parkJob{truncate: true})
}

// close stops the writer goroutine and removes the file (the writer has taken every
// queued session).
func (o *overflow) close() {
	o.mu.Lock()
	running := o.running
	o.stop = true
	if running {
		select {
		case o.wake <- struct{}{}:
		default:
		}
	}
	o.mu.Unlock()
	if running {
		<-o.stopped
	}
	o.io.Lock()
	defer o.io.Unlock()
	if o.f != nil {
		o.f.Close()
		o.f = nil
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
