// Package enginetest starts real origins, a real engine and real clients on 127.0.0.1:0
// for tests of the engine and of everything built on it. Every start helper registers its
// own cleanup with t.Cleanup and waits for readiness by dialing, never by sleeping.
package enginetest

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"inspector/engine"
	"inspector/engine/session"
	"inspector/rootca"
)

// Origin kinds.
const (
	OriginH1Plain = "h1-plain"
	OriginH1TLS   = "h1-tls"
	OriginH2TLS   = "h2-tls"
	// OriginH3 serves HTTP/3 on a UDP port and HTTP/1.1+h2 over TLS on a TCP port, with
	// Alt-Svc advertising the UDP port after SetAltSvc(true). URL is the TCP side; H3URL
	// (https://127.0.0.1:UDPPORT) the HTTP/3 side, for --upstream-proto h3.
	OriginH3 = "h3"
)

// Origin is a running test origin.
type Origin struct {
	*httptest.Server
	Kind string
	// H3Addr is the UDP address of an OriginH3 (host:port), and H3URL its https URL.
	H3Addr, H3URL string
	altSvc        *atomic.Bool
}

// StartOrigin starts an origin of the given kind serving Handler() (or h when non-nil).
func StartOrigin(t testing.TB, kind string, h http.Handler) *Origin {
	t.Helper()
	if h == nil {
		h = Handler()
	}
	srv := httptest.NewUnstartedServer(h)
	switch kind {
	case OriginH1Plain:
		srv.Start()
	case OriginH1TLS:
		srv.TLS = &tls.Config{NextProtos: []string{"http/1.1"}}
		srv.StartTLS()
	case OriginH2TLS:
		srv.EnableHTTP2 = true
		srv.StartTLS()
	case OriginH3:
		return startH3Origin(t, h, srv)
	default:
		t.Fatalf("unknown origin kind %q", kind)
	}
	t.Cleanup(srv.Close)
	return &Origin{Server: srv, Kind: kind}
}

// StartUntrustedOrigin starts a TLS origin whose certificate comes from a CA of its own,
// which nothing trusts (httptest's servers all share one certificate, so trusting one of
// them trusts all).
func StartUntrustedOrigin(t testing.TB, h http.Handler) *Origin {
	t.Helper()
	if h == nil {
		h = Handler()
	}
	other, err := rootca.Load(filepath.Join(t.TempDir(), "untrusted-ca"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := other.LeafFor("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &Origin{Server: srv, Kind: OriginH1TLS}
}

// Handler is the standard test origin:
//
//	/echo        echoes the request: method, proto, headers as X-Echo-*, body sha256 and size
//	/bytes?n=N   N random bytes (seeded by n), with Content-Length
//	/stream?n=N  N bytes streamed in chunks without Content-Length
//	/trailer     a body then trailers X-Sum and X-Late
//	/status?code=C
//	/cut         promises 1 MiB, sends 1 KiB, then closes the connection
//	/ws          a WebSocket echo endpoint
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		w.Header().Set("X-Echo-Method", r.Method)
		w.Header().Set("X-Echo-Proto", r.Proto)
		w.Header().Set("X-Echo-Host", r.Host)
		w.Header().Set("X-Echo-Body-Sha256", hex.EncodeToString(h.Sum(nil)))
		w.Header().Set("X-Echo-Body-Size", strconv.FormatInt(n, 10))
		for k, vv := range r.Header {
			w.Header()["X-Echo-H-"+k] = vv
		}
		for k, vv := range r.Trailer {
			w.Header()["X-Echo-T-"+k] = vv
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":true,"path":%q}`, r.URL.RequestURI())
	})
	mux.HandleFunc("/bytes", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(n))
		_, _ = w.Write(Pattern(n))
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		b := Pattern(n)
		for len(b) > 0 {
			c := min(len(b), 8192)
			_, _ = w.Write(b[:c])
			http.NewResponseController(w).Flush()
			b = b[c:]
		}
	})
	mux.HandleFunc("/trailer", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, "body before trailers")
		w.Header().Set("X-Sum", "42")
		w.Header().Set(http.TrailerPrefix+"X-Late", "yes")
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		w.WriteHeader(code)
	})
	mux.HandleFunc("/cut", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(1<<20))
		w.WriteHeader(200)
		_, _ = w.Write(Pattern(1024))
		http.NewResponseController(w).Flush()
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close()
			return
		}
		panic(http.ErrAbortHandler) // h2: reset the stream
	})
	mux.HandleFunc("/ws", serveWSEcho)
	return mux
}

