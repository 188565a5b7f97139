package engine_test

import (
	"io"
	"net/http"
	"testing"

	"inspector/engine"
	et "inspector/engine/enginetest"
)

// benchTiny measures a keep-alive request through the engine. The client, the engine and
// the origin share this process, so ns/op is the whole round trip's CPU, not the proxy's
// alone (make bench in issue 8 pins them apart); allocs/op is dominated by the proxy.
func benchTiny(b *testing.B, client, origin string, capture bool, newTunnel bool) {
	o := et.StartOrigin(b, origin, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	p := et.StartProxy(b, func(c *engine.Config) {}, o)
	p.SetCapture(capture)
	go func() {
		for range p.Sessions {
		}
	}()
	c := p.Client(b, client)
	tr := c.Transport.(*http.Transport)
	get := func() {
		resp, err := c.Get(o.URL + "/")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if newTunnel {
			tr.CloseIdleConnections()
		}
	}
	get()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		get()
	}
}

func BenchmarkKeepAliveH1toH1(b *testing.B) { benchTiny(b, et.ClientH1, et.OriginH1TLS, true, false) }
func BenchmarkKeepAliveH2toH2(b *testing.B) { benchTiny(b, et.ClientH2, et.OriginH2TLS, true, false) }
func BenchmarkKeepAliveH1toH1CaptureOff(b *testing.B) {
	benchTiny(b, et.ClientH1, et.OriginH1TLS, false, false)
}
func BenchmarkNewTunnelPerRequest(b *testing.B) {
	benchTiny(b, et.ClientH1, et.OriginH1TLS, true, true)
}
