package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"time"

	utls "github.com/refraction-networking/utls"
	"golang.org/x/net/http2"

	"inspector/engine/internal/fingerprint"
)

// Mirroring the client's ClientHello. A request whose context carries a Mirror (the
// client connection's parsed ClientHello, WithMirror) goes over an origin connection
// whose ClientHello is built from the client's with utls: cipher suites, extensions
// and their order, groups, key shares, signature algorithms, ALPN, GREASE positions,
// compression and record-size limit. Connections are pooled per mirror key (the JA4 and
// groups of the hello: a browser that shuffles its extensions per connection still
// shares one pool) and per origin, apart from Go's own pool.
//
// What cannot be reproduced falls back to Go's ClientHello, and the reason is kept on
// the connection (Opening): an extension utls does not know, a group it cannot make a
// key share for. Certificates are verified as on Go's path (Roots, the request's host as
// ServerName; --upstream-insecure hosts excepted).

// Mirror is the ClientHello a request's origin connection copies (RoundTrip's m).
type Mirror struct {
	Hello *fingerprint.Hello
	// Key groups the connections that may carry the request: equal keys, equal hellos
	// up to extension order and GREASE values.
	Key string
}

// NewMirror prepares h for mirroring.
func NewMirror(h *fingerprint.Hello) *Mirror {
	return &Mirror{Hello: h, Key: h.JA4() + "|" + fmt.Sprint(h.Groups, h.KeyShares, h.ALPN, h.Versions)}
}

// Reasons recorded on a connection that did not mirror.
const (
	ReasonMirrored = "mirrored"
)

// spec builds the utls spec of m offering alpn (nil: as the client did), or says why it
// cannot. note tells what was changed (empty: nothing).
func (m *Mirror) spec(alpn []string) (spec *utls.ClientHelloSpec, note string, err error) {
	// A pre_shared_key names a session with Inspector, not with the origin, and early
	// data would go with it: the client's are left out. In the client's place goes
	// utls's own pre_shared_key, last as the client had it, filled from the session
	// cache when Inspector holds a session with the origin (and omitted when it does
	// not, as a client without one would send none): a client that resumed with
	// Inspector resumes with the origin too.
	resumed := slices.Contains(m.Hello.Extensions, 0x0029)
	raw := m.Hello.Without(0x0029, 0x002a)
	if slices.Contains(m.Hello.Extensions, 0x002a) {
		note = "early_data left out (no 0-RTT towards the origin)"
	}
	f := &utls.Fingerprinter{}
	for _, id := range m.Hello.Extensions {
		if utls.ExtensionFromID(id) != nil {
			continue
		}
		if !bluntOK[id] {
			return nil, "", fmt.Errorf("utls cannot reproduce extension %d", id)
		}
		// Sent as the client sent it: the extension asks nothing of the client
		// implementation in TLS 1.3 (see bluntOK).
		f.AllowBluntMimicry = true
	}
	spec, err = f.FingerprintClientHello(raw)
	if err != nil {
		return nil, "", fmt.Errorf("utls cannot reproduce the ClientHello: %w", err)
	}
	if resumed {
		spec.Extensions = append(spec.Extensions, &utls.UtlsPreSharedKeyExtension{})
	}
	for _, e := range spec.Extensions {
		if ks, ok := e.(*utls.KeyShareExtension); ok {
			if n := oneClassicalShare(ks); n != "" {
				note = join(note, n)
			}
		}
	}
	if alpn != nil {
		for _, e := range spec.Extensions {
			if a, ok := e.(*utls.ALPNExtension); ok && !subset(a.AlpnProtocols, alpn) {
				a.AlpnProtocols = slices.DeleteFunc(a.AlpnProtocols, func(p string) bool { return !slices.Contains(alpn, p) })
				if len(a.AlpnProtocols) == 0 {
					a.AlpnProtocols = alpn
				}
				note = join(note, "ALPN narrowed to "+strings.Join(a.AlpnProtocols, ",")+" (what the upstream transport speaks)")
			}
			if a, ok := e.(*utls.ALPNExtension); ok && len(alpn) > 1 && !slices.Contains(a.AlpnProtocols, "http/1.1") {
				// An HTTP/2-only client (a gRPC or x/net client) to an origin that may speak
				// only HTTP/1.1: Inspector can carry the request either way, so it offers
				// both, as it does with Go's ClientHello (JA4 reads the first protocol only).
				a.AlpnProtocols = append(a.AlpnProtocols, "http/1.1")
				note = join(note, "http/1.1 added to ALPN (the origin may not speak h2)")
			}
		}
	}
	return spec, note, nil
}

