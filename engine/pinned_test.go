package engine_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

// connCounter counts the TCP connections an origin accepted and can close the idle ones.
type connCounter struct {
	n    atomic.Int64
	mu   sync.Mutex
	idle map[net.Conn]bool
}

func (c *connCounter) state(nc net.Conn, st http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idle == nil {
		c.idle = map[net.Conn]bool{}
	}
	switch st {
	case http.StateNew:
		c.n.Add(1)
	case http.StateIdle:
		c.idle[nc] = true
	default:
		delete(c.idle, nc)
	}
}

// closeIdle closes the origin's idle connections, as an origin's keep-alive timeout does.
func (c *connCounter) closeIdle() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for nc := range c.idle {
		nc.Close()
		delete(c.idle, nc)
		n++
	}
	return n
}

// startCountedOrigin starts an HTTP/1.1 TLS origin (et.Handler() when h is nil) that
// counts its connections.
func startCountedOrigin(t *testing.T, h http.Handler) (*et.Origin, *connCounter) {
	t.Helper()
	if h == nil {
		h = et.Handler()
	}
	cc := &connCounter{}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = cc.state
	srv.TLS = &tls.Config{NextProtos: []string{"http/1.1"}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &et.Origin{Server: srv, Kind: et.OriginH1TLS}, cc
}

func doReq(t *testing.T, c *http.Client, method, url string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s body: %v", method, url, err)
	}
	return resp, string(b)
}

// An HTTP/1.1 client connection keeps one origin connection of its own (the lighter
// path): its requests reuse it, another client connection gets another, and the record
// says which connection each request used and whether it was reused.
func TestPinnedOriginConnectionPerClientConnection(t *testing.T) {
	for _, kind := range []string{et.OriginH1TLS} {
		t.Run(kind, func(t *testing.T) {
			o, counted := startCountedOrigin(t, nil)
			p := et.StartProxy(t, nil, o)
			a, b := p.Client(t, et.ClientH1), p.Client(t, et.ClientH1)
			var sa, sb []*session.Session
			for i := range 3 {
				for _, m := range []string{"GET", "HEAD"} {
					if r, body := doReq(t, a, m, o.URL+"/echo"); r.StatusCode != 200 || (m == "HEAD") != (body == "") {
						t.Fatalf("a %s #%d: %d %q", m, i, r.StatusCode, body)
					}
					sa = append(sa, p.Next(t))
				}
				doReq(t, b, "GET", o.URL+"/status?code=304")
				sb = append(sb, p.Next(t))
			}
			if n := counted.n.Load(); n != 2 {
				t.Fatalf("origin accepted %d connections for two client connections, want 2", n)
			}
			for _, ss := range [][]*session.Session{sa, sb} {
				for i, s := range ss {
					if s.Upstream.ConnID == 0 || s.Upstream.ConnID != ss[0].Upstream.ConnID {
						t.Fatalf("session %d used upstream connection %d, the first %d", i, s.Upstream.ConnID, ss[0].Upstream.ConnID)
					}
					if s.Upstream.Reused != (i > 0) {
						t.Fatalf("session %d: reused %v", i, s.Upstream.Reused)
					}
					if s.Upstream.Proto != "http/1.1" || s.Error != nil {
						t.Fatalf("session %d: proto %q error %v", i, s.Upstream.Proto, s.Error)
					}
					if s.Timings.RequestSent.IsZero() || s.Timings.FirstByte.Before(s.Timings.RequestSent) {
						t.Fatalf("session %d timings: sent %v first byte %v", i, s.Timings.RequestSent, s.Timings.FirstByte)
					}
				}
			}
			if sa[0].Upstream.ConnID == sb[0].Upstream.ConnID {
				t.Fatal("two client connections shared one origin connection")
			}
			if kind == et.OriginH1TLS && (sa[0].Upstream.TLS == nil || sa[0].Upstream.TLS.Version == "") {
				t.Fatalf("upstream TLS not recorded: %+v", sa[0].Upstream.TLS)
			}
		})
	}
}

// The origin closes a kept-alive connection while it is idle (its keep-alive timeout):
// the next request on the client connection goes out on a new one and succeeds.
func TestPinnedOriginClosedWhileIdle(t *testing.T) {
	o, counted := startCountedOrigin(t, nil)
	p := et.StartProxy(t, nil, o)
	c := p.Client(t, et.ClientH1)
	doReq(t, c, "GET", o.URL+"/bytes?n=100")
	first := p.Next(t)
	closed := 0
	for i := range 5 {
		closed += counted.closeIdle()
		if r, body := doReq(t, c, "GET", o.URL+"/bytes?n=100"); r.StatusCode != 200 || len(body) != 100 {
			t.Fatalf("request %d after the origin closed its idle connection: %d, %d bytes", i, r.StatusCode, len(body))
		}
		s := p.Next(t)
		if s.Error != nil || s.Response == nil || s.Response.Status != 200 {
			t.Fatalf("session %d: %+v", i, s.Error)
		}
		if s.Upstream.ConnID == first.Upstream.ConnID && closed > 0 {
			t.Fatalf("request %d went out on the connection the origin closed", i)
		}
	}
	if closed == 0 {
		t.Fatal("the origin never had an idle connection to close")
	}
	if n := counted.n.Load(); n < 2 {
		t.Fatalf("origin accepted %d connections, want a new one after closing", n)
	}
}

