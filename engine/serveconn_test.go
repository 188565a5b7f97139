package engine_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
)

// startEntry starts a listener whose connections go to ServeConn with the given target
// (an entry point such as a SOCKS5 or transparent listener does the same after its own
// handshake). errs receives ServeConn's results.
func startEntry(t *testing.T, p *et.Proxy, target string, src engine.ConnSource) (addr string, errs chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lln := p.Engine.LimitListener(ln)
	t.Cleanup(func() { lln.Close() })
	errs = make(chan error, 16)
	go func() {
		for {
			c, err := lln.Accept()
			if err != nil {
				return
			}
			go func() { errs <- p.Engine.ServeConn(c, target, src) }()
		}
	}()
	return ln.Addr().String(), errs
}

func TestServeConnDecryptsAndRecords(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{et.OriginH1TLS, et.OriginH2TLS} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			o := et.StartOrigin(t, kind, nil)
			p := et.StartProxy(t, nil, o)
			target := strings.TrimPrefix(o.URL, "https://")
			addr, _ := startEntry(t, p, target, engine.ConnSource{Via: "test-entry", Client: "probe-client"})
			// The client dials the entry point as if it were the origin (a redirected
			// connection): the URL names the origin, the dialer goes to the entry.
			tr := &http.Transport{
				TLSClientConfig:   &tls.Config{RootCAs: p.CAPool(), ServerName: "127.0.0.1"},
				ForceAttemptHTTP2: kind == et.OriginH2TLS,
				DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, network, addr)
				},
			}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(o.URL + "/echo?x=1")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			s := p.Next(t)
			u, _ := url.Parse(s.Request.URL)
			if u.Host != target || u.Scheme != "https" || s.Response == nil || s.Response.Status != 200 {
				t.Fatalf("session %s %v", s.Request.URL, s.Response)
			}
			if s.Client.Process != "probe-client" {
				t.Fatalf("process %q, want the ConnSource's client name", s.Client.Process)
			}
		})
	}
}

func TestServeConnRefusesItsOwnAddress(t *testing.T) {
	t.Parallel()
	p := et.StartProxy(t, nil)
	addr, errs := startEntry(t, p, p.Engine.Addr(), engine.ConnSource{Via: "test-entry"})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := <-errs; !errors.Is(err, engine.ErrLoop) {
		t.Fatalf("ServeConn to the proxy itself: %v, want ErrLoop", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := bufio.NewReader(c).ReadByte(); err == nil {
		t.Fatal("the refused connection stayed open")
	}
}

func TestServeConnOpaqueTunnel(t *testing.T) {
	t.Parallel()
	// A server-speaks-first origin: the client says nothing, the entry relays bytes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Write([]byte("220 hello\r\n"))
		c.Close()
	}()
	p := et.StartProxy(t, nil)
	addr, _ := startEntry(t, p, ln.Addr().String(), engine.ConnSource{Via: "test-entry"})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "220 hello\r\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	c.Close()
	s := p.Next(t)
	if s.Request.Method != http.MethodConnect || s.Request.URL != ln.Addr().String() || s.Request.Proto != "test-entry" {
		t.Fatalf("tunnel session %s %s %s", s.Request.Method, s.Request.URL, s.Request.Proto)
	}
}
