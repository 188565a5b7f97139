package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"strings"
	"time"

	"inspector/engine/internal/upstream"
	"inspector/engine/internal/ws"
	"inspector/engine/session"
)

// The pipeline: see the section "The pipeline" in doc.go.

// serveExchange handles one request from a client on any leg: absolute-form on the proxy
// listener, or origin-form inside a CONNECT tunnel (h1, h2) or on the HTTP/3 listener.
func (e *Engine) serveExchange(w http.ResponseWriter, r *http.Request) {
	x := e.accept(w, r)
	if x == nil {
		return
	}
	if !e.capture.Load() {
		x.forward(w, r) // capture off: relayed, nothing recorded, no hooks
		return
	}
	r = x.begin(r)

	defer func() {
		p := recover()
		x.peek.freeze() // from here the session changes again
		if p != nil && p != http.ErrAbortHandler {
			x.fail(session.PhaseResponse, session.SideProxy, nil, fmt.Sprintf("internal error: %v", p))
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
			if p == http.ErrAbortHandler && !gone && x.s.Error != nil && x.s.Error.Side == session.SideUpstream {
				x.cw.flushPartial()
			}
			panic(http.ErrAbortHandler) // reset the client connection
		}
	}()

	x.cw.ResponseWriter, x.cw.x, x.cw.proto = w, x, x.s.Client.Proto
	w = &x.cw
	f := &Flow{Session: x.s, Request: r}
	if !x.requestHeaders(w, f) || !x.requestBody(w, f) {
		return
	}
	x.forward(w, x.send(f))
}

// accept decides where r goes (inside a tunnel: always the CONNECT authority, never the
// inner Host header; otherwise the absolute URL) and answers what is not proxied: broken
// framing, bad URLs, the certificate page, requests to Inspector's own addresses. It
// returns nil when it answered.
func (e *Engine) accept(w http.ResponseWriter, r *http.Request) *exchange {
	if e.refuseFraming(w, r) {
		return nil
	}
	if r.URL.Path == "*" && !r.URL.IsAbs() && r.Method != http.MethodOptions {
		// Asterisk-form is only for a server-wide OPTIONS (RFC 9112 §3.2.4); any other
		// method with it has no target URI to record or to replay.
		w.Header().Set("Connection", "close")
		http.Error(w, "the request target * (asterisk-form) is only for OPTIONS", http.StatusBadRequest)
		return nil
	}
	info, _ := r.Context().Value(connInfoKey{}).(*connInfo)
	if info == nil {
		info = &connInfo{accepted: time.Now()}
	}
	x := &exchange{e: e, info: info}
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
			return nil
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
			return nil
		}
	}
	if !info.vetted || x.target != info.target {
		host, port, _ := net.SplitHostPort(x.target)
		if isCertHost(host) {
			e.serveCertPage(w, r)
			return nil
		}
		if e.isReserved(host, port) {
			http.Error(w, "Inspector refuses to forward to its own addresses (a proxy loop or a request to its control API)", http.StatusLoopDetected)
			return nil
		}
	}
	return x
}

