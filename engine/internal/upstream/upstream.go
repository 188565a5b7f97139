package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	utls "github.com/refraction-networking/utls"
	"golang.org/x/net/http2"

	"inspector/engine/internal/fingerprint"
)

// Config is what the upstream needs to know. Roots and Proto are required; the func
// fields may be nil.
type Config struct {
	// Roots are the roots trusted for origins (the caller loads the system pool).
	Roots *x509.CertPool
	// Insecure reports whether certificate errors of host are ignored.
	Insecure func(host string) bool
	// Proto is "auto", "h1", "h2" or "h3" (the engine's Config.UpstreamProto).
	Proto                                    string
	DialTimeout, TLSTimeout, ResponseTimeout time.Duration
	// MaxHeaderBytes caps response heads.
	MaxHeaderBytes int
	// Reserved reports whether host:port is one the proxy must never connect to: such
	// dials fail with ErrReserved.
	Reserved func(host, port string) bool
	// TapH2, when set, wraps every upstream HTTP/2 TLS connection (numbered id), for
	// frame capture; a wrapped connection must implement NetConn() (returning c) so
	// ConnID still finds its number. Stale reports whether such a wrapped connection
	// must take no new requests (net/http then dials a fresh one).
	TapH2 func(c net.Conn, id uint64) net.Conn
	Stale func(tapped net.Conn) bool
	// QUICConfig returns the QUIC settings of upstream QUIC connection id.
	QUICConfig func(id uint64) *quic.Config
	// KeyLog, when set, receives the TLS secrets of every origin connection (NSS key
	// log format), mirrored or not (--keylog). It must be safe for concurrent use.
	KeyLog io.Writer
}

// Upstream holds the transports towards origins and picks one for each request
// (RoundTrip). It knows nothing of sessions: what it learns about a round trip goes to
// the httptrace.ClientTrace of the request's context and to the ConnTrace it is handed.
// It is safe for concurrent use.
type Upstream struct {
	cfg    Config
	dialer net.Dialer
	secure http.RoundTripper // verifies certificates
	lax    http.RoundTripper // for --upstream-insecure hosts only
	// secureH1 and laxH1 offer only http/1.1 in ALPN: auto mode sends HTTP/1.1 clients'
	// requests through them, so the origin sees the protocol the client chose (nil in the
	// forced modes).
	secureH1, laxH1 http.RoundTripper
	plain           *http.Transport // http:// origins
	h3              *h3Pool         // HTTP/3 origins (--upstream-proto h3, or after Alt-Svc in auto)
	altSvc          altSvcCache
	// secureTLS and laxTLS are the TLS settings of secure and lax, for the h3 pool.
	secureTLS, laxTLS *tls.Config
	// h1TLS are the TLS settings offering only http/1.1 (verifying, lax) of the pinned
	// HTTP/1.1 path (h1.go); nil in the modes that do not send HTTP/1.1 over TLS.
	h1TLS  [2]*tls.Config
	idle   h1Pool // origin connections of ended pinned client connections
	closer []func()
	ids    uint64
	idMu   sync.Mutex

	// mirrors are the pools of mirrored connections, by mirror key (mirror.go).
	mirrors   map[string]*mirrorRT
	mirrorMu  sync.Mutex
	usessions utls.ClientSessionCache
}

// ErrReserved is returned when a request would reach the proxy's own addresses.
var ErrReserved = errors.New("refusing to connect to Inspector's own address (proxy loop or control API)")

// New builds the transports; they dial nothing until the first request.
func New(cfg Config) (*Upstream, error) {
	if cfg.Roots == nil {
		return nil, errors.New("upstream: no roots")
	}
	switch cfg.Proto {
	case "auto", "h1", "h2", "h3":
	default:
		return nil, fmt.Errorf("upstream: unknown protocol %q (want auto, h1, h2 or h3)", cfg.Proto)
	}
	if cfg.Insecure == nil {
		cfg.Insecure = func(string) bool { return false }
	}
	if cfg.Reserved == nil {
		cfg.Reserved = func(string, string) bool { return false }
	}
	if cfg.QUICConfig == nil {
		cfg.QUICConfig = func(uint64) *quic.Config { return &quic.Config{} }
	}
	u := &Upstream{cfg: cfg, usessions: utls.NewLRUClientSessionCache(1024)}
	u.dialer = net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	roots := cfg.Roots
	var err error
	if u.secure, err = u.newTLSTransport(roots, false); err != nil {
		return nil, err
	}
	if u.lax, err = u.newTLSTransport(roots, true); err != nil {
		return nil, err
	}
	switch cfg.Proto {
	case "auto":
		u.secureH1 = u.newH1Transport(roots, false)
		u.laxH1 = u.newH1Transport(roots, true)
		u.h1TLS = [2]*tls.Config{u.secureH1.(*http.Transport).TLSClientConfig, u.laxH1.(*http.Transport).TLSClientConfig}
	case "h1":
		u.h1TLS = [2]*tls.Config{u.secure.(*http.Transport).TLSClientConfig, u.lax.(*http.Transport).TLSClientConfig}
	}
	u.plain = u.baseTransport()
	u.closer = append(u.closer, u.plain.CloseIdleConnections)
	u.h3 = newH3Pool(u)
	u.closer = append(u.closer, u.h3.close, u.idle.close, u.closeMirrors)
	return u, nil
}

