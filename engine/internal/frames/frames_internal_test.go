package frames

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"inspector/engine/session"
)

// h2Stream writes a realistic sequence of frames (after the client preface) and returns
// the bytes and what each frame is.
// testCapture returns a Capture with env and a capture flag of its own, on.
func testCapture(env Env) *Capture {
	env.Capture = new(atomic.Bool)
	env.Capture.Store(true)
	return New(env)
}

func h2Stream(t testing.TB) ([]byte, []http2.FrameHeader) {
	var buf bytes.Buffer
	buf.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&buf, nil)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	_ = enc.WriteField(hpack.HeaderField{Name: ":method", Value: "POST"})
	_ = enc.WriteField(hpack.HeaderField{Name: ":path", Value: "/up"})
	_ = enc.WriteField(hpack.HeaderField{Name: ":scheme", Value: "https"})
	_ = enc.WriteField(hpack.HeaderField{Name: ":authority", Value: "a.test"})
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20}))
	// The header block is split over HEADERS and CONTINUATION.
	block := hb.Bytes()
	must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:5]}))
	must(fr.WriteContinuation(1, true, block[5:]))
	must(fr.WriteData(1, false, bytes.Repeat([]byte("a"), 16384)))
	must(fr.WriteData(1, false, []byte("abc"))) // too short to shorten
	must(fr.WriteDataPadded(1, false, []byte("padded payload"), make([]byte, 7)))
	must(fr.WriteWindowUpdate(0, 12345))
	must(fr.WriteData(1, true, bytes.Repeat([]byte("z"), 5000)))
	must(fr.WriteRSTStream(3, http2.ErrCodeCancel))
	must(fr.WritePing(false, [8]byte{1, 2, 3}))
	must(fr.WriteGoAway(1, http2.ErrCodeNo, []byte("bye")))
	raw := buf.Bytes()
	var hdrs []http2.FrameHeader
	rd := http2.NewFramer(nil, bytes.NewReader(raw[len(http2.ClientPreface):]))
	for {
		f, err := rd.ReadFrame()
		if err == io.EOF {
			break
		}
		must(err)
		hdrs = append(hdrs, f.Header())
	}
	return raw, hdrs
}

// TestTapShortenKeepsFrames: however the bytes are split into reads, the tap's shortened
// copy parses into the same frames, with DATA lengths carried over, and the part of it
// marked whole always ends on a frame boundary outside any header block.
func TestTapShortenKeepsFrames(t *testing.T) {
	raw, want := h2Stream(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		d := &tapDir{pre: len(http2.ClientPreface)}
		lastWhole := 0
		for p := raw; len(p) > 0; {
			n := 1 + rng.IntN(min(len(p), []int{1, 7, 100, 20000}[round%4]))
			d.shorten(p[:n])
			p = p[n:]
			if d.whole != lastWhole {
				lastWhole = d.whole
				if got := countWholeFrames(t, d.buf[:d.whole]); got > len(want) {
					t.Fatalf("round %d: %d frames in the whole part", round, got)
				}
			}
		}
		if d.whole != len(d.buf) {
			t.Fatalf("round %d: whole %d of %d bytes after the last frame", round, d.whole, len(d.buf))
		}
		if len(d.buf) >= len(raw)/2 {
			t.Fatalf("round %d: copy is %d bytes of %d: DATA payloads not left out", round, len(d.buf), len(raw))
		}
		b := d.buf
		if !bytes.HasPrefix(b, []byte(http2.ClientPreface)) {
			t.Fatalf("round %d: preface lost", round)
		}
		fr := http2.NewFramer(nil, bytes.NewReader(b[len(http2.ClientPreface):]))
		fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		for i, w := range want {
			if w.Type == http2.FrameContinuation {
				continue // read with its HEADERS
			}
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("round %d frame %d: %v", round, i, err)
			}
			h := f.Header()
			length := int(h.Length)
			if df, ok := f.(*http2.DataFrame); ok && h.Flags.Has(flagTapShortened) {
				b := df.Data()
				length = int(b[0])<<16 | int(b[1])<<8 | int(b[2])
			}
			if w.Type == http2.FrameHeaders {
				h.Flags &^= http2.FlagHeadersEndHeaders // the Framer reports the block's end
			}
			if h.Type != w.Type || h.StreamID != w.StreamID || length != int(w.Length) ||
				h.Flags&^flagTapShortened != w.Flags {
				t.Fatalf("round %d frame %d: got %v len %d, want %v", round, i, h, length, w)
			}
			if mh, ok := f.(*http2.MetaHeadersFrame); ok && mh.PseudoValue("path") != "/up" {
				t.Fatalf("round %d: headers %v", round, mh.Fields)
			}
		}
	}
}

