package ws

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"inspector/engine/session"
)

// The hooked WebSocket relay: see the section "The hooked WebSocket relay" in engine/doc.go.

const (
	// maxHookedMessage bounds a message assembled for the hooks; a larger one is streamed
	// on unmodified.
	maxHookedMessage = 4 << 20
	// wsRelayQueue bounds the items waiting for a direction's forwarder (each at most
	// maxHookedMessage or one read's bytes).
	wsRelayQueue = 16
	wsReadBuf    = 32 << 10
)

var errRelayClosed = errors.New("websocket relay closed")

type hookRelay struct {
	t      *Tap
	hooks  []Hook
	ctx    context.Context
	cancel context.CancelFunc
	id     session.ID
	url    string

	up   *wsDir // client→origin: fed by Write, written to the origin
	down *wsDir // origin→client: fed by readOrigin, written to pw for Read
	pr   *io.PipeReader
	pw   *io.PipeWriter

	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup
}

func newRelay(t *Tap, hooks []Hook, ctx context.Context, id session.ID, url string) *hookRelay {
	ctx, cancel := context.WithCancel(ctx)
	r := &hookRelay{t: t, hooks: hooks, ctx: ctx, cancel: cancel, id: id, url: url, done: make(chan struct{})}
	r.pr, r.pw = io.Pipe()
	r.up = r.newDir(true, t.rwc)
	r.down = r.newDir(false, r.pw)
	r.wg.Add(3)
	go r.up.forward()
	go r.down.forward()
	go r.readOrigin()
	return r
}

func (r *hookRelay) newDir(fromClient bool, out io.Writer) *wsDir {
	return &wsDir{r: r, fromClient: fromClient, out: out, q: make(chan wsItem, wsRelayQueue), lock: make(chan struct{}, 1)}
}

// Read returns origin→client bytes as the forwarder wrote them.
func (r *hookRelay) Read(p []byte) (int, error) {
	n, err := r.pr.Read(p)
	if n > 0 {
		r.t.mu.Lock()
		r.t.bytes += int64(n)
		r.t.mu.Unlock()
	}
	return n, err
}

