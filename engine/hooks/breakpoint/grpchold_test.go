package breakpoint

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
)

func grpcFrame(msg string) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// The pause of a gRPC request holds its first message without waiting for the stream to
// end (a client stream still open); continuing unedited delivers every byte, and an edit
// replaces the first message while later messages still follow.
func TestHoldFirstGRPCMessageOfOpenStream(t *testing.T) {
	for _, edit := range []bool{false, true} {
		pr, pw := io.Pipe()
		go pw.Write(grpcFrame("one"))
		var body io.ReadCloser = pr
		raw, trunc, err := holdFirstMessage(&body)
		if err != nil || trunc || !bytes.Equal(raw, grpcFrame("one")) {
			t.Fatalf("held %q trunc=%v err=%v", raw, trunc, err)
		}
		want := append(grpcFrame("one"), grpcFrame("two")...)
		if edit {
			body = body.(*grpcHeld).withRest(grpcFrame("ONE!"))
			want = append(grpcFrame("ONE!"), grpcFrame("two")...)
		}
		go func() { pw.Write(grpcFrame("two")); pw.Close() }()
		got, err := io.ReadAll(body)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("edit=%v: sent %q, %v; want %q", edit, got, err, want)
		}
		body.Close()
	}
}

// Bad and edge bodies: empty, cut inside the header or the message (shown as they are,
// nothing lost), a message larger than MaxBody (not read, every byte still delivered).
func TestHoldFirstGRPCMessageEdges(t *testing.T) {
	var body io.ReadCloser = http.NoBody
	if raw, trunc, err := holdFirstMessage(&body); raw != nil || trunc || err != nil {
		t.Fatalf("no body: %q %v %v", raw, trunc, err)
	}
	body = io.NopCloser(bytes.NewReader(nil))
	if raw, trunc, err := holdFirstMessage(&body); raw != nil || trunc || err != nil {
		t.Fatalf("empty body: %q %v %v", raw, trunc, err)
	}
	for _, in := range [][]byte{{0, 0}, grpcFrame("abcdef")[:8]} {
		body = io.NopCloser(bytes.NewReader(in))
		raw, _, err := holdFirstMessage(&body)
		if err != nil || !bytes.Equal(raw, in) {
			t.Fatalf("cut body %q: held %q, %v", in, raw, err)
		}
		if got, _ := io.ReadAll(body); !bytes.Equal(got, in) {
			t.Fatalf("cut body %q delivered as %q", in, got)
		}
	}
	big := make([]byte, 5)
	binary.BigEndian.PutUint32(big[1:], MaxBody+1)
	in := append(big, "tail"...)
	body = io.NopCloser(bytes.NewReader(in))
	raw, trunc, err := holdFirstMessage(&body)
	if raw != nil || !trunc || err != nil {
		t.Fatalf("oversize: %q %v %v", raw, trunc, err)
	}
	if got, _ := io.ReadAll(body); !bytes.Equal(got, in) {
		t.Fatalf("oversize delivered as %q", got)
	}
}

// A gRPC request whose first message does not come within grpcHoldWait (a bidirectional
// stream waiting on the server) pauses at its head with no body; the message, when it
// comes, and the rest still reach the origin.
func TestHoldFirstGRPCMessageLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		var body io.ReadCloser = pr
		raw, trunc, err := holdFirstMessage(&body)
		if raw != nil || !trunc || err != nil {
			t.Fatalf("late first message: held %q trunc=%v err=%v", raw, trunc, err)
		}
		go func() { pw.Write(grpcFrame("late")); pw.Write(grpcFrame("next")); pw.Close() }()
		got, err := io.ReadAll(body)
		if want := append(grpcFrame("late"), grpcFrame("next")...); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("delivered %q, %v; want %q", got, err, want)
		}
		body.Close()
	})
}
