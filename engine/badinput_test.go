package engine_test

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

func rawExchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c) // the proxy closes the connection after its error response
	return string(b)
}

func TestMalformedRequestGets400AndClose(t *testing.T) {
	et.RequireNoLeaks(t)
	p := et.StartProxy(t, nil)
	for name, raw := range map[string]string{
		"bad request line": "GARBAGE\r\n\r\n",
		"bad header":       "GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n",
		"bad version":      "GET http://127.0.0.1:1/ HTTP/9.9\r\nHost: x\r\n\r\n",
		"connect no port":  "CONNECT example.com HTTP/1.1\r\nHost: example.com\r\n\r\n",
	} {
		got := rawExchange(t, p.Addr(), raw)
		if !strings.HasPrefix(got, "HTTP/1.1 400") && !strings.HasPrefix(got, "HTTP/1.1 505") {
			t.Errorf("%s: %q", name, got)
		}
		if !strings.Contains(got, "\r\n\r\n") || len(strings.SplitN(got, "\r\n\r\n", 2)[1]) == 0 {
			t.Errorf("%s: no reason in the body: %q", name, got)
		}
	}
}

func TestOversizedRequestHeaders431(t *testing.T) {
	et.RequireNoLeaks(t)
	p := et.StartProxy(t, nil)
	raw := "GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: " + strings.Repeat("a", 1<<20+8192) + "\r\n\r\n"
	got := rawExchange(t, p.Addr(), raw)
	if !strings.HasPrefix(got, "HTTP/1.1 431") {
		t.Errorf("got %.100q", got)
	}
}

func TestOversizedResponseHeaders502(t *testing.T) {
	et.RequireNoLeaks(t)
	big := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 20; i++ {
			w.Header().Add("X-Big", strings.Repeat("b", 64<<10))
		}
		w.WriteHeader(200)
	})
	for _, kind := range []string{et.OriginH1TLS, et.OriginH2TLS} {
		o := et.StartOrigin(t, kind, big)
		p := et.StartProxy(t, nil, o)
		resp, err := p.Client(t, et.ClientH1).Get(o.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 502 {
			t.Errorf("%s: %s", kind, resp.Status)
		}
		if s := p.Next(t); s.Error == nil || s.Error.Side != session.SideUpstream {
			t.Errorf("%s: session error %+v", kind, s.Error)
		}
	}
}

func TestClientRejectingCAIsRecorded(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1TLS, nil)
	p := et.StartProxy(t, nil, o)
	c := &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(p.URL),
		TLSClientConfig: &tls.Config{}, // system roots: does not trust Inspector's CA
	}}
	defer c.CloseIdleConnections()
	if _, err := c.Get(o.URL + "/echo"); err == nil {
		t.Fatal("client without the CA completed a handshake")
	}
	s := p.Next(t)
	if !s.Flags.Has(session.FlagHandshakeFailed) || s.Error == nil || s.Error.Phase != session.PhaseClientTLS ||
		!strings.Contains(s.Error.Message, "inspector.cert") {
		t.Fatalf("flags %b error %+v", s.Flags, s.Error)
	}
	if !strings.HasPrefix(s.Request.URL, "https://127.0.0.1:") {
		t.Errorf("URL %q", s.Request.URL)
	}
}

func TestPlainHTTPInsideConnectAndOpaqueTunnel(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	host := strings.TrimPrefix(o.URL, "http://")

	// Plain HTTP/1.1 after CONNECT is relayed and recorded as HTTP.
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	io.WriteString(c, "CONNECT "+host+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v", err)
	}
	io.WriteString(c, "GET /echo HTTP/1.1\r\nHost: inner.example\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("X-Echo-Host") != "inner.example" {
		t.Fatalf("%s host %q", resp.Status, resp.Header.Get("X-Echo-Host"))
	}
	s := p.Next(t)
	// Dialed the CONNECT authority, not the inner Host header.
	if s.Request.URL != "http://"+host+"/echo" || !strings.HasSuffix(s.Upstream.Addr, host[strings.LastIndex(host, ":"):]) {
		t.Errorf("URL %q upstream %q", s.Request.URL, s.Upstream.Addr)
	}
	c.Close()

	// Bytes that are neither TLS nor HTTP are relayed opaquely.
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		conn, err := echo.Accept()
		if err != nil {
			return
		}
		io.Copy(conn, conn)
		conn.Close()
	}()
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	br2 := bufio.NewReader(c2)
	io.WriteString(c2, "CONNECT "+echo.Addr().String()+" HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, err := http.ReadResponse(br2, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v", err)
	}
	io.WriteString(c2, "\x00\x01binary")
	buf := make([]byte, 8)
	if _, err := io.ReadFull(br2, buf); err != nil || string(buf) != "\x00\x01binary" {
		t.Fatalf("echo %q %v", buf, err)
	}
	c2.(*net.TCPConn).CloseWrite()
	io.ReadAll(br2)
	c2.Close()
	s = p.Next(t)
	if !s.Flags.Has(session.FlagTunnel) || s.Request.Body.Size != 8 || s.Response.Body.Size != 8 {
		t.Errorf("tunnel session flags %b sizes %d/%d", s.Flags, s.Request.Body.Size, s.Response.Body.Size)
	}
}

// TestCurl drives the proxy with the real curl, as a user would, when curl is installed.
func TestCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed (make deps installs it)")
	}
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, nil, o)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, p.CA.PEM(), 0o644)
	post := filepath.Join(t.TempDir(), "post.bin")
	os.WriteFile(post, et.RandomBytes(200<<10), 0o644)
	for _, proto := range []string{"--http1.1", "--http2"} {
		out, err := exec.Command(curl, "-sS", "-x", p.URL.String(), "--cacert", caFile, proto,
			"--data-binary", "@"+post, "-D", "-", "-o", "/dev/null", o.URL+"/echo").CombinedOutput()
		if err != nil {
			t.Fatalf("curl %s: %v\n%s", proto, err, out)
		}
		if !strings.Contains(string(out), "x-echo-body-size: 204800") && !strings.Contains(string(out), "X-Echo-Body-Size: 204800") {
			t.Errorf("curl %s: %s", proto, out)
		}
		s := p.Next(t)
		want := session.HTTP1
		if proto == "--http2" {
			want = session.HTTP2
		}
		if s.Client.Proto != want || s.Request.Body.Size != 200<<10 {
			t.Errorf("curl %s: session client proto %s body %d", proto, s.Client.Proto, s.Request.Body.Size)
		}
	}
}

// TestLoopRefusalSeesThroughSpellings: the proxy's own address written another way (a port
// with leading zeros, an IPv4-mapped IPv6 address, another loopback name) is still refused.
func TestLoopRefusalSeesThroughSpellings(t *testing.T) {
	et.RequireNoLeaks(t)
	p := et.StartProxy(t, nil)
	_, port, _ := net.SplitHostPort(p.Addr())
	c := p.Client(t, et.ClientH1)
	for _, host := range []string{"127.0.0.1:0" + port, "[::ffff:127.0.0.1]:" + port, "LOCALHOST:" + port, "localhost.:" + port} {
		resp, err := c.Get("http://" + host + "/x")
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusLoopDetected {
			t.Errorf("%s: %s, want 508", host, resp.Status)
		}
	}
}