// bluntOK are the extensions utls does not implement that are copied byte for byte:
// encrypt_then_mac (22, OpenSSL's curl and others: empty, and it changes only TLS 1.2
// CBC suites) and post_handshake_auth (49: empty, TLS 1.3; an origin that asks for a
// certificate after the handshake gets an error, as it would from Go), and Chromium's
// trust anchor identifiers (0xca34, an experiment: a list of the client's trust anchors,
// which an origin may use to pick its certificate chain; the chain is still verified
// against Inspector's roots).
var bluntOK = map[uint16]bool{22: true, 49: true, 0xca34: true}

// oneClassicalShare keeps one classical (ECDHE) key share in ks when the client sent
// several (GnuTLS sends secp256r1 and x25519): utls holds the private key of one only,
// so an origin picking another fails the handshake ("invalid server key share"). X25519
// stays when offered, else the first; the other groups stay in supported_groups (an
// origin that wants one asks for it with a HelloRetryRequest). JA3 and JA4 do not read
// key shares. It returns the note to record, "" when nothing changed.
func oneClassicalShare(ks *utls.KeyShareExtension) string {
	var classical []utls.CurveID
	for _, k := range ks.KeyShares {
		if !isGREASE(uint16(k.Group)) && k.Group != utls.X25519MLKEM768 && k.Group != utls.X25519Kyber768Draft00 {
			classical = append(classical, k.Group)
		}
	}
	if len(classical) < 2 {
		return ""
	}
	keep := classical[0]
	if slices.Contains(classical, utls.X25519) {
		keep = utls.X25519
	}
	ks.KeyShares = slices.DeleteFunc(ks.KeyShares, func(k utls.KeyShare) bool {
		return slices.Contains(classical, k.Group) && k.Group != keep
	})
	return fmt.Sprintf("key shares narrowed to one classical group, %v of %v (utls holds one classical key)", keep, classical)
}

func isGREASE(v uint16) bool { return v&0x0f0f == 0x0a0a && v>>8 == v&0xff }

func subset(a, of []string) bool {
	for _, p := range a {
		if !slices.Contains(of, p) {
			return false
		}
	}
	return true
}

func join(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// uConn is a utls connection with crypto/tls's ConnectionState, which x/net/http2 and
// the engine read.
type uConn struct {
	*utls.UConn
	state tls.ConnectionState
}

func (c *uConn) ConnectionState() tls.ConnectionState { return c.state }
func (c *uConn) NetConn() net.Conn                    { return c.UConn.NetConn() }

func stdState(s utls.ConnectionState) tls.ConnectionState {
	return tls.ConnectionState{
		Version:                     s.Version,
		HandshakeComplete:           s.HandshakeComplete,
		DidResume:                   s.DidResume,
		CipherSuite:                 s.CipherSuite,
		NegotiatedProtocol:          s.NegotiatedProtocol,
		NegotiatedProtocolIsMutual:  true,
		ServerName:                  s.ServerName,
		PeerCertificates:            s.PeerCertificates,
		VerifiedChains:              s.VerifiedChains,
		SignedCertificateTimestamps: s.SignedCertificateTimestamps,
		OCSPResponse:                s.OCSPResponse,
	}
}

// handshake runs the TLS handshake on raw for host: mirroring m when it is not nil and
// can be reproduced (offering alpn, nil: the client's), else with Go's cfg. It reports
// to the context's trace and records how the hello was made on raw.
func (u *Upstream) handshake(ctx context.Context, raw *trackedConn, host string, insecure bool, cfg *tls.Config, m *Mirror, alpn []string) (net.Conn, tls.ConnectionState, error) {
	trace := httptrace.ContextClientTrace(ctx)
	if trace != nil && trace.TLSHandshakeStart != nil {
		trace.TLSHandshakeStart()
	}
	hctx, cancel := ctx, context.CancelFunc(func() {})
	if u.cfg.TLSTimeout > 0 {
		hctx, cancel = context.WithTimeout(ctx, u.cfg.TLSTimeout)
	}
	defer cancel()
	var conn net.Conn
	var st tls.ConnectionState
	var err error
	var spec *utls.ClientHelloSpec
	reason := ""
	if m != nil {
		var note string
		if spec, note, err = m.spec(alpn); err != nil {
			reason, spec = "Go's ClientHello: "+err.Error(), nil
		} else {
			reason = join(ReasonMirrored, note)
		}
	}
	if spec != nil {
		uc := utls.UClient(raw, &utls.Config{
			RootCAs:            cfg.RootCAs,
			ServerName:         host,
			InsecureSkipVerify: insecure, // only for hosts the user listed in --upstream-insecure
			KeyLogWriter:       u.cfg.KeyLog,
			ClientSessionCache: u.usessions,
			NextProtos:         alpnOf(spec),
			// A hello without pre_shared_key (or session_ticket) does not resume,
			// whatever the session cache holds for the origin: utls would panic
			// instead (a client that sent session_ticket but no PSK, such as Python,
			// Java or Node after any resumable session with the origin).
			PreferSkipResumptionOnNilExtension: true,
			// The pre_shared_key put in place of the client's is left out when there is
			// no session with the origin to resume.
			OmitEmptyPsk: true,
		}, utls.HelloCustom)
		if perr := uc.ApplyPreset(spec); perr != nil {
			reason = "Go's ClientHello: utls cannot build the ClientHello: " + perr.Error()
		} else if err = uHandshake(hctx, uc); errors.Is(err, errUtlsPanic) && len(raw.hello.Bytes()) == 0 {
			// utls gave up (it panics on states it does not expect) before anything went
			// on the wire: the connection is still fresh for Go's ClientHello.
			reason, err = "Go's ClientHello: "+err.Error(), nil
		} else {
			st = stdState(uc.ConnectionState())
			conn = &uConn{UConn: uc, state: st}
		}
	}
	if conn == nil {
		c := cfg.Clone()
		if c.ServerName == "" {
			c.ServerName = host
		}
		if u.cfg.KeyLog != nil {
			c.KeyLogWriter = u.cfg.KeyLog
		}
		tc := tls.Client(raw, c)
		err = tc.HandshakeContext(hctx)
		st = tc.ConnectionState()
		conn = tc
	}
	raw.mirror = reason
	if trace != nil && trace.TLSHandshakeDone != nil {
		trace.TLSHandshakeDone(st, err)
	}
	if err != nil {
		raw.Close()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = errors.New("net/http: TLS handshake timeout")
		}
		return nil, st, err
	}
	return conn, st, nil
}

