package engine_test

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

func get(t *testing.T, c *http.Client, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestAltSvcMovesAutoModeToH3(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH3, nil)
	o.SetAltSvc(true)
	p := et.StartProxy(t, nil, o)
	c := p.Client(t, et.ClientH1)

	get(t, c, o.URL+"/echo")
	s := p.Next(t)
	if s.Upstream.Proto != session.HTTP1 || s.Upstream.ProtoReason != "" {
		t.Fatalf("first request: upstream %q (%q), want h1 over TCP (the client's protocol)", s.Upstream.Proto, s.Upstream.ProtoReason)
	}
	resp, _ := get(t, c, o.URL+"/echo")
	if resp.Header.Get("X-Echo-Proto") != "HTTP/3.0" {
		t.Fatalf("origin saw %q after Alt-Svc, want HTTP/3.0", resp.Header.Get("X-Echo-Proto"))
	}
	s = p.Next(t)
	if s.Upstream.Proto != session.HTTP3 || !strings.Contains(s.Upstream.ProtoReason, "Alt-Svc") {
		t.Fatalf("second request: upstream %q (%q), want h3 after Alt-Svc", s.Upstream.Proto, s.Upstream.ProtoReason)
	}
	if s.Upstream.ConnID == 0 || s.Upstream.TLS == nil || s.Upstream.TLS.ALPN != "h3" {
		t.Fatalf("h3 upstream conn not recorded: %+v", s.Upstream)
	}
	// The connection is reused.
	get(t, c, o.URL+"/echo")
	s2 := p.Next(t)
	if s2.Upstream.ConnID != s.Upstream.ConnID || !s2.Upstream.Reused {
		t.Fatalf("third request used conn %d reused=%v, want %d reused", s2.Upstream.ConnID, s2.Upstream.Reused, s.Upstream.ConnID)
	}
}

func TestAltSvcFallsBackToTCPWhenQUICFails(t *testing.T) {
	et.RequireNoLeaks(t)
	// A UDP socket that never answers stands for a blocked QUIC path.
	dead, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dead.Close() })
	port := dead.LocalAddr().(*net.UDPAddr).Port
	h := et.Handler()
	o := et.StartOrigin(t, et.OriginH2TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Alt-Svc", `h3=":`+strconv.Itoa(port)+`"; ma=3600`)
		h.ServeHTTP(w, r)
	}))
	p := et.StartProxy(t, func(c *engine.Config) { c.DialTimeout = 500 * time.Millisecond }, o)
	c := p.Client(t, et.ClientH2) // an HTTP/2 client: auto mode offers h2 to the origin
	get(t, c, o.URL+"/echo")
	p.Next(t)
	resp, _ := get(t, c, o.URL+"/echo")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d after fallback", resp.StatusCode)
	}
	s := p.Next(t)
	if s.Error != nil || s.Upstream.Proto != session.HTTP2 || !strings.Contains(s.Upstream.ProtoReason, "fell back to TCP") {
		t.Fatalf("fallback: upstream %q reason %q error %v", s.Upstream.Proto, s.Upstream.ProtoReason, s.Error)
	}
	// Later requests stay on TCP without retrying QUIC.
	get(t, c, o.URL+"/echo")
	s = p.Next(t)
	if s.Upstream.Proto != session.HTTP2 || s.Upstream.ProtoReason != "" {
		t.Fatalf("after a QUIC failure: upstream %q reason %q", s.Upstream.Proto, s.Upstream.ProtoReason)
	}
}

func tlsTo(p *et.Proxy) *tls.Config { return &tls.Config{RootCAs: p.CAPool()} }

func TestForcedH3FailsCleanlyWithoutQUIC(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, nil) // TCP only
	p := et.StartProxy(t, func(c *engine.Config) {
		c.UpstreamProto = "h3"
		c.DialTimeout = 500 * time.Millisecond
	}, o)
	resp, _ := get(t, p.Client(t, et.ClientH1), o.URL+"/echo")
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502", resp.StatusCode)
	}
	s := p.Next(t)
	if s.Error == nil || s.Error.Side != session.SideUpstream {
		t.Fatalf("want an upstream error, got %+v", s.Error)
	}
}

func TestHostileH3Origin(t *testing.T) {
	et.RequireNoLeaks(t)
	h := et.Handler()
	o := et.StartOrigin(t, et.OriginH3, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/huge-header" {
			w.Header().Set("X-Huge", strings.Repeat("a", 2<<20))
			w.WriteHeader(200)
			return
		}
		h.ServeHTTP(w, r)
	}))
	p := et.StartProxy(t, func(c *engine.Config) { c.UpstreamProto = "h3" }, o)
	c := p.Client(t, et.ClientH2)

	resp, _ := get(t, c, o.H3URL+"/huge-header")
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("oversized QPACK headers: status %d, want 502", resp.StatusCode)
	}
	if s := p.Next(t); s.Error == nil {
		t.Fatal("oversized headers: no session error")
	}

	// The origin resets the stream after 1 KiB of a promised 1 MiB.
	resp, err := c.Get(o.H3URL + "/cut")
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if s := p.Next(t); s.Error == nil || s.Error.Side != session.SideUpstream {
		t.Fatalf("early close: want an upstream error, got %+v", s.Error)
	}

	// The proxy still works.
	resp, _ = get(t, c, o.H3URL+"/echo")
	if resp.StatusCode != 200 {
		t.Fatalf("after hostile responses: status %d", resp.StatusCode)
	}
	if s := p.Next(t); s.Error != nil || s.Upstream.Proto != session.HTTP3 {
		t.Fatalf("after hostile responses: %+v %v", s.Upstream, s.Error)
	}
}