// begin creates the session, publishes EventBegin, captures the request body and hands
// the round trip's trace to the request's context. It returns the request to go on with.
func (x *exchange) begin(r *http.Request) *http.Request {
	e, info := x.e, x.info
	now := time.Now()
	s := &session.Session{
		ID:      e.newID(),
		Started: now,
		Client: session.Conn{
			Addr:   r.RemoteAddr,
			Proto:  protoName(r.ProtoMajor),
			ConnID: info.id,
			TLS:    info.tlsInfo(r.TLS),

			Fingerprint: info.fingerprint(),
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
	e.keyLog.note(s.ID, 0, info.clientRandom())
	x.s = s
	x.hooks = e.hooks.Load()
	x.done = r.Context().Done()
	if info.frames != nil {
		info.frames.Link(s.ID, r.Method, requestPath(r))
	}
	if st, ok := r.Context().Value(sendKey{}).(*sendState); ok {
		s.ReplayOf = st.opts.ReplayOf
		st.s = s
		x.sent, x.sendSt = st.delivered, st
	}
	e.publish(Event{Kind: EventBegin, Summary: inflight(s)})

	if r.Body != nil && r.Body != http.NoBody && !ws.IsExtendedConnect(r) { // WebSocket streams are recorded as messages
		x.captureRequest(r)
	}
	x.ctx = httptrace.WithClientTrace(r.Context(), x.tr.clientTrace())
	x.req = r.WithContext(x.ctx)
	return x.req
}

// requestHeaders runs the RequestHeaders stage. It reports whether the exchange goes on:
// false when a hook failed or answered (the client has its response).
func (x *exchange) requestHeaders(w http.ResponseWriter, f *Flow) bool {
	f.Stage = StageRequestHeaders
	for _, h := range x.hooks.reqHead {
		err := h.OnRequest(x.ctx, f)
		if err == nil && f.Response != nil {
			err = f.resume(x.ctx) // a hook answered: the pauses asked for so far still hold it
		}
		if err != nil {
			x.hookFailed(w, f.Stage, err)
			return false
		}
		if f.Response != nil {
			x.answer(w, f.Response)
			return false
		}
	}
	return x.endRequestStage(w, f)
}

// requestBody runs the Request stage: with a Request hook registered, the request body
// is read into Flow.Body (up to the buffer cap) before the hooks run.
func (x *exchange) requestBody(w http.ResponseWriter, f *Flow) bool {
	if len(x.hooks.reqBody) == 0 || ws.IsExtendedConnect(f.Request) {
		return true
	}
	f.Stage = StageRequest
	r := f.Request
	held, err := x.buffer(f, r.Body)
	if err != nil {
		if fe := (*FramingError)(nil); errors.As(err, &fe) {
			x.refuseBody(w, fe)
		} else {
			x.fail(session.PhaseRequest, session.SideClient, err, "reading the request body: "+err.Error())
			writeProxyError(w, http.StatusBadRequest, "Inspector could not read the request body: "+err.Error())
		}
		return false
	}
	if held != nil {
		r.Body = held
		x.reqHeld = held
	}
	for _, h := range x.hooks.reqBody {
		if err := h.OnRequestBody(x.ctx, f); err != nil {
			x.hookFailed(w, f.Stage, err)
			return false
		}
		if f.Response != nil {
			break
		}
	}
	return x.endRequestStage(w, f)
}

// endRequestStage runs the pauses of a request stage; a pause may answer.
func (x *exchange) endRequestStage(w http.ResponseWriter, f *Flow) bool {
	if err := f.resume(x.ctx); err != nil {
		x.hookFailed(w, f.Stage, err)
		return false
	}
	if f.Response != nil {
		x.answer(w, f.Response)
		return false
	}
	return true
}

// send records the request as the request stages left it, the one that goes upstream,
// capturing a body a hook replaced instead of the client's.
func (x *exchange) send(f *Flow) *http.Request {
	r := f.Request
	if r.Context() != x.ctx { // a hook replaced the request
		r = r.WithContext(x.ctx)
	}
	if b := r.Body; b != nil && b != http.NoBody && b != io.ReadCloser(x.reqBody) && b != io.ReadCloser(x.reqHeld) && !ws.IsExtendedConnect(r) {
		x.captureRequest(r) // a hook replaced the body: capture what is really sent
	}
	x.req = r
	x.fp = f.fingerprint
	s := x.s
	s.Request.Method, s.Request.URL, s.Request.Header = r.Method, x.publicURL(r), r.Header
	return r
}

// forward relays r through a reverse proxy of the exchange's own, whose callbacks are the
// exchange's steps.
func (x *exchange) forward(w http.ResponseWriter, r *http.Request) {
	if ws.IsExtendedConnect(r) {
		w, r = ws.H1UpgradeFor(w, r)
	}
	x.rp = httputil.ReverseProxy{
		Rewrite:        x.rewrite,
		Transport:      x,
		BufferPool:     bufPool{},
		ErrorHandler:   x.handleError,
		ModifyResponse: x.modifyResponse,
		ErrorLog:       x.e.proxyLog,
	}
	x.rp.ServeHTTP(w, r)
}

// rewrite points the outgoing request at the exchange's target and keeps the request as
// the client sent it (forwarding headers and query untouched).
func (x *exchange) rewrite(pr *httputil.ProxyRequest) {
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
	// An OPTIONS for a URL with an empty path asks about the server as a whole: the last
	// proxy sends it as asterisk-form (RFC 9112 §3.2.4), which is how a recorded OPTIONS *
	// (URL without a path) is replayed.
	if u := pr.Out.URL; pr.Out.Method == http.MethodOptions && u.IsAbs() && u.Path == "" && u.RawPath == "" && u.RawQuery == "" && u.Opaque == "" {
		u.Opaque = "*"
	}
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v, ok := pr.In.Header[k]; ok {
			pr.Out.Header[k] = v
		}
	}
}

// RoundTrip is the reverse proxy's transport: the upstream picks and runs a transport,
// reporting to the exchange's trace, and the response head is recorded and its body
// captured here, before the proxy strips the hop-by-hop headers.
func (x *exchange) RoundTrip(req *http.Request) (*http.Response, error) {
	m, why := x.mirror(req)
	resp, reason, err := x.e.up.RoundTrip(req, &x.tr, mirrorsH1(req), x.pinned(req), m)
	if err != nil || x.s == nil {
		return resp, err
	}
	x.gotResponse(resp)
	x.upstreamFingerprint(why)
	x.s.Upstream.ProtoReason = reason
	if rec := x.e.frameCap.Upstream(x.s.Upstream.ConnID); rec != nil {
		rec.Link(x.s.ID, req.Method, req.URL.RequestURI())
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		if rwc, ok := resp.Body.(io.ReadWriteCloser); ok {
			x.ws = x.e.newWSTapFor(rwc, x.s, req)
			resp.Body = x.ws
		}
		return resp, nil
	}
	x.captureResponse(resp)
	x.cw.hold = true // a body failing before its first byte gets a 502 (answerBrokenBody)
	return resp, nil
}

// pinned is the client connection's own origin connection for the lighter HTTP/1.1 path
// (upstream.Pinned): HTTP/1.1 client connections the MITM server serves (inside a tunnel,
// or in reverse mode), whose end closes it (framingConn.Close). Other requests share the pool.
func (x *exchange) pinned(req *http.Request) *upstream.Pinned {
	if req.ProtoMajor != 1 || x.info.framing == nil || x.info.target == "" {
		return nil
	}
	return &x.info.pin
}

// modifyResponse is the reverse proxy's: the response stages, then EventUpdate.
func (x *exchange) modifyResponse(resp *http.Response) error {
	if len(resp.Trailer) > 0 {
		// An h2 origin may send a Content-Length together with trailers; an HTTP/1.1
		// client can only get trailers with chunked encoding, so drop the length.
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
	}
	if x.s == nil {
		return nil
	}
	if h := x.hooks; len(h.respHead) > 0 || len(h.respBody) > 0 {
		f := &Flow{Session: x.s, Request: resp.Request, Response: resp}
		if err := x.responseHeaders(f); err != nil {
			return err
		}
		if err := x.responseBody(f); err != nil {
			return err
		}
		x.responseEdited(resp)
	}
	x.e.peekable(x)
	x.e.publish(Event{Kind: EventUpdate, Summary: inflight(x.s)})
	return nil
}

// responseHeaders runs the ResponseHeaders stage and its pauses.
func (x *exchange) responseHeaders(f *Flow) error {
	f.Stage = StageResponseHeaders
	return runResponseStage(x, f, x.hooks.respHead, ResponseHook.OnResponse)
}

// runResponseStage runs the hooks of a response stage, then its pauses; an error stops
// them and comes back as the stage's *HookError.
func runResponseStage[H any](x *exchange, f *Flow, hooks []H, call func(H, context.Context, *Flow) error) error {
	for _, h := range hooks {
		if err := call(h, x.ctx, f); err != nil {
			return &HookError{Stage: f.Stage, Err: err}
		}
	}
	if err := f.resume(x.ctx); err != nil {
		return &HookError{Stage: f.Stage, Err: err}
	}
	return nil
}

// responseBody runs the Response stage: with a Response hook registered, the response
// body is read into Flow.Body (up to the buffer cap) before the hooks run.
func (x *exchange) responseBody(f *Flow) error {
	resp := f.Response
	if len(x.hooks.respBody) == 0 || x.ws != nil || resp.StatusCode == http.StatusSwitchingProtocols {
		return nil
	}
	f.Stage = StageResponse
	held, err := x.buffer(f, resp.Body)
	if err != nil {
		x.fail(session.PhaseBody, session.SideUpstream, err, "the origin broke off the response body: "+err.Error())
		return err
	}
	if held != nil {
		resp.Body = held
		x.respHeld = held
	}
	return runResponseStage(x, f, x.hooks.respBody, ResponseBodyHook.OnResponseBody)
}

// responseEdited records what the response stages left: the status and header, and the
// body the client really gets when a hook replaced it.
func (x *exchange) responseEdited(resp *http.Response) {
	if b := resp.Body; b != nil && b != io.ReadCloser(x.respCap) && b != io.ReadCloser(x.respHeld) && x.ws == nil {
		x.captureResponse(resp)
	}
	if x.s.Response != nil {
		x.s.Response.Status = resp.StatusCode
		x.s.Response.Reason = hookReason(resp)
		x.s.Response.Header = resp.Header
	}
}

// handleError is the reverse proxy's: the round trip failed before a response head, or
// a response stage failed.
func (x *exchange) handleError(w http.ResponseWriter, r *http.Request, err error) {
	x.failed = true
	var he *HookError
	if errors.As(err, &he) {
		if x.s != nil {
			x.s.Response = nil
		}
		x.hookFailed(w, he.Stage, he.Err)
		return
	}
	if fe := x.bodyFramingErr(err); fe != nil {
		x.refuseBody(w, fe)
		return
	}
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		x.fail(x.tr.phase(), session.SideClient, err, "the client went away: "+err.Error())
		return
	}
	se := x.tr.classify(err, x.target)
	if x.s != nil {
		if x.s.Error == nil {
			se.Proto = x.s.Client.Proto
			x.s.Error, x.err = se, err
		}
		x.s.Response = nil
	}
	status := http.StatusBadGateway
	if se.Phase == session.PhaseResponse && isTimeout(err) {
		status = http.StatusGatewayTimeout
	}
	writeProxyError(w, status, explain(se, x.target))
}

