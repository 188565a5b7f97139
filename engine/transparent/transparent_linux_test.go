package transparent_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/transparent"
	"inspector/platform/linux"
)

// redirected is a network namespace whose TCP is redirected by nftables to a transparent
// listener in it, served into a real engine running in this (the host's) namespace.
type redirected struct {
	ns    *linux.Netns
	p     *et.Proxy
	srv   *transparent.Server
	ln    net.Listener
	errs  chan error
	logMu sync.Mutex
	logs  []string
}

func newNetns(t *testing.T) *linux.Netns {
	t.Helper()
	ns, err := linux.NewNetns()
	if errors.Is(err, linux.ErrNetnsPermission) {
		t.Skipf("skipped: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

func startRedirected(t *testing.T, client string, origins ...*et.Origin) *redirected {
	t.Helper()
	return startRedirectedWith(t, client, nil, origins...)
}

// startRedirectedWith is startRedirected with the engine's config adjusted by mod.
func startRedirectedWith(t *testing.T, client string, mod func(*engine.Config), origins ...*et.Origin) *redirected {
	t.Helper()
	r := &redirected{ns: newNetns(t), errs: make(chan error, 64)}
	if err := r.ns.Do(func() (err error) { r.ln, err = net.Listen("tcp", ":0"); return err }); err != nil {
		t.Fatal(err)
	}
	port := uint16(r.ln.Addr().(*net.TCPAddr).Port)
	if err := r.ns.Apply(linux.Redirect{TCPPort: port, RejectUDP443: true}); err != nil {
		t.Fatal(err)
	}
	r.p = et.StartProxy(t, func(c *engine.Config) {
		c.ReservedAddrs = append(c.ReservedAddrs, r.ln.Addr().String())
		if mod != nil {
			mod(c)
		}
	}, origins...)
	r.srv = transparent.New(r.p.Engine, r.ln, transparent.Options{Client: client, Logf: r.logf})
	done := make(chan error, 1)
	go func() { done <- r.srv.Serve() }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("listener log: %q", r.logs)
		}
		r.srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return r
}

func (r *redirected) logf(format string, args ...any) {
	r.logMu.Lock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
	r.logMu.Unlock()
}

func (r *redirected) logged(sub string) int {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	n := 0
	for _, l := range r.logs {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// dial opens a connection from inside the namespace, as a program there would.
func (r *redirected) dial(ctx context.Context, network, addr string) (c net.Conn, err error) {
	err = r.ns.Do(func() error {
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// client is an http.Client inside the namespace with no proxy: it knows nothing of
// Inspector but its CA.
func (r *redirected) client(h2 bool) *http.Client {
	tr := &http.Transport{
		Proxy:             nil,
		DialContext:       r.dial,
		TLSClientConfig:   &tls.Config{RootCAs: r.p.CAPool()},
		ForceAttemptHTTP2: h2,
	}
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

func get(t *testing.T, c *http.Client, url string, host string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if host != "" {
		req.Host = host
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: status %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// A client in a namespace whose TCP is redirected, with no proxy setting, is captured and
// decrypted: the target is the original destination, and the session names the client.
func TestRedirectedHTTPSDecrypted(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{et.OriginH1TLS, et.OriginH2TLS} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			o := et.StartOrigin(t, kind, nil)
			r := startRedirected(t, "probe-cmd", o)
			c := r.client(kind == et.OriginH2TLS)
			defer c.Transport.(*http.Transport).CloseIdleConnections()
			for i := 0; i < 2; i++ { // the second one on the kept-alive connection
				get(t, c, o.URL+fmt.Sprintf("/echo?n=%d", i), "")
				s := r.p.Next(t)
				if want := o.URL + fmt.Sprintf("/echo?n=%d", i); s.Request.URL != want {
					t.Fatalf("session URL %s, want %s", s.Request.URL, want)
				}
				if s.Response == nil || s.Response.Status != 200 {
					t.Fatalf("session response %+v", s.Response)
				}
				if s.Client.Process != "probe-cmd" {
					t.Fatalf("process %q", s.Client.Process)
				}
				if s.Client.TLS == nil {
					t.Fatalf("session not decrypted: %+v", s.Client)
				}
				wantProto := "http/1.1"
				if kind == et.OriginH2TLS {
					wantProto = "h2"
				}
				if s.Request.Proto != wantProto {
					t.Fatalf("proto %s, want %s", s.Request.Proto, wantProto)
				}
			}
		})
	}
}

// The transparent listener passes the same h1/h2 client × origin matrix checks as the
// proxy listener (engine's TestProtocolMatrix): a client in the namespace, with no proxy
// setting, speaking HTTP/1.1 or h2 to an HTTP/1.1 or h2 origin.
func TestRedirectedProtocolMatrix(t *testing.T) {
	t.Parallel()
	et.RunTCPMatrix(t, func(t *testing.T, origin string, mod func(*engine.Config), h2 bool) (*http.Client, string, *et.Proxy) {
		o := et.StartOrigin(t, origin, nil)
		r := startRedirectedWith(t, "", mod, o)
		return r.client(h2), o.URL, r.p
	})
}

// Plain HTTP: the Host header names the target when it resolves to the original
// destination ("localhost" here).
func TestRedirectedHTTPHostNamesTarget(t *testing.T) {
	t.Parallel()
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	r := startRedirected(t, "", o)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(o.URL, "http://"))
	c := r.client(false)
	defer c.Transport.(*http.Transport).CloseIdleConnections()
	get(t, c, o.URL+"/echo", "localhost:"+port)
	s := r.p.Next(t)
	if want := "http://localhost:" + port + "/echo"; s.Request.URL != want {
		t.Fatalf("session URL %s, want %s", s.Request.URL, want)
	}
	if s.Request.Proto != "http/1.1" || s.Response == nil || s.Response.Status != 200 {
		t.Fatalf("session %+v", s)
	}
	// A Host that names another address than the one the connection went to is not
	// trusted: the session names the original destination. (The target is decided per
	// connection, hence a new one.)
	c2 := r.client(false)
	defer c2.Transport.(*http.Transport).CloseIdleConnections()
	get(t, c2, o.URL+"/echo?2", "127.0.0.2:"+port)
	s = r.p.Next(t)
	if want := o.URL + "/echo?2"; s.Request.URL != want {
		t.Fatalf("session URL %s, want %s (the original destination)", s.Request.URL, want)
	}
}

// A connection whose original destination is the instance itself (its proxy listener,
// or the transparent listener) is refused, not looped.
func TestRedirectedLoopRefused(t *testing.T) {
	t.Parallel()
	r := startRedirected(t, "")
	for _, addr := range []string{r.p.Engine.Addr(), net.JoinHostPort("127.0.0.1", fmt.Sprint(r.ln.Addr().(*net.TCPAddr).Port))} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := r.dial(ctx, "tcp", addr)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		n, err := bufio.NewReader(c).Read(make([]byte, 1))
		c.Close()
		if n != 0 || err == nil {
			t.Fatalf("%s: the looped connection was served (%d bytes, %v)", addr, n, err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for r.logged("refused") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("loop refusals not logged: %q", r.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case s := <-r.p.Sessions:
		t.Fatalf("a looped connection made a session: %s", s.Request.URL)
	default:
	}
	// A name that does not resolve to the original destination does not steer the
	// connection elsewhere either.
	if n := r.logged("does not resolve here"); n != 0 {
		t.Fatalf("the Host of a looped connection was looked up: %q", r.logs)
	}
}

// A name that does not resolve to where the connection went is not used, and is logged
// once however often it comes.
func TestRedirectedNameMismatchLoggedOnce(t *testing.T) {
	t.Parallel()
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	r := startRedirected(t, "", o)
	c := r.client(false)
	defer c.Transport.(*http.Transport).CloseIdleConnections()
	for i := 0; i < 3; i++ {
		get(t, c, o.URL+"/echo", "no-such-host.invalid")
		if s := r.p.Next(t); s.Request.URL != o.URL+"/echo" {
			t.Fatalf("session URL %s, want the original destination %s", s.Request.URL, o.URL)
		}
	}
	if n := r.logged("no-such-host.invalid"); n != 1 {
		t.Fatalf("mismatch logged %d times: %q", n, r.logs)
	}
}

// UDP to port 443 is refused at once in the namespace (QUIC falls back to TCP).
func TestNamespaceRefusesQUIC(t *testing.T) {
	t.Parallel()
	r := startRedirected(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := r.dial(ctx, "udp", "192.0.2.1:443")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	var rerr error
	for i := 0; i < 3 && rerr == nil; i++ {
		if _, err := c.Write([]byte("quic initial")); err != nil {
			rerr = err
			break
		}
		_, rerr = c.Read(make([]byte, 64))
	}
	if rerr == nil || !strings.Contains(rerr.Error(), "refused") && !strings.Contains(rerr.Error(), "not permitted") {
		t.Fatalf("UDP 443 not refused: %v", rerr)
	}
}

// A connection that was not redirected has no original destination: it is closed and
// logged, and the listener goes on.
func TestNotRedirectedClosed(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := et.StartProxy(t, nil)
	var mu sync.Mutex
	var logs []string
	srv := transparent.New(p.Engine, ln, transparent.Options{Logf: func(f string, a ...any) {
		mu.Lock()
		logs = append(logs, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	go srv.Serve()
	defer srv.Close()
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
			t.Fatalf("not redirected connection served: %d %v", n, err)
		}
		c.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logs) != 2 || !strings.Contains(logs[0], "no original destination") {
		t.Fatalf("logs %q", logs)
	}
}

// The original destination of a redirected connection to another host (IPv4 and IPv6) is
// the one the client dialed.
func TestOriginalDstOfOtherHosts(t *testing.T) {
	t.Parallel()
	ns := newNetns(t)
	var ln net.Listener
	if err := ns.Do(func() (err error) { ln, err = net.Listen("tcp", ":0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := ns.Apply(linux.Redirect{TCPPort: uint16(ln.Addr().(*net.TCPAddr).Port)}); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"192.0.2.10:443", "[2001:db8::10]:8443"} {
		var c net.Conn
		if err := ns.Do(func() (err error) { c, err = net.DialTimeout("tcp", target, 20*time.Second); return err }); err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		sc, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		dst, err := transparent.OriginalDst(sc)
		if err != nil || dst.String() != target {
			t.Fatalf("original destination %v (%v), want %s", dst, err, target)
		}
		sc.Close()
		c.Close()
	}
}

// DNS to any resolver address in the namespace is redirected to the forwarder, whose
// answer the client takes as the resolver's.
func TestNamespaceDNSRedirected(t *testing.T) {
	t.Parallel()
	ns := newNetns(t)
	upstream := startResolver(t, [4]byte{192, 0, 2, 7})
	pcs, port := listenDNS(t, ns)
	if err := ns.Apply(linux.Redirect{DNSPort: port}); err != nil {
		t.Fatal(err)
	}
	f := transparent.NewDNSForwarder(upstream, t.Logf, pcs...)
	defer f.Close()
	for _, resolver := range []string{"10.255.255.53:53", "127.0.0.53:53", "[2001:db8::53]:53"} {
		var c net.Conn
		if err := ns.Do(func() (err error) { c, err = net.Dial("udp", resolver); return err }); err != nil {
			t.Fatal(err)
		}
		if b := query(t, c, "x.test.", 9); len(b) == 0 {
			t.Fatalf("%s: no answer", resolver)
		}
		c.Close()
	}
}

// listenDNS binds the forwarder's sockets in ns.
func listenDNS(t *testing.T, ns *linux.Netns) (pcs []net.PacketConn, port uint16) {
	t.Helper()
	if err := ns.Do(func() (err error) { pcs, port, err = transparent.ListenDNS(); return err }); err != nil {
		t.Fatal(err)
	}
	return pcs, port
}
