package engine

// Fuzz targets for the engine's parsers: the HTTP/1 framing check (alone, against
// net/http's own parser, and through a running proxy), CONNECT targets, and the WebSocket
// frame parser. `make fuzz-short` runs each briefly; the seeds below always run as tests.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"inspector/engine/session"
	"inspector/rootca"
)

var framingSeeds = []string{
	"GET http://{A}/fz HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST http://{A}/fz HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
	"POST http://{A}/fz HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n",
	"POST http://{A}/fz HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST http://{A}/fz HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\nab\n0\n\n",
	"GET http://{A}/fz HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
	"GET http://{A}/fz HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"GET http://{A}/fz HTTP/1.1\r\nHost: a\r\n\r\nGET http://{A}/fz2 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
	"\r\nGET http://{A}/fz HTTP/1.1\r\nHost: a\r\nContent-Length: 00\r\n\r\n",
}

// FuzzBodyFramer: feeding a body in two pieces gives the same result as in one, and feed
// never claims more bytes than it got.
func FuzzBodyFramer(f *testing.F) {
	f.Add([]byte("3\r\nabc\r\n0\r\n\r\nrest"), uint(4), true)
	f.Add([]byte("ffffffffffffffff\r\n"), uint(3), true)
	f.Add([]byte("2;a=b\r\nab\r\n0\r\nX: 1\r\n\r\n"), uint(9), true)
	f.Add([]byte("hello world"), uint(5), false)
	f.Fuzz(func(t *testing.T, b []byte, split uint, chunked bool) {
		start := bodyFramer{chunked: true, st: stSize}
		if !chunked {
			start = bodyFramer{st: stLength, n: 7}
		}
		one := start
		n1, err1 := one.feed(b)
		if n1 > len(b) || n1 < 0 {
			t.Fatalf("feed claimed %d of %d bytes", n1, len(b))
		}
		k := int(split % uint(len(b)+1))
		two := start
		na, erra := two.feed(b[:k])
		n2, err2 := na, erra
		if erra == nil && !two.done() {
			nb, errb := two.feed(b[k:])
			n2, err2 = na+nb, errb
		}
		if n1 != n2 || (err1 == nil) != (err2 == nil) || one.st != two.st {
			t.Fatalf("split at %d: %d/%v/%d vs %d/%v/%d", k, n1, err1, one.st, n2, err2, two.st)
		}
		if err1 != nil {
			var fe *FramingError
			if !errors.As(err1, &fe) {
				t.Fatalf("error %T is not a *FramingError", err1)
			}
		}
	})
}

// FuzzCheckHead: a head the framing check accepts must parse with net/http to the same
// body framing, so the proxy and the server (and the origin after it) agree on where the
// request ends.
func FuzzCheckHead(f *testing.F) {
	for _, s := range framingSeeds {
		head, _, _ := strings.Cut(strings.ReplaceAll(s, "{A}", "127.0.0.1:1"), "\r\n\r\n")
		f.Add([]byte(head + "\r\n\r\n"))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		if !bytes.HasSuffix(head, []byte("\r\n\r\n")) || bytes.Count(head, []byte("\r\n\r\n")) != 1 {
			return
		}
		fr, pass, reason := checkHead(head)
		if reason != "" || pass {
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			return // net/http refuses it: the server answers 400 itself
		}
		switch {
		case fr.chunked:
			if len(req.TransferEncoding) != 1 || req.TransferEncoding[0] != "chunked" {
				t.Fatalf("we see chunked, net/http sees TE %q CL %d", req.TransferEncoding, req.ContentLength)
			}
		case fr.st == stLength:
			if req.ContentLength != int64(fr.n) || len(req.TransferEncoding) > 0 {
				t.Fatalf("we see length %d, net/http sees CL %d TE %q", fr.n, req.ContentLength, req.TransferEncoding)
			}
		default:
			if req.ContentLength > 0 || len(req.TransferEncoding) > 0 {
				t.Fatalf("we see no body, net/http sees CL %d TE %q", req.ContentLength, req.TransferEncoding)
			}
		}
	})
}

