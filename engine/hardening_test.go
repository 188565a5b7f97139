package engine_test

// Hardening probes: HTTP/2 conformance (h2spec), request smuggling and framing, hostile
// origins, resource limits and leaks. Every probe runs against a real engine on 127.0.0.1:0.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"inspector/content"
	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
	"inspector/filter"
	"inspector/rootca"
)

// startConnectRelay listens on 127.0.0.1:0 and turns every accepted connection into a
// CONNECT tunnel through proxyAddr to target, so tools that cannot use a proxy (h2spec)
// can talk to the proxy's client-facing side. Cleanup closes the listener and every relay.
func startConnectRelay(t testing.TB, proxyAddr, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	track := func(c net.Conn, add bool) bool {
		mu.Lock()
		defer mu.Unlock()
		if add && conns == nil {
			return false
		}
		if add {
			conns[c] = true
		} else if conns != nil {
			delete(conns, c)
		}
		return true
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				if !track(c, true) {
					return
				}
				defer track(c, false)
				up, err := net.Dial("tcp", proxyAddr)
				if err != nil {
					return
				}
				defer up.Close()
				if !track(up, true) {
					return
				}
				defer track(up, false)
				if _, err := io.WriteString(up, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); err != nil {
					return
				}
				br := bufio.NewReader(up)
				resp, err := http.ReadResponse(br, nil)
				if err != nil || resp.StatusCode != 200 {
					return
				}
				done := make(chan struct{})
				go func() {
					_, _ = io.Copy(up, c)
					if tc, ok := up.(*net.TCPConn); ok {
						_ = tc.CloseWrite()
					}
					close(done)
				}()
				_, _ = io.Copy(c, br)
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				<-done
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		conns = nil
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

var h2specTotals = regexp.MustCompile(`(\d+) tests, (\d+) passed, (\d+) skipped, (\d+) failed`)

// TestH2Spec runs h2spec against the proxy's client-facing HTTP/2 through a CONNECT
// tunnel. It needs the h2spec binary: set INSPECTOR_H2SPEC to its path (`make h2spec`
// installs it and runs this test). The score must reach Go's own server's baseline.
func TestH2Spec(t *testing.T) {
	bin := os.Getenv("INSPECTOR_H2SPEC")
	if bin == "" {
		t.Skip("INSPECTOR_H2SPEC is not set; run `make h2spec`")
	}
	origin := et.StartOrigin(t, et.OriginH2TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
	}))
	p := et.StartProxy(t, nil, origin)
	relay := startConnectRelay(t, p.Addr(), origin.Listener.Addr().String())
	_, port, _ := net.SplitHostPort(relay)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	args := []string{"-h", "127.0.0.1", "-p", port, "-t", "-k", "-o", "5"}
	if only := os.Getenv("INSPECTOR_H2SPEC_ONLY"); only != "" {
		args = append(args, "-v", only) // one section, for debugging
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	out, _ := cmd.CombinedOutput() // h2spec exits 1 when any case fails; the score decides
	m := h2specTotals.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no h2spec summary in its output:\n%s", out)
	}
	total, _ := strconv.Atoi(string(m[1]))
	passed, _ := strconv.Atoi(string(m[2]))
	skipped, _ := strconv.Atoi(string(m[3]))
	failed, _ := strconv.Atoi(string(m[4]))
	t.Logf("h2spec through the proxy: %d/%d passed, %d skipped, %d failed", passed, total, skipped, failed)
	if failed > 0 {
		// List the failed cases for the report.
		var fails []string
		_, summary, _ := strings.Cut(string(out), "Failures:")
		for _, line := range strings.Split(summary, "\n") {
			if strings.Contains(line, "×") {
				fails = append(fails, strings.TrimSpace(line))
			}
		}
		t.Logf("failed cases:\n%s", strings.Join(fails, "\n"))
	}
	if passed < 141 {
		t.Errorf("h2spec: %d/%d passed, want at least 141 (Go's own server baseline)\n%s", passed, total, out)
	}
}

// recordingOrigin is a raw TCP origin that records the exact bytes it receives on every
// connection and answers each request it can parse with 200 "ok" (keep-alive).
type recordingOrigin struct {
	ln    net.Listener
	mu    sync.Mutex
	bytes [][]byte // each closed connection's bytes (decrypted for TLS)
	wg    sync.WaitGroup
	conns map[net.Conn]bool
}

// startRecordingOrigin starts a recording origin; with tlsConf it speaks TLS and records
// the decrypted bytes.
func startRecordingOrigin(t testing.TB, tlsConf ...*tls.Config) *recordingOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if len(tlsConf) > 0 {
		ln = tls.NewListener(ln, tlsConf[0])
	}
	o := &recordingOrigin{ln: ln, conns: map[net.Conn]bool{}}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			o.mu.Lock()
			o.conns[c] = true
			o.mu.Unlock()
			o.wg.Add(1)
			go func() {
				defer o.wg.Done()
				o.serve(c)
			}()
		}
	}()
	t.Cleanup(o.close)
	return o
}

type teeConn struct {
	net.Conn
	rec *[]byte
}

func (c teeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	*c.rec = append(*c.rec, p[:n]...)
	return n, err
}

func (o *recordingOrigin) serve(c net.Conn) {
	var rec []byte
	defer func() {
		c.Close()
		o.mu.Lock()
		o.bytes = append(o.bytes, rec)
		delete(o.conns, c)
		o.mu.Unlock()
	}()
	br := bufio.NewReader(teeConn{c, &rec})
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"); err != nil {
			return
		}
	}
}

func (o *recordingOrigin) close() {
	o.ln.Close()
	o.mu.Lock()
	for c := range o.conns {
		c.Close()
	}
	o.mu.Unlock()
	o.wg.Wait()
}

func (o *recordingOrigin) addr() string { return o.ln.Addr().String() }

// received stops the origin (closing every connection) and returns the bytes it received
// on each connection.
func (o *recordingOrigin) received() [][]byte {
	o.close()
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([][]byte(nil), o.bytes...)
}

