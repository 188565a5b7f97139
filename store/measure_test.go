package store_test

// A measurement for issue 26, not run in CI:
// INSPECTOR_MEASURE=1 go test -run MeasureIngest -v ./store/

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/store"
)

// vmHWM is this process's peak resident set in MiB.
func vmHWM(t *testing.T) float64 {
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

// TestMeasureIngest: 16 parallel 100 MB downloads through the engine wired to the store
// as the instance wires them (1 MiB in memory per body, 64 MiB per body in all, spill
// files), until the store has committed every session: the process's peak RSS.
func TestMeasureIngest(t *testing.T) {
	if os.Getenv("INSPECTOR_MEASURE") == "" {
		t.Skip("a measurement: set INSPECTOR_MEASURE=1")
	}
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	spill := filepath.Join(dir, "spill")
	os.Mkdir(spill, 0o700)
	zeros := make([]byte, 32<<10)
	o := et.StartOrigin(t, et.OriginH1Plain, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		for n > 0 {
			k, err := w.Write(zeros[:min(n, len(zeros))])
			if err != nil {
				return
			}
			n -= k
		}
	}))
	p := et.StartProxy(t, func(c *engine.Config) {
		c.CaptureLimit, c.SpillDir, c.SpillLimit, c.NewID = 1<<20, spill, 64<<20, st.NextID
	}, o)
	p.Engine.Observe(engine.ObserverFunc(func(ev engine.Event) {
		if ev.Kind == engine.EventComplete {
			st.Put(ev.Session)
		}
	}))
	base := vmHWM(t)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			resp, err := p.Client(t, et.ClientH1).Get(fmt.Sprintf("%s/z?n=100000000&i=%d", o.URL, i))
			if err != nil {
				t.Error(err)
				return
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if n != 100_000_000 {
				t.Errorf("download %d: %d bytes", i, n)
			}
		})
	}
	wg.Wait()
	relayed := vmHWM(t)
	notCaptured := 0
	for range 16 {
		if s := p.Next(t); s.Response != nil && s.Response.Body.NotCaptured != "" {
			notCaptured++
			t.Logf("session %d: %s", s.ID, s.Response.Body.NotCaptured)
		}
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	stats := st.Stats()
	t.Logf("16 × 100 MB downloads into the store: peak RSS %.0f MiB while relaying, %.0f MiB once stored (%.0f MiB before); %d sessions, %d MiB stored, %d bodies dropped, %d not captured; %s",
		relayed, vmHWM(t), base, stats.Sessions, stats.Bytes>>20, stats.BodiesDropped, notCaptured, time.Since(start).Round(time.Millisecond))
	if stats.Sessions != 16 {
		t.Errorf("%d sessions stored", stats.Sessions)
	}
}