// fuzzProxy is an engine (no CA: tunnels are opaque) in front of a raw origin that checks
// that every byte it receives parses as well-formed requests, each one a request the
// proxy began a session for (EventBegin comes before the request goes upstream).
type fuzzProxy struct {
	e      *Engine
	origin net.Listener
	mu     sync.Mutex
	bad    error
	dialed []string
	begun  map[string]int // "METHOD path" of begun sessions not yet seen at the origin
}

func startFuzzProxy(f *testing.F) *fuzzProxy { return startFuzzProxyCA(f, nil) }

// startFuzzProxyCA is startFuzzProxy with a CA: tunnels are decrypted, and plain HTTP
// inside them is served by the MITM server (the lighter HTTP/1.1 path).
func startFuzzProxyCA(f *testing.F, ca *rootca.CA) *fuzzProxy {
	fp := &fuzzProxy{begun: map[string]int{}}
	var err error
	fp.origin, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	originAddr := fp.origin.Addr().String()
	go func() {
		for {
			c, err := fp.origin.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err == io.EOF {
						return
					}
					if err == nil {
						key := req.Method + " " + req.URL.Path
						fp.mu.Lock()
						if fp.begun[key] == 0 {
							err = fmt.Errorf("%q reached the origin without a session", key)
						}
						fp.begun[key]--
						fp.mu.Unlock()
					}
					if err == nil {
						_, err = io.Copy(io.Discard, req.Body)
					}
					if err != nil {
						var ne net.Error
						if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
							return // the proxy cut a request short: fine
						}
						fp.mu.Lock()
						fp.bad = fmt.Errorf("origin received something that is not a well-formed request: %w", err)
						fp.mu.Unlock()
						return
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			}()
		}
	}()
	fp.e, err = New(Config{Listen: "127.0.0.1:0", CA: ca, HeaderTimeout: 2 * time.Second, ResponseTimeout: 2 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	// Never leave the machine: dials other than to the origin fail before connecting.
	fp.e.up.Dialer().Resolver = &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no DNS while fuzzing")
	}}
	fp.e.up.Dialer().Control = func(network, address string, _ syscall.RawConn) error {
		fp.mu.Lock()
		fp.dialed = append(fp.dialed, address)
		fp.mu.Unlock()
		if address != originAddr {
			return errors.New("fuzzing: only the test origin may be dialed")
		}
		return nil
	}
	// Counted by a request hook, which runs on the exchange before anything goes upstream
	// (observers are told asynchronously, possibly after the origin has the request).
	fp.e.AddRequestHook(RequestHookFunc(func(_ context.Context, fl *Flow) error {
		u, err := url.Parse(fl.Session.Request.URL)
		if err != nil {
			return nil
		}
		path := u.Path
		if path == "" {
			path = "/" // what the transport sends for an empty path,
			if fl.Session.Request.Method == http.MethodOptions && u.RawQuery == "" {
				path = "*" // but an OPTIONS asks about the server: asterisk-form
			}
		}
		fp.mu.Lock()
		fp.begun[fl.Session.Request.Method+" "+path]++
		fp.mu.Unlock()
		return nil
	}))
	go fp.e.Serve()
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		fp.e.Close(ctx)
		fp.origin.Close()
	})
	return fp
}

// exchange writes raw to the proxy, half-closes, and returns what came back.
func (fp *fuzzProxy) exchange(t *testing.T, raw []byte) []byte {
	c, err := net.Dial("tcp", fp.e.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		c.Write(raw)
		c.(*net.TCPConn).CloseWrite()
	}()
	out, _ := io.ReadAll(c)
	return out
}

func (fp *fuzzProxy) check(t *testing.T) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if fp.bad != nil {
		t.Fatal(fp.bad)
	}
}