// requests stops the origin and parses what each connection received as a sequence of
// requests ("METHOD URI BODY"), failing the test on bytes that are not well-formed
// requests. A request cut off by the end of its connection (the proxy abandoned it) is
// returned in cut; with allowCut false it fails the test too.
func (o *recordingOrigin) requests(t *testing.T, allowCut bool) (complete, cut []string) {
	t.Helper()
	for _, conn := range o.received() {
		br := bufio.NewReader(bytes.NewReader(conn))
		for {
			req, err := http.ReadRequest(br)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("origin received bytes that are not a request: %v\n%q", err, conn)
			}
			b, err := io.ReadAll(req.Body)
			line := req.Method + " " + req.URL.RequestURI() + " " + string(b)
			if err != nil {
				if !allowCut || !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("origin received a broken request body: %v\n%q", err, conn)
				}
				cut = append(cut, line)
				if rest, _ := io.ReadAll(br); len(rest) > 0 {
					t.Fatalf("bytes after a cut request: %q", rest)
				}
				break
			}
			complete = append(complete, line)
		}
	}
	return complete, cut
}

// TestSmugglingCorpus sends ambiguous or malformed HTTP/1 framing straight to the proxy
// (absolute-form) and inside a plain CONNECT tunnel: each must get a 400 with nothing sent
// upstream. Then it checks that the origin received exactly the requests the sessions
// recorded: the accepted normalisations and the good requests, nothing else.
func TestSmugglingCorpus(t *testing.T) {
	et.RequireNoLeaks(t)
	o := startRecordingOrigin(t)
	p := et.StartProxy(t, nil)
	refused := map[string]string{
		"CL and TE":              "POST {U} HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
		"TE and CL":              "POST {U} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
		"TE obfuscated":          "POST {U} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
		"TE list":                "POST {U} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
		"TE duplicate":           "POST {U} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"TE in HTTP/1.0":         "POST {U} HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"TE space before colon":  "POST {U} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\nContent-Length: 3\r\n\r\nabc",
		"CL duplicate differing": "POST {U} HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
		"CL duplicate same":      "POST {U} HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab",
		"CL list":                "POST {U} HTTP/1.1\r\nHost: a\r\nContent-Length: 2, 2\r\n\r\nab",
		"CL negative":            "POST {U} HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\nab",
		"CL plus sign":           "POST {U} HTTP/1.1\r\nHost: a\r\nContent-Length: +2\r\n\r\nab",
		"CL space before colon":  "POST {U} HTTP/1.1\r\nHost: a\r\nContent-Length : 2\r\n\r\nab",
		"chunk line bare LF":     "POST {U} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\nab\r\n0\r\n\r\n",
		"chunk data bare LF":     "POST {U} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\n0\r\n\r\n",
		"last chunk bare LF":     "POST {U} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\n\n",
		"chunk data too long":    "POST {U} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
		"chunk size overflow":    "POST {U} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff1\r\nab\r\n0\r\n\r\n",
		"chunk size not hex":     "POST {U} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\nab\r\n0\r\n\r\n",
		"chunk ext NUL":          "POST {U} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2;a=\x00\r\nab\r\n0\r\n\r\n",
		"trailer obs-fold":       "POST {U} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: a\r\n b\r\n\r\n",
		"NUL in value":           "GET {U} HTTP/1.1\r\nHost: a\r\nX-A: a\x00b\r\n\r\n",
		"CR in value":            "GET {U} HTTP/1.1\r\nHost: a\r\nX-A: a\rGET /smuggled HTTP/1.1\r\n\r\n",
		"LF in value":            "GET {U} HTTP/1.1\r\nHost: a\r\nX-A: a\nContent-Length: 30\r\n\r\n",
		"obs-fold":               "GET {U} HTTP/1.1\r\nHost: a\r\nX-A: a\r\n Content-Length: 30\r\n\r\n",
		"bare LF head":           "GET {U} HTTP/1.1\nHost: a\n\n",
		"space in header name":   "GET {U} HTTP/1.1\r\nHost: a\r\nX A: b\r\n\r\n",
		"two Host headers":       "GET {U} HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
	}
	originURL := "http://" + o.addr()
	for name, raw := range refused {
		for _, mode := range []string{"absolute", "tunnel"} {
			c, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			req := strings.ReplaceAll(raw, "{U}", originURL+"/refused")
			if mode == "tunnel" {
				io.WriteString(c, "CONNECT "+o.addr()+" HTTP/1.1\r\nHost: "+o.addr()+"\r\n\r\n")
				if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
					t.Fatalf("CONNECT: %v", err)
				}
				req = strings.ReplaceAll(raw, "{U}", "/refused")
			}
			if _, err := io.WriteString(c, req); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Errorf("%s (%s): no response: %v", name, mode, err)
				c.Close()
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s (%s): %s %q, want 400", name, mode, resp.Status, body)
			}
			if rest, _ := io.ReadAll(br); len(rest) > 0 {
				t.Errorf("%s (%s): more after the 400: %q", name, mode, rest)
			}
			c.Close()
		}
	}

	// Accepted, and sent upstream in a normalised form.
	accepted := []string{
		"POST {U} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"POST {U} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\tchunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\n",
		"POST {U} HTTP/1.1\r\nHost: a\r\nContent-Length: 31\r\n\r\nGET /smuggled HTTP/1.1\r\nX: \r\n\r\n",
		"GET {U} HTTP/1.1\r\nHost: a\r\n\r\n",
	}
	for i, raw := range accepted {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, strings.ReplaceAll(raw, "{U}", originURL+"/ok"+strconv.Itoa(i)))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("accepted #%d: %v %v", i, resp, err)
		}
		io.ReadAll(resp.Body)
		c.Close()
	}
	var recorded []string
	for range accepted {
		s := p.Next(t)
		recorded = append(recorded, s.Request.Method+" "+s.Request.URL+" "+string(s.Request.Body.Data))
	}
	select {
	case s := <-p.Sessions:
		t.Errorf("a refused request made a session: %s %s", s.Request.Method, s.Request.URL)
	default:
	}
	// The recorder check: parse what the origin got; it must be the recorded requests.
	sent, _ := o.requests(t, false)
	for i := range sent {
		sent[i] = strings.Replace(sent[i], " ", " "+originURL, 1)
	}
	slicesSort(recorded)
	slicesSort(sent)
	if strings.Join(recorded, "\n") != strings.Join(sent, "\n") {
		t.Errorf("origin received\n%s\nsessions recorded\n%s", strings.Join(sent, "\n"), strings.Join(recorded, "\n"))
	}
	for _, r := range sent {
		if strings.Contains(r, "refused") || strings.Contains(r, "GET /smuggled HTTP/1.1\r\nHost") {
			t.Errorf("a refused request reached the origin: %q", r)
		}
	}
}

