package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"time"

	"inspector/engine/internal/capture"
	"inspector/engine/internal/ws"
	"inspector/engine/session"
)

// exchange is the engine's per-request state. It is owned by the request's handler
// goroutine; fields touched by other goroutines (trace callbacks, body readers on the
// transport's goroutines, WebSocket copiers) sit behind their own locks.
type exchange struct {
	e       *Engine
	s       *session.Session
	peek    *peekEntry // Peek's view of s from the response head on (peek.go)
	info    *connInfo
	target  string // upstream authority (host:port) for decrypted tunnels
	scheme  string
	reqBody *capture.Body
	resp    *http.Response
	respCap *capture.Body
	ws      *ws.Tap
	cw      clientWriter // the client's ResponseWriter, as the exchange writes to it
	tr      traceState
	failed  bool                  // the error handler ran
	rp      httputil.ReverseProxy // relays the exchange; its callbacks are the exchange's steps
	hooks   *hookSet              // the hooks registered when the exchange began
	ctx     context.Context       // the request's context with the round trip's trace
	req     *http.Request         // the request as it goes (or went) upstream
	// err is the error value behind the session's Error, when there is one (a *HookError
	// for a hook's).
	err error
	// reqHeld and respHeld are the bodies the Request and Response stages buffered.
	reqHeld, respHeld *heldBody
	sendSt            *sendState // Send's, else nil
	// fp is the ClientHello policy the request-stage hooks asked for (zero: none).
	fp fpPolicy
	// done is the request context's Done channel: closed when the client went away (or
	// the engine closed) while the exchange ran.
	done <-chan struct{}
	// sent, for Send's exchanges, is closed once the observers have the session.
	sent chan struct{}
}

func protoName(major int) string {
	switch major {
	case 2:
		return session.HTTP2
	case 3:
		return session.HTTP3
	}
	return session.HTTP1
}

func tlsInfo(st *tls.ConnectionState) *session.TLSInfo {
	if st == nil {
		return nil
	}
	ti := &session.TLSInfo{
		Version:     tls.VersionName(st.Version),
		CipherSuite: cipherName(st.CipherSuite),
		ServerName:  st.ServerName,
		ALPN:        st.NegotiatedProtocol,
		Resumed:     st.DidResume,
	}
	if n := len(st.PeerCertificates); n > 0 {
		ti.Certificates = make([][]byte, n)
		for i, c := range st.PeerCertificates {
			ti.Certificates[i] = c.Raw
		}
	}
	return ti
}

// cipherNames avoids tls.CipherSuiteName, which builds the whole suite list per call.
var cipherNames = func() map[uint16]string {
	m := map[uint16]string{}
	for _, c := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		m[c.ID] = c.Name
	}
	return m
}()

func cipherName(id uint16) string {
	if n, ok := cipherNames[id]; ok {
		return n
	}
	return tls.CipherSuiteName(id)
}

// tlsCache shares one immutable TLSInfo among the sessions of a connection: transports
// hand out the same *tls.ConnectionState for every response on a connection.
type tlsCache struct {
	mu sync.Mutex
	m  map[*tls.ConnectionState]*session.TLSInfo
}

func (c *tlsCache) get(st *tls.ConnectionState) *session.TLSInfo {
	if st == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ti, ok := c.m[st]; ok {
		return ti
	}
	if c.m == nil || len(c.m) >= 4096 {
		c.m = map[*tls.ConnectionState]*session.TLSInfo{}
	}
	ti := tlsInfo(st)
	c.m[st] = ti
	return ti
}

// inflight returns the summary of a running session.
func inflight(s *session.Session) session.Summary {
	sum := s.Summarize()
	sum.InFlight = true
	return sum
}

// requestPath is the request target as sent on the wire (:path in h2 and h3).
func requestPath(r *http.Request) string {
	if r.RequestURI != "" && !strings.Contains(r.RequestURI, "://") {
		return r.RequestURI
	}
	return r.URL.RequestURI()
}

// publicURL is the absolute URL of r as the user thinks of it (default ports dropped).
func (x *exchange) publicURL(r *http.Request) string {
	if r.URL.IsAbs() {
		return r.URL.String()
	}
	if r.URL.Path == "*" && r.URL.RawQuery == "" {
		// Asterisk-form (OPTIONS *): the target URI has an empty path (RFC 9112 §3.3),
		// and an OPTIONS to a URL with an empty path goes upstream as "*" (see rewrite).
		return x.scheme + "://" + x.displayHost()
	}
	return x.scheme + "://" + x.displayHost() + r.URL.RequestURI()
}

