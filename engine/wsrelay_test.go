package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

// writeFrame writes one frame with the given FIN and RSV bits, masked as a client's.
func writeFrame(t *testing.T, w io.Writer, op int, data []byte, fin bool, rsv byte) {
	t.Helper()
	b0 := byte(op) | rsv
	if fin {
		b0 |= 0x80
	}
	hdr := []byte{b0}
	switch n := len(data); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n < 1<<16:
		hdr = append(hdr, 0x80|126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	var key [4]byte
	_, _ = rand.Read(key[:])
	hdr = append(hdr, key[:]...)
	payload := make([]byte, len(data))
	for i := range data {
		payload[i] = data[i] ^ key[i%4]
	}
	if _, err := w.Write(append(hdr, payload...)); err != nil {
		t.Fatal(err)
	}
}

func expectFrame(t *testing.T, br *bufio.Reader, op int, data string) {
	t.Helper()
	gotOp, got, err := et.ReadWSFrame(br)
	if err != nil || gotOp != op || string(got) != data {
		if len(got) > 64 {
			got = append(got[:64:64], "…"...)
		}
		if len(data) > 64 {
			data = data[:64] + "…"
		}
		t.Fatalf("got op %d %q (%v), want op %d %q", gotOp, got, err, op, data)
	}
}

// rewriteHook rewrites and drops client messages and turns "bin:" echoes binary.
var rewriteHook = engine.MessageHookFunc(func(ctx context.Context, m *engine.WebSocketMessage) error {
	switch s := string(m.Data); {
	case m.FromClient && s == "rewrite-me":
		m.Data = []byte("REWRITTEN")
	case m.FromClient && s == "drop-me":
		m.Drop = true
	case !m.FromClient && strings.HasPrefix(s, "bin:"):
		m.Opcode = 2
	}
	return nil
})

// closeWS sends a close, reads the echoed one and returns the session.
func closeWS(t *testing.T, p *et.Proxy, w io.Writer, br *bufio.Reader) *session.Session {
	t.Helper()
	writeFrame(t, w, 8, []byte{3, 232}, true, 0)
	expectFrame(t, br, 8, "\x03\xe8")
	if c, ok := w.(io.Closer); ok {
		c.Close()
	}
	return p.Next(t)
}

type recorded struct {
	text              string
	op                int
	modified, dropped bool
}

func clientMessages(s *session.Session) []recorded {
	var out []recorded
	for _, m := range s.Messages {
		if m.FromClient && m.Opcode < 8 {
			out = append(out, recorded{string(m.Data), m.Opcode, m.Modified, m.Dropped})
		}
	}
	return out
}

// runRewriteScenario drives the echo origin through a hooked proxy: a rewritten and a
// dropped message, a message the origin→client hook turns binary, and a fragmented
// message with a ping between its fragments.
func runRewriteScenario(t *testing.T, p *et.Proxy, w io.Writer, br *bufio.Reader) {
	writeFrame(t, w, 1, []byte("hello"), true, 0)
	expectFrame(t, br, 1, "hello")
	writeFrame(t, w, 1, []byte("rewrite-me"), true, 0)
	writeFrame(t, w, 1, []byte("drop-me"), true, 0)
	writeFrame(t, w, 1, []byte("bin:x"), true, 0)
	expectFrame(t, br, 1, "REWRITTEN")
	expectFrame(t, br, 2, "bin:x") // drop-me never reached the origin
	// A fragmented message with a ping inside: the ping reaches the origin (which echoes
	// it) before the message, which goes on whole, as one frame.
	writeFrame(t, w, 1, []byte("frag"), false, 0)
	writeFrame(t, w, 9, []byte("p1"), true, 0)
	writeFrame(t, w, 0, []byte("men"), false, 0)
	writeFrame(t, w, 0, []byte("ted"), true, 0)
	expectFrame(t, br, 9, "p1")
	expectFrame(t, br, 1, "fragmented")
	// A binary message of 200 KiB in 3 fragments passes through the hooks too.
	big := et.Pattern(200 << 10)
	writeFrame(t, w, 2, big[:1000], false, 0)
	writeFrame(t, w, 0, big[1000:100000], false, 0)
	writeFrame(t, w, 0, big[100000:], true, 0)
	expectFrame(t, br, 2, string(big))

	s := closeWS(t, p, w, br)
	want := []recorded{
		{"hello", 1, false, false}, {"REWRITTEN", 1, true, false}, {"drop-me", 1, false, true},
		{"bin:x", 1, false, false}, {"fragmented", 1, false, false}, {string(big), 2, false, false},
	}
	if got := clientMessages(s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("recorded client messages\n%.300v\nwant\n%.300v", got, want)
	}
	var binEcho, ping bool
	for _, m := range s.Messages {
		if !m.FromClient && string(m.Data) == "bin:x" {
			binEcho = m.Opcode == 2 && m.Modified
		}
		if m.FromClient && m.Opcode == 9 && string(m.Data) == "p1" {
			ping = true
		}
	}
	if !binEcho || !ping {
		t.Errorf("origin→client bin:x recorded as a modified binary message: %v; client ping recorded: %v", binEcho, ping)
	}
}

// hookedWS starts the echo origin of kind and a proxy with hooks, and opens a WebSocket
// through it: HTTP/1.1 Upgrade, or RFC 8441 extended CONNECT over h2 when h2 is set.
func hookedWS(t *testing.T, kind string, h2 bool, hooks ...engine.MessageHook) (*et.Proxy, io.Writer, *bufio.Reader) {
	t.Helper()
	o := et.StartOrigin(t, kind, nil)
	p := et.StartProxy(t, nil, o)
	for _, h := range hooks {
		p.Engine.AddMessageHook(h)
	}
	if h2 {
		resp, pw := h2WSStream(t, p, o.URL+"/ws")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %s", resp.Status)
		}
		return p, pw, bufio.NewReader(resp.Body)
	}
	scheme := "ws"
	if strings.HasPrefix(o.URL, "https") {
		scheme = "wss"
	}
	conn, br := p.WSDial(t, scheme+o.URL[strings.Index(o.URL, ":"):]+"/ws")
	return p, conn, br
}

