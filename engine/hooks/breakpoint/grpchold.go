package breakpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// grpcHoldWait bounds how long a paused gRPC request waits for its first message: a
// bidirectional stream whose client sends only after the server spoke pauses at its head
// instead (no body shown; the body streams on afterwards, as for SSE).
var grpcHoldWait = 2 * time.Second

// grpcRequest reports a gRPC body, request or response (application/grpc, grpc-web; not
// the base64 grpc-web-text): a stream of length-prefixed messages that may never end.
func grpcRequest(h http.Header) bool {
	ct := strings.ToLower(h.Get("Content-Type"))
	return strings.HasPrefix(ct, "application/grpc") && !strings.HasPrefix(ct, "application/grpc-web-text")
}

// grpcHeld is a gRPC request body whose first message was read for the pause: it yields
// that message, then the rest of the stream. An edit replaces only the first message
// (withRest), so the later messages of a client stream still follow.
type grpcHeld struct {
	io.Reader
	rest io.ReadCloser
}

func (g *grpcHeld) Close() error { return g.rest.Close() }

// withRest returns the body to send after the first message was edited to nb.
func (g *grpcHeld) withRest(nb []byte) io.ReadCloser {
	return &grpcHeld{Reader: io.MultiReader(bytes.NewReader(nb), g.rest), rest: g.rest}
}

// holdFirstMessage waits up to grpcHoldWait for the first message of a gRPC request
// (readFirstMessage); past that the pause shows no body (trunc) and the body delivers the
// message whenever it comes, then the rest.
func holdFirstMessage(body *io.ReadCloser) (raw []byte, trunc bool, err error) {
	rc := *body
	if rc == nil || rc == http.NoBody {
		return nil, false, nil
	}
	ch := make(chan firstMessage, 1)
	go func() {
		b := rc
		raw, trunc, err := readFirstMessage(&b)
		ch <- firstMessage{raw, trunc, err, b}
	}()
	t := time.NewTimer(grpcHoldWait)
	defer t.Stop()
	select {
	case f := <-ch:
		*body = f.body
		return f.raw, f.trunc, f.err
	case <-t.C:
		*body = &lateBody{ch: ch, rc: rc}
		return nil, true, nil
	}
}

type firstMessage struct {
	raw   []byte
	trunc bool
	err   error
	body  io.ReadCloser
}

// lateBody is a gRPC request body whose first message had not come when the pause began:
// it waits for the reader of that message, then yields every byte.
type lateBody struct {
	ch    chan firstMessage
	rc    io.ReadCloser
	inner io.ReadCloser
	err   error
}

func (l *lateBody) Read(p []byte) (int, error) {
	if l.inner == nil && l.err == nil {
		f := <-l.ch
		l.inner, l.err = f.body, f.err
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.inner.Read(p)
}

func (l *lateBody) Close() error { return l.rc.Close() }

// readFirstMessage reads the first length-prefixed message of a gRPC request body (the
// whole of a unary call's) to show while paused; *body is replaced by one that still
// delivers every byte. A message larger than MaxBody is not read (trunc), and a body that
// ends inside a frame is shown as it is.
func readFirstMessage(body *io.ReadCloser) (raw []byte, trunc bool, err error) {
	rc := *body
	var hdr [5]byte
	n, err := io.ReadFull(rc, hdr[:])
	switch {
	case err == io.EOF:
		return nil, false, nil
	case errors.Is(err, io.ErrUnexpectedEOF):
		raw = hdr[:n]
		*body = &grpcHeld{Reader: bytes.NewReader(raw), rest: rc}
		return raw, false, nil
	case err != nil:
		return nil, false, err
	}
	size := binary.BigEndian.Uint32(hdr[1:])
	if size > MaxBody {
		*body = &grpcHeld{Reader: io.MultiReader(bytes.NewReader(hdr[:]), rc), rest: rc}
		return nil, true, nil
	}
	raw = make([]byte, 5+int(size))
	copy(raw, hdr[:])
	if n, err := io.ReadFull(rc, raw[5:]); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, false, err
	} else {
		raw = raw[:5+n]
	}
	*body = &grpcHeld{Reader: io.MultiReader(bytes.NewReader(raw), rc), rest: rc}
	return raw, false, nil
}
