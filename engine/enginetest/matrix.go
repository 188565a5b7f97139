package enginetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"testing"

	"inspector/engine"
	"inspector/engine/session"
)

// MatrixCell is one client × origin cell of the protocol matrix, however the client
// reaches Inspector (the proxy listener, the transparent listener, a WireGuard peer).
type MatrixCell struct {
	Client *http.Client // the client, set up to reach the origin through Inspector
	Base   string       // the origin's base URL as the client addresses it
	Proxy  *Proxy       // the engine whose sessions are checked
	// WantClient and WantUp are the protocols the sessions must record on the client
	// and upstream legs (session.HTTP1, HTTP2, HTTP3).
	WantClient, WantUp string
	// HTTP1Client: the client speaks HTTP/1.1 to Inspector, so connection-specific
	// headers are sent too, and must stop at Inspector.
	HTTP1Client bool
}

// onlyReader hides a reader's type so the request body has no known length and streams.
type onlyReader struct{ io.Reader }

// RunMatrixChecks is the body of every matrix cell: a streamed upload and download byte
// for byte, response trailers, cookies joined for the origin, connection-specific headers
// stopped, and the protocols recorded on both legs of every session.
func RunMatrixChecks(t *testing.T, c MatrixCell) {
	t.Helper()
	check := func(s *session.Session) {
		t.Helper()
		if s.Error != nil {
			t.Fatalf("session error: %v", s.Error)
		}
		if s.Client.Proto != c.WantClient || s.Upstream.Proto != c.WantUp {
			t.Fatalf("protocols client=%q upstream=%q, want %q and %q", s.Client.Proto, s.Upstream.Proto, c.WantClient, c.WantUp)
		}
	}

	// Streamed upload of unknown length, with cookies the h2/h3 client splits.
	up := RandomBytes(300 << 10)
	req, _ := http.NewRequest("POST", c.Base+"/echo", onlyReader{bytes.NewReader(up)})
	req.Header.Set("Cookie", "a=1; b=2")
	req.Header.Set("X-Custom", "v")
	if c.HTTP1Client {
		// Connection-specific headers stop at the proxy, whatever the origin speaks.
		req.Header.Set("Connection", "X-Hop")
		req.Header.Set("X-Hop", "1")
		req.Header.Set("Keep-Alive", "timeout=5")
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sum := sha256.Sum256(up)
	if got := resp.Header.Get("X-Echo-Body-Sha256"); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("origin got a different body: sha256 %s size %s", got, resp.Header.Get("X-Echo-Body-Size"))
	}
	if got := resp.Header.Values("X-Echo-H-Cookie"); len(got) != 1 || got[0] != "a=1; b=2" {
		t.Fatalf("origin saw cookies %q, want one joined header", got)
	}
	if resp.Header.Get("X-Echo-H-X-Custom") != "v" {
		t.Fatalf("custom header lost: %v", resp.Header)
	}
	for _, h := range []string{"X-Echo-H-X-Hop", "X-Echo-H-Keep-Alive", "X-Echo-H-Connection"} {
		if v := resp.Header.Get(h); v != "" {
			t.Fatalf("origin got connection-specific header %s: %q", h, v)
		}
	}
	s := c.Proxy.Next(t)
	check(s)
	if !bytes.Equal(s.Request.Body.Data, up) || s.Request.Body.Size != int64(len(up)) {
		t.Fatalf("recorded request body: %d bytes (size %d), want %d", len(s.Request.Body.Data), s.Request.Body.Size, len(up))
	}

	// Streamed download without a length.
	n := 500 << 10
	resp, err = c.Client.Get(c.Base + "/stream?n=" + strconv.Itoa(n))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(got, Pattern(n)) {
		t.Fatalf("download: %d bytes, err %v", len(got), err)
	}
	s = c.Proxy.Next(t)
	check(s)
	if !bytes.Equal(s.Response.Body.Data, Pattern(n)) {
		t.Fatalf("recorded response body differs (%d bytes)", len(s.Response.Body.Data))
	}

	// Trailers.
	resp, err = c.Client.Get(c.Base + "/trailer")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "body before trailers" || resp.Trailer.Get("X-Sum") != "42" {
		t.Fatalf("trailers: body %q trailer %v", body, resp.Trailer)
	}
	s = c.Proxy.Next(t)
	check(s)
	if s.Response.Trailer.Get("X-Sum") != "42" {
		t.Fatalf("recorded trailer %v", s.Response.Trailer)
	}
}

// EntryPoint starts, for one cell of RunTCPMatrix, an origin of the given kind, an engine
// whose config mod adjusts, and the entry point under test in front of it; it returns a
// client reaching the origin through it (offering h2 when h2), the origin's base URL as
// that client addresses it, and the engine.
type EntryPoint func(t *testing.T, origin string, mod func(*engine.Config), h2 bool) (*http.Client, string, *Proxy)

// RunTCPMatrix runs RunMatrixChecks in the four HTTP/1.1 and h2 client × HTTP/1.1 and
// h2 TLS origin cells of an entry point other than the proxy listener (the transparent
// listener, a WireGuard peer), as TestProtocolMatrix does for the proxy listener: the
// h2 origin is forced (--upstream-proto h2), so HTTP/1.1 clients cross to h2 too.
func RunTCPMatrix(t *testing.T, start EntryPoint) {
	for _, client := range []string{ClientH1, ClientH2} {
		for _, origin := range []string{OriginH1TLS, OriginH2TLS} {
			t.Run(client+"-to-"+origin, func(t *testing.T) {
				t.Parallel()
				up, wantUp := "auto", session.HTTP1
				if origin == OriginH2TLS {
					up, wantUp = "h2", session.HTTP2
				}
				c, base, p := start(t, origin, func(c *engine.Config) { c.UpstreamProto = up }, client == ClientH2)
				wantClient := session.HTTP1
				if client == ClientH2 {
					wantClient = session.HTTP2
				}
				if tr, ok := c.Transport.(*http.Transport); ok {
					defer tr.CloseIdleConnections()
					if client == ClientH1 && tr.TLSClientConfig != nil {
						tr.TLSClientConfig.NextProtos = []string{"http/1.1"} // as Proxy.Client(ClientH1)
					}
				}
				RunMatrixChecks(t, MatrixCell{Client: c, Base: base, Proxy: p, WantClient: wantClient, WantUp: wantUp, HTTP1Client: client == ClientH1})
			})
		}
	}
}
