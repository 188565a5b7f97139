// Package frames is the engine's frame capture: a recorder (Rec) per HTTP/2 or HTTP/3
// connection on either leg, fed by a tap on an HTTP/2 connection's decrypted bytes
// (H2Tap) or by quic-go's qlog events (QUICTracer), that links each stream to its session
// and hands a session's frames to the engine's FrameSink. The engine passes in what it
// shares (Env: its capture flag, the sink, its log, its connection ids); the package
// keeps the upstream recorders and the dropped-frames count. The design, its costs and
// bounds are in the section "Frame capture" of engine/doc.go.
package frames

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	h3qlog "github.com/quic-go/quic-go/http3/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"inspector/engine/session"
)

// The legs a recorder can be on (session.Frame.Leg).
const (
	LegClient   = "client"
	LegUpstream = "upstream"
)

// Env is what frame capture needs of its engine.
type Env struct {
	// Capture is the engine's capture flag: while it is off nothing is recorded, and a
	// tap that sees it off passes bytes through for good.
	Capture *atomic.Bool
	// Sink gets each session's frames (Config.FrameSink); nil: frames are parsed and
	// dropped.
	Sink func(session.ID, []session.Frame)
	// Logf reports a tap that stopped parsing; nil: not reported.
	Logf func(format string, args ...any)
	// NextConnID numbers a connection that has no id yet (an inbound HTTP/3 one).
	NextConnID func() uint64
}

// Capture is an engine's frame capture: the recorders of its upstream connections, and
// the count of frames dropped. Safe for concurrent use.
type Capture struct {
	on         *atomic.Bool
	sink       func(session.ID, []session.Frame)
	logf       func(format string, args ...any)
	nextConnID func() uint64

	dropped atomic.Uint64
	up      sync.Map // upstream connection id → *Rec
}

// New returns the frame capture of an engine.
func New(env Env) *Capture {
	c := &Capture{on: env.Capture, sink: env.Sink, logf: env.Logf, nextConnID: env.NextConnID}
	if c.on == nil {
		c.on = new(atomic.Bool)
		c.on.Store(true)
	}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	if c.nextConnID == nil {
		var ids atomic.Uint64
		c.nextConnID = func() uint64 { return ids.Add(1) }
	}
	return c
}

// Dropped is how many frames were not recorded: over a connection's maxHeldFrames, or
// in a tap direction that stopped on a frame or header block over tapMaxPartial bytes
// (Stats.FramesDropped).
func (c *Capture) Dropped() uint64 { return c.dropped.Load() }

// Frame capture: see the section "Frame capture" in engine/doc.go.
const (
	maxHeldFrames     = 4096
	maxConnFrames     = 128 // connection-level frames kept per connection (oldest after the first 16 go)
	maxEndedUnlinked  = 64  // ended streams kept waiting for a session announcement
	maxRetired        = 32  // delivered streams kept for their late frames
	maxTapFrameLength = 1<<24 - 1
)

// Rec collects the frames of one connection. Safe for concurrent use.
type Rec struct {
	c      *Capture
	leg    string
	proto  string
	connID uint64

	mu       sync.Mutex
	conn     []session.Frame
	streams  map[uint64]*streamFrames
	linked   map[session.ID]*streamFrames // streams linked to a session, not delivered yet
	pending  map[reqKey]sidQueue          // announced sessions without a stream
	unlinked map[reqKey][]uint64          // streams without a session
	ended    []uint64                     // ended unlinked streams, oldest first
	held     int
	finished bool
	retired  []uint64 // flushed streams kept for late frames, oldest first
	// openingFixed: streams hold copies of conn[:connOpening], so later connection frames
	// go after them whatever their time.
	openingFixed bool
	gone         uint64        // streams below this id that are not in streams were dropped from it
	free         *streamFrames // a stream let go by retire, reused by the next new stream

	tap *H2Tap // HTTP/2: the tap whose buffers hold this connection's frames not parsed yet
}

type streamFrames struct {
	id             uint64 // the stream's id
	sid            session.ID
	key            reqKey
	frames         []session.Frame
	endIn, endOut  bool
	reset, flushed bool
	// HTTP/2: the session completed and waits for the stream to end in that direction
	// (counted in the tap direction's want).
	waitIn, waitOut bool
	// The first base frames are the connection's opening frames, copied in when the
	// stream began (see add); start is the time of the stream's first own frame.
	base  int
	start time.Time
}

func newRec(c *Capture, leg, proto string, connID uint64) *Rec {
	return &Rec{c: c, leg: leg, proto: proto, connID: connID,
		streams: map[uint64]*streamFrames{}, linked: map[session.ID]*streamFrames{}, pending: map[reqKey]sidQueue{}, unlinked: map[reqKey][]uint64{}}
}

// sidQueue is the announced sessions of one request, oldest first; the usual single one
// needs no slice.
type sidQueue struct {
	first session.ID
	rest  []session.ID
}

// reqKey is the request a stream carries, to pair it with its session; the zero value
// is no request.
type reqKey struct{ method, path string }

func requestKey(method, path string) reqKey { return reqKey{method, path} }

// add records one frame and delivers what it completes. connLevel frames belong to the
// whole connection.
func (r *Rec) add(f session.Frame, connLevel bool, key reqKey, end bool) {
	r.deliver(r.put(&f, connLevel, key, end))
}

