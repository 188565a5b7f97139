package engine

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"inspector/engine/session"
)

// upstream holds the transports towards origins and the reverse proxy that drives them.
type upstream struct {
	e      *Engine
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
	closer            []func()
	proxy             *httputil.ReverseProxy
	ids               uint64
	idMu              sync.Mutex

	tlsInfos tlsCache
}

// errReserved is returned when a request would reach the proxy's own addresses.
var errReserved = errors.New("refusing to connect to Inspector's own address (proxy loop or control API)")

func newUpstream(e *Engine) (*upstream, error) {
	u := &upstream{e: e}
	u.dialer = net.Dialer{Timeout: e.cfg.DialTimeout, KeepAlive: 30 * time.Second}
	roots := e.cfg.UpstreamRoots
	if roots == nil {
		var err error
		if roots, err = x509.SystemCertPool(); err != nil {
			return nil, fmt.Errorf("system roots: %w", err)
		}
	}
	var err error
	if u.secure, err = u.newTLSTransport(roots, false); err != nil {
		return nil, err
	}
	if u.lax, err = u.newTLSTransport(roots, true); err != nil {
		return nil, err
	}
	if e.cfg.UpstreamProto == "auto" {
		u.secureH1 = u.newH1Transport(roots, false)
		u.laxH1 = u.newH1Transport(roots, true)
	}
	u.plain = u.baseTransport()
	u.closer = append(u.closer, u.plain.CloseIdleConnections)
	u.h3 = newH3Pool(u)
	u.closer = append(u.closer, u.h3.close)
	u.proxy = &httputil.ReverseProxy{
		Rewrite:        u.rewrite,
		Transport:      u,
		BufferPool:     bufPool{},
		ErrorHandler:   u.handleError,
		ModifyResponse: u.modifyResponse,
		ErrorLog:       log.New(logWriter{e.cfg.Logf}, "", 0),
	}
	return u, nil
}

func (u *upstream) baseTransport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil, // never chain to the system proxy: it may be us
		DialContext:            u.dialContext,
		TLSHandshakeTimeout:    u.e.cfg.TLSTimeout,
		ResponseHeaderTimeout:  u.e.cfg.ResponseTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
		DisableCompression:     true, // relay bodies as the origin encoded them
		MaxResponseHeaderBytes: maxHeaderBytes,
	}
}