func (x *exchange) displayHost() string {
	host, port, err := net.SplitHostPort(x.target)
	if err != nil {
		return x.target
	}
	if (x.scheme == "https" && port == "443") || (x.scheme == "http" && port == "80") {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return x.target
}

// upstreamURLHost is the authority to dial for a tunnelled request.
func (x *exchange) upstreamURLHost() string { return x.displayHost() }

// fail records the exchange's error, unless one is recorded already: msg for the session,
// cause (when not nil) the error value behind it.
func (x *exchange) fail(phase session.Phase, side session.Side, cause error, msg string) {
	if x.s == nil || x.s.Error != nil {
		return
	}
	x.s.Error = &session.Error{Phase: phase, Side: side, Proto: x.s.Client.Proto, Message: msg}
	x.err = cause
}

// gotResponse records the response head; it runs on the handler goroutine inside
// RoundTrip, before the reverse proxy touches the header.
func (x *exchange) gotResponse(resp *http.Response) {
	s := x.s
	x.resp = resp
	h := resp.Header
	if hasHopHeaders(h) {
		h = h.Clone() // keep what the origin really sent; the proxy strips these below
	}
	s.Response = &session.Response{
		Status: resp.StatusCode,
		Reason: statusReason(resp.Status, resp.StatusCode),
		Proto:  protoName(resp.ProtoMajor),
		Header: h,
	}
	s.Upstream.Proto = s.Response.Proto
	s.Upstream.TLS = x.e.tlsInfos.get(resp.TLS)
	x.tr.mu.Lock()
	s.Upstream.Addr, s.Upstream.ConnID, s.Upstream.Reused = x.tr.remote, x.tr.connID, x.tr.reused
	x.tr.mu.Unlock()
	if s.Timings.FirstByte.IsZero() {
		s.Timings.FirstByte = time.Now()
	}
}

// statusReason is the reason phrase of a status line's "200 OK" part, without allocating.
func statusReason(status string, code int) string {
	var b [20]byte
	c := strconv.AppendInt(b[:0], int64(code), 10)
	if len(status) >= len(c) && status[:len(c)] == string(c) {
		status = status[len(c):]
	}
	return strings.TrimSpace(status)
}

var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func hasHopHeaders(h http.Header) bool {
	for _, k := range hopHeaders {
		if _, ok := h[k]; ok {
			return true
		}
	}
	return false
}

// answer writes a response a hook produced, capturing it like an upstream one.
func (x *exchange) answer(w http.ResponseWriter, resp *http.Response) {
	x.s.Flags |= session.FlagAnswered
	x.s.Response = &session.Response{Status: resp.StatusCode, Reason: hookReason(resp), Proto: x.s.Client.Proto, Header: resp.Header}
	x.s.Timings.FirstByte = time.Now()
	for k, vv := range resp.Header {
		w.Header()[k] = vv
	}
	w.WriteHeader(resp.StatusCode)
	if resp.Body != nil {
		x.captureResponse(resp)
		_, err := copyBuffered(w, resp.Body)
		resp.Body.Close()
		if err != nil {
			x.fail(session.PhaseBody, session.SideClient, err, "writing the answer to the client: "+err.Error())
		}
	}
}

// answerBrokenBody answers 502 when the origin's body failed before its first byte and
// nothing of the response has reached the client yet (clientWriter kept the head back),
// and records the session as the client saw it: the 502, with the origin's failure as
// the error. It reports whether it answered; otherwise the connection is cut as before.
func (x *exchange) answerBrokenBody() bool {
	c := x.respCap
	if x.s == nil || x.s.Response == nil || c == nil || x.cw.held == 0 || x.cw.n != 0 || !c.FailedEmpty() {
		return false
	}
	_, _, _, err := c.Result()
	c.ReleaseBudget()
	x.respCap = nil
	origin := x.s.Response
	se := &session.Error{
		Phase: session.PhaseBody, Side: session.SideUpstream, Proto: x.s.Client.Proto,
		Message: fmt.Sprintf("the origin's response (%d %s) broke off before the first body byte: %v", origin.Status, origin.Reason, err),
	}
	x.s.Error, x.err = se, err
	w := x.cw.ResponseWriter
	h := w.Header()
	clear(h)
	x.cw.held = 0
	msg := explain(se, x.target)
	writeProxyError(w, http.StatusBadGateway, msg)
	body := msg + "\n" // as writeProxyError wrote it
	x.s.Response = &session.Response{
		Status: http.StatusBadGateway, Reason: http.StatusText(http.StatusBadGateway),
		Proto: x.s.Client.Proto, Header: h.Clone(),
		Body: session.Body{Data: []byte(body), Size: int64(len(body))},
	}
	return true
}

// complete fills in what the body readers saw and publishes the final session. leftEarly
// says the client went away before it had the whole response; delivered, that it went
// away after (deliveredBeforeLeaving): a read error its leaving caused on the origin's
// side is then no error of the exchange.
func (x *exchange) complete(aborted, leftEarly, delivered bool) {
	s := x.s
	now := time.Now()
	if x.reqBody != nil {
		b, trailer, doneAt, err := x.reqBody.Result()
		s.Request.Body = b
		s.Request.Trailer = trailer
		s.Timings.RequestDone = doneAt
		if b.Truncated {
			s.Flags |= session.FlagReqTruncated
		}
		if err != nil && !errors.Is(err, io.EOF) {
			x.fail(session.PhaseRequest, session.SideClient, err, "reading the request body: "+err.Error())
		}
	} else {
		s.Timings.RequestDone = s.Timings.RequestHeaders
	}
	x.tr.finish(&s.Timings, &s.Interim)
	if x.respCap != nil && s.Response != nil {
		b, trailer, _, err := x.respCap.Result()
		s.Response.Body = b
		s.Response.Trailer = trailer
		if b.Truncated {
			s.Flags |= session.FlagRespTruncated
		}
		switch {
		case err == nil, delivered:
		case (aborted || leftEarly) && errors.Is(err, context.Canceled):
			// The proxy cancelled the origin's stream because the client left: the
			// client's leaving is the error (below), not the origin's.
		default:
			x.fail(session.PhaseBody, session.SideUpstream, err, "the origin broke off the response body: "+err.Error())
		}
	}
	if x.ws != nil {
		s.Flags |= session.FlagWebSocket
		s.Messages, s.MessagesSeen, s.Response.Body.Size = x.ws.Result()
	}
	if aborted && s.Error == nil {
		x.fail(session.PhaseBody, session.SideClient, nil, "the client went away before the response was complete")
	}
	if s.Error == nil && leftEarly {
		// The origin's response can race the cancellation (net/http's transport uses a
		// response that arrives while it closes the connection), or the client left with
		// the response's end still in the proxy's buffers.
		x.fail(session.PhaseBody, session.SideClient, nil, "the client went away before the response was delivered")
	}
	s.Timings.ResponseDone = now
	if x.e.cfg.FrameSink != nil {
		x.info.frames.SessionDone(s.ID)
		x.e.frameCap.Upstream(s.Upstream.ConnID).SessionDone(s.ID)
	}
	if s.Client.PID == 0 && s.Client.Process == "" {
		x.info.proc.fill(&s.Client) // never waits: the observers' deliverer may (withProcess)
	}
	x.errorStage()
	var he *HookError
	if x.sendSt != nil && errors.As(x.err, &he) {
		x.sendSt.err = he
	}
	// Once the observers have the session (x.delivered), they own its bodies.
	x.e.publishFor(Event{Kind: EventComplete, Summary: s.Summarize(), Session: s, proc: x.info.proc}, x)
	x.doneStage()
}

// clientGone reports whether the request's context ended before the exchange did.
func (x *exchange) clientGone() bool {
	select {
	case <-x.done:
		return true
	default:
		return false
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func writeProxyError(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Inspector-Error", "1")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body+"\n")
}

func explain(se *session.Error, target string) string {
	host, _, _ := net.SplitHostPort(target)
	var b strings.Builder
	b.WriteString("Inspector could not get a response from ")
	b.WriteString(target)
	b.WriteString(".\n\n")
	fmt.Fprintf(&b, "Failed at: %s (%s side)\nReason: %s\n", se.Phase, se.Side, se.Message)
	if se.Phase == session.PhaseTLS {
		fmt.Fprintf(&b, "\nIf you trust this origin anyway, add its CA with --upstream-ca FILE, or skip verification for it with --upstream-insecure %s\n", host)
	}
	return b.String()
}