// countWholeFrames parses b (preface, then frames) with a fresh Framer and fails unless b
// ends exactly after a frame.
func countWholeFrames(t *testing.T, b []byte) int {
	t.Helper()
	if len(b) < len(http2.ClientPreface) {
		t.Fatalf("whole part of %d bytes ends inside the preface", len(b))
	}
	r := bytes.NewReader(b[len(http2.ClientPreface):])
	fr := http2.NewFramer(nil, r)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	n := 0
	for r.Len() > 0 {
		if _, err := fr.ReadFrame(); err != nil {
			t.Fatalf("whole part does not end on a frame boundary: frame %d: %v", n, err)
		}
		n++
	}
	return n
}

func TestFrameRecCapsHeldFramesAndCounts(t *testing.T) {
	fc := testCapture(Env{})
	r := newRec(fc, LegClient, session.HTTP2, 1)
	now := time.Now()
	for i := 0; i < maxHeldFrames+100; i++ {
		r.add(session.Frame{Dir: "in", Time: now, Stream: uint64(1 + 2*(i%10)), Type: "DATA"}, false, reqKey{}, false)
	}
	if r.held != maxHeldFrames || fc.Dropped() != 100 {
		t.Fatalf("held %d dropped %d, want %d and 100", r.held, fc.Dropped(), maxHeldFrames)
	}
	// Connection-level frames are bounded on their own.
	for i := 0; i < 10*maxConnFrames; i++ {
		r.add(session.Frame{Dir: "in", Time: now, Type: "PING"}, true, reqKey{}, false)
	}
	if len(r.conn) > maxConnFrames {
		t.Fatalf("%d connection frames kept", len(r.conn))
	}
	// With capture off nothing is held.
	fc.on.Store(false)
	r.add(session.Frame{Dir: "in", Time: now, Stream: 999, Type: "HEADERS"}, false, reqKey{}, false)
	if r.streams[999] != nil {
		t.Fatal("frame recorded with capture off")
	}
	r.finish()
	if r.streams != nil || r.conn != nil {
		t.Fatal("finish kept state")
	}
}

func TestFrameRecLinksInOrderEitherWay(t *testing.T) {
	var got = map[session.ID][]session.Frame{}
	fc := testCapture(Env{Sink: func(id session.ID, fs []session.Frame) { got[id] = append(got[id], fs...) }})
	r := newRec(fc, LegClient, session.HTTP2, 1)
	t0 := time.Now()
	hdr := func(stream uint64) session.Frame {
		return session.Frame{Dir: "in", Time: t0, Stream: stream, Type: "HEADERS"}
	}
	// Stream 1 arrives before its session, session 2 is announced before stream 3.
	r.add(hdr(1), false, requestKey("GET", "/a"), true)
	r.Link(10, "GET", "/a")
	r.Link(11, "GET", "/a")
	r.add(hdr(3), false, requestKey("GET", "/a"), true)
	// The responses end both streams.
	r.add(session.Frame{Dir: "out", Time: t0, Stream: 3, Type: "HEADERS"}, false, reqKey{}, true)
	r.add(session.Frame{Dir: "out", Time: t0, Stream: 1, Type: "HEADERS"}, false, reqKey{}, true)
	if len(got[10]) != 2 || got[10][0].Stream != 1 || len(got[11]) != 2 || got[11][0].Stream != 3 {
		t.Fatalf("linking: %+v", got)
	}
	// A late frame on an ended stream goes to its session on its own.
	r.add(session.Frame{Dir: "out", Time: t0, Stream: 1, Type: "WINDOW_UPDATE"}, false, reqKey{}, false)
	if len(got[10]) != 3 {
		t.Fatalf("late frame not delivered: %+v", got[10])
	}
	// Unlinked ended streams are forgotten after maxEndedUnlinked.
	for i := 0; i < maxEndedUnlinked+5; i++ {
		s := uint64(101 + 2*i)
		r.add(hdr(s), false, requestKey("GET", "/never"), true)
		r.add(session.Frame{Dir: "out", Time: t0, Stream: s, Type: "HEADERS"}, false, reqKey{}, true)
	}
	if r.held > 2*maxEndedUnlinked || len(r.unlinked[requestKey("GET", "/never")]) > maxEndedUnlinked {
		t.Fatalf("unlinked streams not forgotten: held %d, queued %d", r.held, len(r.unlinked[requestKey("GET", "/never")]))
	}
}

