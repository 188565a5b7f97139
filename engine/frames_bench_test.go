package engine_test

import (
	"io"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

// benchFrames measures h2→h2 keep-alive requests with frame capture off or on (a sink
// that only counts), for a tiny response and for a 1 MiB one (DATA-heavy: every frame
// header goes through the tap's buffer and the Framer). Compare ns/op of the pairs.
// With capture false the engine records nothing (SetCapture(false)): with frames on, the
// taps are in place but must pass the bytes straight through.
func benchFrames(b *testing.B, frames bool, size int, capture ...bool) {
	body := et.Pattern(size)
	o := et.StartOrigin(b, et.OriginH2TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(body)
	}))
	var n atomic.Int64
	p := et.StartProxy(b, func(c *engine.Config) {
		if frames {
			c.FrameSink = func(_ session.ID, fs []session.Frame) { n.Add(int64(len(fs))) }
		}
	}, o)
	if len(capture) > 0 {
		p.SetCapture(capture[0])
	}
	go func() {
		for range p.Sessions {
		}
	}()
	c := p.Client(b, et.ClientH2)
	url := o.URL + "/"
	get := func() {
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	get()
	b.ReportAllocs()
	b.SetBytes(int64(size))
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		get()
	}
	b.StopTimer()
	// CPU time of the whole process (client, proxy and origin) per request: steadier than
	// ns/op on a shared machine.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	if frames {
		b.ReportMetric(float64(n.Load())/float64(b.N), "frames/op") // the first request's are in too
		b.ReportMetric(float64(p.Stats().FramesDropped), "dropped")
	}
	if frames && p.Capturing() && n.Load() == 0 {
		b.Fatal("frame capture on, but no frames delivered")
	}
}

func BenchmarkFramesOffH2Tiny(b *testing.B)  { benchFrames(b, false, 16) }
func BenchmarkFramesOnH2Tiny(b *testing.B)   { benchFrames(b, true, 16) }
func BenchmarkFramesOffH2_1MiB(b *testing.B) { benchFrames(b, false, 1<<20) }
func BenchmarkFramesOnH2_1MiB(b *testing.B)  { benchFrames(b, true, 1<<20) }

// Capture off (the user paused recording): with and without frame capture configured.
func BenchmarkFramesOffCaptureOffH2Tiny(b *testing.B) { benchFrames(b, false, 16, false) }
func BenchmarkFramesOnCaptureOffH2Tiny(b *testing.B)  { benchFrames(b, true, 16, false) }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
