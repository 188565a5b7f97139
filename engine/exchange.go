package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"time"

	"inspector/engine/session"
)

// exchange is the engine's per-request state. It is owned by the request's handler
// goroutine; fields touched by other goroutines (trace callbacks, body readers on the
// transport's goroutines, WebSocket copiers) sit behind their own locks.
type exchange struct {
	e       *Engine
	s       *session.Session
	info    *connInfo
	target  string // upstream authority (host:port) for decrypted tunnels
	scheme  string
	reqBody *captureBody
	resp    *http.Response
	respCap *captureBody
	ws      *wsTap
	cw      clientWriter // the client's ResponseWriter, as the exchange writes to it
	tr      traceState
	failed  bool // the error handler ran
	// done is the request context's Done channel: closed when the client went away (or
	// the engine closed) while the exchange ran.
	done <-chan struct{}
	// sent, for Send's exchanges, is closed once the observers have the session.
	sent chan struct{}
}

type exchangeKey struct{}

func exchangeFrom(ctx context.Context) *exchange {
	x, _ := ctx.Value(exchangeKey{}).(*exchange)
	return x
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

// serveExchange handles one request from a client on any leg: absolute-form on the proxy
// listener, or origin-form inside a CONNECT tunnel (h1 or h2).
func (e *Engine) serveExchange(w http.ResponseWriter, r *http.Request) {
	if e.refuseFraming(w, r) {
		return
	}
	info, _ := r.Context().Value(connInfoKey{}).(*connInfo)
	if info == nil {
		info = &connInfo{accepted: time.Now()}
	}
	x := &exchange{e: e, info: info}
	// Where does this request go? Inside a tunnel: always the CONNECT authority, never the
	// inner Host header. Otherwise: the absolute URL.
	if info.target != "" {
		x.target = info.target
		x.scheme = "http"
		if info.decrypted {
			x.scheme = "https"
		}
		if info.scheme != "" {
			x.scheme = info.scheme
		}
	} else {
		if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
			http.Error(w, "unsupported URL scheme "+r.URL.Scheme, http.StatusBadRequest)
			return
		}
		x.scheme = r.URL.Scheme
		x.target = r.URL.Host
		if _, _, err := net.SplitHostPort(x.target); err != nil {
			port := "80"
			if x.scheme == "https" {
				port = "443"
			}
			x.target = net.JoinHostPort(strings.Trim(x.target, "[]"), port)
		} else if _, port, _ := net.SplitHostPort(x.target); !validPort(port) {
			http.Error(w, r.URL.Host+": the port must be a number from 1 to 65535", http.StatusBadRequest)
			return
		}
	}
	if !info.vetted || x.target != info.target {
		host, port, _ := net.SplitHostPort(x.target)
		if isCertHost(host) {
			e.serveCertPage(w, r)
			return
		}
		if e.isReserved(host, port) {
			http.Error(w, "Inspector refuses to forward to its own addresses (a proxy loop or a request to its control API)", http.StatusLoopDetected)
			return
		}
	}
	if !e.capture.Load() {
		ctx := context.WithValue(r.Context(), exchangeKey{}, x)
		r = r.WithContext(ctx)
		if isExtendedConnectWS(r) {
			w, r = h1UpgradeFor(w, r)
		}
		e.up.proxy.ServeHTTP(w, r)
		return
	}

	now := time.Now()
	s := &session.Session{
		ID:      e.newID(),
		Started: now,
		Client: session.Conn{
			Addr:   r.RemoteAddr,
			Proto:  protoName(r.ProtoMajor),
			ConnID: info.id,
			TLS:    info.tlsInfo(r.TLS),
		},
		Request: session.Request{
			Method: r.Method,
			URL:    x.publicURL(r),
			Proto:  protoName(r.ProtoMajor),
			Header: r.Header,
		},
		Timings: session.Timings{
			ClientConnected: info.accepted,
			ClientTLSDone:   info.tlsDone,
			RequestHeaders:  now,
		},
	}
	info.proc.fill(&s.Client)
	x.s = s
	x.done = r.Context().Done()
	if info.frames != nil {
		info.frames.link(s.ID, r.Method, requestPath(r))
	}
	if st, ok := r.Context().Value(sendKey{}).(*sendState); ok {
		s.ReplayOf = st.opts.ReplayOf
		st.s = s
		x.sent = st.delivered
	}
	e.publish(Event{Kind: EventBegin, Summary: inflight(s)})

	if r.Body != nil && r.Body != http.NoBody && !isExtendedConnectWS(r) { // WebSocket streams are recorded as messages
		x.reqBody = e.newCapture(r.Body, r.ContentLength, s.ID, "request", func() http.Header { return r.Trailer })
		r.Body = x.reqBody
	}
	ctx := context.WithValue(httptrace.WithClientTrace(r.Context(), x.tr.clientTrace()), exchangeKey{}, x)
	r = r.WithContext(ctx)

	defer func() {
		p := recover()
		if p != nil && p != http.ErrAbortHandler {
			x.fail(session.PhaseResponse, session.SideProxy, fmt.Sprintf("internal error: %v", p))
		}
		// A WebSocket ends when either side leaves; other exchanges are decided once,
		// here: the client may leave at any moment.
		gone := x.ws == nil && x.clientGone()
		if p == http.ErrAbortHandler && !gone && x.answerBrokenBody() {
			p = nil
		}
		if p == nil {
			x.cw.release()
		}
		// A copy that failed after the whole response was handed over failed on what
		// followed its last byte (reading the origin's stream, cancelled when the client
		// left; or x/net reporting the connection's close, which it may do before the
		// stream's context ends): the response is whole, so net/http may end it normally.
		delivered := x.ws == nil && ((gone && p == nil) || p == http.ErrAbortHandler) && x.deliveredBeforeLeaving()
		if delivered {
			p = nil
		}
		x.complete(p != nil, gone && !delivered, delivered)
		if p != nil {
			panic(http.ErrAbortHandler) // reset the client connection
		}
	}()

	x.cw.ResponseWriter, x.cw.x, x.cw.proto = w, x, s.Client.Proto
	w = &x.cw
	f := &Flow{Session: s, Request: r}
	for _, h := range *e.reqHooks.Load() {
		err := h.OnRequest(ctx, f)
		if err == nil && f.Response != nil {
			err = f.resume(ctx) // a hook answered: the pauses asked for so far still hold it
		}
		if err != nil {
			x.fail(session.PhaseHook, session.SideProxy, err.Error())
			writeProxyError(w, http.StatusBadGateway, "A request hook failed: "+err.Error())
			return
		}
		if f.Response != nil {
			s.Flags |= session.FlagAnswered
			x.answer(w, f.Response)
			return
		}
	}
	if err := f.resume(ctx); err != nil {
		x.fail(session.PhaseHook, session.SideProxy, err.Error())
		writeProxyError(w, http.StatusBadGateway, "A request hook failed: "+err.Error())
		return
	}
	if f.Response != nil { // a pause answered
		s.Flags |= session.FlagAnswered
		x.answer(w, f.Response)
		return
	}
	if f.Request != r { // a hook replaced the request
		r = f.Request.WithContext(ctx)
	}
	if r.Body != nil && r.Body != http.NoBody && r.Body != io.ReadCloser(x.reqBody) && !isExtendedConnectWS(r) {
		// A hook replaced the body: capture what is really sent.
		x.reqBody.releaseBudget()
		x.reqBody = e.newCapture(r.Body, r.ContentLength, s.ID, "request", func() http.Header { return r.Trailer })
		r.Body = x.reqBody
	}
	s.Request.Method, s.Request.URL, s.Request.Header = r.Method, x.publicURL(r), r.Header
	if isExtendedConnectWS(r) {
		w, r = h1UpgradeFor(w, r)
	}
	e.up.proxy.ServeHTTP(w, r)
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

func (x *exchange) fail(phase session.Phase, side session.Side, msg string) {
	if x.s == nil || x.s.Error != nil {
		return
	}
	x.s.Error = &session.Error{Phase: phase, Side: side, Proto: x.s.Client.Proto, Message: msg}
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
	s.Upstream.TLS = x.e.up.tlsInfos.get(resp.TLS)
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
	x.s.Response = &session.Response{Status: resp.StatusCode, Reason: hookReason(resp), Proto: x.s.Client.Proto, Header: resp.Header}
	x.s.Timings.FirstByte = time.Now()
	for k, vv := range resp.Header {
		w.Header()[k] = vv
	}
	w.WriteHeader(resp.StatusCode)
	if resp.Body != nil {
		x.respCap = x.e.newCapture(resp.Body, resp.ContentLength, x.s.ID, "response", nil)
		_, err := copyBuffered(w, x.respCap)
		resp.Body.Close()
		if err != nil {
			x.fail(session.PhaseBody, session.SideClient, "writing the answer to the client: "+err.Error())
		}
	}
}

// answerBrokenBody answers 502 when the origin's body failed before its first byte and
// nothing of the response has reached the client yet (clientWriter kept the head back),
// and records the session as the client saw it: the 502, with the origin's failure as
// the error. It reports whether it answered; otherwise the connection is cut as before.
func (x *exchange) answerBrokenBody() bool {
	c := x.respCap
	if x.s == nil || x.s.Response == nil || c == nil || x.cw.held == 0 || x.cw.n != 0 || !c.failedEmpty() {
		return false
	}
	_, _, _, err := c.result()
	c.releaseBudget()
	x.respCap = nil
	origin := x.s.Response
	se := &session.Error{
		Phase: session.PhaseBody, Side: session.SideUpstream, Proto: x.s.Client.Proto,
		Message: fmt.Sprintf("the origin's response (%d %s) broke off before the first body byte: %v", origin.Status, origin.Reason, err),
	}
	x.s.Error = se
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
		b, trailer, doneAt, err := x.reqBody.result()
		s.Request.Body = b
		s.Request.Trailer = trailer
		s.Timings.RequestDone = doneAt
		if b.Truncated {
			s.Flags |= session.FlagReqTruncated
		}
		if err != nil && !errors.Is(err, io.EOF) {
			x.fail(session.PhaseRequest, session.SideClient, "reading the request body: "+err.Error())
		}
	} else {
		s.Timings.RequestDone = s.Timings.RequestHeaders
	}
	x.tr.finish(&s.Timings)
	if x.respCap != nil && s.Response != nil {
		b, trailer, _, err := x.respCap.result()
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
			x.fail(session.PhaseBody, session.SideUpstream, "the origin broke off the response body: "+err.Error())
		}
	}
	if x.ws != nil {
		s.Flags |= session.FlagWebSocket
		s.Messages, s.Response.Body.Size = x.ws.result()
	}
	if aborted && s.Error == nil {
		x.fail(session.PhaseBody, session.SideClient, "the client went away before the response was complete")
	}
	if s.Error == nil && leftEarly {
		// The origin's response can race the cancellation (net/http's transport uses a
		// response that arrives while it closes the connection), or the client left with
		// the response's end still in the proxy's buffers.
		x.fail(session.PhaseBody, session.SideClient, "the client went away before the response was delivered")
	}
	s.Timings.ResponseDone = now
	if x.e.cfg.FrameSink != nil {
		x.info.frames.sessionDone(s.ID)
		x.e.upstreamRec(s.Upstream.ConnID).sessionDone(s.ID)
	}
	if s.Client.PID == 0 && s.Client.Process == "" {
		x.info.proc.fill(&s.Client) // never waits: the observers' deliverer may (withProcess)
	}
	// Once the observers have the session (x.delivered), they own its bodies.
	x.e.publishFor(Event{Kind: EventComplete, Summary: s.Summarize(), Session: s, proc: x.info.proc}, x)
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

// errorHandler is the reverse proxy's: the round trip failed before a response head.
func (x *exchange) handleError(w http.ResponseWriter, r *http.Request, err error) {
	x.failed = true
	if fe := x.bodyFramingErr(err); fe != nil {
		x.refuseBody(w, fe)
		return
	}
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		x.fail(x.tr.phase(), session.SideClient, "the client went away: "+err.Error())
		return
	}
	se := x.tr.classify(err, x.target)
	if x.s != nil {
		if x.s.Error == nil {
			se.Proto = x.s.Client.Proto
			x.s.Error = se
		}
		x.s.Response = nil
	}
	status := http.StatusBadGateway
	if se.Phase == session.PhaseResponse && isTimeout(err) {
		status = http.StatusGatewayTimeout
	}
	writeProxyError(w, status, explain(se, x.target))
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