func slicesSort(s []string) { sort.Strings(s) }

// TestSlowlorisDoesNotBlockService opens hundreds of connections that send half a request
// head and stall; a normal client must still be served at once.
func TestSlowlorisDoesNotBlockService(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for i := 0; i < 300; i++ {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
		if _, err := io.WriteString(c, "GET "+o.URL+"/echo HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
			t.Fatal(err)
		}
	}
	c := p.Client(t, et.ClientH1)
	for i := 0; i < 5; i++ {
		resp, err := c.Get(o.URL + "/echo")
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("with 300 stalled connections: %s", resp.Status)
		}
		p.Next(t)
	}
}

// TestConnectionLimit: at Config.MaxConns a new connection takes the slot of the one that
// has waited longest for a request head (idle keep-alive or a half-sent head: slowloris);
// when every connection is busy it gets 503 and is closed, and service resumes as
// connections close.
func TestConnectionLimit(t *testing.T) {
	et.RequireNoLeaks(t)
	release := make(chan struct{})
	var inHandler sync.WaitGroup
	mux := http.NewServeMux()
	mux.Handle("/", et.Handler())
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		inHandler.Done()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	o := et.StartOrigin(t, et.OriginH1Plain, mux)
	p := et.StartProxy(t, func(c *engine.Config) { c.MaxConns = 8 }, o)
	get := func(path string) string {
		return rawExchange(t, p.Addr(), "GET "+o.URL+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// waitDrained waits until the proxy has seen every client close, so the next step
	// fills the cap with its own connections only.
	waitDrained := func() {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); p.Stats().Connections > 0; {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections still open after the clients closed them", p.Stats().Connections)
			}
			time.Sleep(5 * time.Millisecond) // polling for a condition, bounded above
		}
	}
	closedByProxy := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.ReadAll(c)
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}

	// 1. Eight idle keep-alive connections: a ninth client is served, and the connection
	// idle longest (the first) makes room.
	var idle []net.Conn
	for i := 0; i < 8; i++ {
		c := dial()
		idle = append(idle, c)
		io.WriteString(c, "GET "+o.URL+"/echo HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("conn %d: %v %v", i, resp, err)
		}
		io.ReadAll(resp.Body)
		p.Next(t)
	}
	if got := get("/echo"); !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Fatalf("with 8 idle connections at the cap: %.80q", got)
	}
	p.Next(t)
	// One idle connection made room. Which one is "idle longest" depends on when each
	// server goroutine went back to reading, which the scheduler may reorder under load, so
	// the test asks for one of them (normally the first), not for the first exactly.
	closedIdx := make(chan int, len(idle))
	for i, c := range idle {
		go func() {
			if closedByProxy(c) {
				closedIdx <- i
			}
		}()
	}
	select {
	case i := <-closedIdx:
		t.Logf("idle connection %d was closed to make room", i)
	case <-time.After(10 * time.Second):
		t.Error("no idle connection was closed to make room")
	}
	for _, c := range idle {
		c.Close()
	}
	waitDrained()

	// 2. Half-sent heads (slowloris) at the cap: a new client is still served.
	var slow []net.Conn
	for i := 0; i < 8; i++ {
		c := dial()
		slow = append(slow, c)
		io.WriteString(c, "GET "+o.URL+"/echo HTTP/1.1\r\nHost: x\r\nX-Slow: ")
	}
	for i := 0; i < 3; i++ {
		if got := get("/echo"); !strings.HasPrefix(got, "HTTP/1.1 200") {
			t.Fatalf("with 8 half-sent heads at the cap: %.80q", got)
		}
		p.Next(t)
	}
	for _, c := range slow {
		c.Close()
	}
	waitDrained()

	// 3. Eight busy connections: a ninth gets 503; after they finish, service resumes.
	inHandler.Add(8)
	var busy []net.Conn
	var done sync.WaitGroup
	for i := 0; i < 8; i++ {
		c := dial()
		busy = append(busy, c)
		io.WriteString(c, "GET "+o.URL+"/hold HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		done.Add(1)
		go func() {
			defer done.Done()
			io.ReadAll(c)
		}()
	}
	reached := make(chan struct{})
	go func() { inHandler.Wait(); close(reached) }()
	select {
	case <-reached:
	case <-time.After(20 * time.Second):
		close(release)
		t.Fatal("the eight held requests did not all reach the origin")
	}
	if got := get("/echo"); !strings.HasPrefix(got, "HTTP/1.1 503") {
		t.Fatalf("with 8 busy connections at the cap: %.80q", got)
	}
	close(release)
	done.Wait()
	for _, c := range busy {
		c.Close()
		p.Next(t)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := get("/echo")
		if strings.HasPrefix(got, "HTTP/1.1 200") {
			p.Next(t)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("service did not resume after the connections closed: %.80q", got)
		}
		time.Sleep(10 * time.Millisecond) // polling for a condition, bounded above
	}
}

func openFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd on this OS")
	}
	return len(ents)
}