// Interim responses (103 Early Hints) reach the client before the final one.
func TestPinnedEarlyHints(t *testing.T) {
	o := et.StartOrigin(t, et.OriginH1TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		_, _ = io.WriteString(w, "final")
	}))
	p := et.StartProxy(t, nil, o)
	conn, br := p.Tunnel(t, strings.TrimPrefix(o.URL, "https://"), []string{"http/1.1"})
	for i := range 2 { // the second request reuses the pinned connection
		fmt.Fprintf(conn, "GET /hints HTTP/1.1\r\nHost: %s\r\n\r\n", strings.TrimPrefix(o.URL, "https://"))
		tp := readHead(t, br)
		if !strings.HasPrefix(tp[0], "HTTP/1.1 103") || !hasLine(tp, "Link: </style.css>; rel=preload") {
			t.Fatalf("request %d: first head %q, want 103 with its Link", i, tp)
		}
		final := readHead(t, br)
		if !strings.HasPrefix(final[0], "HTTP/1.1 200") {
			t.Fatalf("request %d: final head %q", i, final)
		}
		body := make([]byte, len("final"))
		if _, err := io.ReadFull(br, body); err != nil || string(body) != "final" {
			t.Fatalf("request %d: body %q %v", i, body, err)
		}
		if s := p.Next(t); s.Response == nil || s.Response.Status != 200 {
			t.Fatalf("request %d: session %+v", i, s.Response)
		}
	}
}

func readHead(t *testing.T, br *bufio.Reader) []string {
	t.Helper()
	var lines []string
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading a head: %v (so far %q)", err, lines)
		}
		l = strings.TrimRight(l, "\r\n")
		if l == "" {
			return lines
		}
		lines = append(lines, l)
	}
}

func hasLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

// A response head over the cap is refused with a clear 502, as net/http's Transport
// refuses it, and the client connection goes on with a new origin connection.
func TestPinnedResponseHeadTooBig(t *testing.T) {
	o := et.StartOrigin(t, et.OriginH1TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			for i := range 1100 { // over the engine's 1 MiB cap
				w.Header().Set(fmt.Sprintf("X-Pad-%d", i), strings.Repeat("p", 1000))
			}
		}
		_, _ = io.WriteString(w, "ok")
	}))
	p := et.StartProxy(t, nil, o)
	c := p.Client(t, et.ClientH1)
	doReq(t, c, "GET", o.URL+"/small")
	p.Next(t)
	r, body := doReq(t, c, "GET", o.URL+"/big")
	if r.StatusCode != http.StatusBadGateway || !strings.Contains(body, "exceeded") {
		t.Fatalf("oversized head: %d %q", r.StatusCode, body)
	}
	if s := p.Next(t); s.Error == nil || !strings.Contains(s.Error.Message, "exceeded") {
		t.Fatalf("oversized head recorded as %+v", s.Error)
	}
	if r, body := doReq(t, c, "GET", o.URL+"/small"); r.StatusCode != 200 || body != "ok" {
		t.Fatalf("after the oversized head: %d %q", r.StatusCode, body)
	}
	if s := p.Next(t); s.Error != nil || s.Upstream.Reused {
		t.Fatalf("after the oversized head: error %v, reused %v (want a new connection)", s.Error, s.Upstream.Reused)
	}
}

// A client that leaves in the middle of a body closes the pinned origin connection (the
// origin's handler sees it go), and nothing of it is left for the next client connection.
func TestPinnedClientLeavesMidBody(t *testing.T) {
	gone := make(chan struct{})
	o, counted := startCountedOrigin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/slow" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		_, _ = io.WriteString(w, strings.Repeat("x", 1000))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the proxy closed its connection
		close(gone)
	}))
	p := et.StartProxy(t, nil, o)
	c := p.Client(t, et.ClientH1)
	resp, err := c.Get(o.URL + "/slow")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // net/http closes the client connection: the body did not end
	<-gone
	if s := p.Next(t); s.Error == nil || s.Error.Side != session.SideClient {
		t.Fatalf("session of the abandoned body: %+v", s.Error)
	}
	if r, body := doReq(t, c, "GET", o.URL+"/after"); r.StatusCode != 200 || body != "ok" {
		t.Fatalf("next request: %d %q", r.StatusCode, body)
	}
	if n := counted.n.Load(); n != 2 {
		t.Fatalf("origin accepted %d connections, want 2", n)
	}
}

