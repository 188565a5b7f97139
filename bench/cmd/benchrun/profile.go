package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"inspector/bench/load"
)

// profileRuns builds cmd/inspectorprof and runs it, pinned like the real binary, under the
// keep-alive h1, h2-multiplexed, 64 KiB GET and new-tunnel shapes (capture on, and keep-alive
// h1 with capture off), writing DIR/SHAPE.pprof (CPU), DIR/SHAPE.heap.pprof (live heap at
// the end of the window) and the top functions of both as DIR/SHAPE.txt.
func profileRuns(ctx context.Context, o options, e *env, benchDir string) error {
	dir, err := filepath.Abs(o.profile)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	bin := filepath.Join(e.tmp, "inspectorprof")
	logf("building inspectorprof")
	if err := goBuild(ctx, benchDir, bin, "./cmd/inspectorprof"); err != nil {
		return fmt.Errorf("building inspectorprof: %w", err)
	}
	want := map[string]bool{"ka-h1": true, "h2-mux": true, "get-64k": true, "tunnel": true}
	if len(o.shapes) > 0 { // asked for by name: any shape
		want = map[string]bool{}
		for _, sd := range shapes(o.conns) {
			want[sd.key] = true
		}
	}
	for _, sd := range shapes(o.conns) {
		if !want[sd.key] || !selected(o.shapes, sd.key) {
			continue
		}
		for _, capture := range []bool{true, false} {
			if !capture && sd.key != "ka-h1" && len(o.shapes) == 0 {
				continue
			}
			name := sd.key
			if !capture {
				name += "-nocapture"
			}
			if err := profileOne(ctx, o, e, bin, sd.shape, capture, filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
}

func profileOne(ctx context.Context, o options, e *env, bin string, s load.Shape, capture bool, base string) error {
	d, err := e.nextDir("inspectorprof")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(d, "ca"), 0o700); err != nil {
		return err
	}
	for _, f := range []string{"root.pem", "root-key.pem"} {
		if err := copyFile(filepath.Join(d, "ca", f), filepath.Join(e.caDir, f)); err != nil {
			return err
		}
	}
	argv := []string{bin, "-data-dir", d, "-upstream-ca", e.originCA, "-cpuprofile", base + ".pprof", "-memprofile", base + ".heap.pprof"}
	if !capture {
		argv = append(argv, "-no-capture")
	}
	pr, err := launch(ctx, e.pin.proxyCommand(argv...), true, "")
	if err != nil {
		return err
	}
	pr.roots = e.caPool
	var c0, c1 = cpuTimeOr(pr.pid), cpuTimeOr(pr.pid)
	res, err := load.Run(ctx, load.Target{Proxy: pr.addr, Origin: "https://" + e.originAdr, Roots: pr.roots}, s, load.Options{
		Warmup: o.warmup, Duration: o.duration,
		OnStart: func() { c0 = cpuTimeOr(pr.pid) },
		OnEnd:   func() { c1 = cpuTimeOr(pr.pid) },
	})
	if serr := pr.stop(); serr != nil && err == nil {
		err = fmt.Errorf("stopping: %w (stderr: %s)", serr, pr.stderr.String())
	}
	if err != nil {
		return err
	}
	per := 0.0
	if res.Requests > 0 {
		per = ms(c1-c0) / float64(res.Requests)
	}
	top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=40", bin, base+".pprof").CombinedOutput()
	if err != nil {
		return fmt.Errorf("go tool pprof: %v: %s", err, top)
	}
	cum, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=60", bin, base+".pprof").CombinedOutput()
	if err != nil {
		return fmt.Errorf("go tool pprof: %v: %s", err, cum)
	}
	heap, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-sample_index=inuse_space", "-nodecount=25", bin, base+".heap.pprof").CombinedOutput()
	if err != nil {
		return fmt.Errorf("go tool pprof: %v: %s", err, heap)
	}
	head := fmt.Sprintf("shape %s, capture %v: %d requests, %.0f req/s, %.3f ms CPU/req, %d errors\n\n", s.Name, capture, res.Requests, res.RPS(), per, res.Errors)
	logf("%s", head)
	return os.WriteFile(base+".txt", []byte(head+"== flat ==\n"+string(top)+"\n== cumulative ==\n"+string(cum)+"\n== live heap at the end of the window ==\n"+string(heap)), 0o644)
}

func cpuTimeOr(pid int) time.Duration {
	v, _ := cpuTime(pid)
	return v
}
