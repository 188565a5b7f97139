package engine_test

// Truthful capture (issue 14): what a session records is what the client saw.

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

// closingClient fetches url through the proxy on a fresh connection, reads exactly the
// announced body and closes the connection at once, the way curl ends a transfer: the
// last response on a connection, with the client gone a moment after its last byte.
type closingClient func(t testing.TB, p *et.Proxy, rawURL string) (int, error)

// h1Closing speaks HTTP/1.1: absolute-form for http URLs, origin-form inside a CONNECT
// tunnel with TLS for https ones.
func h1Closing(t testing.TB, p *et.Proxy, rawURL string) (int, error) {
	u, _ := url.Parse(rawURL)
	var c net.Conn
	var br *bufio.Reader
	target := u.RequestURI()
	if u.Scheme == "https" {
		c, br = tunnelTLS(t, p, u.Host, "http/1.1")
	} else {
		var err error
		if c, err = net.Dial("tcp", p.Addr()); err != nil {
			return 0, err
		}
		br = bufio.NewReader(c)
		target = rawURL
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, u.Host); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	n, err := io.ReadFull(resp.Body, make([]byte, resp.ContentLength))
	return n, err
}

// h2Closing speaks HTTP/2 inside a CONNECT tunnel and closes the connection as soon as
// the announced bytes are in, without waiting for END_STREAM.
func h2Closing(t testing.TB, p *et.Proxy, rawURL string) (int, error) {
	u, _ := url.Parse(rawURL)
	c, _ := tunnelTLS(t, p, u.Host, "h2")
	defer c.Close()
	cc, err := (&http2.Transport{}).NewClientConn(c)
	if err != nil {
		return 0, err
	}
	req, _ := http.NewRequest("GET", rawURL, nil)
	resp, err := cc.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	return io.ReadFull(resp.Body, make([]byte, resp.ContentLength))
}

// tunnelTLS opens a CONNECT tunnel and a TLS connection inside it offering alpn; unlike
// Proxy.Tunnel it leaves closing to the caller and fails the test from any goroutine.
func tunnelTLS(t testing.TB, p *et.Proxy, hostport, alpn string) (net.Conn, *bufio.Reader) {
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Error(err)
		return failedConn{}, bufio.NewReader(failedConn{})
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("CONNECT %s: %v %v", hostport, resp, err)
		c.Close()
		return failedConn{}, bufio.NewReader(failedConn{})
	}
	host, _, _ := net.SplitHostPort(hostport)
	tc := tls.Client(c, &tls.Config{RootCAs: p.CAPool(), ServerName: host, NextProtos: []string{alpn}})
	if err := tc.Handshake(); err != nil {
		t.Error(err)
		c.Close()
		return failedConn{}, bufio.NewReader(failedConn{})
	}
	return tc, bufio.NewReader(tc)
}

// failedConn stands in for a connection that could not be made: every call fails.
type failedConn struct{ net.Conn }

func (failedConn) Read([]byte) (int, error)  { return 0, net.ErrClosed }
func (failedConn) Write([]byte) (int, error) { return 0, net.ErrClosed }
func (failedConn) Close() error              { return nil }

// TestCompleteExchangesAreNeverErrors: responses of 20 KB to 1 MB that the client read in
// full are never recorded with an error, although the client closes its connection right
// after its last byte (the proxy's request context then ends before the handler returns).
func TestCompleteExchangesAreNeverErrors(t *testing.T) {
	plain := et.StartOrigin(t, et.OriginH1Plain, nil)
	h2 := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, nil, plain, h2)
	cases := []struct {
		name   string
		client closingClient
		origin *et.Origin
	}{
		{"h1 absolute-form", h1Closing, plain},
		{"h1 in TLS tunnel", h1Closing, h2},
		{"h2 in TLS tunnel", h2Closing, h2},
	}
	sizes := []int{20 << 10, 100 << 10, 1 << 20}
	const rounds = 12 // per size, sequential, then as many in parallel
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := 0
			get := func(n, j int) {
				got, err := c.client(t, p, fmt.Sprintf("%s/bytes?n=%d&j=%d", c.origin.URL, n, j))
				if err != nil || got != n {
					t.Errorf("GET %d bytes: got %d, %v", n, got, err)
				}
			}
			for _, n := range sizes {
				for j := range rounds {
					get(n, j)
					want++
				}
				var wg sync.WaitGroup
				for j := range rounds {
					wg.Go(func() { get(n, rounds+j) })
					want++
				}
				wg.Wait()
			}
			bad := 0
			for range want {
				s := p.Next(t)
				if s.Error != nil || s.Status() != 200 {
					bad++
					t.Logf("%s: status %d, error %+v (%d of %d body bytes)", s.Request.URL, s.Status(), s.Error, s.Response.Body.Size, s.Response.Body.Size)
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d complete exchanges recorded as failed", bad, want)
			}
		})
	}
}

