package engine_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

// frameLog collects what FrameSink delivers, per session.
type frameLog struct {
	mu     sync.Mutex
	frames map[session.ID][]session.Frame
	signal chan struct{}
}

func newFrameLog() *frameLog {
	return &frameLog{frames: map[session.ID][]session.Frame{}, signal: make(chan struct{}, 1)}
}

func (l *frameLog) sink(id session.ID, fs []session.Frame) {
	l.mu.Lock()
	l.frames[id] = append(l.frames[id], fs...)
	l.mu.Unlock()
	select {
	case l.signal <- struct{}{}:
	default:
	}
}

// waitFor waits until the frames of id satisfy ok, and returns them.
func (l *frameLog) waitFor(t *testing.T, id session.ID, ok func([]session.Frame) bool) []session.Frame {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		fs := append([]session.Frame(nil), l.frames[id]...)
		l.mu.Unlock()
		if ok(fs) {
			return fs
		}
		select {
		case <-l.signal:
		case <-deadline:
			for _, f := range fs {
				t.Logf("%s %s stream=%d %s %s len=%d %v %s", f.Leg, f.Dir, f.Stream, f.Type, f.Flags, f.Length, f.Headers, f.Detail)
			}
			t.Fatalf("session %d: frames incomplete after 10s", id)
		}
	}
}

func has(fs []session.Frame, leg, dir, typ string) bool {
	for _, f := range fs {
		if f.Leg == leg && f.Dir == dir && f.Type == typ {
			return true
		}
	}
	return false
}

func header(fs []session.Frame, leg, dir, name string) string {
	for _, f := range fs {
		if f.Leg == leg && f.Dir == dir && f.Type == "HEADERS" {
			for _, h := range f.Headers {
				if h.Name == name {
					return h.Value
				}
			}
		}
	}
	return ""
}

func TestH2FramesOnBothLegs(t *testing.T) {
	et.RequireNoLeaks(t)
	log := newFrameLog()
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, func(c *engine.Config) { c.FrameSink = log.sink }, o)
	c := p.Client(t, et.ClientH2)

	// A large upload and download make both sides send WINDOW_UPDATE.
	body := et.RandomBytes(256 << 10)
	resp, err := c.Post(o.URL+"/echo?frames=1", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	s1 := p.Next(t)
	resp, err = c.Get(o.URL + "/bytes?n=300000")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	s2 := p.Next(t)

	fs := log.waitFor(t, s1.ID, func(fs []session.Frame) bool {
		return has(fs, "client", "in", "DATA") && has(fs, "client", "out", "HEADERS") &&
			has(fs, "upstream", "out", "DATA") && has(fs, "upstream", "in", "HEADERS")
	})
	for _, leg := range []string{"client", "upstream"} {
		for _, dir := range []string{"in", "out"} {
			for _, typ := range []string{"SETTINGS", "HEADERS"} {
				if !has(fs, leg, dir, typ) {
					t.Errorf("upload session: no %s %s %s frame", leg, dir, typ)
				}
			}
		}
	}
	if !has(fs, "client", "out", "WINDOW_UPDATE") || !has(fs, "upstream", "in", "WINDOW_UPDATE") {
		t.Errorf("upload session: WINDOW_UPDATE missing (client out: %v, upstream in: %v)",
			has(fs, "client", "out", "WINDOW_UPDATE"), has(fs, "upstream", "in", "WINDOW_UPDATE"))
	}
	if got := header(fs, "client", "in", ":path"); got != "/echo?frames=1" {
		t.Errorf("client HEADERS :path = %q", got)
	}
	if got := header(fs, "upstream", "out", ":method"); got != "POST" {
		t.Errorf("upstream HEADERS :method = %q", got)
	}
	if got := header(fs, "upstream", "in", ":status"); got != "200" {
		t.Errorf("upstream response HEADERS :status = %q", got)
	}
	var dataIn int
	var clientStream uint64
	for _, f := range fs {
		if f.Leg == "client" && f.Dir == "in" && f.Type == "DATA" {
			dataIn += f.Length
			clientStream = f.Stream
		}
		if f.Type == "SETTINGS" && f.Flags == "" && f.Detail == "" && f.Length > 0 {
			t.Errorf("SETTINGS without decoded values: %+v", f)
		}
	}
	if dataIn != len(body) {
		t.Errorf("client DATA in adds up to %d bytes, want %d", dataIn, len(body))
	}
	for _, f := range fs {
		if f.Stream != 0 && f.Leg == "client" && f.Stream != clientStream {
			t.Errorf("frame of another stream %d (want %d) in the session", f.Stream, clientStream)
		}
	}

	fs = log.waitFor(t, s2.ID, func(fs []session.Frame) bool {
		return has(fs, "upstream", "in", "DATA") && has(fs, "client", "out", "DATA")
	})
	if !has(fs, "upstream", "out", "WINDOW_UPDATE") {
		t.Errorf("download session: no WINDOW_UPDATE sent upstream")
	}
	if got := header(fs, "client", "in", ":path"); got != "/bytes?n=300000" {
		t.Errorf("download session linked to the wrong stream: :path %q", got)
	}
	if st := p.Stats(); st.FramesDropped != 0 {
		t.Errorf("frames dropped: %d", st.FramesDropped)
	}
}