// uHandshake runs uc's handshake, turning a utls panic into an error wrapping
// errUtlsPanic.
func uHandshake(ctx context.Context, uc *utls.UConn) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errUtlsPanic, p)
		}
	}()
	return uc.HandshakeContext(ctx)
}

var errUtlsPanic = errors.New("utls panicked")

func alpnOf(spec *utls.ClientHelloSpec) []string {
	for _, e := range spec.Extensions {
		if a, ok := e.(*utls.ALPNExtension); ok {
			return a.AlpnProtocols
		}
	}
	return nil
}

// mirrorRT carries the requests of one mirror key (and one certificate policy) over
// origin connections that mirror it: HTTP/2 ones in its own pool (x/net ClientConns),
// HTTP/1.1 ones in an http.Transport of its own.
type mirrorRT struct {
	u        *Upstream
	m        *Mirror
	insecure bool
	cfg      *tls.Config
	alpn     []string // what the transports speak (h2 and/or http/1.1)
	t1       *http.Transport
	t2       *http2.Transport
	used     time.Time

	mu      sync.Mutex
	h2conns map[string][]*http2.ClientConn
	isH1    map[string]bool       // authorities that answered ALPN with http/1.1
	pending map[string][]net.Conn // dialed connections that negotiated http/1.1, for t1
	netOf   map[*http2.ClientConn]net.Conn
}

func (u *Upstream) newMirrorRT(m *Mirror, insecure bool, alpn []string) *mirrorRT {
	cfg := u.secureTLS
	if insecure {
		cfg = u.laxTLS
	}
	rt := &mirrorRT{u: u, m: m, insecure: insecure, cfg: cfg, alpn: alpn,
		h2conns: map[string][]*http2.ClientConn{}, isH1: map[string]bool{}, pending: map[string][]net.Conn{},
		netOf: map[*http2.ClientConn]net.Conn{}}
	rt.t1 = u.baseTransport()
	rt.t1.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		rt.mu.Lock()
		if q := rt.pending[addr]; len(q) > 0 {
			c := q[0]
			rt.pending[addr] = q[1:]
			rt.mu.Unlock()
			return c, nil
		}
		rt.mu.Unlock()
		c, st, err := rt.dial(ctx, addr)
		if err != nil {
			return nil, err
		}
		if st.NegotiatedProtocol == "h2" {
			c.Close()
			return nil, errH2Unusable{} // the origin changed its mind: net/http retries
		}
		return c, nil
	}
	rt.t2 = &http2.Transport{MaxHeaderListSize: uint32(u.cfg.MaxHeaderBytes), ReadIdleTimeout: 30 * time.Second}
	return rt
}