func TestReverseMode(t *testing.T) {
	for _, kind := range []string{et.OriginH1Plain, et.OriginH2TLS} {
		t.Run(kind, func(t *testing.T) {
			et.RequireNoLeaks(t)
			o := et.StartOrigin(t, kind, nil)
			p := et.StartProxy(t, func(c *engine.Config) {
				c.Reverse = o.URL
				c.ListenH3 = "127.0.0.1:0"
			}, o)
			// Plain HTTP, TLS (h1 and h2) and HTTP/3 clients all reach the one origin.
			clients := map[string]*http.Client{
				"plain": {Transport: &http.Transport{}},
				"tls":   {Transport: &http.Transport{TLSClientConfig: tlsTo(p), ForceAttemptHTTP2: true}},
				"h3":    p.H3Client(t),
			}
			for name, c := range clients {
				url := "http://" + p.Addr() + "/echo?via=" + name
				if name != "plain" {
					url = "https://" + p.Addr() + "/echo?via=" + name
				}
				if name == "h3" {
					url = "https://" + p.H3Addr() + "/echo?via=" + name
				}
				resp, body := get(t, c, url)
				if resp.StatusCode != 200 || !strings.Contains(string(body), "via="+name) {
					t.Fatalf("%s: %d %s", name, resp.StatusCode, body)
				}
				originHost := strings.TrimPrefix(strings.TrimPrefix(o.URL, "http://"), "https://")
				if got := resp.Header.Get("X-Echo-Host"); got != originHost {
					t.Fatalf("%s: origin saw Host %q, want %q", name, got, originHost)
				}
				s := p.Next(t)
				if !strings.HasPrefix(s.Request.URL, o.URL+"/echo") || s.Error != nil {
					t.Fatalf("%s: session URL %q error %v", name, s.Request.URL, s.Error)
				}
				if tr, ok := c.Transport.(*http.Transport); ok {
					tr.CloseIdleConnections()
				}
			}
		})
	}
}

func TestReverseBadURL(t *testing.T) {
	for _, u := range []string{"ftp://x", "http://", "https://h/path", "::"} {
		if _, err := engine.New(engine.Config{Listen: "127.0.0.1:0", Reverse: u}); err == nil || !strings.Contains(err.Error(), "--reverse") {
			t.Errorf("Reverse %q: err %v, want a --reverse error", u, err)
		}
	}
	if _, err := engine.New(engine.Config{Listen: "127.0.0.1:0", ListenH3: "127.0.0.1:0"}); err == nil {
		t.Error("ListenH3 without a CA: no error")
	}
	if _, err := engine.New(engine.Config{Listen: "127.0.0.1:0", UpstreamProto: "h4"}); err == nil {
		t.Error("upstream proto h4: no error")
	}
}

func TestH3RefusePolicyLeavesTCP(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, func(c *engine.Config) {
		c.ListenH3 = "127.0.0.1:0"
		c.H3Refuse = []string{"127.0.0.*"}
		c.DialTimeout = time.Second
	}, o)
	if _, err := p.H3Client(t).Get(o.URL + "/echo"); err == nil {
		t.Fatal("QUIC to a refused host succeeded")
	}
	resp, _ := get(t, p.Client(t, et.ClientH2), o.URL+"/echo")
	if resp.StatusCode != 200 {
		t.Fatalf("TCP after a refused QUIC: %d", resp.StatusCode)
	}
	if s := p.Next(t); s.Client.Proto != session.HTTP2 {
		t.Fatalf("session over %q", s.Client.Proto)
	}
	if _, err := engine.New(engine.Config{Listen: "127.0.0.1:0", H3Refuse: []string{"a[b"}}); err == nil {
		t.Error("bad H3Refuse glob accepted")
	}
}

func TestForcedH3KeepsWebSocketsOnTCP(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH3, nil)
	p := et.StartProxy(t, func(c *engine.Config) { c.UpstreamProto = "h3" }, o)
	conn, br := p.WSDial(t, "wss://"+strings.TrimPrefix(o.URL, "https://")+"/ws")
	if err := et.WriteWSFrame(conn, 1, []byte("over tcp"), true); err != nil {
		t.Fatal(err)
	}
	if _, data, err := et.ReadWSFrame(br); err != nil || string(data) != "over tcp" {
		t.Fatalf("echo %q %v", data, err)
	}
	conn.Close()
	s := p.Next(t)
	if !s.Flags.Has(session.FlagWebSocket) || s.Upstream.Proto != session.HTTP1 || !strings.Contains(s.Upstream.ProtoReason, "Upgrade") {
		t.Fatalf("websocket session: flags %b upstream %q (%q)", s.Flags, s.Upstream.Proto, s.Upstream.ProtoReason)
	}
}