// Write takes client→origin bytes. It returns once they are parsed and queued; an error
// writing to the origin is returned by a later Write.
func (r *hookRelay) Write(p []byte) (int, error) {
	if err := r.up.failed(); err != nil {
		return 0, err
	}
	if err := r.up.feed(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close ends the relay: hooks see their context end, messages still queued are not sent,
// and it returns once the relay's goroutines have.
func (r *hookRelay) Close() error {
	r.closeOnce.Do(func() {
		r.cancel()
		close(r.done)
		r.closeErr = r.t.rwc.Close()
		r.pr.CloseWithError(net.ErrClosed)
		r.wg.Wait()
	})
	return r.closeErr
}

func (r *hookRelay) readOrigin() {
	defer r.wg.Done()
	buf := make([]byte, wsReadBuf)
	for {
		n, err := r.t.rwc.Read(buf)
		if n > 0 {
			if r.down.feed(buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			_ = r.down.put(wsItem{eof: true, err: err})
			return
		}
	}
}

// wsItem is one thing for a forwarder, in order.
type wsItem struct {
	raw        []byte // bytes to write as they are
	start, end bool   // raw begins / ends a frame: the output lock is held from start to end
	msg        *Message
	at         time.Time        // msg: when it completed
	rec        *session.Message // recorded before raw is written
	eof        bool             // origin→client only: the origin's side ended with err
	err        error
}

// wsDir is one direction of the relay.
type wsDir struct {
	r          *hookRelay
	fromClient bool
	out        io.Writer
	q          chan wsItem
	lock       chan struct{} // the output lock (a channel so that waiting for it ends on Close)
	werr       atomic.Pointer[error]

	// Parser state, used by the feeding goroutine only.
	hdr     []byte
	fh      wsHead
	inFrame bool
	need    int64 // payload bytes left in the frame
	pos     int64 // payload offset in the frame (for unmasking)
	ctrl    []byte
	ctrlLen int // header bytes at the start of ctrl
	msgOn   bool
	msgOp   int
	buf     []byte // the assembled message (unmasked)
	size    int64  // payload bytes of the message so far
	passing string // why the message is streamed on unmodified ("" while assembling)
	recData []byte // passing: the unmasked prefix kept for the record
	broken  bool   // not a parsable frame stream: the rest is copied as it comes
	// closeSent: a close frame was parsed; later control frames queue behind it.
	closeSent bool
}

func (d *wsDir) failed() error {
	if p := d.werr.Load(); p != nil {
		return *p
	}
	return nil
}

func (d *wsDir) put(it wsItem) error {
	select {
	case d.q <- it:
		return nil
	case <-d.r.done:
		return errRelayClosed
	}
}

func (d *wsDir) acquire() bool {
	select {
	case d.lock <- struct{}{}:
		return true
	case <-d.r.done:
		return false
	}
}

func (d *wsDir) release() { <-d.lock }

// write writes b; the caller holds the output lock.
func (d *wsDir) write(b []byte) {
	if d.failed() == nil {
		if _, err := d.out.Write(b); err != nil {
			d.werr.Store(&err)
		}
	}
}

func (d *wsDir) forward() {
	defer d.r.wg.Done()
	held := false // the forwarder holds the output lock (between a raw frame's start and end)
	defer func() {
		if held {
			d.release()
		}
	}()
	// writeFrame writes b, taking the output lock at start and giving it back at end.
	writeFrame := func(b []byte, start, end bool) bool {
		if start {
			if held = d.acquire(); !held {
				return false // closed
			}
		}
		d.write(b)
		if end {
			held = false
			d.release()
		}
		return true
	}
	for {
		select {
		case <-d.r.done:
			return
		default:
		}
		select {
		case <-d.r.done:
			return
		case it := <-d.q:
			switch {
			case it.eof:
				d.r.pw.CloseWithError(it.err)
				return
			case it.msg != nil:
				// Recorded before it is written, so that the peer's answer is recorded after it.
				rec, frame := d.r.runHooks(it.msg, it.at)
				d.r.t.record(rec)
				if frame != nil && !writeFrame(frame, true, true) {
					return
				}
			default:
				if it.rec != nil {
					d.r.t.record(*it.rec)
				}
				if (it.raw != nil || it.start) && !writeFrame(it.raw, it.start, it.end) {
					return
				}
			}
		}
	}
}

// feed parses b (which the caller may reuse once feed returns).
func (d *wsDir) feed(b []byte) error {
	for len(b) > 0 {
		if d.broken {
			return d.put(wsItem{raw: bytes.Clone(b), start: true, end: true})
		}
		if !d.inFrame {
			prev := len(d.hdr)
			k := min(len(b), maxWSFrameHead-prev)
			d.hdr = append(d.hdr, b[:k]...)
			fh, n := parseWSHead(d.hdr)
			if n < 0 {
				b = b[k:]
				if err := d.breakOff(bytes.Clone(d.hdr), "a frame length over 2^63"); err != nil {
					return err
				}
				continue
			}
			if n == 0 {
				b = b[k:]
				continue
			}
			b = b[n-prev:]
			head := bytes.Clone(d.hdr[:n])
			d.hdr = d.hdr[:0]
			if err := d.begin(fh, head); err != nil {
				return err
			}
			if !d.broken && d.need == 0 {
				if err := d.finish(); err != nil {
					return err
				}
			}
			continue
		}
		n := min(int64(len(b)), d.need)
		if err := d.payload(b[:n]); err != nil {
			return err
		}
		b = b[n:]
		d.pos += n
		d.need -= n
		if d.need == 0 {
			if err := d.finish(); err != nil {
				return err
			}
		}
	}
	return nil
}

// breakOff gives up parsing: what was assembled goes on as an unfinished frame, then
// head and every later byte as they are. The peer sees the same protocol error it would
// have seen without the proxy.
func (d *wsDir) breakOff(head []byte, why string) error {
	d.broken = true
	d.r.t.record(session.Message{Time: time.Now(), FromClient: d.fromClient, Opcode: int(head[0] & 0x0f),
		Unhooked: "not a valid WebSocket frame sequence (" + why + "): the rest of this direction is relayed unparsed"})
	if d.msgOn && d.passing == "" && len(d.buf) > 0 {
		if err := d.put(wsItem{raw: encodeWSFrame(d.msgOp, d.buf, false, d.fromClient), start: true, end: true}); err != nil {
			return err
		}
	}
	d.buf, d.msgOn = nil, false
	return d.put(wsItem{raw: head, start: true, end: true})
}

func (d *wsDir) begin(fh wsHead, head []byte) error {
	if fh.op >= 8 { // control frame
		switch {
		case !fh.fin:
			return d.breakOff(head, "a fragmented control frame")
		case fh.length > 125:
			return d.breakOff(head, "a control frame over 125 bytes")
		case fh.op > 10:
			return d.breakOff(head, fmt.Sprintf("reserved opcode %d", fh.op))
		}
		d.ctrl, d.ctrlLen = head, len(head)
	} else {
		switch {
		case fh.op >= 3:
			return d.breakOff(head, fmt.Sprintf("reserved opcode %d", fh.op))
		case fh.op == 0 && !d.msgOn:
			return d.breakOff(head, "a continuation frame outside a message")
		case fh.op != 0 && d.msgOn:
			return d.breakOff(head, "a new message inside a fragmented one")
		case fh.op != 0:
			d.msgOn, d.msgOp, d.size, d.buf, d.recData, d.passing = true, fh.op, 0, nil, nil, ""
			switch {
			case fh.rsv&0x40 != 0:
				d.passing = "compressed (permessage-deflate): passed on unmodified"
			case fh.rsv != 0:
				d.passing = "reserved bits set (an extension): passed on unmodified"
			}
		}
		if d.passing == "" && int64(len(d.buf))+fh.length > maxHookedMessage {
			d.passing = fmt.Sprintf("larger than %d bytes: passed on unmodified", maxHookedMessage)
			if len(d.buf) > 0 { // what was assembled goes on as the message's first frame
				if err := d.put(wsItem{raw: encodeWSFrame(d.msgOp, d.buf, false, d.fromClient), start: true, end: true}); err != nil {
					return err
				}
				d.recData = d.buf[:min(int64(len(d.buf)), d.r.t.limit)]
				d.buf = nil
			}
		}
		if d.passing != "" {
			it := wsItem{raw: head, start: true, end: fh.length == 0}
			if it.end && fh.fin {
				it.rec = d.passedRecord()
			}
			if err := d.put(it); err != nil {
				return err
			}
		}
	}
	d.fh, d.need, d.pos, d.inFrame = fh, fh.length, 0, true
	return nil
}

func (d *wsDir) payload(chunk []byte) error {
	switch {
	case d.fh.op >= 8:
		d.ctrl = append(d.ctrl, chunk...)
	case d.passing != "":
		d.size += int64(len(chunk))
		if room := d.r.t.limit - int64(len(d.recData)); room > 0 {
			start := len(d.recData)
			d.recData = append(d.recData, chunk[:min(int64(len(chunk)), room)]...)
			d.unmask(d.recData[start:])
		}
		it := wsItem{raw: bytes.Clone(chunk), end: d.need == int64(len(chunk))}
		if it.end && d.fh.fin {
			it.rec = d.passedRecord()
		}
		return d.put(it)
	default:
		d.size += int64(len(chunk))
		start := len(d.buf)
		d.buf = append(d.buf, chunk...)
		d.unmask(d.buf[start:])
	}
	return nil
}

// unmask unmasks b, the frame's payload from offset d.pos.
func (d *wsDir) unmask(b []byte) {
	if d.fh.masked {
		for i := range b {
			b[i] ^= d.fh.key[(d.pos+int64(i))&3]
		}
	}
}

func (d *wsDir) finish() error {
	d.inFrame = false
	fh := d.fh
	if fh.op >= 8 {
		raw := d.ctrl
		data := bytes.Clone(raw[d.ctrlLen:])
		d.pos = 0
		d.unmask(data)
		d.ctrl = nil
		rec := session.Message{Time: time.Now(), FromClient: d.fromClient, Opcode: fh.op, Size: int64(len(data)), Data: data[:min(int64(len(data)), d.r.t.limit)]}
		if fh.op == 8 || d.closeSent {
			// A close stays behind the messages before it, and what follows a close
			// behind the close.
			d.closeSent = true
			return d.put(wsItem{raw: raw, start: true, end: true, rec: &rec})
		}
		if !d.acquire() {
			return errRelayClosed
		}
		d.r.t.record(rec)
		d.write(raw)
		d.release()
		return nil
	}
	if !fh.fin {
		return nil
	}
	var err error
	if d.passing == "" { // (a passed message's record went with its last bytes)
		err = d.put(wsItem{at: time.Now(), msg: &Message{Session: d.r.id, URL: d.r.url, FromClient: d.fromClient, Opcode: d.msgOp, Data: d.buf}})
	}
	d.msgOn, d.buf, d.recData, d.passing = false, nil, nil, ""
	return err
}

// passedRecord is the record of the message being passed on unmodified, once its last
// bytes are parsed.
func (d *wsDir) passedRecord() *session.Message {
	return &session.Message{Time: time.Now(), FromClient: d.fromClient, Opcode: d.msgOp, Data: d.recData, Size: d.size, Unhooked: d.passing}
}

// runHooks runs the hooks on m and returns its record and the frame to forward (nil when
// dropped).
func (r *hookRelay) runHooks(m *Message, at time.Time) (session.Message, []byte) {
	orig, origOp := bytes.Clone(m.Data), m.Opcode
	var errs []string
	for _, h := range r.hooks {
		op, data := m.Opcode, m.Data
		err := callHook(r.ctx, h, m)
		if err == nil {
			err = checkHooked(m)
		}
		if err != nil {
			m.Opcode, m.Data, m.Drop = op, data, false
			errs = append(errs, err.Error())
			continue
		}
		if m.Drop {
			break
		}
	}
	rec := session.Message{Time: at, FromClient: m.FromClient, Opcode: m.Opcode, Size: int64(len(m.Data))}
	rec.Modified = m.Opcode != origOp || !bytes.Equal(m.Data, orig)
	if len(errs) > 0 {
		rec.HookError = strings.Join(errs, "; ")
	}
	data := m.Data
	var frame []byte
	if m.Drop {
		rec.Dropped, rec.Modified = true, false
		data, rec.Opcode, rec.Size = orig, origOp, int64(len(orig))
	} else {
		frame = encodeWSFrame(m.Opcode, m.Data, true, m.FromClient)
	}
	rec.Data = bytes.Clone(data[:min(int64(len(data)), r.t.limit)])
	return rec, frame
}

// callHook calls h, turning a panic into an error: a faulty hook never stops the
// relay.
func callHook(ctx context.Context, h Hook, m *Message) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("message hook panicked: %v", p)
		}
	}()
	return h.OnMessage(ctx, m)
}

