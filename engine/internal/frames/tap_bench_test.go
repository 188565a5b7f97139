package frames

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"inspector/engine/session"
)

// scriptConn is a net.Conn whose reads return next's bytes and whose writes go nowhere.
type scriptConn struct {
	net.Conn
	next []byte
}

func (c *scriptConn) Read(p []byte) (int, error) {
	if len(c.next) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.next)
	c.next = c.next[n:]
	return n, nil
}
func (c *scriptConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *scriptConn) Close() error                { return nil }

// h2Exchange returns the bytes of one tiny GET exchange on stream 1 as a client leg sees
// them: the request read (HEADERS with END_STREAM), the response head written (HEADERS)
// and its body written (DATA with END_STREAM); headers are HPACK literals and static
// references only, so the same bytes can be replayed with other stream ids.
func h2Exchange() (req, head, body []byte) {
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	block := func(fields ...string) []byte {
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		enc.SetMaxDynamicTableSizeLimit(0) // literals without indexing: replayable
		for i := 0; i < len(fields); i += 2 {
			_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return hb.Bytes()
	}
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndStream: true, EndHeaders: true,
		BlockFragment: block(":method", "GET", ":scheme", "https", ":authority", "origin.test:443",
			":path", "/x", "user-agent", "Go-http-client/2.0", "accept-encoding", "gzip")})
	req = bytes.Clone(b.Bytes())
	b.Reset()
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true,
		BlockFragment: block(":status", "200", "content-type", "application/json", "content-length", "16",
			"date", "Mon, 30 Nov 2026 08:00:00 GMT")})
	head = bytes.Clone(b.Bytes())
	b.Reset()
	_ = fr.WriteData(1, true, []byte(`{"ok":true,"n":1}`))
	body = bytes.Clone(b.Bytes())
	return req, head, body
}

// setStream sets the stream id of the single frame in b.
func setStream(b []byte, id uint32) { binary.BigEndian.PutUint32(b[5:9], id) }

// BenchmarkFrameTapClientLeg measures frame capture alone on one client-leg HTTP/2
// connection: per op, a request read through the tap, its session announced and
// completed, and the response written through it, and the next exchange starts once
// the sink has its frames (as a client waits for the response); the sink only counts.
// cpu-µs/op is the process's CPU per exchange, background work included.
func BenchmarkFrameTapClientLeg(b *testing.B) { benchTapClientLeg(b, false) }

// BenchmarkFrameTapClientLegFreshGoroutines is BenchmarkFrameTapClientLeg with the
// goroutines x/net/http2's server uses: the session completes on a goroutine of its own
// (the handler's) and each write runs on a new goroutine (as writeFrameAsync does), so
// a parse that runs in a write starts on a small stack and pays for growing it.
func BenchmarkFrameTapClientLegFreshGoroutines(b *testing.B) { benchTapClientLeg(b, true) }

func benchTapClientLeg(b *testing.B, fresh bool) {
	run := func(f func()) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			f()
		}()
		<-done
	}
	var delivered atomic.Int64
	signal := make(chan struct{}, 1)
	fc := testCapture(Env{Logf: b.Logf, Sink: func(_ session.ID, fs []session.Frame) {
		delivered.Add(int64(len(fs)))
		select {
		case signal <- struct{}{}:
		default:
		}
	}})
	conn := &scriptConn{}
	tap := fc.NewH2Tap(conn, LegClient, 1)
	var open bytes.Buffer
	open.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&open, nil)
	_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 4 << 20})
	_ = fr.WriteWindowUpdate(0, 1<<30)
	conn.next = open.Bytes()
	buf := make([]byte, 64<<10)
	_, _ = tap.Read(buf)
	var srv bytes.Buffer
	sfr := http2.NewFramer(&srv, nil)
	_ = sfr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 250})
	_ = sfr.WriteSettingsAck()
	_, _ = tap.Write(srv.Bytes())
	srv.Reset()
	_ = sfr.WriteSettingsAck()
	conn.next = srv.Bytes()
	_, _ = tap.Read(buf)

	req, head, body := h2Exchange()
	b.ReportAllocs()
	cpu0 := cpuTimeInternal()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := uint32(1 + 2*i)
		setStream(req, id)
		setStream(head, id)
		setStream(body, id)
		conn.next = req
		_, _ = tap.Read(buf)
		sid := session.ID(i + 1)
		if fresh {
			run(func() { tap.rec.Link(sid, "GET", "/x") })
			run(func() { _, _ = tap.Write(head) })
			run(func() { tap.rec.SessionDone(sid) })
			run(func() { _, _ = tap.Write(body) })
		} else {
			tap.rec.Link(sid, "GET", "/x")
			_, _ = tap.Write(head)
			tap.rec.SessionDone(sid)
			_, _ = tap.Write(body)
		}
		// Every session gets its 3 frames and at least 4 opening ones.
		for delivered.Load() < int64(7*(i+1)) {
			select {
			case <-signal:
			case <-time.After(10 * time.Second):
				b.Fatalf("%d frames delivered for %d exchanges (%d dropped)", delivered.Load(), i+1, fc.Dropped())
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTimeInternal()-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(delivered.Load())/float64(b.N), "frames/op")
	_ = tap.Close()
}

func cpuTimeInternal() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
