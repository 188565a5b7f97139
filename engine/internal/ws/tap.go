// Package ws is the engine's WebSocket relay: the tap that records the messages of an
// upgraded connection as its bytes pass (Tap), the hooked relay that parses both
// directions, runs the message hooks and forwards each message as one frame (see the
// section "The hooked WebSocket relay" in engine/doc.go), and the translation of an
// RFC 8441 extended CONNECT stream into an HTTP/1.1 Upgrade (section "WebSocket over
// HTTP/2"). The engine's public MessageHook and WebSocketMessage are seen here as Hook
// and Message.
package ws

import (
	"context"
	"encoding/binary"
	"io"
	"sync"
	"time"

	"inspector/engine/session"
)

// maxWSMessages bounds the messages kept per WebSocket session; later ones are counted only.
const maxWSMessages = 10000

// Tap sits on the upstream side of an upgraded connection: Read carries origin→client
// bytes, Write client→origin bytes. It relays them unchanged and parses WebSocket frames
// from both streams to record messages.
type Tap struct {
	rwc   io.ReadWriteCloser
	limit int64

	mu       sync.Mutex
	fromSrv  wsParser
	fromCli  wsParser
	messages []session.Message
	seen     int64 // messages seen, kept or not
	bytes    int64
	// notify, when set, is told of each message (Engine.ObserveMessages), also of those past
	// maxWSMessages that are no longer kept.
	notify func(session.Message)
	// relay, when set (message hooks are registered), parses and forwards the frames
	// itself; Read, Write and Close are its.
	relay *hookRelay
}

// NewTap returns the tap of an upgraded connection rwc (the origin's side) that keeps at
// most limit bytes of each message; notify, when not nil, is told of each message (see
// Tap.notify).
func NewTap(rwc io.ReadWriteCloser, limit int64, notify func(session.Message)) *Tap {
	t := newTap(rwc, limit)
	t.notify = notify
	return t
}

// StartRelay makes t the hooked relay: from now on it parses both directions itself,
// runs hooks on every data message and forwards what they leave. ctx is the WebSocket's
// (hooks see it end when the WebSocket does); id and url are the session's. It is called
// once, before the first Read or Write.
func (t *Tap) StartRelay(ctx context.Context, hooks []Hook, id session.ID, url string) {
	t.relay = newRelay(t, hooks, ctx, id, url)
}

func newTap(rwc io.ReadWriteCloser, limit int64) *Tap {
	t := &Tap{rwc: rwc, limit: limit}
	if limit < 0 {
		t.limit = 0
	}
	t.fromSrv.emit = t.add(false)
	t.fromCli.emit = t.add(true)
	return t
}

func (t *Tap) add(fromClient bool) func(op int, data []byte, size int64) {
	return func(op int, data []byte, size int64) {
		t.addLocked(session.Message{Time: time.Now(), FromClient: fromClient, Opcode: op, Data: data, Size: size})
	}
}

// addLocked records m; the caller holds t.mu.
func (t *Tap) addLocked(m session.Message) {
	if t.notify != nil {
		t.notify(m)
	}
	t.seen++
	if len(t.messages) >= maxWSMessages {
		return
	}
	t.messages = append(t.messages, m)
}

// record records m (the relay's messages).
func (t *Tap) record(m session.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.addLocked(m)
}

func (t *Tap) Read(p []byte) (int, error) {
	if t.relay != nil {
		return t.relay.Read(p)
	}
	n, err := t.rwc.Read(p)
	if n > 0 {
		t.mu.Lock()
		t.bytes += int64(n)
		t.fromSrv.feed(p[:n], t.limit)
		t.mu.Unlock()
	}
	return n, err
}

func (t *Tap) Write(p []byte) (int, error) {
	if t.relay != nil {
		return t.relay.Write(p)
	}
	// The client's bytes are recorded before they go on, so a message is always listed
	// ahead of the origin's answer to it (recorded after the write, an echo read at once
	// could take the lock first and be listed before the message it answers).
	t.mu.Lock()
	t.fromCli.feed(p, t.limit)
	t.mu.Unlock()
	return t.rwc.Write(p)
}

func (t *Tap) Close() error {
	if t.relay != nil {
		return t.relay.Close()
	}
	return t.rwc.Close()
}

