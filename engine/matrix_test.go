package engine_test

import (
	"net/http"
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

// TestProtocolMatrix runs the same body in all nine client × origin cells: a streamed
// upload and download byte for byte, response trailers, cookies joined for the origin,
// and the protocols recorded on both legs of every session.
func TestProtocolMatrix(t *testing.T) {
	for _, c := range matrix {
		t.Run(c.client+"-to-"+c.origin, func(t *testing.T) {
			et.RequireNoLeaks(t)
			cl, base, p, wantClient, wantUp := startCell(t, c, nil)
			et.RunMatrixChecks(t, et.MatrixCell{Client: cl, Base: base, Proxy: p, WantClient: wantClient, WantUp: wantUp, HTTP1Client: c.client == et.ClientH1})
		})
	}
}