// TestCurlLoopRecordsNoFalseErrors is the reproduction with the real curl: one
// curl per request, each closing its connection as soon as it has the body.
func TestCurlLoopRecordsNoFalseErrors(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed")
	}
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	const n = 40
	for j := range n {
		out, err := exec.Command(curl, "-s", "-S", "-o", "/dev/null", "-w", "%{size_download}",
			"-x", p.URL.String(), o.URL+"/bytes?n=1000000&j="+strconv.Itoa(j)).CombinedOutput()
		if err != nil || string(out) != "1000000" {
			t.Fatalf("curl: %v %s", err, out)
		}
	}
	for range n {
		if s := p.Next(t); s.Error != nil {
			t.Errorf("%s: %+v", s.Request.URL, s.Error)
		}
	}
}

// TestClientLeavingMidBodyIsAnError: the other side of the same line. A client that
// closes its connection after a part of the body is recorded as gone, on h1 and h2.
func TestClientLeavingMidBodyIsAnError(t *testing.T) {
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, nil, o)
	const size = 16 << 20
	for _, alpn := range []string{"http/1.1", "h2"} {
		u, _ := url.Parse(o.URL)
		c, br := tunnelTLS(t, p, u.Host, alpn)
		var body io.Reader
		if alpn == "h2" {
			cc, err := (&http2.Transport{}).NewClientConn(c)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest("GET", o.URL+"/bytes?n="+strconv.Itoa(size), nil)
			resp, err := cc.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body = resp.Body
		} else {
			fmt.Fprintf(c, "GET /bytes?n=%d HTTP/1.1\r\nHost: %s\r\n\r\n", size, u.Host)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body = resp.Body
		}
		if _, err := io.ReadFull(body, make([]byte, 64<<10)); err != nil {
			t.Fatal(err)
		}
		c.Close()
		s := p.Next(t)
		if s.Error == nil || s.Error.Side != session.SideClient {
			t.Errorf("%s: a client gone after 64 KiB of 16 MiB: error %+v, %d bytes", alpn, s.Error, s.Response.Body.Size)
		}
	}
}

// TestConnectToImpossiblePorts: CONNECT (and absolute-form requests) to port 0 or beyond
// 65535 get a 400 naming the target, never "200 Connection Established".
func TestConnectToImpossiblePorts(t *testing.T) {
	et.RequireNoLeaks(t)
	p := et.StartProxy(t, nil)
	for _, target := range []string{"127.0.0.1:99999", "127.0.0.1:0", "example.com:0", "[::1]:65536", "example.com:00"} {
		got := rawExchange(t, p.Addr(), "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
		if !strings.HasPrefix(got, "HTTP/1.1 400 ") || !strings.Contains(got, target) {
			t.Errorf("CONNECT %s: %q", target, got)
		}
	}
	for _, target := range []string{"example.com:-1", "example.com:http"} { // net/http refuses these itself
		if got := rawExchange(t, p.Addr(), "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 400 ") {
			t.Errorf("CONNECT %s: %q", target, got)
		}
	}
	for _, target := range []string{"127.0.0.1:99999", "127.0.0.1:0"} {
		got := rawExchange(t, p.Addr(), "GET http://"+target+"/x HTTP/1.1\r\nHost: "+target+"\r\nConnection: close\r\n\r\n")
		if !strings.HasPrefix(got, "HTTP/1.1 400 ") || !strings.Contains(got, target) {
			t.Errorf("GET http://%s/x: %q", target, got)
		}
	}
}

// startRawOrigin accepts TCP connections and runs serve on each in a goroutine of its
// own; at cleanup it stops accepting, closes the connections and waits for serve to
// return. It returns the origin's address.
func startRawOrigin(t *testing.T, serve func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { serve(c) })
		}
	})
	return ln.Addr().String()
}

