package wireguard_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
	"inspector/engine/wireguard"
)

// bulkOrigin is a TLS origin on hostIP whose /bulk?n=N answers N bytes with a
// Content-Length, written from one 1 MiB buffer so that the origin costs only its TLS.
func bulkOrigin(b testing.TB) *et.Origin {
	b.Helper()
	chunk := et.Pattern(1 << 20)
	return startOriginWith(b, et.OriginH1TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(n))
		for n > 0 {
			c := min(n, len(chunk))
			if _, err := w.Write(chunk[:c]); err != nil {
				return
			}
			n -= c
		}
	}))
}

// BenchmarkWireGuardDownload is one 256 MiB HTTPS download (INSPECTOR_WG_BENCH_MB to
// change it) per iteration by a wireguard-go + netstack device, through the WireGuard
// endpoint, the transparent path and the engine (both TLS legs, capture with spilling on
// as the product runs it: 1 MiB in memory, 64 MiB per body in all), from a real TLS
// origin. It reports MB/s of body bytes and the CPU per MB of this process.
//
// The device runs in this process, or with INSPECTOR_WG_BENCH_CLIENT=process in a
// process of its own (this test binary again), so that this process's CPU per MB is the
// instance's side alone (endpoint, engine and origin), as with a phone.
//
//	go test ./engine/wireguard -run '^$' -bench BenchmarkWireGuardDownload -benchtime 3x
func BenchmarkWireGuardDownload(b *testing.B) {
	size := 256 << 20
	if v, err := strconv.Atoi(os.Getenv("INSPECTOR_WG_BENCH_MB")); err == nil && v > 0 {
		size = v << 20
	}
	o := bulkOrigin(b)
	env := startWGWith(b, func(c *engine.Config) {
		c.CaptureLimit = 1 << 20
		c.SpillDir = b.TempDir()
		c.SpillLimit = 64 << 20
	}, o)
	stop := make(chan struct{})
	defer close(stop)
	go drainSessions(env.p, stop)
	peer := env.keys.Peers[0]
	url := o.URL + "/bulk?n=" + strconv.Itoa(size)
	if os.Getenv("INSPECTOR_WG_BENCH_CLIENT") == "process" {
		benchClientProcess(b, benchJob{
			Private: peer.PrivateKey, Address: peer.Address, Server: env.keys.Server.Public(),
			Port: env.srv.Port(), CA: env.p.CA.PEM(), URL: url, Size: size, N: b.N,
		})
		return
	}
	hc := env.client(env.device(b, peer.PrivateKey, peer.Address), false)
	defer hc.Transport.(*http.Transport).CloseIdleConnections()
	buf := make([]byte, 256<<10)
	download(b, hc, url, size, buf) // the handshakes, and the stacks' windows opened
	b.SetBytes(int64(size))
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for i := 0; i < b.N; i++ {
		download(b, hc, url, size, buf)
	}
	b.StopTimer()
	reportDownload(b, size, time.Since(start), cpuTime()-cpu0)
}

// reportDownload reports MB/s and this process's CPU per MB (the throughput two idle
// cores could give is at most 2000 / CPU-ms/MB).
func reportDownload(b *testing.B, size int, wall, cpu time.Duration) {
	mb := float64(size) * float64(b.N) / 1e6
	b.ReportMetric(mb/wall.Seconds(), "MB/s")
	b.ReportMetric(cpu.Seconds()*1000/mb, "CPU-ms/MB")
}

func download(t testing.TB, hc *http.Client, url string, size int, buf []byte) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{resp.Body}, buf)
	resp.Body.Close()
	if err != nil || n != int64(size) {
		t.Fatalf("downloaded %d of %d bytes: %v", n, size, err)
	}
}

// benchJob is what the device process of BenchmarkWireGuardDownload is given.
type benchJob struct {
	Private, Server wireguard.Key
	Address         netip.Addr
	Port            int
	CA              []byte
	URL             string
	Size, N         int
}

// benchClientProcess runs the device in a child process: it downloads once, says
// "start", downloads job.N times and says "done" with its own CPU time; the benchmark's
// figures are taken between the two.
func benchClientProcess(b *testing.B, job benchJob) {
	js, _ := json.Marshal(job)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestWireGuardBenchDevice$", "-test.v")
	cmd.Env = append(os.Environ(), "INSPECTOR_WG_BENCH_JOB="+string(js))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	sc := bufio.NewScanner(out)
	var start time.Time
	var cpu0 time.Duration
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "start":
			b.SetBytes(int64(job.Size))
			b.ResetTimer()
			start, cpu0 = time.Now(), cpuTime()
		case strings.HasPrefix(line, "done "):
			b.StopTimer()
			reportDownload(b, job.Size, time.Since(start), cpuTime()-cpu0)
			devCPU, _ := time.ParseDuration(strings.TrimPrefix(line, "done "))
			b.ReportMetric(devCPU.Seconds()*1000/(float64(job.Size)*float64(job.N)/1e6), "device-CPU-ms/MB")
			return
		case strings.HasPrefix(line, "--- FAIL"), strings.HasPrefix(line, "FAIL"):
			b.Fatalf("device process: %s", line)
		}
	}
	b.Fatalf("device process ended without a result: %v", sc.Err())
}

// TestWireGuardBenchDevice is the device process of BenchmarkWireGuardDownload with
// INSPECTOR_WG_BENCH_CLIENT=process; run alone it does nothing.
func TestWireGuardBenchDevice(t *testing.T) {
	js := os.Getenv("INSPECTOR_WG_BENCH_JOB")
	if js == "" {
		t.Skip("the device process of BenchmarkWireGuardDownload")
	}
	var job benchJob
	if err := json.Unmarshal([]byte(js), &job); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(job.CA)
	tnet := newDevice(t, job.Private, job.Address, job.Server, job.Port)
	tr := &http.Transport{DialContext: tnet.DialContext, TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Timeout: 10 * time.Minute, Transport: tr}
	buf := make([]byte, 256<<10)
	download(t, hc, job.URL, job.Size, buf)
	fmt.Println("start")
	cpu0 := cpuTime()
	for i := 0; i < job.N; i++ {
		download(t, hc, job.URL, job.Size, buf)
	}
	fmt.Println("done", cpuTime()-cpu0)
}

// drainSessions takes completed sessions as the store would, deleting their spill files.
func drainSessions(p *et.Proxy, stop <-chan struct{}) {
	for {
		var s *session.Session
		select {
		case s = <-p.Sessions:
		case <-stop:
			return
		}
		for _, b := range []string{s.Request.Body.Spilled, s.Response.Body.Spilled} {
			if b != "" {
				os.Remove(b)
			}
		}
	}
}
