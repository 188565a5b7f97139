package engine_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

// The pass-through QUIC policy relays the client's QUIC to the origin undecrypted: the
// client completes its TLS handshake with the origin itself (it trusts only the origin's
// certificate here, not Inspector's CA), and the flow is one tunnel session with bytes.
func TestH3PassthroughRelaysQUICUndecrypted(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH3, nil)
	p := et.StartProxy(t, func(c *engine.Config) {
		c.Reverse = o.H3URL
		c.ListenH3 = "127.0.0.1:0"
		c.H3Passthrough = []string{"127.0.0.*"}
		c.IdleTimeout = time.Second // the flow's session completes after a second of silence
	}, o)

	roots := x509.NewCertPool()
	roots.AddCert(o.Certificate())
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	qt := &quic.Transport{Conn: udp}
	defer qt.Close()
	relay, err := net.ResolveUDPAddr("udp", p.H3Addr())
	if err != nil {
		t.Fatal(err)
	}
	tr := &http3.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots},
		Dial: func(ctx context.Context, _ string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
			return qt.DialEarly(ctx, relay, tlsCfg, cfg)
		},
	}
	defer tr.Close()
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	body := strings.Repeat("q", 20000)
	resp, err := c.Post(o.H3URL+"/echo", "text/plain", strings.NewReader(body))
	if err != nil {
		t.Fatalf("h3 through the relay: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 3 || resp.Header.Get("X-Echo-Body-Size") != "20000" {
		t.Fatalf("%s %s, origin saw %s bytes", resp.Status, resp.Proto, resp.Header.Get("X-Echo-Body-Size"))
	}
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 || !resp.TLS.PeerCertificates[0].Equal(o.Certificate()) {
		t.Fatal("the client did not get the origin's own certificate: QUIC was not passed through")
	}
	tr.Close() // sends CONNECTION_CLOSE; the flow then goes quiet

	s := p.Next(t)
	if !s.Flags.Has(session.FlagTunnel) || s.Request.Method != "QUIC" || s.Error != nil {
		t.Fatalf("session flags %b method %q error %v", s.Flags, s.Request.Method, s.Error)
	}
	if want := "udp://" + strings.TrimPrefix(o.H3URL, "https://"); s.Request.URL != want {
		t.Errorf("session URL %q, want %q", s.Request.URL, want)
	}
	if s.Request.Body.Size < int64(len(body)) || s.Response == nil || s.Response.Body.Size == 0 {
		t.Errorf("bytes client→origin %d (sent a %d-byte body), origin→client %v", s.Request.Body.Size, len(body), s.Response)
	}
	if s.Upstream.Addr != strings.TrimPrefix(o.H3URL, "https://") {
		t.Errorf("upstream %q", s.Upstream.Addr)
	}
}

func TestH3PassthroughBadConfig(t *testing.T) {
	ca := et.StartProxy(t, nil).CA
	for name, cfg := range map[string]engine.Config{
		"forward mode": {ListenH3: "127.0.0.1:0", H3Passthrough: []string{"*"}},
		"bad glob":     {ListenH3: "127.0.0.1:0", Reverse: "https://127.0.0.1:1", H3Passthrough: []string{"a[b"}},
	} {
		cfg.Listen, cfg.CA = "127.0.0.1:0", ca
		e, err := engine.New(cfg)
		if err == nil {
			e.Close(context.Background())
			t.Errorf("%s: accepted", name)
			continue
		}
		if name == "forward mode" && !strings.Contains(err.Error(), "--reverse") {
			t.Errorf("%s: error %q does not say it needs --reverse", name, err)
		}
	}
}
