//go:build linux

package platform

import (
	"context"
	"net/netip"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"inspector/platform/linux"
)

func newTrustStore(o Options) TrustStore { return linux.NewTrustStore(o.Runner, o.Home) }

// proxyBackends returns GNOME when gsettings has the proxy schema and KDE when
// kwriteconfig6 or kwriteconfig5 is installed; both when both are (a KDE session still runs
// GTK apps that read GNOME's settings).
func proxyBackends(ctx context.Context, o Options) []ProxyBackend {
	var out []ProxyBackend
	if g := (&linux.GNOME{Runner: o.Runner}); g.Available(ctx) {
		out = append(out, g)
	}
	for _, v := range []int{6, 5} {
		if _, err := exec.LookPath("kwriteconfig" + strconv.Itoa(v)); err == nil {
			out = append(out, &linux.KDE{Runner: o.Runner, Version: v})
			break
		}
	}
	return out
}

func processOf(local, remote netip.AddrPort) (Process, error) {
	return procBatch.lookup(local, remote)
}

// procBatch answers lookups in batches: one pass over /proc serves every lookup that
// arrived while the previous pass ran, and passes start at most every procBatchGap. A
// pass reads every process's fds (milliseconds of kernel time on a busy machine), so a
// pass per client connection would cost more than the proxying itself; with batching the
// cost is bounded by the gap, whatever the connection rate, and a lookup waits at most
// one gap plus one pass.
var procBatch = &batcher{gap: procBatchGap, pass: func(cs []linux.Conn) ([]Process, []error) {
	return linux.ProcessesOf("/proc", cs)
}}

const procBatchGap = 200 * time.Millisecond

type batcher struct {
	gap  time.Duration
	pass func([]linux.Conn) ([]Process, []error)

	mu      sync.Mutex
	pending []batchReq
	running bool
	last    time.Time
}

type batchReq struct {
	c     linux.Conn
	reply chan batchRes
}

type batchRes struct {
	p   Process
	err error
}

func (b *batcher) lookup(local, remote netip.AddrPort) (Process, error) {
	ch := make(chan batchRes, 1)
	b.mu.Lock()
	b.pending = append(b.pending, batchReq{linux.Conn{Local: local, Remote: remote}, ch})
	if !b.running {
		b.running = true
		go b.loop()
	}
	b.mu.Unlock()
	r := <-ch
	return r.p, r.err
}

func (b *batcher) loop() {
	for {
		b.mu.Lock()
		wait := b.gap - time.Since(b.last)
		b.mu.Unlock()
		if wait > 0 {
			time.Sleep(wait) // the gap between passes; lookups queue meanwhile
		}
		b.mu.Lock()
		reqs := b.pending
		b.pending = nil
		if len(reqs) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		cs := make([]linux.Conn, len(reqs))
		for i, r := range reqs {
			cs[i] = r.c
		}
		ps, errs := b.pass(cs)
		b.mu.Lock()
		b.last = time.Now()
		b.mu.Unlock()
		for i, r := range reqs {
			r.reply <- batchRes{ps[i], errs[i]}
		}
	}
}
