//go:build linux

// Package listeners compares the CPU per request of the engine behind its proxy listener
// and behind its transparent listener (issue 31), in the keep-alive shapes of `make bench`
// (bench/cmd/benchrun): the load generator (bench/load) and the origin (bench/origin) run
// in processes of their own, so the benchmark process's CPU is the engine's alone.
package listeners

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"inspector/bench/load"
	"inspector/bench/origin"
	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/transparent"
	"inspector/platform/linux"
)

// shapes are the keep-alive tiny GET shapes of bench/cmd/benchrun (8 connections).
var shapes = []load.Shape{
	{Name: "ka-h1", Proto: "h1", Method: "GET", Path: "/tiny", Conns: 8, Streams: 1, WantBytes: int64(len(origin.TinyJSON))},
	{Name: "ka-h2", Proto: "h2", Method: "GET", Path: "/tiny", Conns: 8, Streams: 1, WantBytes: int64(len(origin.TinyJSON))},
}

// BenchmarkKeepAliveListeners runs each shape for a measured window (INSPECTOR_KA_SECS,
// 5 s; 2 s of warm-up before it) through the proxy listener (CONNECT, then TLS) and
// through the transparent listener (the client in a network namespace whose TCP nftables
// redirects to it, TLS straight to the origin's address), and reports the engine's CPU
// per request (user + system of this process) and requests per second.
//
//	cd bench && go test ./listeners -run '^$' -bench . -benchtime 1x
func BenchmarkKeepAliveListeners(b *testing.B) {
	if err := linux.NetnsSupported(); err != nil {
		b.Skipf("skipped: %v", err)
	}
	secs := 5
	if v, err := strconv.Atoi(os.Getenv("INSPECTOR_KA_SECS")); err == nil && v > 0 {
		secs = v
	}
	o := startHelper(b, "TestHelperOrigin", "", nil)
	var info originInfo
	if err := json.Unmarshal([]byte(o.line(b, "origin ")), &info); err != nil {
		b.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(info.CA)
	for _, s := range shapes {
		for _, via := range []string{"proxy", "transparent"} {
			b.Run(s.Name+"/"+via, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					runShape(b, s, via, info, roots, time.Duration(secs)*time.Second)
				}
			})
		}
	}
}

type originInfo struct {
	Addr string
	CA   []byte
}

type loadJob struct {
	Shape            load.Shape
	Proxy, Origin    string
	Roots            []byte
	Warmup, Duration time.Duration
}