func (u *upstream) newTLSTransport(roots *x509.CertPool, insecure bool) (http.RoundTripper, error) {
	tlsConf := &tls.Config{
		RootCAs:            roots,
		InsecureSkipVerify: insecure, // only for hosts the user listed in --upstream-insecure
		ClientSessionCache: tls.NewLRUClientSessionCache(1024),
	}
	if insecure {
		u.laxTLS = tlsConf.Clone()
	} else {
		u.secureTLS = tlsConf.Clone()
	}
	switch u.e.cfg.UpstreamProto {
	case "h2":
		tlsConf.NextProtos = []string{"h2"}
		t := &http2.Transport{
			TLSClientConfig:   tlsConf,
			MaxHeaderListSize: maxHeaderBytes,
			ReadIdleTimeout:   30 * time.Second,
			DialTLSContext: func(ctx context.Context, network, addr string, cfg *tls.Config) (net.Conn, error) {
				raw, err := u.dialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				host, _, _ := net.SplitHostPort(addr)
				c := cfg.Clone()
				if c.ServerName == "" {
					c.ServerName = host
				}
				tc := tls.Client(raw, c)
				hctx, cancel := context.WithTimeout(ctx, u.e.cfg.TLSTimeout)
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
				if u.e.cfg.FrameSink != nil {
					return u.e.newH2Tap(tc, legUpstream, connIDOf(tc)), nil
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
		h2.MaxHeaderListSize = maxHeaderBytes
		h2.ReadIdleTimeout = 30 * time.Second
		if u.e.cfg.FrameSink != nil {
			// Tap h2 connections: hand net/http a per-connection round tripper over the
			// tapped conn instead of x/net's pool (net/http keeps h2 conns in its own pool
			// and retries elsewhere when one is unusable).
			t.TLSNextProto["h2"] = func(authority string, c *tls.Conn) http.RoundTripper {
				tap := u.e.newH2Tap(c, legUpstream, connIDOf(c))
				cc, err := h2.NewClientConn(tap)
				if err != nil {
					c.Close()
					return h2Erring{err}
				}
				return &h2Alt{cc: cc, conn: tap}
			}
		}
		u.closer = append(u.closer, t.CloseIdleConnections)
		return t, nil
	}
}

// newH1Transport is a TLS transport whose ALPN offers only http/1.1.
func (u *upstream) newH1Transport(roots *x509.CertPool, insecure bool) *http.Transport {
	t := u.baseTransport()
	t.TLSClientConfig = &tls.Config{
		RootCAs:            roots,
		InsecureSkipVerify: insecure, // only for hosts the user listed in --upstream-insecure
		ClientSessionCache: tls.NewLRUClientSessionCache(1024),
		NextProtos:         []string{"http/1.1"},
	}
	u.closer = append(u.closer, t.CloseIdleConnections)
	return t
}

// mirrorsH1 says whether auto mode sends req over HTTP/1.1 because its client spoke
// HTTP/1.1: the origin then sees what it would have seen without the proxy, as with
// mitmproxy and HTTP Toolkit. HTTP/2 and HTTP/3 clients, and Send (the composer and
// replay, which behave like a current browser), get ALPN's choice of h2 or http/1.1.
func (u *upstream) mirrorsH1(req *http.Request) bool {
	if u.secureH1 == nil || req.ProtoMajor != 1 {
		return false
	}
	_, sent := req.Context().Value(sendKey{}).(*sendState)
	return !sent
}

func (u *upstream) close() {
	for _, f := range u.closer {
		f()
	}
}

// trackedConn numbers upstream connections so sessions can say which one they used.
type trackedConn struct {
	net.Conn
	id uint64
}

func (u *upstream) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if u.e.isReserved(host, port) {
		return nil, errReserved
	}
	c, err := u.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if ra, ok := c.RemoteAddr().(*net.TCPAddr); ok && u.e.isReserved(ra.IP.String(), strconv.Itoa(ra.Port)) {
		c.Close()
		return nil, errReserved
	}
	return &trackedConn{Conn: c, id: u.nextConnID()}, nil
}

// nextConnID numbers upstream connections (TCP and QUIC) for session.Conn.ConnID.
func (u *upstream) nextConnID() uint64 {
	u.idMu.Lock()
	defer u.idMu.Unlock()
	u.ids++
	return u.ids
}

func connIDOf(c net.Conn) uint64 {
	if tp, ok := c.(*h2Tap); ok {
		c = tp.Conn
	}
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if t, ok := c.(*trackedConn); ok {
		return t.id
	}
	return 0
}

func (e *Engine) isReserved(host, port string) bool {
	host, port = canonicalHostPort(host, port)
	if e.reserved[net.JoinHostPort(host, port)] {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified()) && e.reservedLoopPorts[port]
}

// rewrite points the outgoing request at the exchange's target and keeps the request as
// the client sent it (forwarding headers and query untouched).
func (u *upstream) rewrite(pr *httputil.ProxyRequest) {
	x := exchangeFrom(pr.In.Context())
	if !pr.In.URL.IsAbs() {
		pr.Out.URL.Scheme = x.scheme
		pr.Out.URL.Host = x.upstreamURLHost()
	}
	pr.Out.Host = pr.In.Host
	if x.info.reverse {
		pr.Out.Host = "" // reverse mode: the origin gets its own name
	}
	// Clone gave Out a copy of the trailer map taken before the body arrived; share the
	// map the server fills at the end of the body so request trailers reach the origin.
	pr.Out.Trailer = pr.In.Trailer
	pr.Out.URL.RawQuery = pr.In.URL.RawQuery
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v, ok := pr.In.Header[k]; ok {
			pr.Out.Header[k] = v
		}
	}
}

// RoundTrip picks the transport for the request and taps the response. HTTPS origins go
// over HTTP/3 when --upstream-proto h3 forces it, or in auto mode once the origin
// advertised h3 with Alt-Svc (falling back to TCP when QUIC cannot connect).
func (u *upstream) RoundTrip(req *http.Request) (*http.Response, error) {
	var rt http.RoundTripper = u.plain
	var resp *http.Response
	var err error
	var reason, authority string
	mode := u.e.cfg.UpstreamProto
	if (mode == "h3" || mode == "auto") && req.Header.Get("Upgrade") != "" {
		// HTTP/3 cannot carry an HTTP/1.1 Upgrade (WebSocket): such requests go over TCP.
		mode = "tcp"
	}
	if req.URL.Scheme == "https" {
		rt = u.secure
		tlsConf := u.secureTLS
		insecure := matchAny(u.e.cfg.UpstreamInsecure, req.URL.Hostname())
		if insecure {
			rt, tlsConf = u.lax, u.laxTLS
		}
		if u.mirrorsH1(req) {
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
			if resp, err = u.h3.roundTrip(req, authority, tlsConf); err != nil {
				return nil, err
			}
		case "auto":
			if addr, ok := u.altSvc.lookup(authority, time.Now()); ok {
				resp, err = u.h3.roundTrip(req, addr, tlsConf)
				var de *errQUICDial
				switch {
				case err == nil:
					reason = reasonAltSvc
				case errors.As(err, &de) && req.Context().Err() == nil:
					u.altSvc.markBroken(authority, time.Now())
					reason = "QUIC to " + addr + " failed (" + de.err.Error() + "); fell back to TCP"
					resp, err = nil, nil
				default:
					return nil, err
				}
			}
		}
	}
	if resp == nil {
		if resp, err = rt.RoundTrip(req); err != nil {
			return nil, err
		}
		if mode == "auto" && authority != "" {
			u.altSvc.learn(authority, resp.Header.Values("Alt-Svc"), time.Now())
		}
		if mode == "tcp" && u.e.cfg.UpstreamProto == "h3" {
			reason = "an Upgrade request (WebSocket) needs HTTP/1.1 over TCP, not h3"
		}
	}
	x := exchangeFrom(req.Context())
	if x == nil || x.s == nil {
		return resp, nil
	}
	x.gotResponse(resp)
	x.s.Upstream.ProtoReason = reason
	if rec := u.e.upstreamRec(x.s.Upstream.ConnID); rec != nil {
		rec.link(x.s.ID, req.Method, req.URL.RequestURI())
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		if rwc, ok := resp.Body.(io.ReadWriteCloser); ok {
			x.ws = u.e.newWSTapFor(rwc, x.s, req)
			resp.Body = x.ws
		}
		return resp, nil
	}
	x.respCap = u.e.newCapture(resp.Body, resp.ContentLength, x.s.ID, "response", func() http.Header { return resp.Trailer })
	resp.Body = x.respCap
	x.cw.hold = true // a body failing before its first byte gets a 502 (answerBrokenBody)
	return resp, nil
}

func (u *upstream) modifyResponse(resp *http.Response) error {
	if len(resp.Trailer) > 0 {
		// An h2 origin may send a Content-Length together with trailers; an HTTP/1.1
		// client can only get trailers with chunked encoding, so drop the length.
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
	}
	x := exchangeFrom(resp.Request.Context())
	if x == nil || x.s == nil {
		return nil
	}
	hooks := *u.e.respHooks.Load()
	if len(hooks) > 0 {
		f := &Flow{Session: x.s, Request: resp.Request, Response: resp}
		for _, h := range hooks {
			if err := h.OnResponse(resp.Request.Context(), f); err != nil {
				return fmt.Errorf("response hook: %w", err)
			}
		}
		if err := f.resume(resp.Request.Context()); err != nil {
			return fmt.Errorf("response hook: %w", err)
		}
		if resp.Body != io.ReadCloser(x.respCap) && resp.Body != nil && x.ws == nil {
			// A hook replaced the body: capture what the client really gets.
			x.respCap.releaseBudget()
			x.respCap = u.e.newCapture(resp.Body, resp.ContentLength, x.s.ID, "response", func() http.Header { return resp.Trailer })
			resp.Body = x.respCap
		}
		if x.s.Response != nil {
			x.s.Response.Status = resp.StatusCode
			x.s.Response.Reason = hookReason(resp)
			x.s.Response.Header = resp.Header
		}
	}
	u.e.peekable(x)
	u.e.publish(Event{Kind: EventUpdate, Summary: inflight(x.s)})
	return nil
}

func (u *upstream) handleError(w http.ResponseWriter, r *http.Request, err error) {
	x := exchangeFrom(r.Context())
	if x == nil {
		writeProxyError(w, http.StatusBadGateway, "Inspector could not reach the origin: "+err.Error())
		return
	}
	x.handleError(w, r, err)
}

// traceState collects httptrace events. Callbacks may run on the transport's dial
// goroutines, even after the handler returned, hence the lock and the done flag.
type traceState struct {
	mu                                           sync.Mutex
	done                                         bool
	dnsStart, dnsDone, connStart, connDone       time.Time
	tlsStart, tlsDone, wrote, firstByte, gotConn time.Time
	dnsErr, connErr, tlsErr, wroteErr            error
	reused                                       bool
	connID                                       uint64
	remote                                       string
}

func (t *traceState) with(f func()) {
	t.mu.Lock()
	if !t.done {
		f()
	}
	t.mu.Unlock()
}

func (t *traceState) clientTrace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart: func(httptrace.DNSStartInfo) { t.with(func() { t.dnsStart = time.Now() }) },
		DNSDone: func(i httptrace.DNSDoneInfo) {
			t.with(func() { t.dnsDone, t.dnsErr = time.Now(), i.Err })
		},
		ConnectStart: func(string, string) {
			t.with(func() {
				if t.connStart.IsZero() {
					t.connStart = time.Now()
				}
			})
		},
		ConnectDone: func(_, _ string, err error) {
			t.with(func() {
				if err == nil || t.connDone.IsZero() {
					t.connDone, t.connErr = time.Now(), err
				}
			})
		},
		TLSHandshakeStart: func() { t.with(func() { t.tlsStart = time.Now() }) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			t.with(func() { t.tlsDone, t.tlsErr = time.Now(), err })
		},
		GotConn: func(i httptrace.GotConnInfo) {
			t.with(func() {
				t.gotConn, t.reused = time.Now(), i.Reused
				t.connID = connIDOf(i.Conn)
				t.remote = i.Conn.RemoteAddr().String()
			})
		},
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			t.with(func() { t.wrote, t.wroteErr = time.Now(), i.Err })
		},
		GotFirstResponseByte: func() { t.with(func() { t.firstByte = time.Now() }) },
	}
}

