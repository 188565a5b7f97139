package enginetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// startH3Origin serves h over HTTP/3 on 127.0.0.1:0 UDP with httptest's certificate, and
// over TLS TCP on srv (h2 and http/1.1), sharing the handler. The TCP side adds
// Alt-Svc for the UDP port when SetAltSvc(true) was called (see Origin.AltSvc).
func startH3Origin(t testing.TB, h http.Handler, srv *httptest.Server) *Origin {
	t.Helper()
	o := &Origin{Kind: OriginH3}
	alt := new(atomic.Bool)
	o.altSvc = alt
	var h3port int
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if alt.Load() && r.ProtoMajor < 3 {
			w.Header().Set("Alt-Svc", `h3=":`+strconv.Itoa(h3port)+`"; ma=60`)
		}
		h.ServeHTTP(w, r)
	})
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	o.Server = srv

	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h3port = pc.LocalAddr().(*net.UDPAddr).Port
	cert := srv.TLS.Certificates[0]
	h3 := &http3.Server{
		Handler:   h,
		TLSConfig: http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = h3.Serve(pc)
	}()
	t.Cleanup(func() {
		_ = h3.Close()
		_ = pc.Close()
		<-done
	})
	o.H3Addr = pc.LocalAddr().String()
	o.H3URL = "https://" + o.H3Addr
	waitH3(t, o.H3Addr, srv.Certificate())
	return o
}

// SetAltSvc makes an OriginH3's TCP side advertise (or stop advertising) its h3 port.
func (o *Origin) SetAltSvc(on bool) {
	if o.altSvc != nil {
		o.altSvc.Store(on)
	}
}

// waitH3 waits until the h3 server answers a QUIC handshake.
func waitH3(t testing.TB, addr string, cert *x509.Certificate) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := quic.DialAddr(ctx, addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{http3.NextProtoH3}}, nil)
		cancel()
		if err == nil {
			_ = c.CloseWithError(0, "")
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("h3 origin at %s never answered: %v", addr, err)
		}
	}
}

// ClientH3 speaks HTTP/3 to the proxy's --listen-h3 address.
const ClientH3 = "h3"

// H3Client returns an http.Client that sends every request over HTTP/3 to the proxy's
// HTTP/3 listener (whatever the URL's host), trusting the proxy's CA: the way a client
// that was pointed at Inspector by DNS or by a reverse setup reaches it.
func (p *Proxy) H3Client(t testing.TB) *http.Client {
	t.Helper()
	addr := p.H3Addr()
	if addr == "" {
		t.Fatal("the proxy has no HTTP/3 listener (set Config.ListenH3)")
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	qt := &quic.Transport{Conn: udp}
	target, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http3.Transport{
		TLSClientConfig:    &tls.Config{RootCAs: p.CAPool()},
		DisableCompression: true,
		Dial: func(ctx context.Context, _ string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
			return qt.DialEarly(ctx, target, tlsCfg, cfg)
		},
	}
	t.Cleanup(func() {
		_ = tr.Close()
		_ = qt.Close()
		_ = udp.Close()
	})
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}