// TestBurstAndAbandonedRequestsReturnToBaseline runs a burst of requests over h1 and h2
// plus requests the client abandons while the origin is still working: every abandoned
// request must be cancelled upstream, and goroutines and file descriptors must return to
// their baseline with the proxy still running.
func TestBurstAndAbandonedRequestsReturnToBaseline(t *testing.T) {
	et.RequireNoLeaks(t)
	cancelled := make(chan struct{}, 100)
	started := make(chan struct{}, 100)
	mux := http.NewServeMux()
	mux.Handle("/", et.Handler())
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done()
		cancelled <- struct{}{}
	})
	origins := []*et.Origin{et.StartOrigin(t, et.OriginH1TLS, mux), et.StartOrigin(t, et.OriginH2TLS, mux)}
	p := et.StartProxy(t, nil, origins...)
	run := func() {
		var wg sync.WaitGroup
		for _, kind := range []string{et.ClientH1, et.ClientH2} {
			c := p.Client(t, kind)
			for _, o := range origins {
				for i := 0; i < 20; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						resp, err := c.Get(o.URL + "/bytes?n=70000")
						if err != nil {
							t.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}()
				}
			}
			wg.Wait()
			c.Transport.(*http.Transport).CloseIdleConnections()
		}
		for i := 0; i < 2*2*20; i++ {
			p.Next(t)
		}
	}
	run() // warm up: pools, caches, minted leaves
	baseG, baseFD := runtime.NumGoroutine(), openFDs(t)

	run()
	// Abandoned requests: the client gives up while the origin is still working.
	for _, kind := range []string{et.ClientH1, et.ClientH2} {
		c := p.Client(t, kind)
		for _, o := range origins {
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "GET", o.URL+"/hang", nil)
			errc := make(chan error, 1)
			go func() {
				resp, err := c.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				errc <- err
			}()
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("the request never reached the origin")
			}
			cancel()
			<-errc
			select {
			case <-cancelled:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s → %s: the origin's request was not cancelled after the client went away", kind, o.Kind)
			}
			s := p.Next(t)
			for !strings.HasSuffix(s.Request.URL, "/hang") {
				s = p.Next(t) // a late session of the burst (a client may retry a request)
			}
			if s.Error == nil || s.Error.Side != session.SideClient {
				t.Errorf("%s → %s: abandoned session error %+v", kind, o.Kind, s.Error)
			}
		}
		c.Transport.(*http.Transport).CloseIdleConnections()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, fd := runtime.NumGoroutine(), openFDs(t)
		// Upstream keep-alive pools may hold a few more idle connections than after the
		// warm-up (each has a reader and a writer goroutine and one fd, and the in-process
		// origin one serving goroutine more). With the mirrored hello the default, the
		// upstream keeps a pool per client fingerprint beside Go's own, so the burst can
		// leave one or two more than before (170 against a baseline of 161 was seen); a
		// leak of the burst's abandoned requests is far more.
		if g <= baseG+16 && fd <= baseFD+8 {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("not back to baseline: goroutines %d (baseline %d), fds %d (baseline %d)\n%s",
				g, baseG, fd, baseFD, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond) // polling for a condition, bounded above
	}
}

// TestProxyAuth: with Config.ProxyAuth, requests without the right Basic credentials get
// 407 (CONNECT and absolute-form); with them they pass, and the credentials reach neither
// the origin nor the session.
func TestProxyAuth(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, func(c *engine.Config) { c.ProxyAuth = "inspector:s3cret" }, o)
	host := strings.TrimPrefix(o.URL, "http://")
	good := "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("inspector:s3cret")) + "\r\n"
	bad := "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("inspector:guess")) + "\r\n"
	for name, raw := range map[string]string{
		"GET without":  "GET " + o.URL + "/echo HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET wrong":    "GET " + o.URL + "/echo HTTP/1.1\r\nHost: x\r\n" + bad + "\r\n",
		"CONNECT none": "CONNECT " + host + " HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT bad":  "CONNECT " + host + " HTTP/1.1\r\nHost: x\r\n" + bad + "\r\n",
		"not basic":    "GET " + o.URL + "/echo HTTP/1.1\r\nHost: x\r\nProxy-Authorization: Bearer inspector:s3cret\r\n\r\n",
	} {
		got := rawExchange(t, p.Addr(), raw)
		if !strings.HasPrefix(got, "HTTP/1.1 407") || !strings.Contains(got, "Proxy-Authenticate: Basic") {
			t.Errorf("%s: %.120q", name, got)
		}
	}
	got := rawExchange(t, p.Addr(), "GET "+o.URL+"/echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"+good+"\r\n")
	if !strings.HasPrefix(got, "HTTP/1.1 200") || strings.Contains(got, "X-Echo-H-Proxy-Authorization") {
		t.Errorf("with credentials: %.300q", got)
	}
	s := p.Next(t)
	if _, ok := s.Request.Header["Proxy-Authorization"]; ok {
		t.Errorf("the session kept the proxy credentials")
	}
	// Through a tunnel: credentials on the CONNECT only.
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	io.WriteString(c, "CONNECT "+host+" HTTP/1.1\r\nHost: x\r\n"+good+"\r\n")
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT with credentials: %v %v", resp, err)
	}
	io.WriteString(c, "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("inside the tunnel: %v %v", resp, err)
	}
	p.Next(t)
}

// hostileOrigin is a TLS origin that speaks raw HTTP/2 (or raw HTTP/1.1) frames chosen by
// the request path, to misbehave in ways net/http's server never would.
type hostileOrigin struct {
	ln    net.Listener
	addr  string
	proto string
	wg    sync.WaitGroup
	// stuck counts behaviours that ran to their end without the proxy giving up (for
	// endless ones, that means the proxy kept consuming).
	mu    sync.Mutex
	stuck []string
}

