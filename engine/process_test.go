package engine_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/platform"
)

func getOK(t *testing.T, c *http.Client, url string) {
	t.Helper()
	if resp, _ := get(t, c, url); resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
}

// TestProcessOfThroughEngine: with the real platform lookup (Linux /proc), the sessions of
// this test process's own connections, plain and decrypted HTTPS over h2, carry its PID
// and name.
func TestProcessOfThroughEngine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the real lookup is tested on Linux; other systems have their own tests in platform")
	}
	plain := et.StartOrigin(t, et.OriginH1Plain, nil)
	tlsO := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, func(c *engine.Config) { c.ProcessOf = platform.ProcessOf }, plain, tlsO)
	for _, tc := range []struct{ kind, url string }{{et.ClientH1, plain.URL + "/echo"}, {et.ClientH2, tlsO.URL + "/echo"}} {
		getOK(t, p.Client(t, tc.kind), tc.url)
		s := p.Next(t)
		if s.Client.PID != os.Getpid() || s.Client.Process == "" {
			t.Errorf("%s: client pid %d process %q, want pid %d", tc.url, s.Client.PID, s.Client.Process, os.Getpid())
		}
		if sum := s.Summarize(); sum.PID != os.Getpid() || sum.Process != s.Client.Process {
			t.Errorf("summary pid %d process %q", sum.PID, sum.Process)
		}
	}
}

// TestProcessLookupOffRequestPath: a lookup that has not answered never holds a request up
// (the response arrives while it is blocked), it runs once per connection with the
// client's and the proxy's addresses, and the stored session gets its answer once it comes.
// A lookup that fails leaves the session unattributed.
func TestProcessLookupOffRequestPath(t *testing.T) {
	t.Cleanup(engine.SetProcessWait(time.Minute))
	origin := et.StartOrigin(t, et.OriginH1Plain, nil)
	release := make(chan struct{})
	var mu sync.Mutex
	var calls [][2]netip.AddrPort
	var failing atomic.Bool
	p := et.StartProxy(t, func(c *engine.Config) {
		c.ProcessOf = func(client, proxy netip.AddrPort) (int, string, error) {
			mu.Lock()
			calls = append(calls, [2]netip.AddrPort{client, proxy})
			mu.Unlock()
			if failing.Load() {
				return 0, "", errors.New("no such socket")
			}
			<-release
			return 4242, "fakeapp", nil
		}
	}, origin)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the engine closes, if the test fails early
	var local net.Addr
	tr := &http.Transport{Proxy: http.ProxyURL(p.URL), DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, n, a)
		if err == nil {
			mu.Lock()
			local = c.LocalAddr()
			mu.Unlock()
		}
		return c, err
	}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	getOK(t, c, origin.URL+"/echo?one") // completes while the lookup is blocked
	getOK(t, c, origin.URL+"/echo?two") // same connection: no second lookup
	unblock()
	for _, path := range []string{"/echo?one", "/echo?two"} {
		s := p.Next(t)
		if s.Client.PID != 4242 || s.Client.Process != "fakeapp" {
			t.Errorf("%s: client pid %d process %q, want 4242 fakeapp", path, s.Client.PID, s.Client.Process)
		}
	}
	lookups := func() (n int) {
		mu.Lock()
		defer mu.Unlock()
		addr := local
		for _, c := range calls {
			if c[0].String() == addr.String() {
				n++
				if c[1].String() != p.Engine.Addr() {
					t.Errorf("lookup of %v names the proxy as %v, want %v", c[0], c[1], p.Engine.Addr())
				}
			}
		}
		return n
	}
	if n := lookups(); n != 1 {
		t.Errorf("%d lookups for the client connection, want 1", n)
	}

	// A new connection whose lookup fails: no attribution, no harm.
	tr.CloseIdleConnections()
	failing.Store(true)
	getOK(t, c, origin.URL+"/echo?three")
	if s := p.Next(t); s.Client.PID != 0 || s.Client.Process != "" {
		t.Errorf("failed lookup: pid %d process %q", s.Client.PID, s.Client.Process)
	}
	if n := lookups(); n != 1 {
		t.Errorf("%d lookups for the second connection, want 1", n)
	}
}