// A hook rewrites and drops messages over HTTP/1.1 (plain and TLS) and HTTP/2 extended
// CONNECT (to an h1 and an h2 origin).
func TestMessageHookRewritesAndDrops(t *testing.T) {
	for _, c := range []struct {
		kind string
		h2   bool
	}{{et.OriginH1Plain, false}, {et.OriginH1TLS, false}, {et.OriginH1Plain, true}, {et.OriginH2TLS, true}} {
		t.Run(fmt.Sprintf("%s/h2=%v", c.kind, c.h2), func(t *testing.T) {
			et.RequireNoLeaks(t)
			p, w, br := hookedWS(t, c.kind, c.h2, rewriteHook)
			runRewriteScenario(t, p, w, br)
		})
	}
}

// Pings pass both ways while a hook holds a message; the message goes on once the hook
// returns, and messages behind it stay behind it.
func TestMessageHookPingsPassWhileHookRuns(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	p.Engine.AddMessageHook(engine.MessageHookFunc(func(ctx context.Context, m *engine.WebSocketMessage) error {
		if m.FromClient && string(m.Data) == "slow" {
			once.Do(func() { close(entered) })
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			m.Data = []byte("slow, released")
		}
		return nil
	}))
	conn, br := p.WSDial(t, "ws"+o.URL[len("http"):]+"/ws")
	writeFrame(t, conn, 1, []byte("slow"), true, 0)
	writeFrame(t, conn, 1, []byte("after"), true, 0)
	<-entered
	writeFrame(t, conn, 9, []byte("ping while held"), true, 0)
	expectFrame(t, br, 9, "ping while held") // went to the origin and back while the hook holds "slow"
	writeFrame(t, conn, 10, []byte("pong too"), true, 0)
	expectFrame(t, br, 10, "pong too")
	close(release)
	expectFrame(t, br, 1, "slow, released")
	expectFrame(t, br, 1, "after")
	closeWS(t, p, conn, br)
}

