package engine_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

// mode is one client × origin combination.
type mode struct{ client, origin string }

var modes = []mode{
	{et.ClientH1, et.OriginH1TLS},
	{et.ClientH1, et.OriginH2TLS},
	{et.ClientH2, et.OriginH1TLS},
	{et.ClientH2, et.OriginH2TLS},
	{et.ClientH1, et.OriginH1Plain},
}

// run runs body in every mode, each against a fresh origin and proxy.
func run(t *testing.T, body func(t *testing.T, c *http.Client, o *et.Origin, p *et.Proxy, m mode)) {
	for _, m := range modes {
		t.Run(m.client+"-to-"+m.origin, func(t *testing.T) {
			et.RequireNoLeaks(t)
			o := et.StartOrigin(t, m.origin, nil)
			p := et.StartProxy(t, nil, o)
			body(t, p.Client(t, m.client), o, p, m)
		})
	}
}

func wantProto(m mode) (client, upstream string) {
	client = session.HTTP1
	if m.client == et.ClientH2 && m.origin != et.OriginH1Plain {
		client = session.HTTP2
	}
	// auto mode follows the client: HTTP/1.1 clients get HTTP/1.1 upstream.
	upstream = session.HTTP1
	if m.origin == et.OriginH2TLS && client == session.HTTP2 {
		upstream = session.HTTP2
	}
	return
}

