package engine

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"inspector/engine/internal/frames"
	"inspector/engine/internal/upstream"
	"inspector/engine/session"
)

// newUpstream builds the transports towards origins (engine/internal/upstream) from the
// engine's settings: frame capture taps their HTTP/2 connections and traces their QUIC
// ones.
func (e *Engine) newUpstream() (*upstream.Upstream, error) {
	roots := e.cfg.UpstreamRoots
	if roots == nil {
		var err error
		if roots, err = x509.SystemCertPool(); err != nil {
			return nil, fmt.Errorf("system roots: %w", err)
		}
	}
	cfg := upstream.Config{
		Roots:           roots,
		Insecure:        func(host string) bool { return matchAny(e.cfg.UpstreamInsecure, host) },
		Proto:           e.cfg.UpstreamProto,
		DialTimeout:     e.cfg.DialTimeout,
		TLSTimeout:      e.cfg.TLSTimeout,
		ResponseTimeout: e.cfg.ResponseTimeout,
		MaxHeaderBytes:  maxHeaderBytes,
		Reserved:        e.isReserved,
		QUICConfig:      func(id uint64) *quic.Config { return e.quicConfig(frames.LegUpstream, id) },
		KeyLog:          e.keyLog,
	}
	if e.cfg.FrameSink != nil {
		cfg.TapH2 = func(c net.Conn, id uint64) net.Conn { return e.frameCap.NewH2Tap(c, frames.LegUpstream, id) }
		cfg.Stale = func(c net.Conn) bool {
			// The tap saw capture off and passes bytes through for good: the HPACK state it
			// did not follow makes later header blocks undecodable.
			tap, ok := c.(*frames.H2Tap)
			return ok && tap.Stale()
		}
	}
	return upstream.New(cfg)
}

// mirrorsH1 says whether auto mode sends req over HTTP/1.1 because its client spoke
// HTTP/1.1: the origin then sees what it would have seen without the proxy, as with
// mitmproxy and HTTP Toolkit. HTTP/2 and HTTP/3 clients, and Send (the composer and
// replay, which behave like a current browser), get ALPN's choice of h2 or http/1.1.
func mirrorsH1(req *http.Request) bool {
	if req.ProtoMajor != 1 {
		return false
	}
	_, sent := req.Context().Value(sendKey{}).(*sendState)
	return !sent
}

func (e *Engine) isReserved(host, port string) bool {
	host, port = canonicalHostPort(host, port)
	if e.reserved[net.JoinHostPort(host, port)] {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified()) && e.reservedLoopPorts[port]
}

// traceState collects httptrace events. Callbacks may run on the transport's dial
// goroutines, even after the handler returned, hence the lock and the done flag.
type traceState struct {
	mu                                           sync.Mutex
	done                                         bool
	dnsStart, dnsDone, connStart, connDone       time.Time
	tlsStart, tlsDone, wrote, firstByte, gotConn time.Time
	conn                                         net.Conn // the upstream connection (TCP ones)
	dnsErr, connErr, tlsErr, wroteErr            error
	reused                                       bool
	connID                                       uint64
	remote                                       string
	interim                                      []session.Interim // 1xx responses, in order
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
				t.conn = i.Conn
				t.connID = upstream.ConnID(i.Conn)
				t.remote = i.Conn.RemoteAddr().String()
			})
		},
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			t.with(func() { t.wrote, t.wroteErr = time.Now(), i.Err })
		},
		GotFirstResponseByte: func() { t.with(func() { t.firstByte = time.Now() }) },
		// The reverse proxy passes each 1xx on to the client (its own trace, called
		// before this one); the session records it.
		Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			t.with(func() {
				if len(t.interim) < maxInterim {
					t.interim = append(t.interim, session.Interim{Status: code, Header: http.Header(h).Clone(), At: time.Now()})
				}
			})
			return nil
		},
	}
}

// maxInterim bounds the 1xx responses a session records (the upstream transports refuse
// more than a few before the final response anyway).
const maxInterim = 16

func (t *traceState) ConnGot(id uint64, remote string, reused bool) {
	t.with(func() { t.gotConn, t.reused, t.connID, t.remote = time.Now(), reused, id, remote })
}

func (t *traceState) RequestWritten() { t.with(func() { t.wrote = time.Now() }) }

// finish copies the timings into tm and the 1xx responses into interim, and ignores
// later callbacks.
func (t *traceState) finish(tm *session.Timings, interim *[]session.Interim) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	*interim = t.interim
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
	var op *net.OpError
	switch {
	case errors.Is(err, upstream.ErrReserved):
		se.Phase, se.Side = session.PhaseDial, session.SideProxy
	case errors.As(err, &dnsErr):
		se.Phase = session.PhaseDNS
		se.Message = "DNS lookup failed: " + dnsErr.Error()
	case errors.As(err, &op) && op.Op == "dial":
		// The last attempt failed to connect, whatever an earlier one on a kept-alive
		// connection (which the origin had closed) got as far as in the trace.
		se.Phase = session.PhaseDial
		se.Message = "could not connect to " + target + ": " + op.Err.Error()
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &invalid):
		se.Phase = session.PhaseTLS
		se.Message = "the origin's certificate did not verify: " + err.Error()
	case se.Phase == session.PhaseTLS:
		se.Message = "TLS handshake with the origin failed: " + err.Error()
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
