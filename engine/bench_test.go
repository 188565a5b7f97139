package engine_test

import (
	"context"
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
	benchTinyWith(b, client, origin, capture, newTunnel, nil)
}

// benchTinyWith is benchTiny with hooks: setup registers them on the proxy.
func benchTinyWith(b *testing.B, client, origin string, capture bool, newTunnel bool, setup func(*et.Proxy)) {
	o := et.StartOrigin(b, origin, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	p := et.StartProxy(b, func(c *engine.Config) {}, o)
	p.SetCapture(capture)
	if setup != nil {
		setup(p)
	}
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

// The body stages' cost: a Request and a Response hook that only look, so every body is
// buffered before it goes on.
func BenchmarkKeepAliveH1toH1BodyStages(b *testing.B) {
	benchTinyWith(b, et.ClientH1, et.OriginH1TLS, true, false, func(p *et.Proxy) {
		look := func(ctx context.Context, f *engine.Flow) error { return nil }
		if err := p.AddHook(engine.RequestBodyHookFunc(look)); err != nil {
			b.Fatal(err)
		}
		if err := p.AddHook(engine.ResponseBodyHookFunc(look)); err != nil {
			b.Fatal(err)
		}
	})
}