// put records one frame (*f is filled in and copied, not kept) and returns what is to be
// delivered now: the stream's frames if f ended it, or f alone if it came late for a
// delivered stream. The caller delivers it; put itself calls no sink, so the tap's
// parser can deliver after its parse, on a shallower stack.
func (r *Rec) put(f *session.Frame, connLevel bool, key reqKey, end bool) delivery {
	if !r.c.on.Load() {
		return delivery{} // no sessions are recorded, so no frames either
	}
	f.Leg, f.Proto, f.ConnID = r.leg, r.proto, r.connID
	var flush delivery
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return delivery{}
	}
	if connLevel {
		if len(r.conn) >= maxConnFrames {
			r.conn = append(r.conn[:16], r.conn[len(r.conn)-maxConnFrames/2:]...)
		}
		floor := 0
		if r.openingFixed {
			floor = connOpening
		}
		r.conn = appendByTime(r.conn, f, floor)
		r.mu.Unlock()
		return delivery{}
	}
	st := r.streams[f.Stream]
	if st == nil {
		if f.Stream < r.gone {
			// A late frame of a stream delivered long ago (new streams get higher ids).
			r.mu.Unlock()
			return delivery{}
		}
		st = r.newStream(f.Stream)
		// One array for what is usually delivered: the opening frames and a few of the
		// stream's own (take merges connection frames into its room).
		st.frames = make([]session.Frame, 0, r.streamCap())
		if len(r.conn) >= connOpening {
			// Every session gets the opening frames: copy them in now, in the slice
			// that will be delivered, rather than merging them in at delivery.
			r.openingFixed = true
			st.frames = st.frames[:connOpening]
			copy(st.frames, r.conn[:connOpening])
			st.base = connOpening
		}
		r.streams[f.Stream] = st
	}
	if st.flushed {
		// A late frame (an HTTP/3 DATA parsed after the QUIC FIN, a WINDOW_UPDATE after
		// END_STREAM): the session gets it on its own.
		sid := st.sid
		r.mu.Unlock()
		return lateFrame(sid, f)
	}
	if r.held >= maxHeldFrames {
		r.mu.Unlock()
		r.c.dropped.Add(1)
		return delivery{}
	}
	st.frames = appendByTime(st.frames, f, 0)
	if st.start.IsZero() || f.Time.Before(st.start) {
		st.start = f.Time
	}
	r.held++
	if key != (reqKey{}) && st.key == (reqKey{}) && st.sid == 0 {
		st.key = key
		if q, ok := r.pending[key]; ok {
			st.sid = q.first
			r.linked[st.sid] = st
			if len(q.rest) == 0 {
				delete(r.pending, key)
			} else {
				r.pending[key] = sidQueue{first: q.rest[0], rest: q.rest[1:]}
			}
		} else {
			r.unlinked[key] = append(r.unlinked[key], f.Stream)
		}
	}
	if end {
		if f.Dir == "in" {
			st.endIn = true
		} else {
			st.endOut = true
		}
	}
	if st.endIn && st.endOut || st.reset {
		flush = r.ended1(f.Stream, st)
	}
	r.mu.Unlock()
	return flush
}

// endStream marks a stream ended in one direction (dir "in"/"out") or reset, and returns
// its frames when they are to be delivered now (the caller delivers them).
func (r *Rec) endStream(stream uint64, dir string, reset bool) delivery {
	r.mu.Lock()
	st := r.streams[stream]
	if st == nil || st.flushed || r.finished {
		r.mu.Unlock()
		return delivery{}
	}
	switch {
	case reset:
		st.reset = true
	case dir == "in":
		st.endIn = true
	default:
		st.endOut = true
	}
	var flush delivery
	if st.endIn && st.endOut || st.reset {
		flush = r.ended1(stream, st)
	}
	r.mu.Unlock()
	return flush
}

// ended1 handles a stream that ended; r.mu is held. It returns the stream when its frames
// are to be delivered now.
func (r *Rec) ended1(stream uint64, st *streamFrames) delivery {
	if st.sid != 0 {
		return r.take(stream, st)
	}
	r.ended = append(r.ended, stream)
	if len(r.ended) > maxEndedUnlinked {
		old := r.ended[0]
		r.ended = r.ended[1:]
		if ost := r.streams[old]; ost != nil && ost.sid == 0 {
			r.forget(old, ost)
		}
	}
	return delivery{}
}

// delivery is what goes to FrameSink: a session's frames.
type delivery struct {
	sid    session.ID
	frames []session.Frame
}

// lateFrame returns the delivery of a frame that came after its stream's (none when the
// stream had no session). Apart from put, to keep put's stack frame small.
//
//go:noinline
func lateFrame(sid session.ID, f *session.Frame) delivery {
	if sid == 0 {
		return delivery{}
	}
	return delivery{sid: sid, frames: []session.Frame{*f}}
}

// newStream returns an empty streamFrames for stream id (a retired one when there is
// one); r.mu is held. Not inlined, to keep put's stack frame small.
//
//go:noinline
func (r *Rec) newStream(id uint64) *streamFrames {
	st := r.free
	if st == nil {
		return &streamFrames{id: id}
	}
	r.free = nil
	*st = streamFrames{id: id}
	return st
}

// streamRoom is how many frames of its own (and connection frames merged in at delivery)
// a stream's slice has room for beyond connOpening before it grows: a small exchange
// (HEADERS each way and a DATA) and the connection frames of its lifetime fit.
const streamRoom = 4

// streamCap is the capacity a new stream's slice gets. An upstream stream's is doubled:
// its session's frames usually reach the sink first (the client leg's stream ends when
// the proxy has written the response's end, after the upstream's ended), and the sink
// can then append the client leg's frames in place (store.PutFrames does), instead of
// allocating an array for both and copying.
func (r *Rec) streamCap() int {
	if r.leg == LegUpstream {
		return 2 * (connOpening + streamRoom)
	}
	return connOpening + streamRoom
}

// take removes a linked stream's frames for delivery; r.mu is held. The delivered slice
// is no longer referenced by r.
func (r *Rec) take(stream uint64, st *streamFrames) delivery {
	out := delivery{sid: st.sid, frames: st.frames}
	if r.linked[st.sid] == st {
		delete(r.linked, st.sid)
	}
	if st.waitIn {
		r.tap.in.want.Add(-1)
	}
	if st.waitOut {
		r.tap.out.want.Add(-1)
	}
	st.waitIn, st.waitOut = false, false
	own := len(st.frames) - st.base
	r.held -= own
	st.frames, st.flushed = nil, true
	r.retire(stream)
	if opening, since := r.connFramesFor(st.start, own > 0, st.base); len(opening)+len(since) > 0 {
		out.frames = mergeFrames(opening, since, out.frames)
	}
	return out
}

// connOpening is how many of a connection's first connection-level frames (the SETTINGS
// exchange and the first WINDOW_UPDATEs) go with every session on it.
const connOpening = 8