func startHostileOrigin(t *testing.T, proto string) (*hostileOrigin, *x509.Certificate) {
	t.Helper()
	ca, err := rootca.Load(filepath.Join(t.TempDir(), "hostile-ca"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.LeafFor("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{*leaf}, NextProtos: []string{proto}})
	if err != nil {
		t.Fatal(err)
	}
	o := &hostileOrigin{ln: ln, addr: ln.Addr().String(), proto: proto}
	var mu sync.Mutex
	var conns []net.Conn
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			o.wg.Add(1)
			go func() {
				defer o.wg.Done()
				defer c.Close()
				if proto == "h2" {
					o.serveH2(c)
				} else {
					o.serveH1(c)
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		o.wg.Wait()
	})
	return o, ca.Cert()
}

func (o *hostileOrigin) ranToEnd(what string) {
	o.mu.Lock()
	o.stuck = append(o.stuck, what)
	o.mu.Unlock()
}

func (o *hostileOrigin) serveH1(c net.Conn) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	switch req.URL.Path {
	case "/endless-headers":
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Pad: " + strings.Repeat("p", 1000) + "\r\n"
		for i := 0; i < 20000; i++ { // 20 MB, far past any sane cap
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
		o.ranToEnd(req.URL.Path)
	case "/bad-status":
		io.WriteString(c, "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n")
	case "/bad-header":
		io.WriteString(c, "HTTP/1.1 200 OK\r\nX-A: a\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc")
	case "/early-close":
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Le")
	case "/gzip-bomb":
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		zeros := make([]byte, 1<<20)
		for i := 0; i < 64; i++ { // 64 MiB inflated
			zw.Write(zeros)
		}
		zw.Close()
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n", z.Len())
		c.Write(z.Bytes())
	}
}

// serveH2 reads the client's preface and the first request, then misbehaves.
func (o *hostileOrigin) serveH2(c net.Conn) {
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil {
		return
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		return
	}
	var path string
	var streamID uint32
	for path == "" {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			path, streamID = f.PseudoValue("path"), f.StreamID
		}
	}
	// Keep reading (and dropping) what the proxy sends, so its writes never block us.
	go func() {
		for {
			if _, err := fr.ReadFrame(); err != nil {
				return
			}
		}
	}()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	block := func(fields ...string) []byte {
		hb.Reset()
		for i := 0; i+1 < len(fields); i += 2 {
			enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return append([]byte(nil), hb.Bytes()...)
	}
	switch path {
	case "/endless-continuation":
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: streamID, BlockFragment: block(":status", "200")}); err != nil {
			return
		}
		pad := block("x-pad", strings.Repeat("p", 1000))
		for i := 0; i < 20000; i++ { // 20 MB of header block
			if err := fr.WriteContinuation(streamID, false, pad); err != nil {
				return
			}
		}
		o.ranToEnd(path)
	case "/hpack-bomb":
		// One 4 KB header in the dynamic table, then thousands of one-byte references
		// to it: 16 KB on the wire inflate to ~48 MB of header list.
		b := block(":status", "200", "x-bomb", strings.Repeat("b", 4000))
		for len(b) < 16000 {
			b = append(b, 0x80|62) // indexed field 62: the newest dynamic entry
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: streamID, BlockFragment: b, EndHeaders: true, EndStream: true})
	case "/ping-flood", "/settings-flood":
		for i := 0; i < 20000; i++ {
			var err error
			if path == "/ping-flood" {
				err = fr.WritePing(false, [8]byte{byte(i)})
			} else {
				err = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 65535})
			}
			if err != nil {
				return
			}
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: streamID, BlockFragment: block(":status", "200"), EndHeaders: true, EndStream: true})
	case "/bad-status":
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: streamID, BlockFragment: block(":status", "2x0"), EndHeaders: true, EndStream: true})
	case "/bad-header":
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: streamID, BlockFragment: block(":status", "200", "x-a", "a\r\nx-injected: 1"), EndHeaders: true, EndStream: true})
	case "/early-close":
		c.Close()
		return
	}
	// One request per connection: no new streams here, then wait for the proxy to hang up
	// (or the test's cleanup to close us).
	fr.WriteGoAway(streamID, http2.ErrCodeNo, nil)
	io.Copy(io.Discard, c)
}

// TestHostileOrigins: origins that send endless or bombed headers, floods, invalid
// status lines or header values, or vanish: each such session fails (502 with an upstream
// error) or completes, nothing is consumed without bound, and the proxy keeps serving.
func TestHostileOrigins(t *testing.T) {
	et.RequireNoLeaks(t)
	h1, cert1 := startHostileOrigin(t, "http/1.1")
	h2o, cert2 := startHostileOrigin(t, "h2")
	good := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, func(c *engine.Config) {
		c.UpstreamRoots.AddCert(cert1)
		c.UpstreamRoots.AddCert(cert2)
	}, good)
	// HTTP/1.1 clients reach the h2-only origin through a proxy that forces h2 upstream
	// (auto mode would offer them only http/1.1, as their client did).
	pH2 := et.StartProxy(t, func(c *engine.Config) {
		c.UpstreamProto = "h2"
		c.UpstreamRoots.AddCert(cert1)
		c.UpstreamRoots.AddCert(cert2)
	}, good)
	cases := []struct {
		o      *hostileOrigin
		path   string
		failOK bool // the session may fail or complete (floods)
	}{
		{h1, "/endless-headers", false},
		{h1, "/bad-status", false},
		{h1, "/bad-header", false},
		{h1, "/early-close", false},
		{h2o, "/endless-continuation", false},
		{h2o, "/hpack-bomb", false},
		{h2o, "/bad-status", false},
		{h2o, "/bad-header", false},
		{h2o, "/early-close", false},
		{h2o, "/ping-flood", true},
		{h2o, "/settings-flood", true},
	}
	only := os.Getenv("INSPECTOR_HOSTILE_ONLY") // one path, for debugging
	for _, kind := range []string{et.ClientH1, et.ClientH2} {
		for _, tc := range cases {
			if only != "" && tc.path != only {
				continue
			}
			p := p
			if kind == et.ClientH1 && tc.o == h2o {
				p = pH2
			}
			c := p.Client(t, kind)
			c.Timeout = 15 * time.Second
			name := kind + " → " + tc.o.proto + tc.path
			resp, err := c.Get("https://" + tc.o.addr + tc.path)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.Header.Get("X-Injected") != "" {
				t.Errorf("%s: an injected header reached the client", name)
			}
			s := p.Next(t)
			if tc.failOK {
				if resp.StatusCode != 200 && resp.StatusCode != 502 {
					t.Errorf("%s: %s", name, resp.Status)
				}
			} else if resp.StatusCode != http.StatusBadGateway || s.Error == nil || s.Error.Side != session.SideUpstream {
				t.Errorf("%s: %s %.100q, session error %+v", name, resp.Status, body, s.Error)
			}
			// The rest is unaffected.
			resp, err = c.Get(good.URL + "/echo")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%s: the next request to a good origin: %v %v", name, resp, err)
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
			p.Next(t)
		}
	}
	for _, o := range []*hostileOrigin{h1, h2o} {
		o.mu.Lock()
		if len(o.stuck) > 0 {
			t.Errorf("the proxy kept consuming endless input: %v", o.stuck)
		}
		o.mu.Unlock()
	}
}

