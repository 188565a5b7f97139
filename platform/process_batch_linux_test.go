package platform

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"inspector/platform/linux"
)

// Lookups arriving together share passes over /proc: 200 concurrent lookups take a
// handful of passes, each answer is the one for its own socket.
func TestProcessLookupsAreBatched(t *testing.T) {
	var passes atomic.Int32
	b := &batcher{gap: 20 * time.Millisecond, pass: func(cs []linux.Conn) ([]Process, []error) {
		passes.Add(1)
		ps := make([]Process, len(cs))
		for i, c := range cs {
			ps[i] = Process{PID: int(c.Local.Port()), Name: "p"}
		}
		return ps, make([]error, len(cs))
	}}
	var wg sync.WaitGroup
	for i := 1; i <= 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := b.lookup(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(i)), netip.MustParseAddrPort("127.0.0.1:8080"))
			if err != nil || p.PID != i {
				t.Errorf("lookup %d: %+v %v", i, p, err)
			}
		}()
	}
	wg.Wait()
	if n := passes.Load(); n > 20 {
		t.Fatalf("%d passes for 200 lookups", n)
	} else {
		t.Logf("%d passes for 200 lookups", n)
	}
}
