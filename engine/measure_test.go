package engine_test

// Measurements for issue 14, not run in CI: INSPECTOR_MEASURE=1 go test -run Measure -v ./engine/

import (
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// TestMeasureNoFalseErrors: 10,000 complete exchanges of 20 KB to 1 MB through the proxy
// by clients that close their connection right after the last byte (5,000 over HTTP/1.1:
// half absolute-form, half in a TLS tunnel; 5,000 over HTTP/2 in a TLS tunnel; four at a
// time), then 1,000 by curl (500 http, 500 https with --http2). It reports how many
// sessions were stored with an error; the test fails unless none was.
func TestMeasureNoFalseErrors(t *testing.T) {
	requireMeasure(t)
	plain := et.StartOrigin(t, et.OriginH1Plain, nil)
	tlsO := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, nil, plain, tlsO)
	var errored, total atomic.Int64
	var firstErrs sync.Map
	done := make(chan struct{})
	go func() {
		defer close(done)
		for s := range p.Sessions {
			total.Add(1)
			if s.Error != nil {
				errored.Add(1)
				firstErrs.LoadOrStore(s.Error.Message, s.Request.URL)
			}
		}
	}()
	size := func(i int) int { return 20_000 + (i*7919)%980_001 } // 20 KB .. 1 MB, spread
	kinds := []struct {
		name   string
		client closingClient
		origin *et.Origin
		n      int
	}{
		{"h1 absolute-form", h1Closing, plain, 2500},
		{"h1 in TLS tunnel", h1Closing, tlsO, 2500},
		{"h2 in TLS tunnel", h2Closing, tlsO, 5000},
	}
	// INSPECTOR_MEASURE_DIV=N runs 1/N of the exchanges (a quicker look).
	div, _ := strconv.Atoi(os.Getenv("INSPECTOR_MEASURE_DIV"))
	div = max(div, 1)
	start := time.Now()
	want := 0
	for _, k := range kinds {
		k.n /= div
		jobs := make(chan int)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for i := range jobs {
					n := size(i)
					got, err := k.client(t, p, fmt.Sprintf("%s/bytes?n=%d&i=%d", k.origin.URL, n, i))
					if err != nil || got != n {
						t.Errorf("%s: %d bytes of %d: %v", k.name, got, n, err)
					}
				}
			})
		}
		for i := range k.n {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		want += k.n
	}
	if curl, err := exec.LookPath("curl"); err == nil {
		caFile := filepath.Join(t.TempDir(), "ca.pem")
		os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.CA.Cert().Raw}), 0o600)
		for i := range 1000 / div {
			args := []string{"-s", "-S", "-o", "/dev/null", "-x", p.URL.String()}
			u := fmt.Sprintf("%s/bytes?n=%d&c=%d", plain.URL, size(i), i)
			if i%2 == 1 {
				args = append(args, "--http2", "--cacert", caFile)
				u = fmt.Sprintf("%s/bytes?n=%d&c=%d", tlsO.URL, size(i), i)
			}
			if out, err := exec.Command(curl, append(args, u)...).CombinedOutput(); err != nil {
				t.Errorf("curl %s: %v %s", u, err, out)
			}
		}
		want += 1000 / div
	}
	for deadline := time.Now().Add(30 * time.Second); total.Load() < int64(want) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // polling for a condition, bounded above
	}
	t.Logf("%d complete exchanges in %s: %d sessions stored, %d with an error", want, time.Since(start).Round(time.Second), total.Load(), errored.Load())
	firstErrs.Range(func(k, v any) bool { t.Logf("error %q (e.g. %s)", k, v); return true })
	if errored.Load() != 0 || total.Load() != int64(want) {
		t.Fail()
	}
}