// TestGzipBombIsCapped: a 64 MiB gzip bomb passes through as the origin encoded it; the
// session holds the compressed bytes, and decoding it for previews and body: filters
// stops at its cap.
func TestGzipBombIsCapped(t *testing.T) {
	et.RequireNoLeaks(t)
	h1, cert := startHostileOrigin(t, "http/1.1")
	p := et.StartProxy(t, func(c *engine.Config) { c.UpstreamRoots.AddCert(cert) })
	resp, err := p.Client(t, et.ClientH1).Get("https://" + h1.addr + "/gzip-bomb")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	s := p.Next(t)
	if resp.StatusCode != 200 || n != s.Response.Body.Size || n > 1<<20 {
		t.Fatalf("%s, %d bytes relayed, session %d", resp.Status, n, s.Response.Body.Size)
	}
	out, _, cut, err := content.Decode(s.Response.Header, s.Response.Body.Data, filter.MaxDecodedBody)
	if err != nil || !cut || len(out) != filter.MaxDecodedBody {
		t.Fatalf("decoded %d bytes, cut %v, err %v; want the cap %d", len(out), cut, err, filter.MaxDecodedBody)
	}
	if filter.MustParse("body:needle").Match(s) {
		t.Fatal("matched a needle that is nowhere")
	}
}

// h2Conn is a raw HTTP/2 client connection to the proxy through a decrypted CONNECT
// tunnel, for sending what no well-behaved client library would.
type h2Conn struct {
	c    net.Conn
	fr   *http2.Framer
	hb   bytes.Buffer
	enc  *hpack.Encoder
	next uint32
}

func dialH2ThroughProxy(t *testing.T, p *et.Proxy, target string) *h2Conn {
	t.Helper()
	raw, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	br := bufio.NewReader(raw)
	io.WriteString(raw, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	host, _, _ := net.SplitHostPort(target)
	tc := tls.Client(raw, &tls.Config{RootCAs: p.CAPool(), ServerName: host, NextProtos: []string{"h2"}})
	if err := tc.Handshake(); err != nil || tc.ConnectionState().NegotiatedProtocol != "h2" {
		t.Fatalf("TLS to the proxy: %v (ALPN %q)", err, tc.ConnectionState().NegotiatedProtocol)
	}
	h := &h2Conn{c: tc, fr: http2.NewFramer(tc, tc), next: 1}
	h.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	h.enc = hpack.NewEncoder(&h.hb)
	io.WriteString(tc, http2.ClientPreface)
	h.fr.WriteSettings()
	return h
}

// request sends one request with the given header fields (pseudo-headers first, as given,
// any bytes) and optional DATA, and returns the response status, or 0 and the reset code
// when the proxy reset the stream or the connection.
func (h *h2Conn) request(t *testing.T, fields [][2]string, body []byte) (int, http2.ErrCode) {
	t.Helper()
	id := h.next
	h.next += 2
	h.hb.Reset()
	for _, f := range fields {
		h.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h.hb.Bytes(), EndHeaders: true, EndStream: body == nil}); err != nil {
		t.Fatal(err)
	}
	if body != nil {
		h.fr.WriteData(id, true, body)
	}
	h.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	status := 0
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			t.Fatalf("stream %d: %v", id, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				h.fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				h.fr.WritePing(true, f.Data)
			}
		case *http2.GoAwayFrame:
			return 0, f.ErrCode
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				return status, f.ErrCode
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID == id {
				fmt.Sscan(f.PseudoValue("status"), &status)
				if f.StreamEnded() {
					return status, 0
				}
			}
		case *http2.DataFrame:
			if f.StreamID == id && f.StreamEnded() {
				return status, 0
			}
		}
	}
}