// pings returns n PING frames (17 bytes each), numbered from first.
func pings(n, first int) []byte {
	var buf bytes.Buffer
	fr := http2.NewFramer(&buf, nil)
	for i := range n {
		var data [8]byte
		binary.BigEndian.PutUint64(data[:], uint64(first+i))
		_ = fr.WritePing(false, data)
	}
	return buf.Bytes()
}

// TestTapBufferStaysBounded: with no session completing, a tap parses inline once its
// buffer passes its bounds (bytes or reads), so memory stays bounded, and nothing is lost.
func TestTapBufferStaysBounded(t *testing.T) {
	for _, chunk := range []int{1000, 1} { // big writes hit the byte bound, tiny ones the read bound
		fc := testCapture(Env{Logf: t.Logf})
		tap := fc.NewH2Tap(nil, LegUpstream, 1) // the upstream leg writes the preface ("out")
		tap.out.feed([]byte(http2.ClientPreface))
		const total = 8000
		all := pings(total, 0)
		for p := all; len(p) > 0; {
			n := min(chunk*17, len(p))
			tap.out.feed(p[:n])
			p = p[n:]
			tap.out.mu.Lock()
			nb, nm := len(tap.out.buf), len(tap.out.marks)
			tap.out.mu.Unlock()
			if nb > tapParseBytes+chunk*17 || nm > tapParseMarks {
				t.Fatalf("chunk %d: %d bytes and %d marks buffered", chunk, nb, nm)
			}
		}
		tap.parse()
		r := tap.rec
		r.mu.Lock()
		last := r.conn[len(r.conn)-1]
		r.mu.Unlock()
		if want := "data=" + hex.EncodeToString(binary.BigEndian.AppendUint64(nil, total-1)); last.Detail != want || last.Type != "PING" {
			t.Fatalf("chunk %d: last frame %+v, want PING %s", chunk, last, want)
		}
		if tap.out.dead || fc.Dropped() != 0 {
			t.Fatalf("chunk %d: dead %v dropped %d", chunk, tap.out.dead, fc.Dropped())
		}
	}
}