// Result returns the recorded messages, how many messages were seen when that is more
// (session.Session.MessagesSeen), and the origin→client byte count.
func (t *Tap) Result() ([]session.Message, int64, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := t.seen
	if seen <= int64(len(t.messages)) {
		seen = 0
	}
	return append([]session.Message(nil), t.messages...), seen, t.bytes
}

// wsParser is an incremental RFC 6455 frame parser. It never fails the relay: on a frame
// it cannot make sense of it stops parsing that direction.
type wsParser struct {
	emit   func(op int, data []byte, size int64)
	hdr    []byte // partial frame header
	need   int64  // payload bytes left in the current frame
	mask   [4]byte
	masked bool
	pos    int64 // payload offset in the current frame, for unmasking
	fin    bool
	op     int // opcode of the current message (continuations keep the first)
	msg    []byte
	size   int64
	broken bool
}

func (p *wsParser) feed(b []byte, limit int64) {
	for len(b) > 0 && !p.broken {
		if p.need == 0 && !p.inFrame() {
			// Accumulate a header.
			p.hdr = append(p.hdr, b[0])
			b = b[1:]
			if p.parseHeader() {
				if p.need == 0 {
					p.endFrame()
				}
			}
			continue
		}
		n := min(int64(len(b)), p.need)
		chunk := b[:n]
		if room := limit - int64(len(p.msg)); room > 0 {
			start := len(p.msg)
			p.msg = append(p.msg, chunk[:min(n, room)]...)
			if p.masked {
				for i := start; i < len(p.msg); i++ {
					p.msg[i] ^= p.mask[(p.pos+int64(i-start))%4]
				}
			}
		}
		p.pos += n
		p.size += n
		p.need -= n
		b = b[n:]
		if p.need == 0 {
			p.endFrame()
		}
	}
}

// inFrame is true between a parsed header and the end of its payload.
func (p *wsParser) inFrame() bool { return p.hdr == nil && p.need > 0 }

// parseHeader returns true once p.hdr holds a whole header, and sets up the frame.
func (p *wsParser) parseHeader() bool {
	fh, n := parseWSHead(p.hdr)
	if n < 0 {
		p.broken = true
	}
	if n <= 0 {
		return false
	}
	p.masked, p.mask, p.fin = fh.masked, fh.key, fh.fin
	if fh.op != 0 {
		p.op = fh.op
	}
	p.need, p.pos = fh.length, 0
	p.hdr = nil
	return true
}

// wsHead is a parsed RFC 6455 frame header.
type wsHead struct {
	fin    bool
	rsv    byte // the RSV1-3 bits as they are in the first byte (0x70)
	op     int
	masked bool
	key    [4]byte
	length int64
}

// maxWSFrameHead is the longest frame header: 2 bytes, an 8-byte length and a 4-byte key.
const maxWSFrameHead = 14

// parseWSHead parses the frame header at the start of h. It returns the header's size,
// 0 when h does not hold all of it yet, or -1 for a length with the top bit set.
func parseWSHead(h []byte) (wsHead, int) {
	if len(h) < 2 {
		return wsHead{}, 0
	}
	size := 2
	l7 := int64(h[1] & 0x7f)
	switch l7 {
	case 126:
		size += 2
	case 127:
		size += 8
	}
	fh := wsHead{fin: h[0]&0x80 != 0, rsv: h[0] & 0x70, op: int(h[0] & 0x0f), masked: h[1]&0x80 != 0, length: l7}
	if fh.masked {
		size += 4
	}
	if len(h) < size {
		return wsHead{}, 0
	}
	off := 2
	switch l7 {
	case 126:
		fh.length = int64(binary.BigEndian.Uint16(h[2:4]))
		off = 4
	case 127:
		fh.length = int64(binary.BigEndian.Uint64(h[2:10]))
		off = 10
		if fh.length < 0 {
			return wsHead{}, -1
		}
	}
	if fh.masked {
		copy(fh.key[:], h[off:off+4])
	}
	return fh, size
}

func (p *wsParser) endFrame() {
	p.hdr = p.hdr[:0]
	p.hdr = nil
	if p.fin {
		p.emit(p.op, p.msg, p.size)
		p.msg, p.size, p.op = nil, 0, 0
	}
}