// TestH2ToH1DowngradeCannotInject sends h2 requests that would inject framing or headers
// when rewritten as HTTP/1.1 for an h1-only origin: a length that lies, connection-specific
// headers, CR/LF in names, values, the path or the authority. Each is refused (400 or a
// reset) or reaches the origin harmlessly; the recording origin must never see an extra
// request or an injected header line.
func TestH2ToH1DowngradeCannotInject(t *testing.T) {
	et.RequireNoLeaks(t)
	ca, err := rootca.Load(filepath.Join(t.TempDir(), "origin-ca"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.LeafFor("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	o := startRecordingOrigin(t, &tls.Config{Certificates: []tls.Certificate{*leaf}, NextProtos: []string{"http/1.1"}})
	p := et.StartProxy(t, func(c *engine.Config) { c.UpstreamRoots.AddCert(ca.Cert()) })
	h := dialH2ThroughProxy(t, p, o.addr())
	base := func(method, path string, extra ...[2]string) [][2]string {
		return append([][2]string{{":method", method}, {":scheme", "https"}, {":authority", o.addr()}, {":path", path}}, extra...)
	}
	smuggled := "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	cases := []struct {
		name   string
		fields [][2]string
		body   []byte
	}{
		{"content-length shorter than the data", base("POST", "/inj1", [2]string{"content-length", "3"}), []byte("abc" + smuggled)},
		{"content-length longer than the data", base("POST", "/inj2", [2]string{"content-length", "100"}), []byte("abc")},
		{"two content-lengths", base("POST", "/inj3", [2]string{"content-length", "3"}, [2]string{"content-length", "40"}), []byte("abc")},
		{"transfer-encoding", base("POST", "/inj4", [2]string{"transfer-encoding", "chunked"}), []byte("0\r\n\r\n" + smuggled)},
		{"connection", base("GET", "/inj5", [2]string{"connection", "keep-alive"}), nil},
		{"te other than trailers", base("GET", "/inj6", [2]string{"te", "gzip"}), nil},
		{"upgrade", base("GET", "/inj7", [2]string{"upgrade", "h2c"}), nil},
		{"CRLF in a value", base("GET", "/inj8", [2]string{"x-a", "a\r\nx-injected: 1"}), nil},
		{"LF in a value", base("GET", "/inj9", [2]string{"x-a", "a\nx-injected: 1"}), nil},
		{"CRLF in a name", base("GET", "/inj10", [2]string{"x-a\r\nx-injected", "1"}), nil},
		{"colon in a name", base("GET", "/inj11", [2]string{"x-injected:1\r\nx-b", "1"}), nil},
		{"uppercase name", base("GET", "/inj12", [2]string{"X-Upper", "1"}), nil},
		{"CRLF in the path", base("GET", "/inj13 HTTP/1.1\r\nx-injected: 1\r\n\r\n"+smuggled), nil},
		{"space in the path", base("GET", "/inj14 HTTP/1.1"), nil},
		{"control character in the path", base("GET", "/inj17\x00x"), nil},
		{"CRLF in the authority", [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", o.addr() + "\r\nx-injected: 1"}, {":path", "/inj15"}}, nil},
		{"CRLF in the method", base("GET /smuggled HTTP/1.1\r\nx-injected: 1\r\n\r\nGET", "/inj16"), nil},
	}
	for _, tc := range cases {
		status, code := h.request(t, tc.fields, tc.body)
		t.Logf("%s: status %d, reset %v", tc.name, status, code)
		switch {
		case code != 0: // reset: refused
		case status == http.StatusBadRequest:
		case status == http.StatusBadGateway && tc.name == "content-length longer than the data":
			// The origin got a cut-off request (the proxy saw the stream end short).
		default:
			t.Errorf("%s: status %d, want 400 or a reset", tc.name, status)
		}
		if code != 0 && status == 0 && h.next > 1 {
			// A connection-level error ends this connection: go on with a new one.
			h = dialH2ThroughProxy(t, p, o.addr())
		}
	}
	if status, code := h.request(t, base("GET", "/control"), nil); status != 200 || code != 0 {
		t.Fatalf("control request: %d %v", status, code)
	}
	complete, cut := o.requests(t, true)
	t.Logf("origin got %d complete requests, %d cut off", len(complete), len(cut))
	for _, r := range append(complete, cut...) {
		if strings.Contains(r, "smuggled") && !strings.HasPrefix(r, "POST ") {
			t.Errorf("injected request at the origin: %q", r)
		}
	}
	for _, conn := range o.received() {
		if bytes.Contains(bytes.ToLower(conn), []byte("x-injected")) {
			t.Errorf("injected header at the origin: %q", conn)
		}
	}
	found := false
	for _, r := range complete {
		found = found || strings.HasPrefix(r, "GET /control ")
		if strings.HasPrefix(r, "POST /inj1 ") || strings.HasPrefix(r, "POST /inj4 ") {
			t.Errorf("a request whose framing lied reached the origin whole: %q", r)
		}
	}
	if !found {
		t.Errorf("the control request never reached the origin: %q", complete)
	}
}

// TestChunkErrorLateInBody: a chunk framing error that arrives after the head went
// upstream (a long or slow body) cuts the upstream request off, answers 400 and records a
// client-side error; the origin never gets a complete request.
func TestChunkErrorLateInBody(t *testing.T) {
	et.RequireNoLeaks(t)
	arrived := make(chan struct{}, 1)
	bodyErr := make(chan error, 1)
	o := et.StartOrigin(t, et.OriginH1Plain, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		_, err := io.Copy(io.Discard, r.Body)
		bodyErr <- err
	}))
	p := et.StartProxy(t, nil, o)
	for _, mode := range []string{"absolute", "tunnel"} {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		target := o.URL + "/late"
		if mode == "tunnel" {
			host := strings.TrimPrefix(o.URL, "http://")
			io.WriteString(c, "CONNECT "+host+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
			if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
				t.Fatalf("CONNECT: %v %v", resp, err)
			}
			target = "/late"
		}
		io.WriteString(c, "POST "+target+" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatal("the head never reached the origin")
		}
		io.WriteString(c, "2\nxy\r\n0\r\n\r\n") // bare LF after the chunk size
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		body, _ := io.ReadAll(resp.Body)
		c.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "bare LF") {
			t.Errorf("%s: %s %q", mode, resp.Status, body)
		}
		if err := <-bodyErr; err == nil {
			t.Errorf("%s: the origin read a complete body", mode)
		}
		s := p.Next(t)
		if s.Error == nil || s.Error.Side != session.SideClient || !strings.Contains(s.Error.Message, "bare LF") {
			t.Errorf("%s: session error %+v", mode, s.Error)
		}
	}
}

// TestHeaderTimeout: a client that sends half a head and stalls is disconnected after
// Config.HeaderTimeout, on the proxy listener and inside a tunnel.
func TestHeaderTimeout(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, func(c *engine.Config) { c.HeaderTimeout = 200 * time.Millisecond }, o)
	host := strings.TrimPrefix(o.URL, "http://")
	for _, mode := range []string{"absolute", "tunnel"} {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		br := bufio.NewReader(c)
		if mode == "tunnel" {
			io.WriteString(c, "CONNECT "+host+" HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
				t.Fatalf("CONNECT: %v %v", resp, err)
			}
		}
		io.WriteString(c, "GET "+o.URL+"/echo HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = io.ReadAll(br)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%s: the proxy kept a stalled head open", mode)
		}
	}
}

// TestStalledAndAbandonedHandshakes: clients that go away during the TLS handshake, or
// stall in it, neither block service nor outlive the engine's Close.
func TestStalledAndAbandonedHandshakes(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1TLS, nil)
	p := et.StartProxy(t, nil, o)
	host := strings.TrimPrefix(o.URL, "https://")
	hello := []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03} // a ClientHello's first bytes
	var stalled []net.Conn
	for i := 0; i < 40; i++ {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		io.WriteString(c, "CONNECT "+host+" HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		c.Write(hello)
		if i%2 == 0 {
			c.Close() // goes away mid-handshake
		} else {
			stalled = append(stalled, c) // stays, silent
		}
	}
	defer func() {
		for _, c := range stalled {
			c.Close()
		}
	}()
	resp, err := p.Client(t, et.ClientH2).Get(o.URL + "/echo")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("with stalled handshakes: %s", resp.Status)
	}
	// The engine's Close (in cleanup) must end the stalled handshakes: RequireNoLeaks
	// checks that no goroutine outlives it. The client conns stay open until after it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range stalled {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Errorf("a stalled handshake's connection outlived Close: %v", err)
			break
		}
	}
}

