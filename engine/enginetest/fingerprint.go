package enginetest

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"inspector/engine/internal/fingerprint"
)

// FPOrigin is a fingerprinting origin: a TLS server (h2 and http/1.1) that computes JA3,
// JA4 and the HTTP/2 fingerprint of each connection from the bytes it received, and
// answers every request with them in X-JA3, X-JA3-Raw, X-JA4 and X-H2FP (plus
// X-Proto, and X-Resumed: whether the connection's handshake resumed a session).
type FPOrigin struct {
	URL  string
	Cert *tls.Certificate
	ln   net.Listener
	srv  *httptest.Server // for its certificate only
	h1   *http.Server
	h2   *http2.Server
	wg   sync.WaitGroup
}

type fpKey struct{}

type fpConnState struct {
	hello   *fingerprint.Recorder
	h2      *fingerprint.Recorder
	resumed bool // the handshake resumed a session
}

type fpTLSConn struct {
	*tls.Conn
	rec *fingerprint.Recorder
}

func (c *fpTLSConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.rec.Add(p[:n])
	}
	return n, err
}

type oneConnListener struct {
	c    chan net.Conn
	addr net.Addr
	done chan struct{}
	once sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.c:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}
func (l *oneConnListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *oneConnListener) Addr() net.Addr { return l.addr }

// StartFPOrigin starts a fingerprinting origin on 127.0.0.1:0 with httptest's
// certificate (trusted by StartProxy when passed FPOrigin.Origin()).
func StartFPOrigin(t testing.TB) *FPOrigin {
	t.Helper()
	cert := httptest.NewUnstartedServer(nil)
	cert.StartTLS() // only to get httptest's certificate and its pool
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &FPOrigin{URL: "https://" + ln.Addr().String(), ln: ln, srv: cert}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := r.Context().Value(fpKey{}).(*fpConnState)
		if h, err := fingerprint.ParseRecords(st.hello.Bytes()); err == nil {
			raw, sum := h.JA3()
			w.Header().Set("X-JA3", sum)
			w.Header().Set("X-JA3-Raw", raw)
			w.Header().Set("X-JA4", h.JA4())
		} else {
			w.Header().Set("X-JA4-Error", err.Error())
		}
		if st.h2 != nil {
			if op, err := fingerprint.ParseH2Opening(st.h2.Bytes()); err == nil {
				w.Header().Set("X-H2FP", op.Akamai())
			}
		}
		w.Header().Set("X-Proto", r.Proto)
		w.Header().Set("X-Resumed", fmt.Sprint(st.resumed))
		w.Header().Set("Content-Type", "text/plain")
		// The same in the body, for clients that show only the body (a headless browser).
		_, _ = fmt.Fprintf(w, "ja4=%s\nja3=%s\nh2=%s\n", w.Header().Get("X-JA4"), w.Header().Get("X-JA3"), w.Header().Get("X-H2FP"))
	})
	cfg := cert.TLS.Clone()
	cfg.NextProtos = []string{"h2", "http/1.1"}
	cl := &oneConnListener{c: make(chan net.Conn), addr: ln.Addr(), done: make(chan struct{})}
	o.h1 = &http.Server{Handler: handler, ConnContext: func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, fpKey{}, c.(*fpTLSConn).st())
	}}
	o.h2 = &http2.Server{}
	o.wg.Add(2)
	go func() { defer o.wg.Done(); _ = o.h1.Serve(cl) }()
	go func() {
		defer o.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go o.serve(c, cfg, cl, handler)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		cl.Close()
		o.h1.Close()
		o.wg.Wait()
		cert.Close()
	})
	return o
}

var fpStates sync.Map // *fpTLSConn → *fpConnState

func (c *fpTLSConn) st() *fpConnState { v, _ := fpStates.Load(c); return v.(*fpConnState) }

func (o *FPOrigin) serve(c net.Conn, cfg *tls.Config, cl *oneConnListener, h http.Handler) {
	st := &fpConnState{hello: fingerprint.NewRecorder(fingerprint.MaxHello, fingerprint.HelloComplete)}
	tc := tls.Server(&fingerprint.ReadConn{Conn: c, Rec: st.hello}, cfg)
	_ = tc.SetDeadline(time.Now().Add(30 * time.Second))
	if err := tc.Handshake(); err != nil {
		c.Close()
		return
	}
	_ = tc.SetDeadline(time.Time{})
	st.resumed = tc.ConnectionState().DidResume
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		st.h2 = fingerprint.NewRecorder(16<<10, fingerprint.H2Complete)
		fc := &fpTLSConn{Conn: tc, rec: st.h2}
		o.h2.ServeConn(fc, &http2.ServeConnOpts{Context: context.WithValue(context.Background(), fpKey{}, st), Handler: h})
		return
	}
	fc := &fpTLSConn{Conn: tc, rec: fingerprint.NewRecorder(0, nil)}
	fpStates.Store(fc, st)
	select {
	case cl.c <- fc:
	case <-cl.done:
		c.Close()
	}
}

// Origin is the FPOrigin as an Origin for StartProxy (its certificate is trusted).
func (o *FPOrigin) Origin() *Origin { return &Origin{Server: o.srv, Kind: OriginH2TLS} }

// Pool trusts the origin's certificate, for direct clients.
func (o *FPOrigin) Pool() *http.Transport {
	return o.srv.Client().Transport.(*http.Transport).Clone()
}

// CertPEM is the origin's certificate in PEM, for clients that read a CA file.
func (o *FPOrigin) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: o.srv.Certificate().Raw})
}
