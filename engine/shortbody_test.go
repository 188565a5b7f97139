package engine_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

// shortBody promises 100 bytes, sends 9 and closes the connection (HTTP/2: resets the
// stream), as a crashing origin does.
func shortBody(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "100")
	w.WriteHeader(200)
	_, _ = io.WriteString(w, "123456789")
	http.NewResponseController(w).Flush()
	if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
		c.Close()
		return
	}
	panic(http.ErrAbortHandler)
}

// The client gets what it would get without the proxy: the head and the 9 bytes, then the
// close (HTTP/1.1) or a reset stream (HTTP/2); the session records exactly that (issue 26).
func TestShortBodyWithCloseReachesClient(t *testing.T) {
	for _, m := range modes {
		t.Run(m.client+"-to-"+m.origin, func(t *testing.T) {
			t.Parallel()
			o := et.StartOrigin(t, m.origin, http.HandlerFunc(shortBody))
			p := et.StartProxy(t, nil, o)
			c := p.Client(t, m.client)
			for i := 0; i < 3; i++ {
				resp, err := c.Get(o.URL + "/short")
				if err != nil {
					t.Fatalf("round %d: the client got no response: %v", i, err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || resp.ContentLength != 100 {
					t.Fatalf("round %d: %s, Content-Length %d", i, resp.Status, resp.ContentLength)
				}
				if string(body) != "123456789" || err == nil {
					t.Fatalf("round %d: client read %q, %v; want the 9 bytes, then an error", i, body, err)
				}
				s := p.Next(t)
				if s.Status() != 200 || s.Response.Body.Size != 9 || string(s.Response.Body.Data) != "123456789" {
					t.Fatalf("round %d: session status %d body %q (%d)", i, s.Status(), s.Response.Body.Data, s.Response.Body.Size)
				}
				if s.Error == nil || s.Error.Phase != session.PhaseBody || s.Error.Side != session.SideUpstream {
					t.Fatalf("round %d: session error %+v, want body/upstream", i, s.Error)
				}
				if up, _ := wantProto(m); up == session.HTTP1 && m.origin != et.OriginH2TLS && !strings.Contains(s.Error.Message, "unexpected EOF") {
					t.Errorf("round %d: session error %q, want unexpected EOF", i, s.Error.Message)
				}
			}
		})
	}
}