// finish copies the timings into tm and ignores later callbacks.
func (t *traceState) finish(tm *session.Timings) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	tm.DNSStart, tm.DNSDone = t.dnsStart, t.dnsDone
	tm.ConnectStart, tm.ConnectDone = t.connStart, t.connDone
	if t.tlsErr == nil {
		tm.UpstreamTLSDone = t.tlsDone
	}
	tm.RequestSent = t.wrote
	if !t.firstByte.IsZero() {
		tm.FirstByte = t.firstByte
	}
}

// phase says how far the round trip got.
func (t *traceState) phase() session.Phase {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case !t.wrote.IsZero():
		return session.PhaseResponse
	case !t.gotConn.IsZero():
		return session.PhaseSend
	case !t.tlsStart.IsZero():
		return session.PhaseTLS
	case !t.connStart.IsZero():
		return session.PhaseDial
	case !t.dnsStart.IsZero():
		return session.PhaseDNS
	}
	return session.PhaseDial
}

// classify turns a round-trip error into a session error with a phase and a clear reason.
func (t *traceState) classify(err error, target string) *session.Error {
	se := &session.Error{Side: session.SideUpstream, Phase: t.phase(), Message: err.Error()}
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.Is(err, errReserved):
		se.Phase, se.Side = session.PhaseDial, session.SideProxy
	case errors.As(err, &dnsErr):
		se.Phase = session.PhaseDNS
		se.Message = "DNS lookup failed: " + dnsErr.Error()
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &invalid):
		se.Phase = session.PhaseTLS
		se.Message = "the origin's certificate did not verify: " + err.Error()
	case se.Phase == session.PhaseTLS:
		se.Message = "TLS handshake with the origin failed: " + err.Error()
	case se.Phase == session.PhaseDial:
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			se.Message = "could not connect to " + target + ": " + op.Err.Error()
		}
	case se.Phase == session.PhaseResponse && isTimeout(err):
		se.Message = "the origin sent no response head in time: " + err.Error()
	}
	return se
}

