package breakpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strings"
)

// grpcRequest reports a gRPC request body (application/grpc, grpc-web; not the base64
// grpc-web-text): a stream of length-prefixed messages that may never end.
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

// holdFirstMessage reads the first length-prefixed message of a gRPC request body (the
// whole of a unary call's) to show while paused; *body is replaced by one that still
// delivers every byte. A message larger than MaxBody is not read (trunc), and a body that
// ends inside a frame is shown as it is.
func holdFirstMessage(body *io.ReadCloser) (raw []byte, trunc bool, err error) {
	rc := *body
	if rc == nil || rc == http.NoBody {
		return nil, false, nil
	}
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