// replyVerbatim answers every connection's first request with head, verbatim.
func replyVerbatim(head string) func(net.Conn) {
	return func(c net.Conn) {
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			io.WriteString(c, head)
		}
	}
}

// TestBodyBrokenBeforeFirstByteIs502: an origin whose chunked body fails before its first
// byte (a chunk size too large, or negative) gives the client a 502 that says why, not an
// empty reply, over h1 and h2; the session records the 502 the client saw and the
// origin's failure, body phase, upstream side.
func TestBodyBrokenBeforeFirstByteIs502(t *testing.T) {
	et.RequireNoLeaks(t)
	p := et.StartProxy(t, nil)
	for _, size := range []string{"ffffffffffffffffff", "-5"} {
		addr := startRawOrigin(t, replyVerbatim("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n"+size+"\r\nabc\r\n0\r\n\r\n"))
		check := func(how string, status int, body string) {
			t.Helper()
			if status != http.StatusBadGateway || !strings.Contains(body, "before the first body byte") {
				t.Errorf("chunk size %s, %s: client got %d %q", size, how, status, body)
			}
			s := p.Next(t)
			if s.Status() != http.StatusBadGateway || s.Error == nil || s.Error.Phase != session.PhaseBody ||
				s.Error.Side != session.SideUpstream || !strings.Contains(s.Error.Message, "200 OK") ||
				!strings.Contains(string(s.Response.Body.Data), "before the first body byte") {
				t.Errorf("chunk size %s, %s: session status %d error %+v body %q", size, how, s.Status(), s.Error, s.Response.Body.Data)
			}
		}
		// HTTP/1.1, absolute-form.
		resp, err := p.Client(t, et.ClientH1).Get("http://" + addr + "/x")
		if err != nil {
			t.Fatalf("chunk size %s: %v", size, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		check("h1", resp.StatusCode, string(b))
		// HTTP/2 (h2c with prior knowledge inside a tunnel).
		c, _ := p.Tunnel(t, addr, nil)
		cc, err := (&http2.Transport{AllowHTTP: true}).NewClientConn(c)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", "http://"+addr+"/x", nil)
		resp, err = cc.RoundTrip(req)
		if err != nil {
			t.Fatalf("chunk size %s, h2: %v", size, err)
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		c.Close()
		check("h2", resp.StatusCode, string(b))
		// curl: not "empty reply from server" (exit 52).
		if curl, err := exec.LookPath("curl"); err == nil {
			out, err := exec.Command(curl, "-s", "-S", "-o", "/dev/null", "-w", "%{http_code}", "-x", p.URL.String(), "http://"+addr+"/x").CombinedOutput()
			if err != nil || string(out) != "502" {
				t.Errorf("chunk size %s: curl %v %s", size, err, out)
			}
			p.Next(t)
		}
	}
}

// TestStreamedHeadIsNotHeldForItsBody: the head of a streamed response whose first body
// byte is slow to come (an SSE or long-poll origin) still reaches the client before it,
// over h1 and h2: the proxy keeps a head back only briefly, for the 502 above.
func TestStreamedHeadIsNotHeldForItsBody(t *testing.T) {
	et.RequireNoLeaks(t)
	headSeen := make(chan struct{})
	o := et.StartOrigin(t, et.OriginH2TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		http.NewResponseController(w).Flush()
		select {
		case <-headSeen:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "data: hello\n\n")
	}))
	p := et.StartProxy(t, nil, o)
	for _, kind := range []string{et.ClientH1, et.ClientH2} {
		resp, err := p.Client(t, kind).Get(o.URL + "/events")
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		headSeen <- struct{}{}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "data: hello\n\n" {
			t.Errorf("%s: %s %q", kind, resp.Status, b)
		}
		if s := p.Next(t); s.Error != nil {
			t.Errorf("%s: %+v", kind, s.Error)
		}
	}
}

// startSilentOrigin accepts connections and never writes (a server waiting for its
// client to speak first). accepted receives each connection.
func startSilentOrigin(t *testing.T) (addr string, accepted chan net.Conn) {
	accepted = make(chan net.Conn, 64)
	return startRawOrigin(t, func(c net.Conn) { accepted <- c }), accepted
}

// connectSilently opens a CONNECT tunnel and sends nothing after the CONNECT head.
func connectSilently(t *testing.T, p *et.Proxy, target string) net.Conn {
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	return c
}

// TestSilentTunnelsCannotLockClientsOut: CONNECT tunnels that never send a byte, both
// before the proxy gave up sniffing their first byte and after (opaque tunnels to an
// origin that waits for its client), make room at the connection cap like idle
// keep-alive connections: a new client is served, not refused with 503.
func TestSilentTunnelsCannotLockClientsOut(t *testing.T) {
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	silent, accepted := startSilentOrigin(t)
	const max = 6
	p := et.StartProxy(t, func(c *engine.Config) { c.MaxConns = max }, o)
	get := func(when string) {
		t.Helper()
		got := rawExchange(t, p.Addr(), "GET "+o.URL+"/echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if !strings.HasPrefix(got, "HTTP/1.1 200") {
			t.Fatalf("%s: %.80q", when, got)
		}
		p.Next(t)
	}
	// 1. Tunnels waiting for their first byte (the sniff phase).
	var tunnels []net.Conn
	for range max {
		tunnels = append(tunnels, connectSilently(t, p, silent))
	}
	get("with every slot held by a tunnel that sent nothing yet")
	// 2. Refilled, they become opaque tunnels to the silent origin once sniffing gives
	// up (one made room above). Stats.Connections counts every client connection, the
	// tunnels still sniffing among them: wait until it is max-1 (the request's own
	// connection gone), or the refill would make room by closing another tunnel instead
	// of taking the free slot.
	deadline := time.Now().Add(30 * time.Second)
	for p.Stats().Connections > max-1 {
		if time.Now().After(deadline) {
			t.Fatalf("connections still open: %d, want %d", p.Stats().Connections, max-1)
		}
		time.Sleep(5 * time.Millisecond)
	}
	tunnels = append(tunnels, connectSilently(t, p, silent))
	for i := range max {
		select {
		case <-accepted:
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d tunnels reached the silent origin", i, max)
		}
	}
	get("with every slot held by an opaque tunnel that relays nothing")
	for _, c := range tunnels {
		c.Close()
	}
}

// TestIdleTunnelEnds: an opaque tunnel that relays nothing either way for
// TunnelIdleTimeout is closed; one that relays within it stays open.
func TestIdleTunnelEnds(t *testing.T) {
	silent, accepted := startSilentOrigin(t)
	p := et.StartProxy(t, func(c *engine.Config) {
		c.TunnelIdleTimeout = 2 * time.Second
		c.NoDecrypt = []string{"*"} // opaque at once, no sniffing
	})
	c := connectSilently(t, p, silent)
	up := <-accepted
	// Busy one way (the client never writes) for longer than the idle timeout, in steps
	// much shorter than it.
	buf := make([]byte, 1)
	for range 25 {
		if _, err := up.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatalf("the busy tunnel closed: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // the traffic's own pace, shorter than the timeout
	}
	// Now silent: the proxy closes it.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(buf); err == nil || isTimeoutErr(err) {
		t.Fatalf("the idle tunnel stayed open: %v", err)
	}
	s := p.Next(t)
	if s.Flags&session.FlagTunnel == 0 || s.Response == nil || s.Response.Body.Size != 25 {
		t.Errorf("tunnel session: flags %v, %+v", s.Flags, s.Response)
	}
}

func isTimeoutErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestCaptureMemoryIsCappedAcrossExchanges: the bodies of concurrent exchanges together
// hold at most Config.CaptureMemory in memory; the rest of each body is spilled to disk
// (whole bodies in the sessions), or, without a spill directory, the bodies are marked
// truncated. The budget is whole again once the sessions are out.
func TestCaptureMemoryIsCappedAcrossExchanges(t *testing.T) {
	const (
		n      = 8
		half   = 256 << 10
		budget = 512 << 10 // two bodies' first halves
	)
	for _, spill := range []bool{true, false} {
		var arrived sync.WaitGroup
		arrived.Add(n)
		release := make(chan struct{})
		o := et.StartOrigin(t, et.OriginH1Plain, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(2*half))
			w.Write(et.Pattern(2 * half)[:half])
			http.NewResponseController(w).Flush()
			<-release
			w.Write(et.Pattern(2 * half)[half:])
		}))
		p := et.StartProxy(t, func(c *engine.Config) {
			c.CaptureMemory = budget
			if spill {
				c.SpillDir, c.SpillLimit = t.TempDir(), 64<<20
			}
		}, o)
		c := p.Client(t, et.ClientH1)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				resp, err := c.Get(fmt.Sprintf("%s/b?i=%d", o.URL, i))
				if err != nil {
					t.Error(err)
					arrived.Done()
					return
				}
				defer resp.Body.Close()
				if _, err := io.ReadFull(resp.Body, make([]byte, half)); err != nil {
					t.Error(err)
				}
				arrived.Done() // the proxy captured this body's first half
				if b, err := io.ReadAll(resp.Body); err != nil || len(b) != half {
					t.Errorf("second half: %d bytes, %v", len(b), err)
				}
			})
		}
		arrived.Wait()
		st := p.Stats()
		if st.CaptureMemory > budget || st.CaptureCapped == 0 {
			t.Errorf("spill %v: %d bodies of %d KiB each hold %d KiB in memory (budget %d KiB), %d capped",
				spill, n, half>>10, st.CaptureMemory>>10, budget>>10, st.CaptureCapped)
		}
		close(release)
		wg.Wait()
		truncated := 0
		for range n {
			s := p.Next(t)
			b := s.Response.Body
			var kept int64 = int64(len(b.Data))
			if b.Spilled != "" {
				fi, err := os.Stat(b.Spilled)
				if err != nil {
					t.Fatal(err)
				}
				kept += fi.Size()
			}
			switch {
			case s.Error != nil || b.Size != 2*half:
				t.Errorf("spill %v: %s: error %+v, size %d", spill, s.Request.URL, s.Error, b.Size)
			case spill && (kept != 2*half || b.Truncated):
				t.Errorf("spill %v: %s: %d bytes kept of %d, truncated %v", spill, s.Request.URL, kept, b.Size, b.Truncated)
			case b.Truncated:
				truncated++
				if s.Flags&session.FlagRespTruncated == 0 {
					t.Errorf("%s: truncated body not flagged", s.Request.URL)
				}
			}
		}
		if !spill && truncated == 0 {
			t.Error("without spilling, no body was truncated at the memory cap")
		}
		// The budget comes back once the observers have the sessions, just after the
		// collector above returned.
		for deadline := time.Now().Add(10 * time.Second); p.Stats().CaptureMemory != 0; {
			if time.Now().After(deadline) {
				t.Fatalf("spill %v: %d bytes of capture memory still taken after every session completed", spill, p.Stats().CaptureMemory)
			}
			time.Sleep(time.Millisecond) // polling for a condition, bounded above
		}
	}
}

