package engine_test

import (
	// appenv puts http2xconnect=1 in GODEBUG before golang.org/x/net/http2 initialises
	// (it reads GODEBUG only in its init), as in the binary: without it the engine's h2
	// server does not offer RFC 8441 extended CONNECT. See engine/websocket_h2.go.
	_ "appenv"

	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/http2"

	"inspector/engine"
	"inspector/engine/enginetest"
	"inspector/engine/session"
)

// h2WSStream opens an RFC 8441 extended CONNECT stream to target (an origin URL plus
// path) through the proxy: CONNECT tunnel, then h2 over TLS (https origins) or h2 with
// prior knowledge (http origins). It returns the response and the writer of the
// client→origin side.
func h2WSStream(t *testing.T, p *enginetest.Proxy, target string) (*http.Response, *io.PipeWriter) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var alpn []string
	if u.Scheme == "https" {
		alpn = []string{"h2"}
	}
	conn, _ := p.Tunnel(t, u.Host, alpn)
	if tc, ok := conn.(*tls.Conn); ok && tc.ConnectionState().NegotiatedProtocol != "h2" {
		t.Fatalf("ALPN %q", tc.ConnectionState().NegotiatedProtocol)
	}
	tr := &http2.Transport{AllowHTTP: true}
	cc, err := tr.NewClientConn(conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	req, err := http.NewRequest(http.MethodConnect, target, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(":protocol", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	resp, err := cc.RoundTrip(req)
	if err != nil {
		t.Fatalf("extended CONNECT: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, pw
}

func TestWebSocketOverH2ExtendedConnect(t *testing.T) {
	for _, kind := range []string{enginetest.OriginH1Plain, enginetest.OriginH1TLS, enginetest.OriginH2TLS} {
		t.Run(kind, func(t *testing.T) {
			enginetest.RequireNoLeaks(t)
			o := enginetest.StartOrigin(t, kind, nil)
			p := enginetest.StartProxy(t, nil, o)
			resp, pw := h2WSStream(t, p, o.URL+"/ws")
			if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
				t.Fatalf("status %s proto %s", resp.Status, resp.Proto)
			}
			for _, k := range []string{"Connection", "Upgrade", "Sec-Websocket-Accept"} {
				if v := resp.Header.Get(k); v != "" {
					t.Errorf("h2 response carries %s: %s", k, v)
				}
			}
			br := bufio.NewReader(resp.Body)
			msgs := []string{"hello", strings.Repeat("x", 300), strings.Repeat("y", 70000)}
			for _, m := range msgs {
				if err := enginetest.WriteWSFrame(pw, 1, []byte(m), true); err != nil {
					t.Fatal(err)
				}
				op, data, err := enginetest.ReadWSFrame(br)
				if err != nil || op != 1 || string(data) != m {
					t.Fatalf("echo: op %d len %d err %v", op, len(data), err)
				}
			}
			if err := enginetest.WriteWSFrame(pw, 2, []byte{0, 1, 2, 0xff}, true); err != nil {
				t.Fatal(err)
			}
			if op, data, err := enginetest.ReadWSFrame(br); err != nil || op != 2 || string(data) != "\x00\x01\x02\xff" {
				t.Fatalf("binary echo: op %d %x %v", op, data, err)
			}
			if err := enginetest.WriteWSFrame(pw, 8, []byte{3, 232}, true); err != nil {
				t.Fatal(err)
			}
			if op, _, err := enginetest.ReadWSFrame(br); err != nil || op != 8 {
				t.Fatalf("close echo: op %d %v", op, err)
			}
			pw.Close()
			// The origin closed after echoing the close: the stream ends.
			if _, err := io.Copy(io.Discard, br); err != nil {
				t.Logf("stream end: %v", err)
			}

			s := p.Next(t)
			if !s.Flags.Has(session.FlagWebSocket) {
				t.Fatalf("flags %b status %d", s.Flags, s.Status())
			}
			if s.Client.Proto != session.HTTP2 || s.Request.Method != http.MethodConnect ||
				s.Request.Header.Get(":protocol") != "websocket" || s.Upstream.Proto != session.HTTP1 {
				t.Errorf("client %s %s %v, upstream %s", s.Client.Proto, s.Request.Method, s.Request.Header, s.Upstream.Proto)
			}
			if s.Request.Body.Size != 0 {
				t.Errorf("the stream was also captured as a request body of %d bytes", s.Request.Body.Size)
			}
			var fromClient, fromServer []string
			var binary, closes int
			for _, m := range s.Messages {
				switch m.Opcode {
				case 1:
					if m.FromClient {
						fromClient = append(fromClient, string(m.Data))
					} else {
						fromServer = append(fromServer, string(m.Data))
					}
				case 2:
					binary++
				case 8:
					closes++
				}
			}
			if fmt.Sprint(fromClient) != fmt.Sprint(msgs) || fmt.Sprint(fromServer) != fmt.Sprint(msgs) {
				t.Errorf("recorded %d client and %d server text messages", len(fromClient), len(fromServer))
			}
			// The relay ends when the first direction closes, so the origin's echoed close
			// frame may arrive after the session completed: one or two closes are recorded.
			if binary != 2 || closes < 1 || closes > 2 {
				t.Errorf("recorded %d binary and %d close messages, want 2 and 1–2", binary, closes)
			}
		})
	}
}

// An origin that answers the WebSocket request without switching protocols must not make
// an RFC 8441 client believe the WebSocket is open (a 2xx would).
func TestWebSocketOverH2OriginRefuses(t *testing.T) {
	enginetest.RequireNoLeaks(t)
	o := enginetest.StartOrigin(t, enginetest.OriginH1TLS, nil)
	p := enginetest.StartProxy(t, nil, o)
	for path, want := range map[string]int{"/echo": http.StatusBadGateway, "/status?code=403": http.StatusForbidden} {
		resp, pw := h2WSStream(t, p, o.URL+path)
		body, _ := io.ReadAll(resp.Body)
		pw.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: status %d, want %d (%s)", path, resp.StatusCode, want, body)
		}
		if want == http.StatusBadGateway && !strings.Contains(string(body), "status 200") {
			t.Errorf("%s: body %q does not name the origin's status", path, body)
		}
		s := p.Next(t)
		if s.Flags.Has(session.FlagWebSocket) {
			t.Errorf("%s: session flagged WebSocket", path)
		}
	}
}

// Reverse mode: an h2 (prior knowledge) client's extended CONNECT reaches the one origin.
func TestWebSocketOverH2ReverseMode(t *testing.T) {
	enginetest.RequireNoLeaks(t)
	o := enginetest.StartOrigin(t, enginetest.OriginH1Plain, nil)
	p := enginetest.StartProxy(t, func(c *engine.Config) { c.Reverse = o.URL }, o)
	c, err := net.Dial("tcp", p.Engine.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cc, err := (&http2.Transport{AllowHTTP: true}).NewClientConn(c)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest(http.MethodConnect, "http://"+p.Engine.Addr()+"/ws", pr)
	req.Header.Set(":protocol", "websocket")
	resp, err := cc.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("extended CONNECT: %v %v", resp, err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if err := enginetest.WriteWSFrame(pw, 1, []byte("through reverse"), true); err != nil {
		t.Fatal(err)
	}
	if op, data, err := enginetest.ReadWSFrame(br); err != nil || op != 1 || string(data) != "through reverse" {
		t.Fatalf("echo: op %d %q %v", op, data, err)
	}
	pw.Close()
	s := p.Next(t)
	if !s.Flags.Has(session.FlagWebSocket) || len(s.Messages) < 2 {
		t.Fatalf("flags %b, %d messages", s.Flags, len(s.Messages))
	}
}
