package engine_test

import (
	"bytes"
	"io"
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