// classifyDial is classify for a bare dial (tunnels).
func classifyDial(err error) *session.Error {
	var t traceState
	t.connStart = time.Now()
	var dnsErr *net.DNSError
	se := t.classify(err, "")
	if errors.As(err, &dnsErr) {
		se.Phase = session.PhaseDNS
	}
	return se
}

// h2Alt is the round tripper net/http keeps for one tapped upstream h2 connection. It
// reports GotConn itself: net/http does not for connections it hands to an alternate
// protocol, and x/net reports it only from its own pool.
type h2Alt struct {
	cc     *http2.ClientConn
	conn   net.Conn
	used   atomic.Bool
	retire sync.Once
}

func (a *h2Alt) RoundTrip(req *http.Request) (*http.Response, error) {
	if a.stale() || !a.cc.ReserveNewRequest() {
		return nil, errH2Unusable{}
	}
	if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: a.conn, Reused: a.used.Swap(true)})
	} else {
		a.used.Store(true)
	}
	return a.cc.RoundTrip(req)
}

// stale reports whether the connection can no longer record frames while capture is on:
// its tap saw capture off and passes bytes through for good (the HPACK state it did not
// follow makes later header blocks undecodable). Such a connection takes no new requests
// (net/http dials a fresh, recorded one) and is shut down once its streams end.
func (a *h2Alt) stale() bool {
	tap, ok := a.conn.(*h2Tap)
	if !ok || !tap.off.Load() || !tap.rec.e.capture.Load() {
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

// bufPool pools the 32 KiB copy buffers of the reverse proxy and tunnels.
type bufPool struct{}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufPool) Get() []byte  { return *(copyBufs.Get().(*[]byte)) }
func (bufPool) Put(b []byte) { copyBufs.Put(&b) }

func copyBuffered(dst io.Writer, src io.Reader) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	return io.CopyBuffer(dst, src, *bp)
}