// hookFailed ends the exchange on a hook's error (or its pause's) at stage: the session
// records it, the client gets a 502 that says so.
func (x *exchange) hookFailed(w http.ResponseWriter, stage Stage, err error) {
	he := &HookError{Stage: stage, Err: err}
	x.fail(session.PhaseHook, session.SideProxy, he, err.Error())
	writeProxyError(w, http.StatusBadGateway, "A "+stage.String()+" hook failed: "+err.Error())
}

// bufferLimit is how much of a body the Request and Response stages hold.
func (x *exchange) bufferLimit() int64 {
	if l := x.e.cfg.CaptureLimit; l > 0 {
		return l
	}
	return 1 << 20
}

// buffer reads body into f.Body, up to the buffer cap, for a body stage. It returns the
// body to put in the message's place, which yields every byte again (nil for no body).
func (x *exchange) buffer(f *Flow, body io.ReadCloser) (*heldBody, error) {
	if body == nil || body == http.NoBody {
		f.Body = []byte{}
		return nil, nil
	}
	limit := x.bufferLimit()
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, err
	}
	b := buf.Bytes()
	f.Body, f.Truncated = b[:min(n, limit)], n > limit
	h := &heldBody{rest: body, all: !f.Truncated}
	h.r.Reset(b)
	return h, nil
}