func TestGetHeadersAndProtocols(t *testing.T) {
	run(t, func(t *testing.T, c *http.Client, o *et.Origin, p *et.Proxy, m mode) {
		req, _ := http.NewRequest("GET", o.URL+"/echo?q=1&x=%20y", nil)
		req.Header.Set("X-Custom", "value 1")
		req.Header.Add("X-Custom", "value 2")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"path":"/echo?q=1&x=%20y"`) {
			t.Fatalf("%s %s", resp.Status, body)
		}
		if got := resp.Header.Values("X-Echo-H-X-Custom"); len(got) != 2 || got[0] != "value 1" || got[1] != "value 2" {
			t.Errorf("origin saw X-Custom %q", got)
		}
		if xff := resp.Header.Get("X-Echo-H-X-Forwarded-For"); xff != "" {
			t.Errorf("proxy added X-Forwarded-For %q", xff)
		}
		s := p.Next(t)
		cp, up := wantProto(m)
		if s.Client.Proto != cp || s.Upstream.Proto != up {
			t.Errorf("protos %s→%s, want %s→%s", s.Client.Proto, s.Upstream.Proto, cp, up)
		}
		if s.Status() != 200 || s.Error != nil || s.Request.Method != "GET" {
			t.Errorf("session: status %d err %v", s.Status(), s.Error)
		}
		if want := o.URL + "/echo?q=1&x=%20y"; s.Request.URL != want {
			t.Errorf("session URL %q, want %q", s.Request.URL, want)
		}
		if s.Request.Header.Get("X-Custom") != "value 1" {
			t.Errorf("session request header %v", s.Request.Header)
		}
		if !bytes.Equal(s.Response.Body.Data, body) || s.Response.Body.Size != int64(len(body)) {
			t.Errorf("captured response body %q (%d), client got %q", s.Response.Body.Data, s.Response.Body.Size, body)
		}
		tm := s.Timings
		if tm.RequestHeaders.IsZero() || tm.FirstByte.Before(tm.RequestHeaders) || tm.ResponseDone.Before(tm.FirstByte) {
			t.Errorf("timings out of order: %+v", tm)
		}
		if o.Kind != et.OriginH1Plain {
			if s.Client.TLS == nil || s.Upstream.TLS == nil || len(s.Upstream.TLS.Certificates) == 0 {
				t.Errorf("TLS info missing: client %+v upstream %+v", s.Client.TLS, s.Upstream.TLS)
			}
		}
		if s.Upstream.Addr == "" || s.Upstream.ConnID == 0 {
			t.Errorf("upstream connection not recorded: %+v", s.Upstream)
		}
	})
}

func TestPostBodyByteForByte(t *testing.T) {
	run(t, func(t *testing.T, c *http.Client, o *et.Origin, p *et.Proxy, m mode) {
		payload := et.RandomBytes(300 << 10)
		resp, err := c.Post(o.URL+"/echo", "application/octet-stream", bytes.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sum := sha256.Sum256(payload)
		if got := resp.Header.Get("X-Echo-Body-Sha256"); got != hex.EncodeToString(sum[:]) {
			t.Fatalf("origin received a different body (size %s)", resp.Header.Get("X-Echo-Body-Size"))
		}
		s := p.Next(t)
		if s.Request.Body.Size != int64(len(payload)) || !bytes.Equal(s.Request.Body.Data, payload) {
			t.Errorf("captured request body: %d bytes, size %d", len(s.Request.Body.Data), s.Request.Body.Size)
		}
	})
}

func TestDownloadByteForByte(t *testing.T) {
	for _, path := range []string{"/bytes?n=1048576", "/stream?n=1048577"} {
		t.Run(strings.Trim(path[:7], "/?"), func(t *testing.T) {
			run(t, func(t *testing.T, c *http.Client, o *et.Origin, p *et.Proxy, m mode) {
				resp, err := c.Get(o.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				n := 1048576
				if strings.HasPrefix(path, "/stream") {
					n++
				}
				if !bytes.Equal(got, et.Pattern(n)) {
					t.Fatalf("download differs: %d bytes", len(got))
				}
				s := p.Next(t)
				if s.Response.Body.Size != int64(n) {
					t.Errorf("session body size %d, want %d", s.Response.Body.Size, n)
				}
				// The default capture cap is 1 MiB: the streamed body is one byte over it.
				if trunc := n > 1<<20; s.Response.Body.Truncated != trunc || s.Flags.Has(session.FlagRespTruncated) != trunc {
					t.Errorf("truncated=%v flags=%b, want %v", s.Response.Body.Truncated, s.Flags, trunc)
				}
				if len(s.Response.Body.Data) != min(n, 1<<20) {
					t.Errorf("captured %d bytes", len(s.Response.Body.Data))
				}
			})
		})
	}
}

func TestResponseTrailers(t *testing.T) {
	run(t, func(t *testing.T, c *http.Client, o *et.Origin, p *et.Proxy, m mode) {
		resp, err := c.Get(o.URL + "/trailer")
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Trailer.Get("X-Sum") != "42" || resp.Trailer.Get("X-Late") != "yes" {
			t.Errorf("client trailers %v", resp.Trailer)
		}
		s := p.Next(t)
		if s.Response.Trailer.Get("X-Sum") != "42" {
			t.Errorf("session trailers %v", s.Response.Trailer)
		}
	})
}

func TestRequestTrailers(t *testing.T) {
	run(t, func(t *testing.T, c *http.Client, o *et.Origin, p *et.Proxy, m mode) {
		pr, pw := io.Pipe()
		req, _ := http.NewRequest("POST", o.URL+"/echo", pr)
		req.Trailer = http.Header{"X-Req-Trailer": nil}
		go func() {
			pw.Write([]byte("streamed body"))
			req.Trailer.Set("X-Req-Trailer", "done")
			pw.Close()
		}()
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get("X-Echo-T-X-Req-Trailer"); got != "done" {
			t.Errorf("origin saw request trailer %q", got)
		}
		s := p.Next(t)
		if s.Request.Trailer.Get("X-Req-Trailer") != "done" || string(s.Request.Body.Data) != "streamed body" {
			t.Errorf("session request trailer %v body %q", s.Request.Trailer, s.Request.Body.Data)
		}
	})
}

func TestStatusCodesAreResponsesNotErrors(t *testing.T) {
	run(t, func(t *testing.T, c *http.Client, o *et.Origin, p *et.Proxy, m mode) {
		for _, code := range []int{204, 404, 500} {
			resp, err := c.Get(fmt.Sprintf("%s/status?code=%d", o.URL, code))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			s := p.Next(t)
			if resp.StatusCode != code || s.Status() != code || s.Error != nil {
				t.Errorf("code %d: client %d session %d err %v", code, resp.StatusCode, s.Status(), s.Error)
			}
		}
	})
}

func TestOriginClosesMidBody(t *testing.T) {
	run(t, func(t *testing.T, c *http.Client, o *et.Origin, p *et.Proxy, m mode) {
		resp, err := c.Get(o.URL + "/cut")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if err == nil {
			t.Fatal("client read the whole body of a response the origin cut short")
		}
		s := p.Next(t)
		if s.Error == nil || s.Error.Phase != session.PhaseBody || s.Error.Side != session.SideUpstream {
			t.Fatalf("session error %+v, want body/upstream", s.Error)
		}
		if s.Response == nil || s.Response.Body.Size != 1024 {
			t.Errorf("session response %+v", s.Response)
		}
	})
}

func TestUntrustedOriginGives502(t *testing.T) {
	for _, kind := range []string{et.OriginH1TLS, et.OriginH2TLS} {
		t.Run(kind, func(t *testing.T) {
			et.RequireNoLeaks(t)
			o := et.StartOrigin(t, kind, nil)
			p := et.StartProxy(t, nil) // does not trust the origin's certificate
			resp, err := p.Client(t, et.ClientH2).Get(o.URL + "/echo")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 502 || !strings.Contains(string(body), "certificate") || !strings.Contains(string(body), "--upstream-insecure") {
				t.Fatalf("%s: %s", resp.Status, body)
			}
			s := p.Next(t)
			if !errors.Is(s.Error, &session.Error{Phase: session.PhaseTLS, Side: session.SideUpstream}) || s.Status() != 0 {
				t.Fatalf("session error %+v status %d", s.Error, s.Status())
			}
		})
	}
}

func TestUpstreamInsecureGlob(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, func(c *engine.Config) { c.UpstreamInsecure = []string{"127.0.0.*"} })
	resp, err := p.Client(t, et.ClientH1).Get(o.URL + "/echo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("insecure host: %s", resp.Status)
	}
	p.Next(t)
}

func TestRefusedConnectionGives502(t *testing.T) {
	et.RequireNoLeaks(t)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := et.StartProxy(t, nil)
	for _, kind := range []string{et.ClientH1, et.ClientH2} {
		resp, err := p.Client(t, kind).Get("https://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 502 || !strings.Contains(string(body), "refused") {
			t.Errorf("%s: %s %s", kind, resp.Status, body)
		}
		s := p.Next(t)
		if s.Error == nil || s.Error.Phase != session.PhaseDial {
			t.Errorf("session error %+v", s.Error)
		}
	}
	resp, err := p.Client(t, et.ClientH1).Get("http://" + addr + "/plain")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 502 {
		t.Errorf("plain: %s", resp.Status)
	}
	p.Next(t)
}

func TestUpstreamProtoForced(t *testing.T) {
	for _, tc := range []struct{ force, origin, want string }{
		{"h1", et.OriginH2TLS, session.HTTP1},
		{"h2", et.OriginH2TLS, session.HTTP2},
	} {
		t.Run(tc.force, func(t *testing.T) {
			et.RequireNoLeaks(t)
			o := et.StartOrigin(t, tc.origin, nil)
			p := et.StartProxy(t, func(c *engine.Config) { c.UpstreamProto = tc.force }, o)
			resp, err := p.Client(t, et.ClientH2).Get(o.URL + "/echo")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if s := p.Next(t); s.Upstream.Proto != tc.want {
				t.Errorf("upstream %s, want %s", s.Upstream.Proto, tc.want)
			}
		})
	}
	t.Run("h2 against h1-only origin", func(t *testing.T) {
		et.RequireNoLeaks(t)
		o := et.StartOrigin(t, et.OriginH1TLS, nil)
		p := et.StartProxy(t, func(c *engine.Config) { c.UpstreamProto = "h2" }, o)
		resp, err := p.Client(t, et.ClientH1).Get(o.URL + "/echo")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 502 || !strings.Contains(string(body), "HTTP/2") {
			t.Errorf("%s %s", resp.Status, body)
		}
		p.Next(t)
	})
}

func TestWebSocketRelayedAndRecorded(t *testing.T) {
	for _, kind := range []string{et.OriginH1Plain, et.OriginH1TLS} {
		t.Run(kind, func(t *testing.T) {
			et.RequireNoLeaks(t)
			o := et.StartOrigin(t, kind, nil)
			p := et.StartProxy(t, nil, o)
			target := strings.Replace(o.URL, "http", "ws", 1) + "/ws"
			conn, br := p.WSDial(t, target)
			msgs := []string{"hello", strings.Repeat("x", 300), strings.Repeat("y", 70000)}
			for _, m := range msgs {
				if err := et.WriteWSFrame(conn, 1, []byte(m), true); err != nil {
					t.Fatal(err)
				}
				op, data, err := et.ReadWSFrame(br)
				if err != nil || op != 1 || string(data) != m {
					t.Fatalf("echo: op %d len %d err %v", op, len(data), err)
				}
			}
			et.WriteWSFrame(conn, 8, []byte{3, 232}, true)
			et.ReadWSFrame(br)
			conn.Close()
			s := p.Next(t)
			if !s.Flags.Has(session.FlagWebSocket) || s.Status() != 101 {
				t.Fatalf("flags %b status %d", s.Flags, s.Status())
			}
			var fromClient, fromServer []string
			for _, m := range s.Messages {
				if m.Opcode != 1 {
					continue
				}
				if m.FromClient {
					fromClient = append(fromClient, string(m.Data))
				} else {
					fromServer = append(fromServer, string(m.Data))
				}
			}
			if fmt.Sprint(fromClient) != fmt.Sprint(msgs) || fmt.Sprint(fromServer) != fmt.Sprint(msgs) {
				t.Errorf("recorded %d client and %d server text messages", len(fromClient), len(fromServer))
			}
		})
	}
}

func TestCertPage(t *testing.T) {
	et.RequireNoLeaks(t)
	p := et.StartProxy(t, nil)
	c := p.Client(t, et.ClientH1)
	for path, want := range map[string]string{"/": "Inspector CA certificate", "/cert.pem": "BEGIN CERTIFICATE"} {
		resp, err := c.Get("http://inspector.cert" + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("%s: %s %.80s", path, resp.Status, body)
		}
	}
	resp, err := c.Get("http://inspector.cert/cert.crt")
	if err != nil {
		t.Fatal(err)
	}
	der, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(der, p.CA.RootDER()) {
		t.Error("DER download differs from the CA")
	}
	// Through a decrypted tunnel too.
	resp, err = c.Get("https://inspector.cert/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("https page: %s", resp.Status)
	}
}

func TestRefusesToProxyToItself(t *testing.T) {
	et.RequireNoLeaks(t)
	p := et.StartProxy(t, nil)
	c := p.Client(t, et.ClientH1)
	resp, err := c.Get("http://" + p.Addr() + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusLoopDetected {
		t.Errorf("proxy to itself: %s", resp.Status)
	}
	if _, err := c.Get("https://" + p.Addr() + "/x"); err == nil {
		t.Error("CONNECT to the proxy itself succeeded")
	}
}

func TestNoDecryptTunnels(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, func(c *engine.Config) { c.NoDecrypt = []string{"127.0.0.1"} }, o)
	c := p.Client(t, et.ClientH1)
	c.Transport.(*http.Transport).TLSClientConfig.RootCAs.AddCert(o.Certificate())
	resp, err := c.Get(o.URL + "/echo")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.TLS == nil || !resp.TLS.PeerCertificates[0].Equal(o.Certificate()) {
		t.Fatal("the client did not see the origin's own certificate")
	}
	c.CloseIdleConnections()
	s := p.Next(t)
	if !s.Flags.Has(session.FlagTunnel) || s.Request.Method != "CONNECT" || s.Response.Body.Size == 0 || s.Request.Body.Size == 0 {
		t.Errorf("tunnel session %+v flags %b", s.Request, s.Flags)
	}
}

func TestRemoteListenRefused(t *testing.T) {
	_, err := engine.New(engine.Config{Listen: "0.0.0.0:0"})
	if !errors.Is(err, engine.ErrRemoteListen) {
		t.Fatalf("got %v", err)
	}
	_, err = engine.New(engine.Config{Listen: "127.0.0.1:0", UpstreamProto: "h9"})
	if err == nil {
		t.Fatal("bad upstream proto accepted")
	}
}