func (u *Upstream) baseTransport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil, // never chain to the system proxy: it may be us
		DialContext:            u.DialContext,
		TLSHandshakeTimeout:    u.cfg.TLSTimeout,
		ResponseHeaderTimeout:  u.cfg.ResponseTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
		DisableCompression:     true, // relay bodies as the origin encoded them
		MaxResponseHeaderBytes: int64(u.cfg.MaxHeaderBytes),
	}
}

func (u *Upstream) newTLSTransport(roots *x509.CertPool, insecure bool) (http.RoundTripper, error) {
	tlsConf := &tls.Config{
		RootCAs:            roots,
		InsecureSkipVerify: insecure, // only for hosts the user listed in --upstream-insecure
		ClientSessionCache: tls.NewLRUClientSessionCache(1024),
		KeyLogWriter:       u.cfg.KeyLog,
	}
	if insecure {
		u.laxTLS = tlsConf.Clone()
	} else {
		u.secureTLS = tlsConf.Clone()
	}
	switch u.cfg.Proto {
	case "h2":
		tlsConf.NextProtos = []string{"h2"}
		t := &http2.Transport{
			TLSClientConfig:   tlsConf,
			MaxHeaderListSize: uint32(u.cfg.MaxHeaderBytes),
			ReadIdleTimeout:   30 * time.Second,
			DialTLSContext: func(ctx context.Context, network, addr string, cfg *tls.Config) (net.Conn, error) {
				raw, err := u.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				host, _, _ := net.SplitHostPort(addr)
				c := cfg.Clone()
				if c.ServerName == "" {
					c.ServerName = host
				}
				tc := tls.Client(raw, c)
				hctx, cancel := context.WithTimeout(ctx, u.cfg.TLSTimeout)
				defer cancel()
				trace := httptrace.ContextClientTrace(ctx)
				if trace != nil && trace.TLSHandshakeStart != nil {
					trace.TLSHandshakeStart()
				}
				err = tc.HandshakeContext(hctx)
				if trace != nil && trace.TLSHandshakeDone != nil {
					trace.TLSHandshakeDone(tc.ConnectionState(), err)
				}
				if err != nil {
					raw.Close()
					return nil, fmt.Errorf("offering only HTTP/2 (--upstream-proto h2): %w", err)
				}
				if tc.ConnectionState().NegotiatedProtocol != "h2" {
					tc.Close()
					return nil, fmt.Errorf("the origin does not speak HTTP/2 (ALPN %q) and --upstream-proto h2 forces it", tc.ConnectionState().NegotiatedProtocol)
				}
				if u.cfg.TapH2 != nil {
					return u.cfg.TapH2(tc, ConnID(tc)), nil
				}
				return tc, nil
			},
		}
		u.closer = append(u.closer, t.CloseIdleConnections)
		return t, nil
	case "h1":
		return u.newH1Transport(roots, insecure), nil
	default: // auto: let ALPN decide, with x/net/http2 serving h2
		tlsConf.NextProtos = []string{"h2", "http/1.1"}
		t := u.baseTransport()
		t.TLSClientConfig = tlsConf
		h2, err := http2.ConfigureTransports(t)
		if err != nil {
			return nil, err
		}
		h2.MaxHeaderListSize = uint32(u.cfg.MaxHeaderBytes)
		h2.ReadIdleTimeout = 30 * time.Second
		if u.cfg.TapH2 != nil {
			// Tap h2 connections: hand net/http a per-connection round tripper over the
			// tapped conn instead of x/net's pool (net/http keeps h2 conns in its own pool
			// and retries elsewhere when one is unusable).
			t.TLSNextProto["h2"] = func(authority string, c *tls.Conn) http.RoundTripper {
				tap := u.cfg.TapH2(c, ConnID(c))
				cc, err := h2.NewClientConn(tap)
				if err != nil {
					c.Close()
					return h2Erring{err}
				}
				return &h2Alt{cc: cc, conn: tap, stale: u.cfg.Stale}
			}
		}
		u.closer = append(u.closer, t.CloseIdleConnections)
		return t, nil
	}
}