// A hook that fails, panics or sets a payload that cannot be sent changes nothing: the
// message goes on as it came and its record says why. Later hooks still run.
func TestMessageHookErrors(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	p.Engine.AddMessageHook(engine.MessageHookFunc(func(ctx context.Context, m *engine.WebSocketMessage) error {
		if !m.FromClient {
			return nil
		}
		switch string(m.Data) {
		case "fail":
			m.Data = []byte("half-done edit")
			return errors.New("hook failed")
		case "panic":
			panic("boom")
		case "bad-utf8":
			m.Data = []byte{0xff, 0xfe}
		case "bad-opcode":
			m.Opcode = 9
		}
		return nil
	}))
	var later int
	p.Engine.AddMessageHook(engine.MessageHookFunc(func(ctx context.Context, m *engine.WebSocketMessage) error {
		if m.FromClient {
			later++
		}
		return nil
	}))
	conn, br := p.WSDial(t, "ws"+o.URL[len("http"):]+"/ws")
	cases := map[string]string{
		"fail": "hook failed", "panic": "panicked: boom",
		"bad-utf8": "not valid UTF-8", "bad-opcode": "opcode 9",
	}
	order := []string{"fail", "panic", "bad-utf8", "bad-opcode"}
	for _, c := range order {
		writeFrame(t, conn, 1, []byte(c), true, 0)
		expectFrame(t, br, 1, c)
	}
	s := closeWS(t, p, conn, br)
	i := 0
	for _, m := range s.Messages {
		if !m.FromClient || m.Opcode != 1 {
			continue
		}
		if string(m.Data) != order[i] || m.Modified || !strings.Contains(m.HookError, cases[order[i]]) {
			t.Errorf("record %q modified %v hook error %q, want %q unmodified with %q", m.Data, m.Modified, m.HookError, order[i], cases[order[i]])
		}
		i++
	}
	if i != len(order) || later != len(order) {
		t.Errorf("%d records, later hook ran %d times; want %d", i, later, len(order))
	}
}

// Compressed messages (RSV1) and messages past the hook size bound go on unmodified and
// are not given to the hooks; their records say so.
func TestMessageHookPassesUnhookable(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	var hooked []string
	var mu sync.Mutex
	p.Engine.AddMessageHook(engine.MessageHookFunc(func(ctx context.Context, m *engine.WebSocketMessage) error {
		if m.FromClient {
			mu.Lock()
			hooked = append(hooked, fmt.Sprintf("%.10s/%d", m.Data, len(m.Data)))
			mu.Unlock()
			m.Data = []byte("HOOKED")
		}
		return nil
	}))
	conn, br := p.WSDial(t, "ws"+o.URL[len("http"):]+"/ws")
	// The echo origin does not inflate: it echoes the bytes in a frame without RSV1.
	writeFrame(t, conn, 1, []byte("deflated bytes"), true, 0x40)
	expectFrame(t, br, 1, "deflated bytes")
	huge := et.Pattern(5 << 20)
	writeFrame(t, conn, 2, huge[:3<<20], false, 0)
	writeFrame(t, conn, 0, huge[3<<20:], true, 0)
	// The first 3 MiB were assembled for the hooks, then the message turned out too
	// large: they went on as a first fragment, the rest as it came.
	expectFrame(t, br, 2, string(huge[:3<<20]))
	expectFrame(t, br, 0, string(huge[3<<20:]))
	writeFrame(t, conn, 1, []byte("small"), true, 0)
	expectFrame(t, br, 1, "HOOKED")
	s := closeWS(t, p, conn, br)
	if fmt.Sprint(hooked) != "[small/5]" {
		t.Errorf("hooks saw %v, want only the small message", hooked)
	}
	var reasons []string
	for _, m := range s.Messages {
		if m.FromClient && m.Unhooked != "" {
			reasons = append(reasons, fmt.Sprintf("%d:%s", m.Size, m.Unhooked[:strings.Index(m.Unhooked, " ")]))
		}
	}
	if want := fmt.Sprintf("[14:compressed %d:larger]", 5<<20); fmt.Sprint(reasons) != want {
		t.Errorf("unhooked records %v, want %s", reasons, want)
	}
}

