package engine_test

// Measurements for issue 14, not run in CI: INSPECTOR_MEASURE=1 go test -run Measure -v ./engine/

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
)

func requireMeasure(t *testing.T) {
	if os.Getenv("INSPECTOR_MEASURE") == "" {
		t.Skip("a measurement: set INSPECTOR_MEASURE=1")
	}
}

// peakRSS is this process's peak resident set (VmHWM), in MiB; resetPeakRSS starts a new
// peak (Linux: writing 5 to clear_refs).
func peakRSS(t *testing.T) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			kb, _ := strconv.ParseFloat(strings.Fields(l)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// endless streams zeros until the client goes away.
func endless(w http.ResponseWriter, r *http.Request) {
	buf := make([]byte, 32<<10)
	for r.Context().Err() == nil {
		if _, err := w.Write(buf); err != nil {
			return
		}
	}
}

// sized streams n zero bytes with a Content-Length.
func sized(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	buf := make([]byte, 32<<10)
	for n > 0 {
		k, err := w.Write(buf[:min(n, int64(len(buf)))])
		if err != nil {
			return
		}
		n -= int64(k)
	}
}

// TestMeasureCaptureMemory: peak RSS of this process (origin, proxy with capture and
// spilling on, clients) for 16 parallel 100 MB downloads, then 8 parallel endless
// responses read for 400 MB each.
func TestMeasureCaptureMemory(t *testing.T) {
	requireMeasure(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/sized", sized)
	mux.HandleFunc("/endless", endless)
	o := et.StartOrigin(t, et.OriginH1Plain, mux)
	var held atomic.Int64
	p := et.StartProxy(t, func(c *engine.Config) {
		c.SpillDir = t.TempDir()
		c.SpillLimit = 64 << 20
	}, o)
	go func() { // drain the collector, removing spill files as the store would
		for s := range p.Sessions {
			for _, b := range []string{s.Request.Body.Spilled, s.Response.Body.Spilled} {
				if b != "" {
					os.Remove(b)
				}
			}
			held.Add(1)
		}
	}()
	run := func(name string, n int, url string, limit int64) {
		runtime.GC()
		resetPeakRSS()
		base := peakRSS(t)
		var peakHeap atomic.Uint64
		stop := make(chan struct{})
		var sampler sync.WaitGroup
		sampler.Go(func() {
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peakHeap.Load() {
					peakHeap.Store(ms.HeapInuse)
				}
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond): // sampling period of a measurement
				}
			}
		})
		start := time.Now()
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				c := p.Client(t, et.ClientH1)
				resp, err := c.Get(fmt.Sprintf("%s&i=%d", url, i))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, io.LimitReader(resp.Body, limit))
				resp.Body.Close()
			})
		}
		wg.Wait()
		close(stop)
		sampler.Wait()
		t.Logf("%s: peak RSS %.0f MiB (%.0f MiB before), peak heap in use %.0f MiB, %s",
			name, peakRSS(t), base, float64(peakHeap.Load())/(1<<20), time.Since(start).Round(time.Millisecond))
	}
	run("16 × 100 MB downloads", 16, o.URL+"/sized?n=100000000", 1<<40)
	run("8 endless responses, 400 MB each", 8, o.URL+"/endless?x=1", 400<<20)
}