// connFramesFor returns the connection-level frames that go with a stream's frames (the
// connection's opening ones and those seen since the stream's first frame at start; all
// of them if it has none), leaving out the first skip ones (already copied into the
// stream's frames), as two subslices of r.conn (no copy; valid while r.mu is held).
func (r *Rec) connFramesFor(start time.Time, has bool, skip int) (opening, since []session.Frame) {
	if !has || len(r.conn) <= connOpening {
		return r.conn[skip:], nil
	}
	i := sort.Search(len(r.conn), func(i int) bool { return !r.conn[i].Time.Before(start) })
	if i <= connOpening {
		return r.conn[skip:], nil
	}
	return r.conn[skip:connOpening], r.conn[i:]
}

// retire notes that a stream's frames went out (or were dropped); the newest maxRetired
// such streams stay in r.streams so that their late frames still reach their session,
// older ones go. r.mu is held.
func (r *Rec) retire(stream uint64) {
	r.retired = append(r.retired, stream)
	if len(r.retired) <= maxRetired {
		return
	}
	old := r.retired[0]
	r.retired = r.retired[1:]
	if st := r.streams[old]; st != nil && st.flushed {
		// Nothing else points to a retired stream (ended, unlinked and linked hold ids
		// or unflushed streams): reuse it.
		r.free = st
	}
	delete(r.streams, old)
	r.gone = max(r.gone, old+1)
}

// forget drops an unlinked stream; r.mu is held.
func (r *Rec) forget(stream uint64, st *streamFrames) {
	r.held -= len(st.frames) - st.base
	st.frames, st.flushed = nil, true
	r.retire(stream)
	if q := r.unlinked[st.key]; len(q) > 0 {
		for i, s := range q {
			if s == stream {
				r.unlinked[st.key] = append(q[:i:i], q[i+1:]...)
				break
			}
		}
		if len(r.unlinked[st.key]) == 0 {
			delete(r.unlinked, st.key)
		}
	}
}

// mergeFrames returns the connection frames (opening then since, which follow each other
// in time) and the stream frames in time order, in one slice: streamFrames' array when it
// has room (its contents are overwritten), else a new one; each list is in time order
// already (appendByTime), so a linear merge does it (the stable sort after it is a safety
// net). opening and since must not share streamFrames' array.
func mergeFrames(opening, since, streamFrames []session.Frame) []session.Frame {
	nc := len(opening) + len(since)
	n := nc + len(streamFrames)
	var out []session.Frame
	if cap(streamFrames) >= n {
		// In place: the stream frames move to the end, and the merge fills the array
		// from the front; it writes at i+j, before the stream frame it reads at nc+j.
		out = streamFrames[:n]
		copy(out[nc:], streamFrames)
		streamFrames = out[nc:]
	} else {
		out = make([]session.Frame, n)
	}
	i, j := 0, 0
	for i < nc && j < len(streamFrames) {
		var c *session.Frame
		if i < len(opening) {
			c = &opening[i]
		} else {
			c = &since[i-len(opening)]
		}
		if streamFrames[j].Time.Before(c.Time) {
			out[i+j] = streamFrames[j]
			j++
		} else {
			out[i+j] = *c
			i++
		}
	}
	if i < len(opening) {
		i += copy(out[i+j:], opening[i:])
	}
	if i < nc {
		i += copy(out[i+j:], since[i-len(opening):])
	}
	copy(out[i+j:], streamFrames[j:])
	for k := 1; k < len(out); k++ {
		if out[k].Time.Before(out[k-1].Time) {
			slices.SortStableFunc(out, func(a, b session.Frame) int { return a.Time.Compare(b.Time) })
			break
		}
	}
	return out
}

// appendByTime adds f to fs, which is in time order, keeping the order (f goes after
// frames of the same time), but not before fs[floor]. Each direction is parsed in order,
// but one direction may be parsed after the other got ahead, so f usually goes last or a
// few places before.
// *f is copied, not kept.
func appendByTime(fs []session.Frame, f *session.Frame, floor int) []session.Frame {
	i := len(fs)
	for i > floor && fs[i-1].Time.After(f.Time) {
		i--
	}
	fs = append(fs, *f)
	if i < len(fs)-1 {
		copy(fs[i+1:], fs[i:len(fs)-1])
		fs[i] = *f
	}
	return fs
}

// link announces that session id carries the request (method, path) on this connection.
func (r *Rec) Link(id session.ID, method, path string) {
	key := reqKey{method, path}
	var flush delivery
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return
	}
	if q := r.unlinked[key]; len(q) > 0 {
		stream := q[0]
		r.unlinked[key] = q[1:]
		if len(q) == 1 {
			delete(r.unlinked, key)
		}
		if st := r.streams[stream]; st != nil && !st.flushed {
			st.sid = id
			r.linked[id] = st
			if st.endIn && st.endOut || st.reset {
				flush = r.take(stream, st)
			}
		}
	} else {
		if q, ok := r.pending[key]; ok {
			q.rest = append(q.rest, id)
			r.pending[key] = q
		} else {
			r.pending[key] = sidQueue{first: id}
		}
	}
	r.mu.Unlock()
	r.deliver(flush)
}

// finish delivers the frames of every linked stream; the connection is gone.
func (r *Rec) finish() {
	var out []delivery
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return
	}
	for id, st := range r.streams {
		if st.sid != 0 && !st.flushed && len(st.frames) > 0 {
			out = append(out, r.take(id, st))
		}
	}
	r.finished = true
	r.streams, r.linked, r.pending, r.unlinked, r.conn, r.free = nil, nil, nil, nil, nil, nil
	r.mu.Unlock()
	for _, st := range out {
		r.deliver(st)
	}
	if r.leg == LegUpstream {
		r.c.up.Delete(r.connID)
	}
}

func (r *Rec) deliver(st delivery) {
	if len(st.frames) == 0 {
		return
	}
	if sink := r.c.sink; sink != nil {
		sink(st.sid, st.frames)
	}
}

// ConnID is the id of the recorder's connection.
func (r *Rec) ConnID() uint64 { return r.connID }

// Upstream returns the recorder of upstream connection connID, or nil.
func (c *Capture) Upstream(connID uint64) *Rec {
	if v, ok := c.up.Load(connID); ok {
		return v.(*Rec)
	}
	return nil
}

// --- HTTP/2: a tap on the decrypted bytes ---