func (rt *mirrorRT) dial(ctx context.Context, addr string) (net.Conn, tls.ConnectionState, error) {
	nc, err := rt.u.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, tls.ConnectionState{}, err
	}
	host, _, _ := net.SplitHostPort(addr)
	return rt.u.handshake(ctx, nc.(*trackedConn), host, rt.insecure, rt.cfg, rt.m, rt.alpn)
}

// RoundTrip sends req over an HTTP/2 connection of the pool, or dials one; an origin
// that answers ALPN with http/1.1 gets req (and later ones) over t1.
func (rt *mirrorRT) RoundTrip(req *http.Request) (*http.Response, error) {
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "443")
	}
	for attempt := 0; ; attempt++ {
		rt.mu.Lock()
		h1 := rt.isH1[addr] || !slices.Contains(rt.alpn, "h2")
		var cc *http2.ClientConn
		if !h1 {
			conns := rt.h2conns[addr]
			conns = slices.DeleteFunc(conns, func(c *http2.ClientConn) bool {
				if c.State().Closed {
					delete(rt.netOf, c)
					return true
				}
				return false
			})
			rt.h2conns[addr] = conns
			for _, c := range conns {
				if st := rt.u.cfg.Stale; st != nil && rt.netOf[c] != nil && st(rt.netOf[c]) {
					go shutdown(c) // its frame tap can no longer record: a fresh one
					continue
				}
				if c.ReserveNewRequest() {
					cc = c
					break
				}
			}
		}
		rt.mu.Unlock()
		if h1 {
			return rt.roundTrip1(req)
		}
		reused := cc != nil
		var tapped net.Conn
		if cc == nil {
			c, st, err := rt.dial(req.Context(), addr)
			if err != nil {
				if len(rt.alpn) == 1 {
					err = fmt.Errorf("offering only HTTP/2 (--upstream-proto h2): %w", err)
				}
				return nil, err
			}
			if st.NegotiatedProtocol != "h2" {
				if slices.Contains(rt.alpn, "http/1.1") || st.NegotiatedProtocol == "" {
					rt.mu.Lock()
					rt.isH1[addr] = true
					rt.pending[addr] = append(rt.pending[addr], c)
					rt.mu.Unlock()
					return rt.roundTrip1(req)
				}
				c.Close()
				return nil, fmt.Errorf("the origin does not speak HTTP/2 (ALPN %q) and --upstream-proto h2 forces it", st.NegotiatedProtocol)
			}
			tapped = &h2RecConn{Conn: c, rec: fingerprint.NewRecorder(16<<10, fingerprint.H2Complete)}
			if rt.u.cfg.TapH2 != nil {
				tapped = rt.u.cfg.TapH2(c, ConnID(c))
			}
			if cc, err = rt.t2.NewClientConn(tapped); err != nil {
				c.Close()
				return nil, err
			}
			if !cc.ReserveNewRequest() {
				cc.Close()
				return nil, errors.New("http2: new connection took no request")
			}
			rt.mu.Lock()
			rt.h2conns[addr] = append(rt.h2conns[addr], cc)
			rt.mu.Unlock()
		}
		if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.GotConn != nil {
			trace.GotConn(httptrace.GotConnInfo{Conn: rt.connOf(cc, tapped), Reused: reused})
		}
		resp, err := cc.RoundTrip(req)
		if err != nil && reused && attempt == 0 && req.Context().Err() == nil && (req.Body == nil || req.Body == http.NoBody) {
			var nc interface{ IsHTTP2NoCachedConnError() }
			if errors.As(err, &nc) || errors.Is(err, io.EOF) || strings.Contains(err.Error(), "client connection lost") {
				continue
			}
		}
		return resp, err
	}
}

// roundTrip1 sends req over t1, setting resp.TLS (net/http knows the TLS state of
// *tls.Conn connections only).
func (rt *mirrorRT) roundTrip1(req *http.Request) (*http.Response, error) {
	var conn net.Conn
	ctx := httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { conn = i.Conn },
	})
	resp, err := rt.t1.RoundTrip(req.WithContext(ctx))
	if err == nil && resp.TLS == nil {
		if cs, ok := conn.(interface{ ConnectionState() tls.ConnectionState }); ok {
			st := cs.ConnectionState()
			resp.TLS = &st
		}
	}
	if resp != nil {
		resp.Request = req
	}
	return resp, err
}