// Requests the lighter path does not take (a body, Expect, an HTTP/2 client, Send) still
// go through the Transport's pool, and a hook's edits reach the origin on both paths.
func TestPinnedAndPooledRequestsMix(t *testing.T) {
	o := et.StartOrigin(t, et.OriginH1TLS, nil)
	p := et.StartProxy(t, nil, o)
	if err := p.AddHook(engine.RequestHookFunc(func(_ context.Context, f *engine.Flow) error {
		f.Request.Header.Set("X-Edited", "yes")
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	c := p.Client(t, et.ClientH1)
	for i := range 3 {
		r, _ := doReq(t, c, "GET", o.URL+"/echo")
		if r.Header.Get("X-Echo-H-X-Edited") != "yes" {
			t.Fatalf("GET %d: the hook's header did not reach the origin: %v", i, r.Header)
		}
		p.Next(t)
		resp, err := c.Post(o.URL+"/echo", "text/plain", strings.NewReader("body"))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Header.Get("X-Echo-H-X-Edited") != "yes" || resp.Header.Get("X-Echo-Body-Size") != "4" {
			t.Fatalf("POST %d: %v", i, resp.Header)
		}
		if s := p.Next(t); s.Error != nil || s.Request.Body.Size != 4 {
			t.Fatalf("POST %d session: %+v %d", i, s.Error, s.Request.Body.Size)
		}
	}
}

// An origin that sends something while its connection is idle (here an unsolicited 408,
// in the same segment as the response before it, then closes) never answers the next
// request: that connection is not used again.
func TestPinnedUnsolicitedBytesRetireTheConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					body := fmt.Sprintf("conn %d %s", n, req.URL.Path)
					resp := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
					if n == 1 {
						resp += "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
						c.Write([]byte(resp))
						return
					}
					c.Write([]byte(resp))
				}
			}()
		}
	}()
	p := et.StartProxy(t, nil)
	addr := ln.Addr().String()
	conn, br := p.Tunnel(t, addr, nil)
	for i, want := range []string{"conn 1 /a", "conn 2 /b", "conn 2 /c"} {
		path := want[len(want)-2:]
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != want {
			t.Fatalf("request %d: %d %q, want %q", i, resp.StatusCode, b, want)
		}
		if s := p.Next(t); s.Error != nil || s.Response.Status != 200 {
			t.Fatalf("request %d session: %+v", i, s.Error)
		}
	}
}

// When a client connection ends, its origin connection is kept for the next client
// connection to that origin (a tunnel per request costs no new origin handshake).
func TestPinnedConnectionOutlivesItsClient(t *testing.T) {
	o, counted := startCountedOrigin(t, nil)
	p := et.StartProxy(t, nil, o)
	c := p.Client(t, et.ClientH1)
	tr := c.Transport.(*http.Transport)
	var ids []uint64
	for i := range 4 {
		if r, _ := doReq(t, c, "GET", o.URL+"/echo"); r.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, r.StatusCode)
		}
		s := p.Next(t)
		if i > 0 && !s.Upstream.Reused {
			t.Fatalf("request %d on a new client connection dialed the origin again", i)
		}
		ids = append(ids, s.Upstream.ConnID)
		tr.CloseIdleConnections() // the next request comes on a new tunnel
		// The proxy hands the origin connection on when it sees the client's close.
		deadline := time.Now().Add(10 * time.Second)
		for p.Stats().Connections > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // polling a condition, bounded above
		}
	}
	if n := counted.n.Load(); n != 1 {
		t.Fatalf("origin accepted %d connections for 4 tunnels one after another, want 1 (ids %v)", n, ids)
	}
}

// A kept-alive origin connection the origin drops on the next request (no response byte)
// is retried on a new connection; when that dial fails, the session's error is a dial
// error, not a response error of the first attempt.
func TestPinnedRetryThatCannotDialIsADialError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	served := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		<-served // the listener is closed: a new connection is refused
		http.ReadRequest(br)
		// The second request gets no response byte: the connection just ends.
	}()
	p := et.StartProxy(t, nil)
	addr := ln.Addr().String()
	conn, br := p.Tunnel(t, addr, nil)
	fmt.Fprintf(conn, "GET /a HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v", err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if s := p.Next(t); s.Error != nil {
		t.Fatalf("first session: %+v", s.Error)
	}
	ln.Close()
	close(served)
	fmt.Fprintf(conn, "GET /b HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	if resp, err = http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("second request: %v, %+v", err, resp)
	}
	s := p.Next(t)
	if s.Error == nil || s.Error.Phase != session.PhaseDial || !strings.Contains(s.Error.Message, "could not connect") {
		t.Fatalf("second session's error: %+v", s.Error)
	}
}