// Pattern returns n deterministic pseudo-random bytes.
func Pattern(n int) []byte {
	b := make([]byte, n)
	var seed [32]byte
	binary.BigEndian.PutUint64(seed[:], uint64(n))
	for off := 0; off < n; off += 32 {
		seed = sha256.Sum256(seed[:])
		copy(b[off:], seed[:])
	}
	return b
}

// RandomBytes returns n random bytes.
func RandomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// Proxy is a running engine with a collector of completed sessions.
type Proxy struct {
	*engine.Engine
	CA       *rootca.CA
	URL      *url.URL
	Sessions chan *session.Session
	sub      *engine.Subscription
}

// StartProxy starts an engine on 127.0.0.1:0 that trusts the given origins' certificates.
// mod may adjust the config before start.
func StartProxy(t testing.TB, mod func(*engine.Config), origins ...*Origin) *Proxy {
	t.Helper()
	ca, err := rootca.Load(filepath.Join(t.TempDir(), "ca"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	for _, o := range origins {
		if o.Certificate() != nil {
			roots.AddCert(o.Certificate())
		}
	}
	cfg := engine.Config{Listen: "127.0.0.1:0", CA: ca, UpstreamRoots: roots}
	if mod != nil {
		mod(&cfg)
	}
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Engine: e, CA: ca, Sessions: make(chan *session.Session, 10000)}
	p.URL = &url.URL{Scheme: "http", Host: e.Addr()}
	e.Observe(engine.ObserverFunc(func(ev engine.Event) {
		if ev.Kind == engine.EventComplete {
			select {
			case p.Sessions <- ev.Session:
			default:
				t.Errorf("test session collector full")
			}
		}
	}))
	done := make(chan error, 1)
	go func() { done <- e.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := contextWithTimeout(5 * time.Second)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("engine close: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("engine serve: %v", err)
		}
	})
	waitDial(t, e.Addr())
	return p
}

func waitDial(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("proxy at %s never accepted: %v", addr, err)
		}
		runtime.Gosched()
	}
}

// Next waits for the next completed session.
// NextTimeout is how long Next waits for a session before it fails the test: a deadline
// for a failure, not a wait (Next returns as soon as a session completes), long enough for
// the race detector on a loaded 2-core machine.
const NextTimeout = 60 * time.Second

func (p *Proxy) Next(t testing.TB) *session.Session {
	t.Helper()
	select {
	case s := <-p.Sessions:
		return s
	case <-time.After(NextTimeout):
		t.Fatalf("no session completed within %v", NextTimeout)
		return nil
	}
}

// CAPool is a pool holding the proxy's root, for clients.
func (p *Proxy) CAPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.CA.Cert())
	return pool
}

// Client kinds.
const (
	ClientH1 = "h1"
	ClientH2 = "h2"
)

// Client returns an http.Client that uses the proxy and trusts its CA; kind picks the
// protocol it speaks to the proxy inside CONNECT tunnels.
func (p *Proxy) Client(t testing.TB, kind string) *http.Client {
	tr := &http.Transport{
		Proxy:               http.ProxyURL(p.URL),
		TLSClientConfig:     &tls.Config{RootCAs: p.CAPool()},
		MaxIdleConnsPerHost: 16,
		DisableCompression:  true,
	}
	switch kind {
	case ClientH1:
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	case ClientH2:
		tr.ForceAttemptHTTP2 = true
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetHTTP1(true)
		tr.Protocols.SetHTTP2(true)
	default:
		t.Fatalf("unknown client kind %q", kind)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// RequireNoLeaks fails if goroutines started during the test are still running after the
// test's cleanups. Call it first in a test so its check runs last.
func RequireNoLeaks(t testing.TB) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutines leaked: %d before, %d after\n%s", before, n, buf)
				return
			}
			time.Sleep(10 * time.Millisecond) // polling for a condition, bounded above
		}
	})
}