// connOf is the net.Conn of cc, for GotConn: the tapped one when dialed now, else looked
// up in h2net.
func (rt *mirrorRT) connOf(cc *http2.ClientConn, dialed net.Conn) net.Conn {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if dialed != nil {
		rt.netOf[cc] = dialed
		return dialed
	}
	return rt.netOf[cc]
}

// h2RecConn records the HTTP/2 opening written on an origin connection.
type h2RecConn struct {
	net.Conn
	rec *fingerprint.Recorder
}

func (c *h2RecConn) Write(p []byte) (int, error) {
	if !c.rec.Done() {
		c.rec.Add(p)
	}
	return c.Conn.Write(p)
}

func (c *h2RecConn) NetConn() net.Conn { return c.Conn }

func (c *h2RecConn) ConnectionState() tls.ConnectionState {
	return c.Conn.(interface{ ConnectionState() tls.ConnectionState }).ConnectionState()
}

func shutdown(cc *http2.ClientConn) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if cc.Shutdown(ctx) != nil {
		cc.Close()
	}
}

func (rt *mirrorRT) closeIdle() {
	rt.t1.CloseIdleConnections()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, conns := range rt.h2conns {
		for _, cc := range conns {
			if cc.State().StreamsActive == 0 {
				cc.Close()
				delete(rt.netOf, cc)
			}
		}
	}
	for _, q := range rt.pending {
		for _, c := range q {
			c.Close()
		}
	}
	rt.pending = map[string][]net.Conn{}
}

// maxMirrorPools bounds the mirror keys with a pool of their own: past it, the least
// recently used pool's idle connections are closed and the pool dropped.
const maxMirrorPools = 32

// mirrorPool returns the round tripper of m's key.
func (u *Upstream) mirrorPool(m *Mirror, insecure bool, alpn []string) *mirrorRT {
	key := fmt.Sprint(m.Key, insecure, alpn)
	u.mirrorMu.Lock()
	defer u.mirrorMu.Unlock()
	if u.mirrors == nil {
		u.mirrors = map[string]*mirrorRT{}
	}
	rt := u.mirrors[key]
	if rt == nil {
		if len(u.mirrors) >= maxMirrorPools {
			var oldest string
			for k, r := range u.mirrors {
				if oldest == "" || r.used.Before(u.mirrors[oldest].used) {
					oldest = k
				}
			}
			go u.mirrors[oldest].closeIdle()
			delete(u.mirrors, oldest)
		}
		rt = u.newMirrorRT(m, insecure, alpn)
		u.mirrors[key] = rt
	}
	rt.used = time.Now()
	return rt
}

func (u *Upstream) closeMirrors() {
	u.mirrorMu.Lock()
	defer u.mirrorMu.Unlock()
	for _, rt := range u.mirrors {
		rt.closeIdle()
	}
}

// Remember returns the value compute made of c's opening (the engine's fingerprint of
// the connection), computing it once per connection: compute says whether the value is
// final (an HTTP/2 opening still being written is not). It returns nil for a connection
// the upstream did not dial.
func Remember(c net.Conn, compute func(Opening) (v any, final bool)) any {
	t, o, ok := openingOf(c)
	if !ok {
		return nil
	}
	if v := t.fp.Load(); v != nil {
		return *v
	}
	v, final := compute(o)
	if final {
		t.fp.Store(&v)
	}
	return v
}

// Opening is what an upstream connection sent first, for its fingerprint: the
// ClientHello records, the HTTP/2 opening (nil unless recorded) and how the hello was
// made (ReasonMirrored, possibly with notes, or why Go's was used; empty: no mirror
// asked).
type Opening struct {
	Hello, H2 []byte
	Mirror    string
}

// openingOf returns the opening of upstream connection c (unwrapping TLS and taps), ok
// false for a connection the upstream did not dial.
func openingOf(c net.Conn) (tc *trackedConn, o Opening, ok bool) {
	var h2 *fingerprint.Recorder
	for range 6 {
		switch t := c.(type) {
		case *trackedConn:
			o.Hello = t.hello.Bytes()
			o.Mirror = t.mirror
			if h2 != nil {
				o.H2 = h2.Bytes()
			}
			return t, o, true
		case *h2RecConn:
			h2 = t.rec
			c = t.Conn
		case interface{ NetConn() net.Conn }:
			c = t.NetConn()
		default:
			return nil, o, false
		}
	}
	return nil, o, false
}