// FuzzHTTP1Proxy sends raw bytes ({A} is the origin's address) to a running proxy: the
// proxy must answer or close, and the origin must only ever receive well-formed requests
// that the proxy recorded.
func FuzzHTTP1Proxy(f *testing.F) {
	fp := startFuzzProxy(f)
	for _, s := range framingSeeds {
		f.Add([]byte(s))
	}
	addr := fp.origin.Addr().String()
	f.Fuzz(func(t *testing.T, raw []byte) {
		raw = bytes.ReplaceAll(raw, []byte("{A}"), []byte(addr))
		out := fp.exchange(t, raw)
		if len(out) > 0 && !bytes.HasPrefix(out, []byte("HTTP/1.")) {
			t.Fatalf("the proxy answered with non-HTTP bytes: %.80q", out)
		}
		fp.check(t)
	})
}

// FuzzHTTP1Tunnel is FuzzHTTP1Proxy inside a CONNECT tunnel to the origin, where plain
// HTTP/1.1 is served by the MITM server and bodiless requests take the lighter path on
// the client connection's own origin connection: the same rules hold.
func FuzzHTTP1Tunnel(f *testing.F) {
	ca, err := rootca.Load(filepath.Join(f.TempDir(), "ca"))
	if err != nil {
		f.Fatal(err)
	}
	fp := startFuzzProxyCA(f, ca)
	for _, s := range framingSeeds {
		f.Add([]byte(s))
		f.Add([]byte(strings.Replace(s, "http://{A}", "", 1))) // origin-form, as in a tunnel
	}
	f.Add([]byte("GET /a HTTP/1.1\r\nHost: a\r\n\r\nHEAD /b HTTP/1.1\r\nHost: a\r\n\r\nGET /c HTTP/1.1\r\nHost: a\r\n\r\n"))
	addr := fp.origin.Addr().String()
	connect := "CONNECT " + addr + " HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"
	f.Fuzz(func(t *testing.T, raw []byte) {
		raw = bytes.ReplaceAll(raw, []byte("{A}"), []byte(addr))
		if !looksLikeHTTP(bufio.NewReader(bytes.NewReader(raw))) {
			t.Skip("not HTTP: the tunnel relays it opaquely, as it must")
		}
		out := fp.exchange(t, append([]byte(connect), raw...))
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("CONNECT: %v %.80q", err, out)
		}
		_, rest, _ := bytes.Cut(out, []byte("\r\n\r\n"))
		if len(rest) > 0 && !bytes.HasPrefix(rest, []byte("HTTP/1.")) {
			t.Fatalf("the proxy answered with non-HTTP bytes in the tunnel: %.80q", rest)
		}
		fp.check(t)
	})
}

// FuzzConnectTarget sends CONNECT with arbitrary targets: bad ones get 400, the proxy's
// own address gets 508, and a tunnel only ever dials exactly the target it was given.
func FuzzConnectTarget(f *testing.F) {
	fp := startFuzzProxy(f)
	for _, s := range []string{"{A}", "example.com:443", "[::1]:80", "127.0.0.1", ":80", "a:b:c", "{P}", "localhost:{PP}", "%31%32%37.0.0.1:80", "[fe80::1%25eth0]:443"} {
		f.Add(s)
	}
	addr := fp.origin.Addr().String()
	proxyAddr := fp.e.Addr()
	_, proxyPort, _ := net.SplitHostPort(proxyAddr)
	f.Fuzz(func(t *testing.T, target string) {
		if strings.ContainsAny(target, " \r\n\t\x00") || target == "" {
			return // not a request-target a client could put on the line
		}
		target = strings.NewReplacer("{A}", addr, "{P}", proxyAddr, "{PP}", proxyPort).Replace(target)
		fp.mu.Lock()
		fp.dialed = nil
		fp.mu.Unlock()
		out := fp.exchange(t, []byte("CONNECT "+target+" HTTP/1.1\r\nHost: x\r\n\r\n"))
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), nil)
		if err != nil {
			t.Fatalf("CONNECT %q: unreadable answer %.80q", target, out)
		}
		host, port, splitErr := net.SplitHostPort(target)
		switch resp.StatusCode {
		case 200:
			if splitErr != nil || host == "" || port == "" {
				t.Fatalf("CONNECT %q accepted", target)
			}
		case 400:
		case http.StatusLoopDetected:
			if !fp.e.isReserved(host, port) {
				t.Fatalf("CONNECT %q refused as a loop", target)
			}
		default:
			t.Fatalf("CONNECT %q: %s", target, resp.Status)
		}
		fp.mu.Lock()
		defer fp.mu.Unlock()
		for _, d := range fp.dialed {
			dh, dp, _ := net.SplitHostPort(d)
			if fp.e.isReserved(dh, dp) {
				t.Fatalf("CONNECT %q dialed the proxy's own address %s", target, d)
			}
			if _, want := canonicalHostPort("", port); dp != want {
				t.Fatalf("CONNECT %q dialed port %s", target, dp)
			}
		}
	})
}