// TestBlockedObserverNeverStallsRequests: the engine never waits for an observer. With
// an observer blocked (as the store is under backpressure), requests over h1 and h2 still
// complete; the sessions reach the observer, in order, once it returns; and the bodies of
// the sessions waiting for it stay within the capture memory budget (later ones spill).
func TestBlockedObserverNeverStallsRequests(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	const budget = 1 << 20
	p := et.StartProxy(t, func(c *engine.Config) {
		c.CaptureMemory = budget
		c.SpillDir, c.SpillLimit = t.TempDir(), 64<<20
	}, o)
	unblock := make(chan struct{})
	var got []engine.Event
	var mu sync.Mutex
	p.Observe(engine.ObserverFunc(func(ev engine.Event) {
		<-unblock
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
	}))
	const n = 20
	for _, kind := range []string{et.ClientH1, et.ClientH2} {
		c := p.Client(t, kind)
		for i := range n {
			resp, err := c.Get(fmt.Sprintf("%s/bytes?n=%d&i=%d", o.URL, 256<<10, i))
			if err != nil {
				t.Fatalf("%s: request %d with the observer blocked: %v", kind, i, err)
			}
			if b, err := io.ReadAll(resp.Body); err != nil || len(b) != 256<<10 {
				t.Fatalf("%s: request %d: %d bytes, %v", kind, i, len(b), err)
			}
			resp.Body.Close()
		}
	}
	if st := p.Stats(); st.CaptureMemory > budget || st.Sessions != 2*n {
		t.Errorf("with the observer blocked: %d sessions completed, %d KiB of bodies in memory (budget %d KiB)",
			st.Sessions, st.CaptureMemory>>10, budget>>10)
	}
	close(unblock)
	for range 2 * n {
		if s := p.Next(t); s.Error != nil || s.Response.Body.Size != 256<<10 {
			t.Errorf("%s: %+v, %d bytes", s.Request.URL, s.Error, s.Response.Body.Size)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		mu.Lock()
		k := len(got)
		mu.Unlock()
		if k == 3*2*n { // begin, update, complete
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events delivered, want %d", k, 3*2*n)
		}
		time.Sleep(time.Millisecond) // polling for a condition, bounded above
	}
	seen := map[session.ID]engine.EventKind{}
	for _, ev := range got {
		if prev := seen[ev.Summary.ID]; ev.Kind < prev {
			t.Errorf("session %d: event %d delivered after %d", ev.Summary.ID, ev.Kind, prev)
		}
		seen[ev.Summary.ID] = ev.Kind
	}
}

// TestIdleH2ConnectionsMakeRoom: decrypted HTTP/2 connections with no stream open are
// idle keep-alive connections: at the connection cap one makes room for a new client.
func TestIdleH2ConnectionsMakeRoom(t *testing.T) {
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	const max = 4
	p := et.StartProxy(t, func(c *engine.Config) { c.MaxConns = max }, o)
	u, _ := url.Parse(o.URL)
	for i := range max {
		c, _ := tunnelTLS(t, p, u.Host, "h2")
		defer c.Close()
		cc, err := (&http2.Transport{}).NewClientConn(c)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", o.URL+"/echo", nil)
		resp, err := cc.RoundTrip(req)
		if err != nil {
			t.Fatalf("h2 connection %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		p.Next(t)
	}
	got := rawExchange(t, p.Addr(), "GET "+o.URL+"/echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Fatalf("with every slot held by an idle h2 connection: %.80q", got)
	}
	p.Next(t)
}

// An asterisk-form OPTIONS inside a decrypted tunnel is recorded with its target URI, the
// server's URL with an empty path (RFC 9112 §3.3), not "https://host*"; the origin gets
// "OPTIONS *"; and sending the recorded request again (the composer's and replay's path)
// reaches the origin as "OPTIONS *" too, as does an absolute-form OPTIONS with no path.
func TestAsteriskFormOptions(t *testing.T) {
	targets := make(chan string, 4)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		targets <- r.Method + " " + r.RequestURI
		w.Header().Set("Allow", "GET, OPTIONS")
	}))
	srv.Config.DisableGeneralOptionsHandler = true // net/http would answer OPTIONS * itself
	srv.StartTLS()
	t.Cleanup(srv.Close)
	o := &et.Origin{Server: srv, Kind: et.OriginH1TLS}
	p := et.StartProxy(t, nil, o)
	hostport := o.Listener.Addr().String()

	c, br := tunnelTLS(t, p, hostport, "http/1.1")
	defer c.Close()
	fmt.Fprintf(c, "OPTIONS * HTTP/1.1\r\nHost: %s\r\n\r\n", hostport)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodOptions})
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Allow") != "GET, OPTIONS" {
		t.Fatalf("OPTIONS *: %v %v", resp, err)
	}
	if got := <-targets; got != "OPTIONS *" {
		t.Errorf("origin got %q, want OPTIONS *", got)
	}
	s := p.Next(t)
	want := "https://" + hostport
	if s.Request.URL != want || s.Request.Method != http.MethodOptions {
		t.Fatalf("recorded %s %q, want OPTIONS %q", s.Request.Method, s.Request.URL, want)
	}
	if u, err := url.Parse(s.Request.URL); err != nil || u.Host != hostport {
		t.Errorf("recorded URL %q does not parse to the host: %v, %v", s.Request.URL, u, err)
	}

	// Asterisk-form is for OPTIONS only: anything else is refused, never forwarded.
	fmt.Fprintf(c, "POST * HTTP/1.1\r\nHost: %s\r\nContent-Length: 2\r\n\r\nhi", hostport)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("POST *: %v %v", resp, err)
	}
	select {
	case got := <-targets:
		t.Fatalf("POST * reached the origin as %q", got)
	default:
	}

	// The same on an HTTP/2 client leg (:path "*").
	c2, _ := tunnelTLS(t, p, hostport, "h2")
	defer c2.Close()
	cc, err := (&http2.Transport{}).NewClientConn(c2)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = cc.RoundTrip(&http.Request{Method: http.MethodOptions, URL: &url.URL{Scheme: "https", Host: hostport, Opaque: "*"}, Host: hostport, Header: http.Header{}})
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Allow") != "GET, OPTIONS" {
		t.Fatalf("h2 OPTIONS *: %v %v", resp, err)
	}
	resp.Body.Close()
	if got := <-targets; got != "OPTIONS *" {
		t.Errorf("h2: origin got %q, want OPTIONS *", got)
	}
	if s2 := p.Next(t); s2.Request.URL != want || s2.Client.Proto != "h2" {
		t.Errorf("h2: recorded %q over %s, want %q over h2", s2.Request.URL, s2.Client.Proto, want)
	}

	// Asked of the proxy itself, on its own listener: answered, the connection kept.
	pc, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	pbr := bufio.NewReader(pc)
	for i := 0; i < 2; i++ {
		fmt.Fprintf(pc, "OPTIONS * HTTP/1.1\r\nHost: %s\r\n\r\n", p.Addr())
		if resp, err := http.ReadResponse(pbr, &http.Request{Method: http.MethodOptions}); err != nil || resp.StatusCode != 200 || resp.Close {
			t.Fatalf("OPTIONS * to the proxy, #%d: %v %v", i, resp, err)
		}
	}

	// Replay: the recorded method and URL, sent again.
	req, _ := http.NewRequest(s.Request.Method, s.Request.URL, nil)
	rs, err := p.Send(t.Context(), req, engine.SendOptions{})
	if err != nil || rs.Response.Status != 200 {
		t.Fatalf("replay: %v %v", rs, err)
	}
	if got := <-targets; got != "OPTIONS *" {
		t.Errorf("replay: origin got %q, want OPTIONS *", got)
	}
	if rs.Request.URL != want {
		t.Errorf("replay recorded %q, want %q", rs.Request.URL, want)
	}

	// An OPTIONS for a path is left alone.
	req, _ = http.NewRequest(http.MethodOptions, want+"/", nil)
	if _, err := p.Send(t.Context(), req, engine.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := <-targets; got != "OPTIONS /" {
		t.Errorf("OPTIONS /: origin got %q", got)
	}
}
