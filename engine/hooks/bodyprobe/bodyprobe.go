// Package bodyprobe lets request-stage hooks match filter expressions that look into the
// request body (body:, text:, gql:, grpc: on a POST) although the engine has not read the
// body yet when request hooks run.
package bodyprobe

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"inspector/engine/session"
	"inspector/filter"
)

// MaxBody is how much of a request body is read for matching.
const MaxBody = 1 << 20

// Needed reports whether any of exprs looks into the full session (and so may need the
// body).
func Needed(exprs ...*filter.Expr) bool {
	for _, e := range exprs {
		if e != nil && e.NeedsSession() {
			return true
		}
	}
	return false
}

// Request returns s as filters should see it at the request stage: when s has no captured
// request body yet and the request has one, a shallow copy of s whose Request.Body holds
// the first MaxBody bytes. *body is replaced by a reader that still yields every byte, so
// what goes upstream is unchanged. Endless streams (event streams, gRPC) are not read. On a
// read error s is returned as it is and *body yields what was read, then the error.
func Request(s *session.Session, h http.Header, body *io.ReadCloser) *session.Session {
	if s == nil || len(s.Request.Body.Data) > 0 || *body == nil || *body == http.NoBody || streaming(h) {
		return s
	}
	orig := *body
	b, err := io.ReadAll(io.LimitReader(orig, MaxBody))
	*body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), orig), orig}
	if err != nil || len(b) == 0 {
		return s
	}
	probe := *s
	probe.Request.Body = session.Body{Data: b, Size: int64(len(b)), Truncated: len(b) == MaxBody}
	return &probe
}

func streaming(h http.Header) bool {
	ct := strings.ToLower(h.Get("Content-Type"))
	return strings.HasPrefix(ct, "text/event-stream") || strings.HasPrefix(ct, "application/grpc")
}