func TestH3FramesOnBothLegs(t *testing.T) {
	et.RequireNoLeaks(t)
	log := newFrameLog()
	o := et.StartOrigin(t, et.OriginH3, nil)
	p := et.StartProxy(t, func(c *engine.Config) {
		c.FrameSink = log.sink
		c.ListenH3 = "127.0.0.1:0"
		c.UpstreamProto = "h3"
	}, o)
	c := p.H3Client(t)
	resp, err := c.Post(o.H3URL+"/echo?h3", "text/plain", bytes.NewReader(et.RandomBytes(40<<10)))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	s := p.Next(t)
	fs := log.waitFor(t, s.ID, func(fs []session.Frame) bool {
		return has(fs, "client", "in", "DATA") && has(fs, "client", "out", "DATA") &&
			has(fs, "upstream", "in", "DATA") && has(fs, "upstream", "out", "DATA")
	})
	for _, leg := range []string{"client", "upstream"} {
		for _, dir := range []string{"in", "out"} {
			if !has(fs, leg, dir, "HEADERS") {
				t.Errorf("no %s %s HEADERS", leg, dir)
			}
		}
	}
	if got := header(fs, "client", "in", ":path"); got != "/echo?h3" {
		t.Errorf("client HEADERS :path %q", got)
	}
	if got := header(fs, "upstream", "in", ":status"); got != "200" {
		t.Errorf("upstream HEADERS :status %q", got)
	}
	if !has(fs, "upstream", "in", "SETTINGS") && !has(fs, "client", "in", "SETTINGS") {
		t.Errorf("no SETTINGS recorded")
	}
	for _, f := range fs {
		if f.Proto != session.HTTP3 || f.ConnID == 0 {
			t.Errorf("frame without h3 proto or conn id: %+v", f)
		}
	}
}