// With no hook the relay stays the copying tap: fragments go through as they came.
func TestNoMessageHookCopiesFrames(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	conn, br := p.WSDial(t, "ws"+o.URL[len("http"):]+"/ws")
	writeFrame(t, conn, 1, []byte("a"), false, 0)
	writeFrame(t, conn, 0, []byte("b"), true, 0)
	expectFrame(t, br, 1, "a")
	expectFrame(t, br, 0, "b")
	s := closeWS(t, p, conn, br)
	// (The echo origin answers each fragment with a final frame.)
	if got := clientMessages(s); fmt.Sprint(got) != fmt.Sprint([]recorded{{"ab", 1, false, false}}) {
		t.Errorf("client messages %+v", got)
	}
}

var upperOK = engine.MessageHookFunc(func(ctx context.Context, m *engine.WebSocketMessage) error {
	if m.FromClient && string(m.Data) == "ok" {
		m.Data = []byte("OK")
	}
	return nil
})

// A frame stream the relay cannot parse (here a reserved opcode) loses nothing: from that
// frame on, that direction is copied as it comes, and the record says why.
func TestMessageHookBadFrameStreamPassesUnparsed(t *testing.T) {
	et.RequireNoLeaks(t)
	p, w, br := hookedWS(t, et.OriginH1Plain, false, upperOK)
	conn := w.(net.Conn)
	writeFrame(t, conn, 1, []byte("ok"), true, 0)
	expectFrame(t, br, 1, "OK")
	writeFrame(t, conn, 3, []byte("reserved"), true, 0)
	expectFrame(t, br, 3, "reserved") // the origin echoes it; that direction gives up too
	writeFrame(t, conn, 1, []byte("ok"), true, 0)
	expectFrame(t, br, 1, "ok") // copied, no longer hooked
	s := closeWS(t, p, conn, br)
	var notes []string
	for _, m := range s.Messages {
		if m.Unhooked != "" {
			notes = append(notes, fmt.Sprintf("%v %d %s", m.FromClient, m.Opcode, m.Unhooked[:strings.Index(m.Unhooked, ")")+1]))
		}
	}
	want := "[true 3 not a valid WebSocket frame sequence (reserved opcode 3) false 3 not a valid WebSocket frame sequence (reserved opcode 3)]"
	if fmt.Sprint(notes) != want {
		t.Errorf("notes %q\nwant %q", notes, want)
	}
}

// Frames split at every byte (headers, masks and payloads across writes) are parsed the
// same.
func TestMessageHookByteAtATime(t *testing.T) {
	et.RequireNoLeaks(t)
	p, w, br := hookedWS(t, et.OriginH1Plain, false, upperOK)
	conn := w.(net.Conn)
	var b bytes.Buffer
	writeFrame(t, &b, 1, []byte("o"), false, 0)
	writeFrame(t, &b, 9, []byte("ping"), true, 0)
	writeFrame(t, &b, 0, []byte("k"), true, 0)
	writeFrame(t, &b, 2, et.Pattern(300), true, 0) // a 16-bit length
	for _, c := range b.Bytes() {
		if _, err := conn.Write([]byte{c}); err != nil {
			t.Fatal(err)
		}
	}
	expectFrame(t, br, 9, "ping")
	expectFrame(t, br, 1, "OK")
	expectFrame(t, br, 2, string(et.Pattern(300)))
	closeWS(t, p, conn, br)
}

// A client that leaves while a hook holds its message ends the hook's context; the relay
// and the session end, and nothing leaks.
func TestMessageHookClientLeavesWhileHookRuns(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	entered, ended := make(chan struct{}), make(chan error, 1)
	p.Engine.AddMessageHook(engine.MessageHookFunc(func(ctx context.Context, m *engine.WebSocketMessage) error {
		if m.FromClient {
			close(entered)
			<-ctx.Done()
			ended <- ctx.Err()
		}
		return nil
	}))
	conn, _ := p.WSDial(t, "ws"+o.URL[len("http"):]+"/ws")
	writeFrame(t, conn, 1, []byte("held"), true, 0)
	<-entered
	conn.Close()
	s := p.Next(t)
	if err := <-ended; err == nil {
		t.Error("the hook's context did not end")
	}
	if !s.Flags.Has(session.FlagWebSocket) {
		t.Errorf("flags %b", s.Flags)
	}
}
