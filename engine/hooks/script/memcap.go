package script

import (
	"fmt"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// A general memory cap per call. goja has no memory limit, and Go has no per-goroutine
// heap accounting, so while a call runs for longer than memSampleAfter a sampler reads the
// process's heap (runtime/metrics, objects in use) every memSampleEvery and interrupts
// the call, like the time budget does, once the heap has grown by more than the cap
// (Options.MemoryCap, 256 MiB) since the call began: `for(;;) a.push({…})` then ends with
// an error naming the script and line instead of taking the process's memory. The growth
// is the whole process's, so the cap is set far above what other work adds in one call's
// time, and growth is counted only while the call is the only script call running (with
// others running it cannot be told whose it is: the count starts again from there), and
// from the lowest heap seen (a collection of other work's garbage does not hide the
// call's growth). Memory a script keeps across calls in its globals is bounded only by
// each call's growth and the time budget (the script store has its own cap).
const (
	defaultMemoryCap = 256 << 20
	memSampleAfter   = 2 * time.Millisecond
	memSampleEvery   = time.Millisecond
)

const heapMetric = "/memory/classes/heap/objects:bytes"

// activeCalls counts the script calls running, in every Manager.
var activeCalls atomic.Int32

func heapInUse() int64 {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// watchMemory samples the heap while the caller's call runs and interrupts s's runtime
// when it grows past limit. The returned stop must be called when the call returns: once
// it has returned, the sampler has ended and will not interrupt a later call.
func (s *script) watchMemory(limit int64) (stop func()) {
	if limit <= 0 {
		return func() {}
	}
	activeCalls.Add(1)
	base := heapInUse()
	done, exited := make(chan struct{}), make(chan struct{})
	t := time.AfterFunc(memSampleAfter, func() {
		defer close(exited)
		tk := time.NewTicker(memSampleEvery)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				cur := heapInUse()
				if cur < base || activeCalls.Load() > 1 {
					base = cur
					continue
				}
				if grown := cur - base; grown > limit {
					s.rt.Interrupt(fmt.Sprintf("memory cap of %d MiB exceeded (the heap grew by %d MiB during the call)", limit>>20, grown>>20))
					return
				}
			}
		}
	})
	return func() {
		if !t.Stop() {
			close(done)
			<-exited
		}
		activeCalls.Add(-1)
	}
}