// TestH2FramesCaptureToggle: turning capture off makes the open HTTP/2 connections pass
// their bytes straight through for the rest of their life (the HPACK table updates they
// carry unseen make later header blocks undecodable). Requests keep working; once capture
// is back on, a client connection that saw it off records no frames, the upstream
// connection that saw it off is retired (the next request opens a recorded one), and new
// client connections record again.
func TestH2FramesCaptureToggle(t *testing.T) {
	et.RequireNoLeaks(t)
	log := newFrameLog()
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, func(c *engine.Config) { c.FrameSink = log.sink }, o)
	get := func(c *http.Client, n int) {
		t.Helper()
		resp, err := c.Get(o.URL + "/bytes?n=" + strconv.Itoa(n))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(b) != n || resp.ProtoMajor != 2 {
			t.Fatalf("GET n=%d: %s %d, %d bytes, %v", n, resp.Proto, resp.StatusCode, len(b), err)
		}
	}
	legs := func(fs []session.Frame) map[string]int {
		m := map[string]int{}
		for _, f := range fs {
			m[f.Leg]++
		}
		return m
	}
	c := p.Client(t, et.ClientH2)
	get(c, 1)
	s1 := p.Next(t)
	fs1 := log.waitFor(t, s1.ID, func(fs []session.Frame) bool {
		return header(fs, "client", "in", ":path") == "/bytes?n=1" && header(fs, "upstream", "in", ":status") == "200"
	})

	p.SetCapture(false)
	get(c, 2) // no session, and both legs' taps see capture off
	p.SetCapture(true)
	get(c, 3)
	s3 := p.Next(t)
	if s3.Request.URL != o.URL+"/bytes?n=3" {
		t.Fatalf("session after capture is back on: %s", s3.Request.URL)
	}
	// The upstream leg records again: the connection that saw capture off was retired (or,
	// when request 2 happened to get a connection of its own, the first one is reused and
	// never stopped recording). The client connection stays a pass-through.
	fs3 := log.waitFor(t, s3.ID, func(fs []session.Frame) bool {
		return header(fs, "upstream", "in", ":status") == "200" && has(fs, "upstream", "out", "SETTINGS")
	})
	if n := legs(fs3)["client"]; n != 0 {
		t.Errorf("client connection that saw capture off delivered %d frames", n)
	}

	// A new client connection records again, on both legs.
	c2 := p.Client(t, et.ClientH2)
	get(c2, 4)
	s4 := p.Next(t)
	fs := log.waitFor(t, s4.ID, func(fs []session.Frame) bool {
		return has(fs, "client", "out", "HEADERS") && has(fs, "client", "out", "DATA") && header(fs, "upstream", "in", ":status") == "200"
	})
	if got := header(fs, "client", "in", ":path"); got != "/bytes?n=4" {
		t.Errorf("new connection: client HEADERS :path %q", got)
	}
	if !has(fs, "client", "in", "SETTINGS") {
		t.Errorf("new connection: no client SETTINGS")
	}
	get(c, 5) // the old client connection still works
	s5 := p.Next(t)
	log.waitFor(t, s5.ID, func(fs []session.Frame) bool { return header(fs, "upstream", "in", ":status") == "200" })
	log.mu.Lock()
	n5, n3 := legs(log.frames[s5.ID])["client"], legs(log.frames[s3.ID])["client"]
	log.mu.Unlock()
	if n5 != 0 || n3 != 0 {
		t.Errorf("old client connection delivered frames: %d and %d", n5, n3)
	}
	if legs(fs1)["client"] == 0 {
		t.Error("first session: no client frames")
	}
	if st := p.Stats(); st.FramesDropped != 0 {
		t.Errorf("frames dropped: %d", st.FramesDropped)
	}
}

// TestH2FramesConcurrentStreamsWithoutClose: many requests at once on one client
// connection; every session gets its own stream's frames, including the response's last
// frame on the client leg (written after the session completed), while the connections
// stay open.
func TestH2FramesConcurrentStreamsWithoutClose(t *testing.T) {
	et.RequireNoLeaks(t)
	log := newFrameLog()
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, func(c *engine.Config) { c.FrameSink = log.sink }, o)
	c := p.Client(t, et.ClientH2)
	get := func(n int) error {
		resp, err := c.Get(o.URL + "/bytes?n=" + strconv.Itoa(n))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.ProtoMajor != 2 {
			return fmt.Errorf("client spoke %s", resp.Proto)
		}
		return nil
	}
	if err := get(1); err != nil { // one connection first, so the rest share it
		t.Fatal(err)
	}
	const n = 24
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- get(100 + i) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ended := func(fs []session.Frame, leg, dir string) bool {
		for _, f := range fs {
			if f.Leg == leg && f.Dir == dir && f.Stream != 0 && strings.Contains(f.Flags, "END_STREAM") {
				return true
			}
		}
		return false
	}
	for range n + 1 {
		s := p.Next(t)
		fs := log.waitFor(t, s.ID, func(fs []session.Frame) bool {
			return ended(fs, "client", "out") && ended(fs, "upstream", "in")
		})
		if want := strings.TrimPrefix(s.Request.URL, o.URL); header(fs, "client", "in", ":path") != want || header(fs, "upstream", "out", ":path") != want {
			t.Errorf("session %s: frames of %q (client) and %q (upstream)", want, header(fs, "client", "in", ":path"), header(fs, "upstream", "out", ":path"))
		}
		streams := map[string]uint64{}
		for _, f := range fs {
			if f.Stream == 0 {
				continue
			}
			if other, ok := streams[f.Leg]; ok && other != f.Stream {
				t.Errorf("session %d: %s frames of streams %d and %d", s.ID, f.Leg, other, f.Stream)
			}
			streams[f.Leg] = f.Stream
		}
	}
	if st := p.Stats(); st.FramesDropped != 0 {
		t.Errorf("frames dropped: %d", st.FramesDropped)
	}
}
