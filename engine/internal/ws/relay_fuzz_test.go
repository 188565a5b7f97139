package ws

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// wsEvent is a data message (whole) or a control frame, as refDecode sees a stream.
type wsEvent struct {
	op   int
	data string
}

// refDecode decodes a frame stream the plain way, for comparing the relay's input and
// output. It returns the complete events and whether the stream broke a rule the relay
// gives up on (so that its output need not match).
func refDecode(b []byte) (ctrl, data []wsEvent, broken bool) {
	var msgOp int
	var msg []byte
	for {
		fh, n := parseWSHead(b)
		if n < 0 {
			return ctrl, data, true
		}
		if n == 0 || int64(len(b)-n) < fh.length {
			return ctrl, data, false // incomplete: the rest never completes
		}
		p := bytes.Clone(b[n : n+int(fh.length)])
		b = b[n+int(fh.length):]
		if fh.masked {
			for i := range p {
				p[i] ^= fh.key[i&3]
			}
		}
		switch {
		case fh.op >= 8:
			if !fh.fin || fh.length > 125 || fh.op > 10 {
				return ctrl, data, true
			}
			ctrl = append(ctrl, wsEvent{fh.op, string(p)})
			continue
		case fh.op >= 3, fh.op == 0 && msgOp == 0, fh.op != 0 && msgOp != 0:
			return ctrl, data, true
		case fh.op != 0:
			msgOp = fh.op
		}
		msg = append(msg, p...)
		if fh.fin {
			data = append(data, wsEvent{msgOp, string(msg)})
			msgOp, msg = 0, nil
		}
	}
}

// hookFunc adapts a function to Hook.
type hookFunc func(ctx context.Context, m *Message) error

func (h hookFunc) OnMessage(ctx context.Context, m *Message) error { return h(ctx, m) }

func seedFrame(op int, data string, fin, masked bool) []byte {
	return encodeWSFrame(op, []byte(data), fin, masked)
}

// The hooked relay forwards every message of a valid frame stream, however it is split
// across writes, masked or not: the same data messages in order, the same control frames
// in order. Any stream, valid or not, neither panics nor hangs it.
func FuzzWSRelay(f *testing.F) {
	seeds := [][]byte{
		seedFrame(1, "hello", true, true),
		append(append(seedFrame(1, "fr", false, true), seedFrame(9, "p", true, true)...), seedFrame(0, "ag", true, true)...),
		append(seedFrame(2, string(make([]byte, 300)), true, false), seedFrame(10, "", true, false)...),
		append(seedFrame(1, "a", true, true), 0xc1, 0x81, 1, 2, 3, 4, 'x'), // RSV1: compressed
		append(seedFrame(1, "ok", true, true), seedFrame(3, "reserved", true, true)...),
		append(seedFrame(8, "\x03\xe8", true, true), seedFrame(1, "after close", true, true)...),
		append(seedFrame(8, "\x03\xe8", true, true), seedFrame(9, "ping after close", true, true)...),
		{0x81, 0x7f, 0xff, 0, 0, 0, 0, 0, 0, 1},
	}
	for _, s := range seeds {
		f.Add(s, byte(1))
		f.Add(s, byte(7))
	}
	f.Fuzz(func(t *testing.T, in []byte, split byte) {
		ctrlIn, dataIn, broken := refDecode(in)
		proxySide, originSide := net.Pipe()
		tap := NewTap(proxySide, 1<<20, nil)
		tap.StartRelay(context.Background(), []Hook{hookFunc(func(context.Context, *Message) error { return nil })}, 1, "ws://fuzz/")

		want := len(ctrlIn) + len(dataIn)
		type result struct {
			ctrl, data []wsEvent
		}
		got := make(chan result, 1)
		enough := make(chan struct{})
		signalled := want == 0
		if signalled {
			close(enough)
		}
		go func() {
			var out []byte
			buf := make([]byte, 4096)
			for {
				n, err := originSide.Read(buf)
				out = append(out, buf[:n]...)
				if !broken && !signalled {
					if c, d, _ := refDecode(out); len(c)+len(d) >= want {
						signalled = true
						close(enough)
					}
				}
				if err != nil {
					c, d, _ := refDecode(out)
					got <- result{c, d}
					return
				}
			}
		}()
		step := int(split%16) + 1
		for i := 0; i < len(in); i += step {
			if _, err := tap.Write(in[i:min(i+step, len(in))]); err != nil {
				t.Fatalf("write: %v", err)
			}
		}
		if !broken {
			select {
			case <-enough:
			case <-time.After(10 * time.Second): // a failure bound, not a wait
				t.Fatal("the relay did not forward the whole valid stream")
			}
		}
		if err := tap.Close(); err != nil && !errors.Is(err, io.ErrClosedPipe) {
			t.Logf("close: %v", err)
		}
		originSide.Close()
		r := <-got
		if broken {
			return
		}
		if fmt.Sprint(r.data) != fmt.Sprint(dataIn) || fmt.Sprint(r.ctrl) != fmt.Sprint(ctrlIn) {
			t.Fatalf("forwarded data %+q ctrl %+q\nwant data %+q ctrl %+q", fmt.Sprint(r.data), fmt.Sprint(r.ctrl), fmt.Sprint(dataIn), fmt.Sprint(ctrlIn))
		}
	})
}