// Parsing is lazy: the tap's Read and Write append a shortened copy of the bytes (see
// shorten) to a per-direction buffer and return; nothing runs in the background. The
// buffer is parsed, in order, on the goroutine that needs its frames:
//   - the engine completing a session (Rec.SessionDone parses both directions);
//   - a Read or Write that carries a frame ending a stream (END_STREAM or RST_STREAM)
//     while a completed session still waits for its stream to end (the response's last
//     frame is usually written after the handler returned);
//   - a Read or Write that finds the buffer over tapParseBytes or tapParseMarks (so
//     memory stays bounded on connections whose sessions never complete);
//   - the connection closing (finish).
//
// Capture off: while the engine's capture flag (Env.Capture) is off a tap passes bytes straight through. A tap that
// sees capture off once stops for good (both directions): the bytes it did not see held
// HPACK table updates, so later header blocks could not be decoded truthfully. Connections
// opened after capture is back on record as usual.
const (
	tapParseBytes = 64 << 10 // buffered copy that triggers an inline parse
	tapParseMarks = 1024     // buffered reads or writes that trigger an inline parse
	tapMaxPartial = 1 << 20  // bytes of one unfinished frame or header block that stop capture

	tapMaxHeaderList = 1 << 20 // decoded bytes (RFC 9113 sizes) kept of one header block
)

// H2Tap passes a connection's bytes through unchanged and keeps a shortened copy of each
// read and write for lazy parsing. It keeps the TLS state visible to x/net/http2.
type H2Tap struct {
	net.Conn
	in, out *tapDir
	rec     *Rec
	off     atomic.Bool  // capture was seen off: the tap passes bytes through for good
	done    atomic.Int32 // directions closed; the second one finishes the recorder
}

// NewH2Tap wraps nc, the decrypted bytes of HTTP/2 connection connID on leg. On the
// client leg the client preface is read ("in"); on the upstream leg it is written
// ("out").
func (c *Capture) NewH2Tap(nc net.Conn, leg string, connID uint64) *H2Tap {
	rec := newRec(c, leg, session.HTTP2, connID)
	t := &H2Tap{Conn: nc, rec: rec}
	rec.tap = t
	prefaceIn := leg == LegClient
	t.in = newTapDir(t, "in", prefaceIn)
	t.out = newTapDir(t, "out", !prefaceIn)
	if !c.on.Load() {
		t.off.Store(true)
	}
	if leg == LegUpstream {
		c.up.Store(connID, rec)
	}
	return t
}

// Rec is the recorder of the tap's connection.
func (t *H2Tap) Rec() *Rec { return t.rec }

// Stale says whether the tap saw capture off and passes bytes through for good while
// capture is on again: the HPACK state it did not follow makes later header blocks
// undecodable, so the connection is not to be reused.
func (t *H2Tap) Stale() bool { return t.off.Load() && t.rec.c.on.Load() }

func (t *H2Tap) Read(p []byte) (int, error) {
	n, err := t.Conn.Read(p)
	if n > 0 && !t.off.Load() {
		t.in.feed(p[:n])
	}
	if err != nil {
		t.in.close()
	}
	return n, err
}

func (t *H2Tap) Write(p []byte) (int, error) {
	n, err := t.Conn.Write(p)
	if n > 0 && !t.off.Load() {
		t.out.feed(p[:n])
	}
	if err != nil {
		t.out.close()
	}
	return n, err
}

func (t *H2Tap) Close() error {
	err := t.Conn.Close()
	t.in.close()
	t.out.close()
	return err
}

// ConnectionState reports the TLS state of the wrapped connection (x/net/http2 looks
// for this method).
func (t *H2Tap) ConnectionState() tls.ConnectionState {
	if cs, ok := t.Conn.(interface{ ConnectionState() tls.ConnectionState }); ok {
		return cs.ConnectionState()
	}
	return tls.ConnectionState{}
}

// NetConn is the connection t wraps (conn.Of reaches the table's entry through it).
func (t *H2Tap) NetConn() net.Conn { return t.Conn }

// stopCapture turns the tap into a pass-through for the rest of the connection (capture
// was turned off) and drops what it buffered.
func (t *H2Tap) stopCapture() {
	if t.off.Swap(true) {
		return
	}
	t.in.drop()
	t.out.drop()
}

// parse parses what both directions buffered.
func (t *H2Tap) parse() {
	t.in.parse()
	t.out.parse()
}

// tapMark: the copy's bytes before end arrived at time at.
type tapMark struct {
	end int
	at  time.Time
}

// tapDir is one direction of a tap: the shortened copy not parsed yet and the parser.
type tapDir struct {
	t       *H2Tap
	dir     string
	preface bool         // the direction starts with the client preface (checked by the parser)
	want    atomic.Int32 // completed sessions whose streams have not ended in this direction

	mu     sync.Mutex
	buf    []byte    // shortened copy not parsed yet
	marks  []tapMark // arrival times of buf, in order; the last one ends at len(buf)
	whole  int       // buf[:whole] holds whole frames (and whole header blocks)
	spare  []byte    // buf's previous array, reused after a parse
	spareM []tapMark
	closed bool
	dead   bool // parsing stopped: a parse error or capture turned off

	// Frame boundaries, so DATA payloads need not be copied (see shorten). Touched only
	// under mu.
	pre     int     // preface bytes still to pass
	hdr     [9]byte // frame header being collected
	hn      int
	rem     int  // payload bytes left in the current frame
	skip    bool // the current payload is a DATA payload being left out
	inBlock bool // a header block continues in CONTINUATION frames

	// The parser; touched only under parseMu (which is taken before mu).
	parseMu    sync.Mutex
	fr         *http2.Framer
	src        tapSource
	hdec       *hpack.Decoder
	inHdr      bool // in a header block: blk is its first frame
	blk        http2.FrameHeader
	promised   uint32 // PUSH_PROMISE's promised stream
	fields     []session.HeaderField
	fieldBytes int
	slab       []session.HeaderField // room for the next header blocks' fields (keepFields)
	out        []delivery            // what the parse completed, delivered when it ends
}

// flagTapShortened marks, in the tap's copy, a DATA frame whose payload was left out; its
// payload in the copy is the original length as 3 bytes. The bit is unused by DATA.
const flagTapShortened http2.Flags = 0x40

func newTapDir(t *H2Tap, dir string, preface bool) *tapDir {
	d := &tapDir{t: t, dir: dir, preface: preface}
	if preface {
		d.pre = len(http2.ClientPreface)
	}
	return d
}