func runShape(b *testing.B, s load.Shape, via string, info originInfo, roots *x509.CertPool, window time.Duration) {
	var lnAddr string
	var ns *linux.Netns
	var ln net.Listener
	if via == "transparent" {
		var err error
		if ns, err = linux.NewNetns(); err != nil {
			b.Skipf("skipped: %v", err)
		}
		defer ns.Close()
		if err := ns.Do(func() (err error) { ln, err = net.Listen("tcp", ":0"); return err }); err != nil {
			b.Fatal(err)
		}
		if err := ns.Apply(linux.Redirect{TCPPort: uint16(ln.Addr().(*net.TCPAddr).Port)}); err != nil {
			b.Fatal(err)
		}
		lnAddr = ln.Addr().String()
	}
	p := et.StartProxy(b, func(c *engine.Config) {
		c.UpstreamRoots = roots
		if lnAddr != "" {
			c.ReservedAddrs = append(c.ReservedAddrs, lnAddr)
		}
	})
	stop := make(chan struct{})
	var sessions atomic.Int64
	defer close(stop)
	go func() { // take the sessions as a store would, so the collector never fills
		for {
			select {
			case s := <-p.Sessions:
				if s.Client.TLS != nil && s.Response != nil {
					sessions.Add(1)
				}
			case <-stop:
				return
			}
		}
	}()
	job := loadJob{Shape: s, Origin: "https://" + info.Addr, Roots: p.CA.PEM(), Warmup: 2 * time.Second, Duration: window}
	if via == "proxy" {
		job.Proxy = p.Engine.Addr()
	} else {
		srv := transparent.New(p.Engine, ln, transparent.Options{})
		go srv.Serve()
		defer srv.Close()
	}
	js, _ := json.Marshal(job)
	h := startHelper(b, "TestHelperLoad", string(js), ns)
	h.line(b, "start")
	cpu0 := cpuTime()
	h.line(b, "end")
	cpu := cpuTime() - cpu0
	var res load.Result
	if err := json.Unmarshal([]byte(h.line(b, "result ")), &res); err != nil {
		b.Fatal(err)
	}
	if res.Requests == 0 {
		b.Fatalf("no request succeeded: %s", res.FirstErr)
	}
	// Every request of the window (and of the warm-up) was decrypted and recorded.
	for deadline := time.Now().Add(10 * time.Second); sessions.Load() < res.Requests; {
		if time.Now().After(deadline) {
			b.Fatalf("%d decrypted sessions recorded for %d requests", sessions.Load(), res.Requests)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s.Proto == "h2" && res.Proto != "HTTP/2.0" {
		b.Fatalf("answered with %s, not HTTP/2", res.Proto)
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(res.Requests), "CPU-µs/req")
	b.ReportMetric(res.RPS(), "req/s")
	b.ReportMetric(float64(res.Errors), "errors")
}

// helper is a child process running one of this file's Test helpers.
type helper struct {
	cmd *exec.Cmd
	sc  *bufio.Scanner
}

// startHelper starts this test binary again running test with INSPECTOR_KA_JOB=job, in
// ns when not nil (a process forked from a thread in a namespace is in it).
func startHelper(b *testing.B, test, job string, ns *linux.Netns) *helper {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^"+test+"$", "-test.v")
	cmd.Env = append(os.Environ(), "INSPECTOR_KA_HELPER=1", "INSPECTOR_KA_JOB="+job)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := cmd.Start
	if ns != nil {
		err = ns.Do(start)
	} else {
		err = start()
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		in.Close() // the helper ends when its stdin does
		cmd.Wait()
	})
	return &helper{cmd: cmd, sc: bufio.NewScanner(out)}
}

// line waits for the helper's next line starting with prefix and returns the rest.
func (h *helper) line(b *testing.B, prefix string) string {
	b.Helper()
	for h.sc.Scan() {
		if l := h.sc.Text(); strings.HasPrefix(l, prefix) {
			return strings.TrimPrefix(l, prefix)
		} else if strings.HasPrefix(l, "--- FAIL") || strings.HasPrefix(l, "FAIL") || strings.Contains(l, "_test.go:") {
			b.Fatalf("helper: %s", l)
		}
	}
	b.Fatalf("helper ended before %q: %v", prefix, h.sc.Err())
	return ""
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestHelperOrigin is the origin process of BenchmarkKeepAliveListeners: bench/origin on
// 127.0.0.1 until its stdin closes. Run alone it does nothing.
func TestHelperOrigin(t *testing.T) {
	if os.Getenv("INSPECTOR_KA_HELPER") == "" {
		t.Skip("the origin process of BenchmarkKeepAliveListeners")
	}
	ca, err := origin.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := origin.Start(ca)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	js, _ := json.Marshal(originInfo{Addr: srv.Addr, CA: ca.CertPEM})
	fmt.Printf("origin %s\n", js)
	io.Copy(io.Discard, os.Stdin)
}

// TestHelperLoad is the load process of BenchmarkKeepAliveListeners: bench/load with the
// job in INSPECTOR_KA_JOB, saying "start" and "end" at the measured window's edges and
// then its result. Run alone it does nothing.
func TestHelperLoad(t *testing.T) {
	if os.Getenv("INSPECTOR_KA_HELPER") == "" {
		t.Skip("the load process of BenchmarkKeepAliveListeners")
	}
	var job loadJob
	if err := json.Unmarshal([]byte(os.Getenv("INSPECTOR_KA_JOB")), &job); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(job.Roots)
	res, err := load.Run(context.Background(), load.Target{Proxy: job.Proxy, Origin: job.Origin, Roots: roots}, job.Shape, load.Options{
		Warmup: job.Warmup, Duration: job.Duration,
		OnStart: func() { fmt.Println("start") },
		OnEnd:   func() { fmt.Println("end") },
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	js, _ := json.Marshal(res)
	fmt.Printf("result %s\n", js)
}