// --- minimal WebSocket (RFC 6455) for tests ---

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

func wsAccept(key string) string {
	h := sha1.Sum([]byte(key + wsGUID))
	return base64.StdEncoding.EncodeToString(h[:])
}

func serveWSEcho(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		http.Error(w, "websocket only", http.StatusBadRequest)
		return
	}
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", wsAccept(r.Header.Get("Sec-WebSocket-Key")))
	brw.Flush()
	for {
		op, data, err := ReadWSFrame(brw.Reader)
		if err != nil {
			return
		}
		if op == 8 {
			_ = WriteWSFrame(c, 8, data, false)
			return
		}
		if err := WriteWSFrame(c, op, data, false); err != nil {
			return
		}
	}
}

// Tunnel opens a CONNECT tunnel through the proxy to hostport and, when alpn is not nil,
// a TLS connection inside it that trusts the proxy's CA and offers alpn. The returned
// reader must be used for reads (it may hold bytes read past the CONNECT answer). The
// connection is closed at the end of the test.
func (p *Proxy) Tunnel(t testing.TB, hostport string, alpn []string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Engine.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	if alpn == nil {
		return c, br
	}
	host, _, _ := net.SplitHostPort(hostport)
	tc := tls.Client(c, &tls.Config{RootCAs: p.CAPool(), ServerName: host, NextProtos: alpn})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	return tc, bufio.NewReader(tc)
}

// WSDial opens a WebSocket to wsURL (ws:// or wss://) through the proxy.
func (p *Proxy) WSDial(t testing.TB, target string) (net.Conn, *bufio.Reader) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var alpn []string
	if u.Scheme == "wss" {
		alpn = []string{"http/1.1"}
	}
	conn, br := p.Tunnel(t, u.Host, alpn)
	key := base64.StdEncoding.EncodeToString(RandomBytes(16))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", u.RequestURI(), u.Host, key)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 || resp.Header.Get("Sec-WebSocket-Accept") != wsAccept(key) {
		t.Fatalf("upgrade failed: %s %v", resp.Status, resp.Header)
	}
	return conn, br
}

// WriteWSFrame writes one final frame; masked for client frames.
func WriteWSFrame(w io.Writer, op int, data []byte, masked bool) error {
	hdr := []byte{0x80 | byte(op)}
	mbit := byte(0)
	if masked {
		mbit = 0x80
	}
	switch n := len(data); {
	case n < 126:
		hdr = append(hdr, mbit|byte(n))
	case n < 1<<16:
		hdr = append(hdr, mbit|126, byte(n>>8), byte(n))
	default:
		hdr = append(hdr, mbit|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	payload := data
	if masked {
		var key [4]byte
		_, _ = rand.Read(key[:])
		hdr = append(hdr, key[:]...)
		payload = make([]byte, len(data))
		for i := range data {
			payload[i] = data[i] ^ key[i%4]
		}
	}
	_, err := w.Write(append(hdr, payload...))
	return err
}

// ReadWSFrame reads one frame and returns its opcode and unmasked payload.
func ReadWSFrame(r *bufio.Reader) (int, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > 16<<20 {
		return 0, nil, errors.New("frame too large")
	}
	var key [4]byte
	masked := h[1]&0x80 != 0
	if masked {
		if _, err := io.ReadFull(r, key[:]); err != nil {
			return 0, nil, err
		}
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return 0, nil, err
	}
	if masked {
		for i := range data {
			data[i] ^= key[i%4]
		}
	}
	return int(h[0] & 0x0f), data, nil
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