// feed appends the shortened copy of p (bytes that just passed) and parses inline when
// the buffer is over its bounds or when p ends a stream that a completed session waits
// for. Called only by the goroutine reading (or writing) this direction.
func (d *tapDir) feed(p []byte) {
	if !d.t.rec.c.on.Load() {
		d.t.stopCapture()
		return
	}
	at := time.Now()
	d.mu.Lock()
	if d.closed || d.dead {
		d.mu.Unlock()
		return
	}
	n0 := len(d.buf)
	ends, reset := d.shorten(p)
	if len(d.buf) > n0 {
		d.marks = append(d.marks, tapMark{end: len(d.buf), at: at})
	}
	over := len(d.buf) >= tapParseBytes || len(d.marks) >= tapParseMarks
	if len(d.buf)-d.whole > tapMaxPartial {
		// One frame or header block bigger than any peer should send: stop rather than
		// hold it.
		d.dead = true
		d.buf, d.marks, d.spare, d.spareM, d.whole = nil, nil, nil, nil, 0
		d.mu.Unlock()
		r := d.t.rec
		r.c.dropped.Add(1)
		r.c.logf("frame capture stopped on %s connection %d (%s): a frame or header block over %d bytes", r.leg, r.connID, d.dir, tapMaxPartial)
		return
	}
	d.mu.Unlock()
	if over || ends && d.want.Load() > 0 || reset && d.t.in.want.Load()+d.t.out.want.Load() > 0 {
		d.parse()
	}
}

// shorten appends p to d.buf for the parser, leaving out the payloads of unpadded DATA
// frames: the copy of such a frame gets length 3 and flagTapShortened, and carries the
// original length. Only the 9-byte frame headers are looked at here (to know where frames
// end); the parser's Framer decodes everything. It reports whether p held the header of
// a frame that ends a stream (END_STREAM on DATA or HEADERS, or RST_STREAM: reset too).
// d.mu is held.
func (d *tapDir) shorten(p []byte) (ends, reset bool) {
	out := d.buf
	for len(p) > 0 {
		switch {
		case d.pre > 0:
			n := min(d.pre, len(p))
			out = append(out, p[:n]...)
			d.pre -= n
			p = p[n:]
			if d.pre == 0 {
				d.whole = len(out)
			}
		case d.rem > 0:
			n := min(d.rem, len(p))
			if !d.skip {
				out = append(out, p[:n]...)
			}
			d.rem -= n
			p = p[n:]
			if d.rem == 0 && !d.skip && !d.inBlock {
				d.whole = len(out)
			}
		default:
			n := copy(d.hdr[d.hn:], p)
			d.hn += n
			p = p[n:]
			if d.hn < len(d.hdr) {
				continue
			}
			d.hn = 0
			h := d.hdr
			d.rem = int(h[0])<<16 | int(h[1])<<8 | int(h[2])
			typ, flags := http2.FrameType(h[3]), http2.Flags(h[4])
			switch typ {
			case http2.FrameData, http2.FrameHeaders:
				ends = ends || flags.Has(http2.FlagDataEndStream) // same bit for both
			case http2.FrameRSTStream:
				ends, reset = true, true
			}
			switch typ {
			case http2.FrameHeaders, http2.FramePushPromise:
				d.inBlock = !flags.Has(http2.FlagHeadersEndHeaders) // same bit for both
			case http2.FrameContinuation:
				d.inBlock = !flags.Has(http2.FlagContinuationEndHeaders)
			}
			d.skip = typ == http2.FrameData && flags&http2.FlagDataPadded == 0 && d.rem > 3
			if d.skip {
				length := h
				length[0], length[1], length[2] = 0, 0, 3
				length[4] |= byte(flagTapShortened)
				out = append(out, length[:]...)
				out = append(out, h[0], h[1], h[2])
			} else {
				out = append(out, h[:]...)
			}
			if (d.skip || d.rem == 0) && !d.inBlock {
				d.whole = len(out)
			}
		}
	}
	d.buf = out
	return ends, reset
}

// drop stops parsing this direction and releases its buffer.
func (d *tapDir) drop() {
	d.mu.Lock()
	d.dead = true
	d.buf, d.marks, d.spare, d.spareM, d.whole = nil, nil, nil, nil, 0
	d.mu.Unlock()
}

// close parses what is left; the second direction to close finishes the recorder.
func (d *tapDir) close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	d.mu.Unlock()
	d.parse()
	if d.t.done.Add(1) == 2 {
		d.t.rec.finish()
	}
}

// tapSource reads the bytes being parsed; off is how far the Framer got.
type tapSource struct {
	b   []byte
	off int
}

func (s *tapSource) Read(p []byte) (int, error) {
	if s.off >= len(s.b) {
		return 0, io.EOF
	}
	n := copy(p, s.b[s.off:])
	s.off += n
	return n, nil
}

// parse parses the whole frames buffered so far, in order, and records them. Safe to call
// from any goroutine; parses of one direction run one at a time.
func (d *tapDir) parse() {
	d.parseMu.Lock()
	defer d.parseMu.Unlock()
	d.mu.Lock()
	n := d.whole
	if d.dead || n == 0 {
		d.mu.Unlock()
		return
	}
	// Take buf[:n] and the marks covering it; the rest moves to the spare arrays.
	b, marks := d.buf[:n], d.marks
	k := 0
	for k < len(marks) && marks[k].end <= n {
		k++
	}
	d.buf = append(d.spare[:0], d.buf[n:]...)
	rest := append(d.spareM[:0], marks[k:]...)
	for i := range rest {
		rest[i].end -= n
	}
	d.marks = rest
	if k < len(marks) {
		k++ // the mark of the bytes both sides of n also dates the last whole frame
	}
	marks = marks[:k]
	d.spare, d.spareM, d.whole = nil, nil, 0
	d.mu.Unlock()

	err := d.parseFrames(b, marks)
	defer d.deliverOut()

	d.mu.Lock()
	if err != nil {
		d.dead = true
		d.buf, d.marks = nil, nil
	} else if cap(b) <= 2*tapParseBytes && cap(marks) <= 2*tapParseMarks {
		d.spare, d.spareM = b[:0], marks[:0]
	}
	d.mu.Unlock()
	if err != nil {
		r := d.t.rec
		r.c.logf("frame capture stopped on %s connection %d (%s): %v", r.leg, r.connID, d.dir, err)
	}
}