func checkHooked(m *Message) error {
	switch {
	case m.Drop:
		return nil
	case m.Opcode != 1 && m.Opcode != 2:
		return fmt.Errorf("message hook set opcode %d; only 1 (text) and 2 (binary) can be sent", m.Opcode)
	case m.Opcode == 1 && !utf8.Valid(m.Data):
		return errors.New("message hook set a text message that is not valid UTF-8")
	}
	return nil
}

// encodeWSFrame returns one frame carrying data; masked (with a fresh key) for frames a
// client sends.
func encodeWSFrame(op int, data []byte, fin, masked bool) []byte {
	b0 := byte(op)
	if fin {
		b0 |= 0x80
	}
	mbit := byte(0)
	if masked {
		mbit = 0x80
	}
	out := make([]byte, 0, maxWSFrameHead+len(data))
	out = append(out, b0)
	switch n := len(data); {
	case n < 126:
		out = append(out, mbit|byte(n))
	case n < 1<<16:
		out = append(out, mbit|126)
		out = binary.BigEndian.AppendUint16(out, uint16(n))
	default:
		out = append(out, mbit|127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	if !masked {
		return append(out, data...)
	}
	var key [4]byte
	binary.LittleEndian.PutUint32(key[:], rand.Uint32())
	out = append(out, key[:]...)
	start := len(out)
	out = append(out, data...)
	for i := range data {
		out[start+i] ^= key[i&3]
	}
	return out
}