// FuzzH2FrameTap sends arbitrary bytes after the HTTP/2 preface through a decrypted
// tunnel to a proxy with frame capture on: the client-side frame tap (and the h2 server
// behind it) must never panic or hang, and every recorded frame is well-formed.
func FuzzH2FrameTap(f *testing.F) {
	ca, err := rootca.Load(filepath.Join(f.TempDir(), "ca"))
	if err != nil {
		f.Fatal(err)
	}
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	origin.EnableHTTP2 = true
	origin.StartTLS()
	f.Cleanup(origin.Close)
	roots := x509.NewCertPool()
	roots.AddCert(origin.Certificate())
	var mu sync.Mutex
	var badFrame error
	e, err := New(Config{Listen: "127.0.0.1:0", CA: ca, UpstreamRoots: roots,
		FrameSink: func(_ session.ID, frames []session.Frame) {
			for _, fr := range frames {
				if fr.Type == "" || (fr.Leg != "client" && fr.Leg != "upstream") {
					mu.Lock()
					badFrame = fmt.Errorf("recorded a malformed frame: %+v", fr)
					mu.Unlock()
				}
			}
		}})
	if err != nil {
		f.Fatal(err)
	}
	go e.Serve()
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.Close(ctx)
	})
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert())
	target := origin.Listener.Addr().String()

	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", target}, {":path", "/"}} {
		enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	var seed bytes.Buffer
	sfr := http2.NewFramer(&seed, nil)
	sfr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	sfr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true})
	sfr.WriteData(1, true, []byte("hello"))
	sfr.WritePing(false, [8]byte{1})
	f.Add(seed.Bytes())
	f.Add([]byte{0, 0, 0, 4, 0, 0, 0, 0, 0}) // empty SETTINGS
	f.Add([]byte{0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{0xff, 0xff, 0xff, 9, 0, 0, 0, 0, 1}) // huge CONTINUATION
	f.Fuzz(func(t *testing.T, b []byte) {
		raw, err := net.Dial("tcp", e.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		raw.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(raw)
		io.WriteString(raw, "CONNECT "+target+" HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		tc := tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"h2"}})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		go func() {
			io.WriteString(tc, http2.ClientPreface)
			tc.Write(b)
			tc.CloseWrite()
		}()
		// Read until the proxy closes or says GOAWAY (after which net/http2 waits a second
		// for the client to close).
		rfr := http2.NewFramer(nil, tc)
		for {
			fr, err := rfr.ReadFrame()
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the proxy neither answered nor closed within 10s")
			}
			if _, ok := fr.(*http2.GoAwayFrame); ok || (err != nil && !errors.As(err, new(http2.StreamError))) {
				break
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if badFrame != nil {
			t.Fatal(badFrame)
		}
	})
}