// queue keeps a delivery for the end of the parse; d.parseMu is held.
func (d *tapDir) queue(dl delivery) {
	if len(dl.frames) > 0 {
		d.out = append(d.out, dl)
	}
}

// deliverOut hands what the parse completed to the sink, in the order it was completed;
// d.parseMu is held (so a direction's deliveries keep their order). Delivering here,
// not where each stream ends, keeps the sink off the parser's deepest stack.
func (d *tapDir) deliverOut() {
	r := d.t.rec
	for i := range d.out {
		r.deliver(d.out[i])
	}
	clear(d.out)
	d.out = d.out[:0]
}

// parseFrames records the frames in b (whole frames only); marks date its bytes.
// d.parseMu is held.
func (d *tapDir) parseFrames(b []byte, marks []tapMark) error {
	d.src = tapSource{b: b}
	if d.preface {
		if len(b) < len(http2.ClientPreface) || string(b[:len(http2.ClientPreface)]) != http2.ClientPreface {
			return errors.New("no client preface")
		}
		d.preface = false
		d.src.off = len(http2.ClientPreface)
	}
	if d.fr == nil {
		d.fr = http2.NewFramer(nil, &d.src)
		d.fr.SetMaxReadFrameSize(maxTapFrameLength)
		d.fr.SetReuseFrames()
		d.hdec = hpack.NewDecoder(64<<10, d.emitField)
	}
	defer func() { d.src = tapSource{} }()
	mi := 0
	for d.src.off < len(b) {
		fh, err := d.fr.ReadFrameHeader()
		if err != nil {
			return err
		}
		// HEADERS, the most common frame with a payload to look at, is read in place;
		// the Framer reads the rest.
		var f http2.Frame
		var payload []byte
		if fh.Type == http2.FrameHeaders {
			end := d.src.off + int(fh.Length)
			if end > len(b) {
				return io.ErrUnexpectedEOF
			}
			payload, d.src.off = b[d.src.off:end], end
		} else if f, err = d.fr.ReadFrameForHeader(fh); err != nil {
			return err
		}
		// A frame is dated by the arrival of its last byte (of the copy).
		for mi < len(marks)-1 && marks[mi].end < d.src.off {
			mi++
		}
		var at time.Time
		if mi < len(marks) {
			at = marks[mi].at
		}
		if f == nil {
			err = d.headers(fh, payload, at)
		} else {
			err = d.frame(f, at)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// headers starts (and maybe ends) the header block of a HEADERS frame with payload p.
func (d *tapDir) headers(fh http2.FrameHeader, p []byte, at time.Time) error {
	if fh.StreamID == 0 {
		return errors.New("HEADERS on stream 0")
	}
	if fh.Flags.Has(http2.FlagHeadersPadded) {
		if len(p) < 1 || int(p[0]) > len(p)-1 {
			return errors.New("HEADERS with padding longer than its payload")
		}
		p = p[1 : len(p)-int(p[0])]
	}
	if fh.Flags.Has(http2.FlagHeadersPriority) {
		if len(p) < 5 {
			return errors.New("HEADERS too short for its priority fields")
		}
		p = p[5:]
	}
	return d.blockStart(fh, p, fh.Flags.Has(http2.FlagHeadersEndHeaders), at)
}

// frame records one frame read by the Framer (HEADERS frames go to headers instead).
// Header blocks (HEADERS or PUSH_PROMISE and their CONTINUATIONs) go through the
// direction's HPACK decoder in order and are recorded as one frame, of the type and flags
// of the block's first frame, dated by its last.
func (d *tapDir) frame(f http2.Frame, at time.Time) error {
	switch f := f.(type) {
	case *http2.PushPromiseFrame:
		d.promised = f.PromiseID
		return d.blockStart(f.FrameHeader, f.HeaderBlockFragment(), f.HeadersEnded(), at)
	case *http2.ContinuationFrame:
		if !d.inHdr || f.StreamID != d.blk.StreamID {
			return fmt.Errorf("CONTINUATION for stream %d outside a header block", f.StreamID)
		}
		if _, err := d.hdec.Write(f.HeaderBlockFragment()); err != nil {
			return err
		}
		if f.HeadersEnded() {
			return d.blockDone(at)
		}
		return nil
	default:
		if d.inHdr {
			return fmt.Errorf("%v on stream %d inside the header block of stream %d", f.Header().Type, f.Header().StreamID, d.blk.StreamID)
		}
		d.record(f, at)
		return nil
	}
}

// blockStart starts a header block with the first frame's header and fragment.
func (d *tapDir) blockStart(fh http2.FrameHeader, frag []byte, ended bool, at time.Time) error {
	if d.inHdr {
		return fmt.Errorf("%v on stream %d inside the header block of stream %d", fh.Type, fh.StreamID, d.blk.StreamID)
	}
	d.blk, d.inHdr = fh, true
	if _, err := d.hdec.Write(frag); err != nil {
		return err
	}
	if ended {
		return d.blockDone(at)
	}
	return nil
}

// emitField collects one decoded field of the header block being read; past
// tapMaxHeaderList bytes of fields the rest of the block is left out.
func (d *tapDir) emitField(hf hpack.HeaderField) {
	d.fieldBytes += len(hf.Name) + len(hf.Value) + 32
	if d.fieldBytes <= tapMaxHeaderList {
		d.fields = append(d.fields, session.HeaderField{Name: hf.Name, Value: hf.Value})
	}
}

// headerSlab is how many header fields keepFields allocates at a time.
const headerSlab = 64

// keepFields returns a copy of fs for a recorded frame. Small blocks share one array
// (d.slab) with the next blocks of the direction, so a block costs no allocation of its
// own; each copy is capped at its length, so appending to it never reaches another
// block's fields. The array lives as long as any frame using it (frames are delivered
// within the session's lifetime and then belong to the sink). d.parseMu is held.
func (d *tapDir) keepFields(fs []session.HeaderField) []session.HeaderField {
	n := len(fs)
	if n > headerSlab/4 {
		return slices.Clone(fs)
	}
	if cap(d.slab)-len(d.slab) < n {
		d.slab = make([]session.HeaderField, 0, headerSlab)
	}
	i := len(d.slab)
	d.slab = append(d.slab, fs...)
	return d.slab[i:len(d.slab):len(d.slab)]
}

// blockDone records the header block that just ended.
func (d *tapDir) blockDone(at time.Time) error {
	d.inHdr = false
	err := d.hdec.Close()
	fh := d.blk
	var sf session.Frame
	d.frameHead(&sf, fh, at)
	if len(d.fields) > 0 {
		sf.Headers = d.keepFields(d.fields)
	}
	clear(d.fields) // let the strings go
	d.fields, d.fieldBytes = d.fields[:0], 0
	if err != nil {
		return err
	}
	rec := d.t.rec
	if fh.Type == http2.FramePushPromise {
		sf.Detail = "promised_stream=" + strconv.FormatUint(uint64(d.promised), 10)
		d.queue(rec.put(&sf, false, reqKey{}, false))
		return nil
	}
	// The request head: inbound on the client leg, outbound on the upstream leg.
	var key reqKey
	if (d.dir == "in") == (rec.leg == LegClient) {
		var method, path string
		for _, hf := range sf.Headers {
			if !strings.HasPrefix(hf.Name, ":") {
				break
			}
			switch hf.Name {
			case ":method":
				method = hf.Value
			case ":path":
				path = hf.Value
			}
		}
		if method != "" {
			key = requestKey(method, path)
		}
	}
	d.queue(rec.put(&sf, false, key, fh.Flags.Has(http2.FlagHeadersEndStream)))
	return nil
}

func (d *tapDir) record(f http2.Frame, at time.Time) {
	fh := f.Header()
	var sf session.Frame
	d.frameHead(&sf, fh, at)
	end := false
	if df, ok := f.(*http2.DataFrame); ok {
		end = df.StreamEnded()
		if fh.Flags.Has(flagTapShortened) {
			if b := df.Data(); len(b) == 3 {
				sf.Length = int(b[0])<<16 | int(b[1])<<8 | int(b[2])
			}
		}
	} else {
		sf.Detail = h2Detail(f)
	}
	rec := d.t.rec
	if fh.StreamID == 0 {
		d.queue(rec.put(&sf, true, reqKey{}, false))
		return
	}
	d.queue(rec.put(&sf, false, reqKey{}, end))
	if _, ok := f.(*http2.RSTStreamFrame); ok {
		d.queue(rec.endStream(uint64(fh.StreamID), d.dir, true))
	}
}

// h2Detail decodes the payload of a control frame for Frame.Detail ("" for other
// frames). Kept out of record so that record's stack frame, on the parser's path,
// stays small.
//
//go:noinline
func h2Detail(f http2.Frame) string {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		var b strings.Builder
		_ = f.ForeachSetting(func(s http2.Setting) error {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s=%d", strings.TrimPrefix(s.ID.String(), "SETTINGS_"), s.Val)
			return nil
		})
		return b.String()
	case *http2.WindowUpdateFrame:
		var b [32]byte // one allocation (the string) instead of two
		return string(strconv.AppendUint(append(b[:0], "increment="...), uint64(f.Increment), 10))
	case *http2.RSTStreamFrame:
		return "code=" + f.ErrCode.String()
	case *http2.GoAwayFrame:
		d := fmt.Sprintf("last_stream=%d code=%s", f.LastStreamID, f.ErrCode)
		if dd := f.DebugData(); len(dd) > 0 {
			d += fmt.Sprintf(" debug=%q", dd)
		}
		return d
	case *http2.PingFrame:
		return "data=" + hex.EncodeToString(f.Data[:])
	case *http2.PriorityFrame:
		return fmt.Sprintf("depends_on=%d weight=%d exclusive=%t", f.StreamDep, int(f.Weight)+1, f.Exclusive)
	}
	return ""
}

// frameHead fills in what every recorded frame has from its header. A function of its
// own so that its callers' stack frames hold a single session.Frame.
//
//go:noinline
func (d *tapDir) frameHead(sf *session.Frame, fh http2.FrameHeader, at time.Time) {
	sf.Dir, sf.Time, sf.Stream, sf.Length = d.dir, at, uint64(fh.StreamID), int(fh.Length)
	sf.Type, sf.Flags = fh.Type.String(), h2Flags(fh.Type, fh.Flags)
}

// h2FlagNames caches h2FlagString for the frame types x/net knows (0..9), so recording
// a frame allocates no flag string.
var h2FlagNames = func() (tab [10][256]string) {
	for t := range tab {
		for f := range tab[t] {
			tab[t][f] = h2FlagString(http2.FrameType(t), http2.Flags(f))
		}
	}
	return tab
}()

// h2Flags names the flags set in f for a frame of type t, joined by "|".
func h2Flags(t http2.FrameType, f http2.Flags) string {
	if int(t) < len(h2FlagNames) {
		return h2FlagNames[t][f]
	}
	return h2FlagString(t, f)
}

func h2FlagString(t http2.FrameType, f http2.Flags) string {
	var names []string
	add := func(bit http2.Flags, name string) {
		if f.Has(bit) {
			names = append(names, name)
		}
	}
	switch t {
	case http2.FrameData:
		add(http2.FlagDataEndStream, "END_STREAM")
		add(http2.FlagDataPadded, "PADDED")
	case http2.FrameHeaders:
		add(http2.FlagHeadersEndStream, "END_STREAM")
		add(http2.FlagHeadersEndHeaders, "END_HEADERS")
		add(http2.FlagHeadersPadded, "PADDED")
		add(http2.FlagHeadersPriority, "PRIORITY")
	case http2.FrameSettings, http2.FramePing:
		add(http2.FlagSettingsAck, "ACK")
	case http2.FrameContinuation:
		add(http2.FlagContinuationEndHeaders, "END_HEADERS")
	}
	return strings.Join(names, "|")
}

// --- HTTP/3: quic-go's qlog events ---

// QUICTracer returns the qlog tracer that records a QUIC connection's HTTP/3 frames on
// leg into a recorder of its own. connID 0 means "number it when it starts" (inbound
// connections).
func (c *Capture) QUICTracer(leg string, connID uint64) func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace {
	return func(_ context.Context, isClient bool, _ quic.ConnectionID) qlogwriter.Trace {
		id := connID
		if id == 0 {
			id = c.nextConnID()
		}
		rec := newRec(c, leg, session.HTTP3, id)
		if leg == LegUpstream {
			c.up.Store(id, rec)
		}
		return &h3Trace{rec: rec, isClient: isClient}
	}
}

// TraceRec is the recorder behind a QUIC connection's trace (its QlogTrace), or nil when
// the trace is not one of QUICTracer's.
func TraceRec(t qlogwriter.Trace) *Rec {
	if tr, ok := t.(*h3Trace); ok {
		return tr.rec
	}
	return nil
}

// h3Trace is a qlog trace that records HTTP/3 frames into a Rec; quic-go adds a
// producer per connection and per HTTP/3 request, and the recorder finishes when the last
// producer closes.
type h3Trace struct {
	rec       *Rec
	isClient  bool
	producers atomic.Int64
}

func (t *h3Trace) AddProducer() qlogwriter.Recorder {
	t.producers.Add(1)
	return &h3Producer{t: t}
}

type h3Producer struct {
	t      *h3Trace
	closed atomic.Bool
}

func (p *h3Producer) Close() error {
	if p.closed.CompareAndSwap(false, true) && p.t.producers.Add(-1) == 0 {
		p.t.rec.finish()
	}
	return nil
}

// isRequestStream: client-initiated bidirectional QUIC streams carry requests.
func isRequestStream(id quic.StreamID) bool { return id%4 == 0 }

func (p *h3Producer) RecordEvent(ev qlogwriter.Event) {
	t := p.t
	switch ev := ev.(type) {
	case h3qlog.FrameParsed:
		t.frame("in", ev.StreamID, ev.Raw, ev.Frame)
	case h3qlog.FrameCreated:
		t.frame("out", ev.StreamID, ev.Raw, ev.Frame)
	}
}

// SessionDone is called by the engine when session id completes; it is safe on a nil
// recorder. HTTP/3: quic-go records frames as the stream is read and written, so every
// frame of the session's stream has been seen and they are delivered now (a QUIC FIN can
// arrive before the frames it ends are parsed, so it is not used). HTTP/2: the tap's
// buffers are parsed now; a stream that ended both ways has been delivered by that, and
// one still open (the response's last frame is often written after the handler returned)
// is marked so that the tap parses as soon as a frame ending a stream passes.
func (r *Rec) SessionDone(id session.ID) {
	if r == nil {
		return
	}
	if r.proto == session.HTTP2 {
		r.h2SessionDone(id)
		return
	}
	var flush delivery
	r.mu.Lock()
	if st := r.linked[id]; st != nil && !st.flushed {
		flush = r.take(st.id, st)
	}
	r.mu.Unlock()
	r.deliver(flush)
}

func (r *Rec) h2SessionDone(id session.ID) {
	t := r.tap
	if t == nil || t.off.Load() {
		return
	}
	t.parse()
	var waitIn, waitOut bool
	r.mu.Lock()
	if st := r.linked[id]; st != nil && !st.flushed && !st.waitIn && !st.waitOut {
		st.waitIn, st.waitOut = !st.endIn, !st.endOut
		waitIn, waitOut = st.waitIn, st.waitOut
		if waitIn {
			t.in.want.Add(1)
		}
		if waitOut {
			t.out.want.Add(1)
		}
	}
	r.mu.Unlock()
	// A stream end that passed between the parse above and the count was not parsed
	// by its feed: parse once more.
	if waitIn {
		t.in.parse()
	}
	if waitOut {
		t.out.parse()
	}
}

func (t *h3Trace) frame(dir string, stream quic.StreamID, raw h3qlog.RawInfo, fr h3qlog.Frame) {
	sf := session.Frame{Dir: dir, Time: time.Now(), Stream: uint64(stream), Length: raw.PayloadLength}
	if sf.Length < 0 {
		sf.Length = 0
	}
	var key reqKey
	switch f := fr.Frame.(type) {
	case h3qlog.DataFrame:
		sf.Type = "DATA"
	case h3qlog.HeadersFrame:
		sf.Type = "HEADERS"
		sf.Headers = make([]session.HeaderField, len(f.HeaderFields))
		var method, path string
		for i, hf := range f.HeaderFields {
			sf.Headers[i] = session.HeaderField{Name: hf.Name, Value: hf.Value}
			switch hf.Name {
			case ":method":
				method = hf.Value
			case ":path":
				path = hf.Value
			}
		}
		if method != "" && (dir == "in") == (t.rec.leg == LegClient) {
			key = requestKey(method, path)
		}
	case h3qlog.SettingsFrame:
		sf.Type = "SETTINGS"
		var parts []string
		if f.MaxFieldSectionSize >= 0 {
			parts = append(parts, fmt.Sprintf("MAX_FIELD_SECTION_SIZE=%d", f.MaxFieldSectionSize))
		}
		if f.Datagram >= 0 {
			parts = append(parts, fmt.Sprintf("H3_DATAGRAM=%d", f.Datagram))
		}
		if f.ExtendedConnect >= 0 {
			parts = append(parts, fmt.Sprintf("ENABLE_CONNECT_PROTOCOL=%d", f.ExtendedConnect))
		}
		for k, v := range f.Other {
			parts = append(parts, fmt.Sprintf("0x%x=%d", k, v))
		}
		sort.Strings(parts)
		sf.Detail = strings.Join(parts, " ")
	case h3qlog.GoAwayFrame:
		sf.Type = "GOAWAY"
		sf.Detail = fmt.Sprintf("id=%d", f.StreamID)
	case h3qlog.PriorityUpdateFrame:
		sf.Type = "PRIORITY_UPDATE"
		sf.Detail = fmt.Sprintf("stream=%d %s", f.StreamID, f.PriorityFieldValue)
	case h3qlog.PushPromiseFrame:
		sf.Type = "PUSH_PROMISE"
	case h3qlog.CancelPushFrame:
		sf.Type = "CANCEL_PUSH"
	case h3qlog.MaxPushIDFrame:
		sf.Type = "MAX_PUSH_ID"
	case h3qlog.ReservedFrame:
		sf.Type = fmt.Sprintf("RESERVED(0x%x)", f.Type)
	case h3qlog.UnknownFrame:
		sf.Type = fmt.Sprintf("UNKNOWN(0x%x)", f.Type)
	default:
		sf.Type = fmt.Sprintf("%T", f)
	}
	if !isRequestStream(stream) {
		t.rec.add(sf, true, reqKey{}, false)
		return
	}
	t.rec.add(sf, false, key, false)
}
