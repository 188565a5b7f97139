// Command inspectorprof composes Inspector as the binary's headless mode does (rootca, the
// bbolt store fed by an observer of completed sessions and by the HTTP/2 frame sink, the
// engine, and one stdout line per completed session from a subscription) and records a CPU
// profile of the whole process until SIGTERM. `benchrun -profile DIR` runs it pinned like
// the real binary, so the profile shows where the proxy's own CPU goes under each shape.
package main

import (
	// As in the binary: http2xconnect=1 before golang.org/x/net/http2 initialises.
	_ "appenv"

	"bufio"
	"context"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"inspector/engine"
	"inspector/engine/session"
	"inspector/rootca"
	"inspector/store"
)

func main() {
	dataDir := flag.String("data-dir", "", "data directory (CA in DIR/ca, store in DIR/sessions.db)")
	upstreamCA := flag.String("upstream-ca", "", "PEM file of extra roots trusted for origins")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile here")
	memProfile := flag.String("memprofile", "", "write a heap profile here at SIGTERM, before shutting down")
	noCapture := flag.Bool("no-capture", false, "start with recording off")
	flag.Parse()
	if err := run(*dataDir, *upstreamCA, *cpuProfile, *memProfile, *noCapture); err != nil {
		fmt.Fprintln(os.Stderr, "inspectorprof:", err)
		os.Exit(1)
	}
}

func run(dir, upstreamCA, cpuProfile, memProfile string, noCapture bool) error {
	if dir == "" || cpuProfile == "" {
		return fmt.Errorf("-data-dir and -cpuprofile are required")
	}
	ca, err := rootca.Load(filepath.Join(dir, "ca"))
	if err != nil {
		return err
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		return err
	}
	if upstreamCA != "" {
		pem, err := os.ReadFile(upstreamCA)
		if err != nil {
			return err
		}
		if !roots.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s holds no PEM certificate", upstreamCA)
		}
	}
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	eng, err := engine.New(engine.Config{
		Listen: "127.0.0.1:0", CA: ca, UpstreamRoots: roots, NewID: st.NextID,
		FrameSink: func(id session.ID, frames []session.Frame) { st.PutFrames(id, frames) },
	})
	if err != nil {
		return err
	}
	eng.SetCapture(!noCapture)
	eng.Observe(engine.ObserverFunc(func(ev engine.Event) {
		if ev.Kind == engine.EventComplete {
			st.Put(ev.Session)
		}
	}))
	f, err := os.Create(cpuProfile)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()

	fmt.Printf("listening on %s\n", eng.Addr())
	serveErr := make(chan error, 1)
	go func() { serveErr <- eng.Serve() }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	sub := eng.Subscribe(4096, engine.EventComplete) // as the headless composition
	defer sub.Close()
	// Buffered and flushed when the feed is drained, as the headless composition does.
	out := bufio.NewWriterSize(os.Stdout, 32<<10)
	defer out.Flush()
	for {
		select {
		case ev := <-sub.C:
			if ev.Kind == engine.EventComplete {
				s := ev.Summary
				fmt.Fprintf(out, "#%d %d %s %s %s→%s %d %.1fms\n", s.ID, s.Status, s.Method, s.URL, s.ClientProto, s.UpstreamProto, s.RespBytes, s.DurationMS)
			}
			if len(sub.C) == 0 {
				out.Flush()
			}
		case <-sig:
			if memProfile != "" {
				if err := writeHeap(memProfile); err != nil {
					return err
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return eng.Close(ctx)
		case err := <-serveErr:
			return err
		}
	}
}

// writeHeap writes the live heap (after a GC) as it is under load, before shutdown frees it.
func writeHeap(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