// newH1Transport is a TLS transport whose ALPN offers only http/1.1.
func (u *Upstream) newH1Transport(roots *x509.CertPool, insecure bool) *http.Transport {
	t := u.baseTransport()
	t.TLSClientConfig = &tls.Config{
		RootCAs:            roots,
		InsecureSkipVerify: insecure, // only for hosts the user listed in --upstream-insecure
		ClientSessionCache: tls.NewLRUClientSessionCache(1024),
		NextProtos:         []string{"http/1.1"},
		KeyLogWriter:       u.cfg.KeyLog,
	}
	u.closer = append(u.closer, t.CloseIdleConnections)
	return t
}

// Close closes the idle connections of every transport.
func (u *Upstream) Close() {
	for _, f := range u.closer {
		f()
	}
}

// trackedConn numbers upstream connections so sessions can say which one they used.
type trackedConn struct {
	net.Conn
	id    uint64
	hello *fingerprint.Recorder // the ClientHello written on it
	// mirror says how its ClientHello was made (Opening.Mirror).
	mirror string
	fp     atomic.Pointer[any] // Remember's value
}

func (c *trackedConn) Write(p []byte) (int, error) {
	if !c.hello.Done() {
		if len(p) > 0 && p[0] != 0x16 {
			c.hello.Stop() // not TLS: nothing to record
		} else {
			c.hello.Add(p)
		}
	}
	return c.Conn.Write(p)
}

// DialContext dials an origin over TCP (refusing reserved addresses); the connection is
// numbered for ConnID.
func (u *Upstream) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if u.cfg.Reserved(host, port) {
		return nil, ErrReserved
	}
	c, err := u.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if ra, ok := c.RemoteAddr().(*net.TCPAddr); ok && u.cfg.Reserved(ra.IP.String(), strconv.Itoa(ra.Port)) {
		c.Close()
		return nil, ErrReserved
	}
	return &trackedConn{Conn: c, id: u.nextConnID(), hello: fingerprint.NewRecorder(fingerprint.MaxHello, fingerprint.HelloComplete)}, nil
}

// nextConnID numbers upstream connections (TCP and QUIC) for session.Conn.ConnID.
func (u *Upstream) nextConnID() uint64 {
	u.idMu.Lock()
	defer u.idMu.Unlock()
	u.ids++
	return u.ids
}

// ConnID is the number of an upstream connection (unwrapping TLS and taps through their
// NetConn method), 0 for one the upstream did not dial.
func ConnID(c net.Conn) uint64 {
	for range 4 {
		switch t := c.(type) {
		case *trackedConn:
			return t.id
		case interface{ NetConn() net.Conn }:
			c = t.NetConn()
		default:
			return 0
		}
	}
	return 0
}

// ConnTrace is told about a round trip what the request context's httptrace.ClientTrace
// cannot be told: the HTTP/3 transport's connection (a QUIC connection is no net.Conn,
// so GotConn cannot carry it) and when its request was written. Its methods may run on
// the transport's goroutines.
type ConnTrace interface {
	ConnGot(id uint64, remote string, reused bool)
	RequestWritten()
}

