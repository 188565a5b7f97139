package engine_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"testing"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

// matrixCell is one client × origin protocol pair of the 3×3 matrix.
type matrixCell struct {
	client string // et.ClientH1, et.ClientH2 (through CONNECT), et.ClientH3 (--listen-h3)
	origin string // "h1", "h2", "h3"
}

// startCell starts the origin and proxy of a cell and returns a client, the origin's base
// URL as the client addresses it, and the protocols the session must record.
func startCell(t *testing.T, c matrixCell, mod func(*engine.Config)) (*http.Client, string, *et.Proxy, string, string) {
	t.Helper()
	var o *et.Origin
	base := ""
	upProto := "auto"
	wantUp := ""
	switch c.origin {
	case "h1":
		o = et.StartOrigin(t, et.OriginH1TLS, nil)
		base, wantUp = o.URL, session.HTTP1
	case "h2":
		// Forced, so HTTP/1.1 clients cross to HTTP/2 too (auto would follow the client).
		o = et.StartOrigin(t, et.OriginH2TLS, nil)
		base, wantUp, upProto = o.URL, session.HTTP2, "h2"
	case "h3":
		o = et.StartOrigin(t, et.OriginH3, nil)
		base, wantUp, upProto = o.H3URL, session.HTTP3, "h3"
	}
	p := et.StartProxy(t, func(cfg *engine.Config) {
		cfg.UpstreamProto = upProto
		if c.client == et.ClientH3 {
			cfg.ListenH3 = "127.0.0.1:0"
		}
		if mod != nil {
			mod(cfg)
		}
	}, o)
	var cl *http.Client
	wantClient := session.HTTP1
	switch c.client {
	case et.ClientH3:
		cl, wantClient = p.H3Client(t), session.HTTP3
	case et.ClientH2:
		cl, wantClient = p.Client(t, c.client), session.HTTP2
	default:
		cl = p.Client(t, c.client)
	}
	return cl, base, p, wantClient, wantUp
}

var matrix = func() []matrixCell {
	var cells []matrixCell
	for _, cl := range []string{et.ClientH1, et.ClientH2, et.ClientH3} {
		for _, o := range []string{"h1", "h2", "h3"} {
			cells = append(cells, matrixCell{cl, o})
		}
	}
	return cells
}()

// onlyReader hides a reader's type so the request body has no known length and streams.
type onlyReader struct{ io.Reader }

// TestProtocolMatrix runs the same body in all nine client × origin cells: a streamed
// upload and download byte for byte, response trailers, cookies joined for the origin,
// and the protocols recorded on both legs of every session.
func TestProtocolMatrix(t *testing.T) {
	for _, c := range matrix {
		t.Run(c.client+"-to-"+c.origin, func(t *testing.T) {
			et.RequireNoLeaks(t)
			cl, base, p, wantClient, wantUp := startCell(t, c, nil)
			check := func(s *session.Session) {
				t.Helper()
				if s.Error != nil {
					t.Fatalf("session error: %v", s.Error)
				}
				if s.Client.Proto != wantClient || s.Upstream.Proto != wantUp {
					t.Fatalf("protocols client=%q upstream=%q, want %q and %q", s.Client.Proto, s.Upstream.Proto, wantClient, wantUp)
				}
			}

			// Streamed upload of unknown length, with cookies the h2/h3 client splits.
			up := et.RandomBytes(300 << 10)
			req, _ := http.NewRequest("POST", base+"/echo", onlyReader{bytes.NewReader(up)})
			req.Header.Set("Cookie", "a=1; b=2")
			req.Header.Set("X-Custom", "v")
			if c.client == et.ClientH1 {
				// Connection-specific headers stop at the proxy, whatever the origin speaks.
				req.Header.Set("Connection", "X-Hop")
				req.Header.Set("X-Hop", "1")
				req.Header.Set("Keep-Alive", "timeout=5")
			}
			resp, err := cl.Do(req)
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
			s := p.Next(t)
			check(s)
			if !bytes.Equal(s.Request.Body.Data, up) || s.Request.Body.Size != int64(len(up)) {
				t.Fatalf("recorded request body: %d bytes (size %d), want %d", len(s.Request.Body.Data), s.Request.Body.Size, len(up))
			}

			// Streamed download without a length.
			n := 500 << 10
			resp, err = cl.Get(base + "/stream?n=" + strconv.Itoa(n))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !bytes.Equal(got, et.Pattern(n)) {
				t.Fatalf("download: %d bytes, err %v", len(got), err)
			}
			s = p.Next(t)
			check(s)
			if !bytes.Equal(s.Response.Body.Data, et.Pattern(n)) {
				t.Fatalf("recorded response body differs (%d bytes)", len(s.Response.Body.Data))
			}

			// Trailers.
			resp, err = cl.Get(base + "/trailer")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "body before trailers" || resp.Trailer.Get("X-Sum") != "42" {
				t.Fatalf("trailers: body %q trailer %v", body, resp.Trailer)
			}
			s = p.Next(t)
			check(s)
			if s.Response.Trailer.Get("X-Sum") != "42" {
				t.Fatalf("recorded trailer %v", s.Response.Trailer)
			}
		})
	}
}
