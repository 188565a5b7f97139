package engine_test

import (
	"context"
	"testing"

	"inspector/engine"
	et "inspector/engine/enginetest"
)

// benchWSEcho measures one WebSocket message of size bytes through the proxy to the echo
// origin and back (client → proxy → origin → proxy → client), on one h1 WebSocket.
func benchWSEcho(b *testing.B, size int, hook engine.MessageHook) {
	o := et.StartOrigin(b, et.OriginH1Plain, nil)
	p := et.StartProxy(b, nil, o)
	if hook != nil {
		p.Engine.AddMessageHook(hook)
	}
	go func() {
		for range p.Sessions {
		}
	}()
	conn, br := p.WSDial(b, "ws"+o.URL[len("http"):]+"/ws")
	msg := et.Pattern(size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if err := et.WriteWSFrame(conn, 2, msg, true); err != nil {
			b.Fatal(err)
		}
		if op, data, err := et.ReadWSFrame(br); err != nil || op != 2 || len(data) != size {
			b.Fatalf("echo: op %d len %d err %v", op, len(data), err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	conn.Close()
}

func BenchmarkWebSocketEcho(b *testing.B) {
	noop := engine.MessageHookFunc(func(context.Context, *engine.WebSocketMessage) error { return nil })
	for _, c := range []struct {
		name string
		size int
		hook engine.MessageHook
	}{
		{"1KiB/nohook", 1 << 10, nil},
		{"64KiB/nohook", 64 << 10, nil},
		{"1KiB/noophook", 1 << 10, noop},
		{"64KiB/noophook", 64 << 10, noop},
	} {
		b.Run(c.name, func(b *testing.B) { benchWSEcho(b, c.size, c.hook) })
	}
}