// RoundTrip picks the transport for req and runs it, reporting to tr and the context's
// httptrace; reason says why the protocol was chosen when that is worth recording
// (session.Conn.ProtoReason). HTTPS origins go over HTTP/3 when --upstream-proto h3
// forces it, or in auto mode once the origin advertised h3 with Alt-Svc (falling back to
// TCP when QUIC cannot connect).
// mirrorH1 asks auto mode to send the request over HTTP/1.1 because its client spoke
// HTTP/1.1, so the origin sees what it would have seen without the proxy. pin, when not
// nil, is the client connection's own origin connection (h1.go): a request that goes over
// HTTP/1.1 and may take the lighter path runs on it instead of the Transport's pool.
//
// m, when not nil, is the client's ClientHello for the origin connection to mirror
// (mirror.go); HTTP/3 does not mirror.
func (u *Upstream) RoundTrip(req *http.Request, tr ConnTrace, mirrorH1 bool, pin *Pinned, m *Mirror) (resp *http.Response, reason string, err error) {
	var rt http.RoundTripper = u.plain
	var authority string
	insecure := false
	h1 := true // the request goes over HTTP/1.1 if it goes over TCP
	mode := u.cfg.Proto
	if (mode == "h3" || mode == "auto") && req.Header.Get("Upgrade") != "" {
		// HTTP/3 cannot carry an HTTP/1.1 Upgrade (WebSocket): such requests go over TCP.
		mode = "tcp"
	}
	if req.URL.Scheme == "https" {
		rt = u.secure
		tlsConf := u.secureTLS
		insecure = u.cfg.Insecure(req.URL.Hostname())
		h1 = u.cfg.Proto == "h1" || (mirrorH1 && u.secureH1 != nil)
		if insecure {
			rt, tlsConf = u.lax, u.laxTLS
		}
		if mirrorH1 && u.secureH1 != nil {
			rt = u.secureH1
			if insecure {
				rt = u.laxH1
			}
		}
		authority = req.URL.Host
		if req.URL.Port() == "" {
			authority = net.JoinHostPort(req.URL.Hostname(), "443")
		}
		switch mode {
		case "h3":
			reason = reasonForcedH3
			if resp, err = u.h3.roundTrip(req, authority, tlsConf, tr); err != nil {
				return nil, "", err
			}
		case "auto":
			if addr, ok := u.altSvc.lookup(authority, time.Now()); ok {
				resp, err = u.h3.roundTrip(req, addr, tlsConf, tr)
				var de *errQUICDial
				switch {
				case err == nil:
					reason = reasonAltSvc
				case errors.As(err, &de) && req.Context().Err() == nil:
					u.altSvc.markBroken(authority, time.Now())
					reason = "QUIC to " + addr + " failed (" + de.err.Error() + "); fell back to TCP"
					resp, err = nil, nil
				default:
					return nil, "", err
				}
			}
		}
	}
	if resp == nil {
		pinned := false
		if pin != nil && h1 && pinnable(req) {
			hostport := authority
			if hostport == "" {
				hostport = req.URL.Host
				if req.URL.Port() == "" {
					hostport = net.JoinHostPort(req.URL.Hostname(), "80")
				}
			}
			resp, pinned, err = u.roundTripPinned(pin, req, insecure, hostport, m)
		}
		if !pinned {
			if m != nil && authority != "" {
				alpn := []string{"h2", "http/1.1"}
				switch {
				case h1, req.Header.Get("Upgrade") != "":
					// An Upgrade (WebSocket) needs HTTP/1.1, as net/http has it.
					alpn = []string{"http/1.1"}
				case u.cfg.Proto == "h2":
					alpn = []string{"h2"}
				}
				rt = u.mirrorPool(m, insecure, alpn)
			}
			resp, err = rt.RoundTrip(req)
		}
		if err != nil {
			return nil, "", err
		}
		if mode == "auto" && authority != "" {
			u.altSvc.learn(authority, resp.Header.Values("Alt-Svc"), time.Now())
		}
		if mode == "tcp" && u.cfg.Proto == "h3" {
			reason = "an Upgrade request (WebSocket) needs HTTP/1.1 over TCP, not h3"
		}
	}
	return resp, reason, nil
}

// h2Alt is the round tripper net/http keeps for one tapped upstream h2 connection. It
// reports GotConn itself: net/http does not for connections it hands to an alternate
// protocol, and x/net reports it only from its own pool.
type h2Alt struct {
	cc     *http2.ClientConn
	conn   net.Conn
	stale  func(net.Conn) bool
	used   atomic.Bool
	retire sync.Once
}

func (a *h2Alt) RoundTrip(req *http.Request) (*http.Response, error) {
	if a.retired() || !a.cc.ReserveNewRequest() {
		return nil, errH2Unusable{}
	}
	if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: a.conn, Reused: a.used.Swap(true)})
	} else {
		a.used.Store(true)
	}
	return a.cc.RoundTrip(req)
}

// retired reports whether the tapped connection takes no new requests (Config.Stale; for
// frame capture: its tap saw capture off and passes bytes through for good, so it can no
// longer record): net/http then dials a fresh one, and this one is shut down once its
// streams end.
func (a *h2Alt) retired() bool {
	if a.stale == nil || !a.stale(a.conn) {
		return false
	}
	a.retire.Do(func() {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if a.cc.Shutdown(ctx) != nil {
				a.cc.Close()
			}
		}()
	})
	return true
}

// errH2Unusable tells net/http to retry on another connection (it looks for the
// IsHTTP2NoCachedConnError method).
type errH2Unusable struct{}

func (errH2Unusable) Error() string                                { return "http2: connection cannot take new requests" }
func (errH2Unusable) IsHTTP2NoCachedConnError()                    {}
func (e h2Erring) RoundTrip(*http.Request) (*http.Response, error) { return nil, e.err }

type h2Erring struct{ err error }

// Dialer is the dialer of every TCP connection to an origin. Its settings may be changed
// before the first request (tests keep dials on the machine with Resolver and Control);
// the QUIC side resolves with net.DefaultResolver.
func (u *Upstream) Dialer() *net.Dialer { return &u.dialer }