// TestUpstreamTimeouts: an origin that accepts and then says nothing fails the session at
// the TLS handshake (Config.TLSTimeout) or while waiting for the response head
// (Config.ResponseTimeout), with 502/504 and the phase; the proxy stays healthy.
func TestUpstreamTimeouts(t *testing.T) {
	et.RequireNoLeaks(t)
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			go io.Copy(io.Discard, c) // read the request, answer nothing
		}
	}()
	defer func() {
		silent.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	p := et.StartProxy(t, func(c *engine.Config) {
		c.TLSTimeout = 300 * time.Millisecond
		c.ResponseTimeout = 300 * time.Millisecond
	})
	c := p.Client(t, et.ClientH1)
	for _, tc := range []struct {
		url    string
		status int
		phase  session.Phase
	}{
		{"http://" + silent.Addr().String() + "/", http.StatusGatewayTimeout, session.PhaseResponse},
		{"https://" + silent.Addr().String() + "/", http.StatusBadGateway, session.PhaseTLS},
	} {
		resp, err := c.Get(tc.url)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		s := p.Next(t)
		if resp.StatusCode != tc.status || s.Error == nil || s.Error.Phase != tc.phase || s.Error.Side != session.SideUpstream {
			t.Errorf("%s: %s, session error %+v", tc.url, resp.Status, s.Error)
		}
	}
}

// TestH2RapidReset: a client that opens and at once resets thousands of streams
// (CVE-2023-44487) gets every upstream request it caused cancelled, and the proxy keeps
// serving others.
func TestH2RapidReset(t *testing.T) {
	et.RequireNoLeaks(t)
	var started, ended atomic.Int64
	o := et.StartOrigin(t, et.OriginH1TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/rr" {
			io.WriteString(w, "ok")
			return
		}
		started.Add(1)
		defer ended.Add(1)
		<-r.Context().Done()
	}))
	plain := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	target := o.Listener.Addr().String()
	h := dialH2ThroughProxy(t, p, target)
	for i := 0; i < 5000; i++ {
		id := h.next
		h.next += 2
		h.hb.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", target}, {":path", "/rr"}} {
			h.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h.hb.Bytes(), EndHeaders: true, EndStream: true}) != nil ||
			h.fr.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
			break // the proxy may close a connection that abuses resets
		}
	}
	// A PING's ACK comes after the proxy has read every frame before it.
	if h.fr.WritePing(false, [8]byte{'s', 'y', 'n', 'c'}) == nil {
		h.c.SetReadDeadline(time.Now().Add(30 * time.Second))
		for {
			f, err := h.fr.ReadFrame()
			if err != nil {
				break
			}
			if pf, ok := f.(*http2.PingFrame); ok && pf.IsAck() {
				break
			}
			if _, ok := f.(*http2.GoAwayFrame); ok {
				break
			}
		}
	}
	// Health check without a CONNECT: under the race detector the proxy can be starved
	// for over a second here, and a tunnel whose client says nothing for Config.SniffTimeout is
	// relayed opaquely (a known trade-off for server-speaks-first protocols).
	resp, err := p.Client(t, et.ClientH1).Get(plain.URL + "/echo")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after a rapid-reset burst: %v %v", resp, err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for started.Load() != ended.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("%d upstream requests of reset streams still running", started.Load()-ended.Load())
		}
		time.Sleep(10 * time.Millisecond) // polling for a condition, bounded above
	}
	t.Logf("5000 streams opened and reset: %d reached the origin, all cancelled", started.Load())
}

// BenchmarkFramingH1Upload measures a plain HTTP/1.1 proxy request with a 256 KiB body,
// Content-Length and chunked: the framing check follows every body byte.
func BenchmarkFramingH1Upload(b *testing.B) {
	for _, chunked := range []bool{false, true} {
		name := "content-length"
		if chunked {
			name = "chunked"
		}
		b.Run(name, func(b *testing.B) {
			o := et.StartOrigin(b, et.OriginH1Plain, nil)
			p := et.StartProxy(b, func(c *engine.Config) { c.CaptureLimit = -1 }, o)
			go func() {
				for range p.Sessions {
				}
			}()
			c := p.Client(b, et.ClientH1)
			body := et.Pattern(256 << 10)
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var r io.Reader = bytes.NewReader(body)
				if chunked {
					r = io.MultiReader(r) // hides the length: the client sends chunks
				}
				resp, err := c.Post(o.URL+"/echo", "application/octet-stream", r)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// TestPipelinedHeadArrivingInPieces: net/http's server reads ahead (to notice a client
// going away) while a handler runs and then interrupts that read; a pipelined request
// head that arrives in pieces across that moment must still get the framing check.
func TestPipelinedHeadArrivingInPieces(t *testing.T) {
	et.RequireNoLeaks(t)
	arrived, release := make(chan struct{}), make(chan struct{})
	o := et.StartOrigin(t, et.OriginH1Plain, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/first" {
			close(arrived)
			<-release
		}
		io.WriteString(w, "ok")
	}))
	p := et.StartProxy(t, nil, o)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	io.WriteString(c, "GET "+o.URL+"/first HTTP/1.1\r\nHost: x\r\n\r\n")
	<-arrived
	io.WriteString(c, "POST "+o.URL+"/second HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n")
	close(release)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first: %v %v", resp, err)
	}
	io.ReadAll(resp.Body)
	p.Next(t)
	io.WriteString(c, "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("second: %v", err)
	}
	io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("CL+TE head that arrived in pieces: %s, want 400", resp.Status)
	}
}

// TestReverseModeFraming: in reverse mode (plain HTTP/1.1 to the listener) the framing
// check applies as well: ambiguous requests get 400 and the origin sees only the good one.
func TestReverseModeFraming(t *testing.T) {
	et.RequireNoLeaks(t)
	o := startRecordingOrigin(t)
	p := et.StartProxy(t, func(c *engine.Config) { c.Reverse = "http://" + o.addr() })
	for name, raw := range map[string]string{
		"CL and TE": "POST /refused HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
		"obs-fold":  "GET /refused HTTP/1.1\r\nHost: a\r\nX-A: a\r\n Content-Length: 30\r\n\r\n",
		"bare LF":   "POST /refused HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\nab\r\n0\r\n\r\n",
	} {
		if got := rawExchange(t, p.Addr(), raw); !strings.HasPrefix(got, "HTTP/1.1 400") {
			t.Errorf("%s: %.80q", name, got)
		}
	}
	if got := rawExchange(t, p.Addr(), "GET /good HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Fatalf("good request: %.80q", got)
	}
	p.Next(t)
	sent, _ := o.requests(t, false)
	if len(sent) != 1 || !strings.HasPrefix(sent[0], "GET /good ") {
		t.Errorf("origin received %q", sent)
	}
}