// TestTapStopsOnGarbage: bytes that are not HTTP/2 stop capture for that direction with a
// logged reason; the tap still passes everything and closes cleanly.
func TestTapStopsOnGarbage(t *testing.T) {
	var logged []string
	fc := testCapture(Env{Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
	a, b := net.Pipe()
	defer b.Close()
	tap := fc.NewH2Tap(a, LegClient, 7)
	go func() { _, _ = b.Write([]byte("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")) }()
	buf := make([]byte, 100)
	n, err := io.ReadAtLeast(tap, buf, len("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"))
	if err != nil || string(buf[:n]) != "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n" {
		t.Fatalf("read through the tap: %q %v", buf[:n], err)
	}
	tap.rec.SessionDone(1)
	if !tap.in.dead || len(logged) != 1 || !strings.Contains(logged[0], "no client preface") {
		t.Fatalf("dead %v, logged %q", tap.in.dead, logged)
	}
	tap.in.feed([]byte("more")) // ignored
	if err := tap.Close(); err != nil {
		t.Fatal(err)
	}
	tap.Close() // idempotent
	if !tap.rec.finished {
		t.Fatal("closing the tap did not finish the recorder")
	}
}

// TestTapStopsOnHugeFrame: a frame (or header block) too big to hold stops capture for
// its direction, counted as dropped, instead of growing the buffer.
func TestTapStopsOnHugeFrame(t *testing.T) {
	var logged []string
	fc := testCapture(Env{Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
	tap := fc.NewH2Tap(nil, LegUpstream, 1)
	tap.out.feed([]byte(http2.ClientPreface))
	tap.out.feed([]byte{0xff, 0xff, 0xff, byte(http2.FramePing), 0, 0, 0, 0, 0}) // a 16 MiB PING
	for range 2 * tapMaxPartial / 4096 {
		tap.out.feed(make([]byte, 4096))
	}
	tap.out.mu.Lock()
	dead, n := tap.out.dead, len(tap.out.buf)
	tap.out.mu.Unlock()
	if !dead || n != 0 || fc.Dropped() != 1 || len(logged) != 1 {
		t.Fatalf("dead %v, %d bytes held, dropped %d, logged %q", dead, n, fc.Dropped(), logged)
	}
}

// TestFrameRecForgetsDeliveredStreams: a long keep-alive connection keeps only the newest
// delivered streams (for their late frames); late frames of older ones are let go.
func TestFrameRecForgetsDeliveredStreams(t *testing.T) {
	got := map[session.ID]int{}
	fc := testCapture(Env{Sink: func(id session.ID, fs []session.Frame) { got[id] += len(fs) }})
	r := newRec(fc, LegClient, session.HTTP2, 1)
	t0 := time.Now()
	const n = 10 * maxRetired
	for i := range n {
		s := uint64(1 + 2*i)
		r.Link(session.ID(1000+i), "GET", "/x")
		r.add(session.Frame{Dir: "in", Time: t0, Stream: s, Type: "HEADERS"}, false, requestKey("GET", "/x"), true)
		r.add(session.Frame{Dir: "out", Time: t0, Stream: s, Type: "HEADERS"}, false, reqKey{}, true)
	}
	if len(r.streams) > maxRetired || r.held != 0 || len(got) != n {
		t.Fatalf("%d streams kept, %d frames held, %d sessions delivered", len(r.streams), r.held, len(got))
	}
	// A late frame of a recent stream still reaches its session; one of an old stream
	// is let go without being held.
	r.add(session.Frame{Dir: "out", Time: t0, Stream: uint64(1 + 2*(n-1)), Type: "WINDOW_UPDATE"}, false, reqKey{}, false)
	r.add(session.Frame{Dir: "out", Time: t0, Stream: 1, Type: "WINDOW_UPDATE"}, false, reqKey{}, false)
	if got[session.ID(1000+n-1)] != 3 || got[1000] != 2 || r.held != 0 || r.streams[1] != nil {
		t.Fatalf("late frames: newest session %d frames, oldest %d, held %d", got[session.ID(1000+n-1)], got[1000], r.held)
	}
}

func TestAppendByTimeKeepsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	t0 := time.Now()
	var fs []session.Frame
	for i := range 500 {
		// Mostly in order, sometimes a few steps back, with ties.
		at := t0.Add(time.Duration(i/2-rng.IntN(4)) * time.Millisecond)
		fs = appendByTime(fs, &session.Frame{Time: at, Length: i}, 0)
	}
	for i := 1; i < len(fs); i++ {
		a, b := fs[i-1], fs[i]
		if b.Time.Before(a.Time) || b.Time.Equal(a.Time) && b.Length < a.Length {
			t.Fatalf("frames %d and %d out of order (or ties reordered): %v %d, %v %d", i-1, i, a.Time, a.Length, b.Time, b.Length)
		}
	}
}

// TestTapParsesHeaderBlocks: the tap's parser decodes header blocks split over
// CONTINUATION frames, keeps the HPACK table in step through PUSH_PROMISE blocks, and
// records every frame with its real DATA length, however the bytes were split.
func TestTapParsesHeaderBlocks(t *testing.T) {
	raw, _ := h2Stream(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 50; round++ {
		fc := testCapture(Env{Logf: t.Logf})
		tap := fc.NewH2Tap(nil, LegUpstream, 1) // requests and the preface go "out"
		for p := raw; len(p) > 0; {
			n := 1 + rng.IntN(min(len(p), 300))
			tap.out.feed(p[:n])
			p = p[n:]
			if rng.IntN(4) == 0 {
				tap.parse()
			}
		}
		tap.parse()
		r := tap.rec
		st := r.streams[1]
		if st == nil || tap.out.dead {
			t.Fatalf("round %d: stream 1 not recorded (dead %v)", round, tap.out.dead)
		}
		var got []string
		for _, f := range st.frames {
			got = append(got, fmt.Sprintf("%s/%d", f.Type, f.Length))
		}
		if want := "HEADERS/5 DATA/16384 DATA/3 DATA/22 DATA/5000"; strings.Join(got, " ") != want {
			t.Fatalf("round %d: stream 1 frames %q, want %q", round, strings.Join(got, " "), want)
		}
		h := st.frames[0].Headers
		if len(h) != 4 || h[0] != (session.HeaderField{Name: ":method", Value: "POST"}) || h[3].Value != "a.test" || st.key != requestKey("POST", "/up") {
			t.Fatalf("round %d: headers %v key %v", round, h, st.key)
		}
		if !st.endOut || st.endIn {
			t.Fatalf("round %d: ends out %v in %v", round, st.endOut, st.endIn)
		}
		got = got[:0]
		for _, f := range r.conn {
			got = append(got, f.Type)
		}
		if want := "SETTINGS WINDOW_UPDATE PING GOAWAY"; strings.Join(got, " ") != want {
			t.Fatalf("round %d: connection frames %q", round, got)
		}
	}

	// HEADERS with padding and priority fields.
	{
		var buf, hb bytes.Buffer
		_ = hpack.NewEncoder(&hb).WriteField(hpack.HeaderField{Name: ":status", Value: "204"})
		_ = http2.NewFramer(&buf, nil).WriteHeaders(http2.HeadersFrameParam{StreamID: 5, BlockFragment: hb.Bytes(),
			EndHeaders: true, EndStream: true, PadLength: 9, Priority: http2.PriorityParam{StreamDep: 3, Weight: 200}})
		fc := testCapture(Env{Logf: t.Logf})
		tap := fc.NewH2Tap(nil, LegUpstream, 1)
		tap.in.feed(buf.Bytes())
		tap.parse()
		st := tap.rec.streams[5]
		if tap.in.dead || st == nil || len(st.frames) != 1 || len(st.frames[0].Headers) != 1 ||
			st.frames[0].Headers[0].Value != "204" || st.frames[0].Flags != "END_STREAM|END_HEADERS|PADDED|PRIORITY" || !st.endIn {
			t.Fatalf("padded HEADERS: dead %v, %+v", tap.in.dead, st)
		}
	}

	// PUSH_PROMISE adds to the HPACK table; the HEADERS after it refers to the entry.
	var buf, hb bytes.Buffer
	fr := http2.NewFramer(&buf, nil)
	enc := hpack.NewEncoder(&hb)
	_ = enc.WriteField(hpack.HeaderField{Name: ":method", Value: "GET"})
	_ = enc.WriteField(hpack.HeaderField{Name: "x-pushed", Value: "yes"})
	_ = fr.WritePushPromise(http2.PushPromiseParam{StreamID: 1, PromiseID: 2, BlockFragment: slices.Clone(hb.Bytes()), EndHeaders: true})
	hb.Reset()
	_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	_ = enc.WriteField(hpack.HeaderField{Name: "x-pushed", Value: "yes"})
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true})
	fc := testCapture(Env{Logf: t.Logf})
	tap := fc.NewH2Tap(nil, LegUpstream, 1) // responses come "in", without a preface
	tap.in.feed(buf.Bytes())
	tap.parse()
	fs := tap.rec.streams[1].frames
	if len(fs) != 2 || fs[0].Type != "PUSH_PROMISE" || fs[0].Detail != "promised_stream=2" ||
		fs[1].Type != "HEADERS" || len(fs[1].Headers) != 2 || fs[1].Headers[1] != (session.HeaderField{Name: "x-pushed", Value: "yes"}) {
		t.Fatalf("push promise: %+v", fs)
	}
}

// TestTapStopsOnBadHeaderBlock: a CONTINUATION without a block, a frame inside a block or
// a broken HPACK block stop capture for the direction with a logged reason.
func TestTapStopsOnBadHeaderBlock(t *testing.T) {
	frames := map[string]func(fr *http2.Framer){
		"PROTOCOL_ERROR": func(fr *http2.Framer) { _ = fr.WriteContinuation(1, true, []byte{0x82}) }, // the Framer's check
		"PING on stream 0 inside the header block of stream 1": func(fr *http2.Framer) {
			_ = fr.WritePushPromise(http2.PushPromiseParam{StreamID: 1, PromiseID: 2, BlockFragment: []byte{0x82}})
			_ = fr.WritePing(false, [8]byte{})
			_ = fr.WriteContinuation(1, true, []byte{0x84})
		},
		"HEADERS with padding longer than its payload": func(fr *http2.Framer) {
			_ = fr.WriteRawFrame(http2.FrameHeaders, http2.FlagHeadersPadded|http2.FlagHeadersEndHeaders, 1, []byte{5, 0x82})
		},
		"HEADERS too short for its priority fields": func(fr *http2.Framer) {
			_ = fr.WriteRawFrame(http2.FrameHeaders, http2.FlagHeadersPriority|http2.FlagHeadersEndHeaders, 1, []byte{0, 0, 0})
		},
		"HEADERS on stream 0": func(fr *http2.Framer) {
			_ = fr.WriteRawFrame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 0, []byte{0x82})
		},
		"decoding error": func(fr *http2.Framer) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0xff, 0xff, 0xff, 0xff, 0x7f}, EndHeaders: true})
		},
	}
	for want, write := range frames {
		var logged []string
		fc := testCapture(Env{Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
		tap := fc.NewH2Tap(nil, LegUpstream, 1)
		var buf bytes.Buffer
		write(http2.NewFramer(&buf, nil))
		tap.in.feed(buf.Bytes())
		tap.parse()
		if !tap.in.dead || len(logged) != 1 || !strings.Contains(logged[0], want) {
			t.Errorf("%s: dead %v, logged %q", want, tap.in.dead, logged)
		}
	}
}

// TestFrameRecOpeningFrames: every session gets the connection's opening frames and the
// connection frames seen during its stream, in time order, whether the stream began
// before the opening was complete or after (then the opening is copied in up front).
func TestFrameRecOpeningFrames(t *testing.T) {
	got := map[session.ID][]session.Frame{}
	fc := testCapture(Env{Sink: func(id session.ID, fs []session.Frame) { got[id] = append(got[id], fs...) }})
	r := newRec(fc, LegClient, session.HTTP2, 1)
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	conn := func(ms int, typ string) {
		r.add(session.Frame{Dir: "in", Time: at(ms), Type: typ}, true, reqKey{}, false)
	}
	req := func(ms int, stream uint64, end bool) {
		r.add(session.Frame{Dir: "in", Time: at(ms), Stream: stream, Type: "HEADERS"}, false, requestKey("GET", "/"), end)
	}
	resp := func(ms int, stream uint64) {
		r.add(session.Frame{Dir: "out", Time: at(ms), Stream: stream, Type: "DATA"}, false, reqKey{}, true)
	}
	names := func(fs []session.Frame) string {
		var b strings.Builder
		for i, f := range fs {
			if i > 0 && f.Time.Before(fs[i-1].Time) {
				t.Fatalf("frames out of time order: %+v", fs)
			}
			fmt.Fprintf(&b, "%s@%d ", f.Type, f.Time.Sub(t0).Milliseconds())
		}
		return strings.TrimSpace(b.String())
	}
	// Stream 1 begins inside the opening exchange.
	for i := range 3 {
		conn(i, "SETTINGS")
	}
	r.Link(1, "GET", "/")
	req(3, 1, true)
	for i := 4; i < 9; i++ {
		conn(i, "WINDOW_UPDATE")
	}
	resp(9, 1)
	want1 := "SETTINGS@0 SETTINGS@1 SETTINGS@2 HEADERS@3 WINDOW_UPDATE@4 WINDOW_UPDATE@5 WINDOW_UPDATE@6 WINDOW_UPDATE@7 WINDOW_UPDATE@8 DATA@9"
	if n := names(got[1]); n != want1 {
		t.Fatalf("stream 1:\n got %s\nwant %s", n, want1)
	}
	// Stream 3 begins after it: the opening is copied in; a PING during the stream goes
	// with it, a frame from before the stream parsed late (the other direction lagging)
	// does not: it is neither in the opening nor in the stream's time.
	r.Link(2, "GET", "/")
	req(20, 3, true)
	conn(21, "PING")
	conn(5, "SETTINGS") // parsed late: goes after the opening frames the streams hold
	resp(22, 3)
	want3 := "SETTINGS@0 SETTINGS@1 SETTINGS@2 WINDOW_UPDATE@4 WINDOW_UPDATE@5 WINDOW_UPDATE@6 WINDOW_UPDATE@7 WINDOW_UPDATE@8 HEADERS@20 PING@21 DATA@22"
	if n := names(got[2]); n != want3 {
		t.Fatalf("stream 3:\n got %s\nwant %s", n, want3)
	}
	// Stream 5 with no connection frames during it gets the opening and its own frames.
	r.Link(3, "GET", "/")
	req(30, 5, true)
	resp(31, 5)
	want5 := "SETTINGS@0 SETTINGS@1 SETTINGS@2 WINDOW_UPDATE@4 WINDOW_UPDATE@5 WINDOW_UPDATE@6 WINDOW_UPDATE@7 WINDOW_UPDATE@8 HEADERS@30 DATA@31"
	if n := names(got[3]); n != want5 {
		t.Fatalf("stream 5:\n got %s\nwant %s", n, want5)
	}
	if r.held != 0 {
		t.Fatalf("%d frames held after every stream was delivered", r.held)
	}
}

// Header fields of small blocks share an array; a frame's fields stay its own: appending
// to them or changing them leaves the other blocks' fields alone, and large blocks get
// an array of their own.
func TestKeepFieldsShareWithoutOverlap(t *testing.T) {
	d := &tapDir{}
	field := func(i int) session.HeaderField {
		return session.HeaderField{Name: fmt.Sprint("n", i), Value: fmt.Sprint("v", i)}
	}
	var blocks [][]session.HeaderField
	for b := range 40 { // more than one slab
		fs := make([]session.HeaderField, 1+b%5)
		for i := range fs {
			fs[i] = field(100*b + i)
		}
		blocks = append(blocks, d.keepFields(fs))
		clear(fs) // the caller reuses its buffer
	}
	for b, got := range blocks {
		if len(got) != 1+b%5 || cap(got) != len(got) {
			t.Fatalf("block %d: len %d cap %d", b, len(got), cap(got))
		}
		_ = append(got, field(-1)) // must not reach the next block
		got[0].Value = "changed"   // in place: this block only
	}
	for b, got := range blocks {
		for i, f := range got {
			want := field(100*b + i)
			if i == 0 {
				want.Value = "changed"
			}
			if f != want {
				t.Fatalf("block %d field %d = %+v, want %+v", b, i, f, want)
			}
		}
	}
	big := make([]session.HeaderField, headerSlab)
	for i := range big {
		big[i] = field(i)
	}
	kept := d.keepFields(big)
	if len(kept) != headerSlab || &kept[0] == &big[0] || kept[headerSlab-1] != field(headerSlab-1) {
		t.Fatalf("large block not copied whole: len %d", len(kept))
	}
	if len(d.slab) > headerSlab {
		t.Fatalf("slab grew to %d fields", len(d.slab))
	}
}