// heldBody yields the bytes a body stage read, then (when it stopped at the cap) the rest
// of the body as it streams. Close closes the body.
type heldBody struct {
	r    bytes.Reader
	rest io.ReadCloser
	all  bool // the held bytes are the whole body
}

func (h *heldBody) Read(p []byte) (int, error) {
	if h.r.Len() > 0 {
		return h.r.Read(p)
	}
	if h.all {
		return 0, io.EOF
	}
	return h.rest.Read(p)
}

func (h *heldBody) Close() error { return h.rest.Close() }

// captureRequest captures r's body as the session's request body (replacing, and giving
// back the memory of, the capture it had).
func (x *exchange) captureRequest(r *http.Request) {
	x.reqBody.ReleaseBudget()
	x.reqBody = x.e.newCapture(r.Body, r.ContentLength, x.s.ID, "request", func() http.Header { return r.Trailer })
	r.Body = x.reqBody
}

// captureResponse captures resp's body as the session's response body (replacing the
// capture it had).
func (x *exchange) captureResponse(resp *http.Response) {
	x.respCap.ReleaseBudget()
	x.respCap = x.e.newCapture(resp.Body, resp.ContentLength, x.s.ID, "response", func() http.Header { return resp.Trailer })
	resp.Body = x.respCap
}

// errorStage runs the Error hooks of a failed exchange, with the error value.
func (x *exchange) errorStage() {
	if len(x.hooks.errs) == 0 || x.s.Error == nil {
		return
	}
	err := x.err
	if err == nil {
		err = errors.New(x.s.Error.Message)
	}
	ctx := x.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	f := &Flow{Session: x.s, Request: x.req, Response: x.resp, Stage: StageError}
	for _, h := range x.hooks.errs {
		h.OnError(ctx, f, err)
	}
}

// doneStage runs the Done hooks with the completed, immutable session.
func (x *exchange) doneStage() {
	for _, h := range x.hooks.done {
		h.OnDone(x.s)
	}
}
