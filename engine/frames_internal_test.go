package engine

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"inspector/engine/session"
)

// h2Stream writes a realistic sequence of frames (after the client preface) and returns
// the bytes and what each frame is.
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
	must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true}))
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
// copy parses into the same frames, with DATA lengths carried over.
func TestTapShortenKeepsFrames(t *testing.T) {
	raw, want := h2Stream(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		d := &tapDir{pre: len(http2.ClientPreface)}
		var copyBuf bytes.Buffer
		for p := raw; len(p) > 0; {
			n := 1 + rng.IntN(min(len(p), []int{1, 7, 100, 20000}[round%4]))
			copyBuf.Write(d.shorten(p[:n]))
			p = p[n:]
		}
		if copyBuf.Len() >= len(raw)/2 {
			t.Fatalf("round %d: copy is %d bytes of %d: DATA payloads not left out", round, copyBuf.Len(), len(raw))
		}
		b := copyBuf.Bytes()
		if !bytes.HasPrefix(b, []byte(http2.ClientPreface)) {
			t.Fatalf("round %d: preface lost", round)
		}
		fr := http2.NewFramer(nil, bytes.NewReader(b[len(http2.ClientPreface):]))
		fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		for i, w := range want {
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

func TestFrameRecCapsHeldFramesAndCounts(t *testing.T) {
	e := &Engine{}
	e.capture.Store(true)
	r := newFrameRec(e, legClient, session.HTTP2, 1)
	now := time.Now()
	for i := 0; i < maxHeldFrames+100; i++ {
		r.add(session.Frame{Dir: "in", Time: now, Stream: uint64(1 + 2*(i%10)), Type: "DATA"}, false, "", false)
	}
	if r.held != maxHeldFrames || e.framesDropped.Load() != 100 {
		t.Fatalf("held %d dropped %d, want %d and 100", r.held, e.framesDropped.Load(), maxHeldFrames)
	}
	// Connection-level frames are bounded on their own.
	for i := 0; i < 10*maxConnFrames; i++ {
		r.add(session.Frame{Dir: "in", Time: now, Type: "PING"}, true, "", false)
	}
	if len(r.conn) > maxConnFrames {
		t.Fatalf("%d connection frames kept", len(r.conn))
	}
	// With capture off nothing is held.
	e.capture.Store(false)
	r.add(session.Frame{Dir: "in", Time: now, Stream: 999, Type: "HEADERS"}, false, "", false)
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
	e := &Engine{cfg: Config{FrameSink: func(id session.ID, fs []session.Frame) { got[id] = append(got[id], fs...) }}}
	e.capture.Store(true)
	r := newFrameRec(e, legClient, session.HTTP2, 1)
	t0 := time.Now()
	hdr := func(stream uint64) session.Frame {
		return session.Frame{Dir: "in", Time: t0, Stream: stream, Type: "HEADERS"}
	}
	// Stream 1 arrives before its session, session 2 is announced before stream 3.
	r.add(hdr(1), false, requestKey("GET", "/a"), true)
	r.link(10, "GET", "/a")
	r.link(11, "GET", "/a")
	r.add(hdr(3), false, requestKey("GET", "/a"), true)
	// The responses end both streams.
	r.add(session.Frame{Dir: "out", Time: t0, Stream: 3, Type: "HEADERS"}, false, "", true)
	r.add(session.Frame{Dir: "out", Time: t0, Stream: 1, Type: "HEADERS"}, false, "", true)
	if len(got[10]) != 2 || got[10][0].Stream != 1 || len(got[11]) != 2 || got[11][0].Stream != 3 {
		t.Fatalf("linking: %+v", got)
	}
	// A late frame on an ended stream goes to its session on its own.
	r.add(session.Frame{Dir: "out", Time: t0, Stream: 1, Type: "WINDOW_UPDATE"}, false, "", false)
	if len(got[10]) != 3 {
		t.Fatalf("late frame not delivered: %+v", got[10])
	}
	// Unlinked ended streams are forgotten after maxEndedUnlinked.
	for i := 0; i < maxEndedUnlinked+5; i++ {
		s := uint64(101 + 2*i)
		r.add(hdr(s), false, requestKey("GET", "/never"), true)
		r.add(session.Frame{Dir: "out", Time: t0, Stream: s, Type: "HEADERS"}, false, "", true)
	}
	if r.held > 2*maxEndedUnlinked || len(r.unlinked[requestKey("GET", "/never")]) > maxEndedUnlinked {
		t.Fatalf("unlinked streams not forgotten: held %d, queued %d", r.held, len(r.unlinked[requestKey("GET", "/never")]))
	}
}

func TestTapOverflowStopsCaptureNotTraffic(t *testing.T) {
	e := &Engine{cfg: Config{Logf: func(string, ...any) {}}}
	tap := &h2Tap{rec: newFrameRec(e, legClient, session.HTTP2, 1)}
	d := &tapDir{t: tap, dir: "in", ch: make(chan tapChunk, 2)} // no parser: the queue fills
	for i := 0; i < 5; i++ {
		d.feed([]byte("PRI * HTTP/2.0\r\n"))
	}
	if !d.dead.Load() || e.framesDropped.Load() == 0 {
		t.Fatalf("overflow: dead %v dropped %d", d.dead.Load(), e.framesDropped.Load())
	}
	d.close()
	d.close() // idempotent
	d.feed([]byte("x"))
}
