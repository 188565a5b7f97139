package engine

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"

	fpr "inspector/engine/internal/fingerprint"
	"inspector/engine/internal/frames"
	"inspector/engine/internal/upstream"
	"inspector/engine/session"
)

// maxHeaderBytes caps request heads from clients and response heads from origins.
const maxHeaderBytes = 1 << 20

type baseTLS struct {
	server *tls.Config // client-facing; shared so session tickets resume across connections
}

// connInfo is what the engine knows about a client connection; it rides in the request
// context of every request on that connection.
type connInfo struct {
	id        uint64
	accepted  time.Time
	tlsDone   time.Time
	target    string       // CONNECT authority (host:port); empty for direct proxy requests
	decrypted bool         // requests on it arrived inside TLS that we terminated
	framing   *framingConn // the HTTP/1 framing check on it (nil for h2)
	// scheme, when set (reverse mode), is the upstream scheme regardless of decrypted.
	scheme  string
	reverse bool // reverse mode: the Host sent upstream is the target's
	// vetted: target passed the loop check and is not the certificate page's host, so
	// requests on the connection need not check it again.
	vetted bool
	// frames records the connection's frames when frame capture is on (h2 and h3).
	frames *frames.Rec

	// proc is the lookup of the process that owns the client's socket (nil when off).
	proc *procLookup

	tlsOnce sync.Once
	tls     *session.TLSInfo

	// pin is the connection's own origin connection on the lighter HTTP/1.1 path
	// (exchange.pinned), closed with the client connection.
	pin upstream.Pinned

	// fpRec holds what the client sent first, for its fingerprint (fingerprint.go); nil
	// when nothing was recorded.
	fpRec *clientFP
}

// tlsInfo returns the connection's TLS record, built once and shared (immutable) by the
// sessions on the connection.
func (c *connInfo) tlsInfo(st *tls.ConnectionState) *session.TLSInfo {
	if st == nil {
		return nil
	}
	c.tlsOnce.Do(func() { c.tls = tlsInfo(st) })
	return c.tls
}

type connInfoKey struct{}

// clientConn is a client connection inside a CONNECT tunnel, with the bytes already read
// while sniffing still to be delivered.
type clientConn struct {
	net.Conn
	r    *bufio.Reader
	info *connInfo
	rec  *fpr.Recorder // records the first bytes read, for the fingerprint (or nil)
}

func (c *clientConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.rec != nil && n > 0 && !c.rec.Done() {
		c.rec.Add(p[:n])
	}
	return n, err
}

// NetConn is the connection c wraps (conn.Of reaches the table's entry through it).
func (c *clientConn) NetConn() net.Conn { return c.Conn }

// setInfo records info on c's entry in the connection table, where infoOf finds it under
// any layer; the connection's own origin connection (exchange.pinned) is handed on when
// the client connection closes, before its slot is given back, so a client that
// reconnects at once can reuse it.
func (e *Engine) setInfo(c net.Conn, info *connInfo) {
	if slot := slotOf(c); slot != nil {
		slot.SetInfo(info, info.pin.Close)
	}
}

func (e *Engine) initServers() {
	errLog := log.New(logWriter{e.cfg.Logf}, "", 0)
	server := func(h http.HandlerFunc, info func(net.Conn) *connInfo, state func(net.Conn, http.ConnState)) *http.Server {
		return &http.Server{
			Handler: h,
			// OPTIONS * is the origin's to answer: net/http would answer it itself, and
			// the request would never be recorded or reach the origin.
			DisableGeneralOptionsHandler: true,
			ReadHeaderTimeout:            e.cfg.HeaderTimeout,
			IdleTimeout:                  e.cfg.IdleTimeout,
			MaxHeaderBytes:               maxHeaderBytes,
			ErrorLog:                     errLog,
			ConnState:                    state,
			ConnContext: func(ctx context.Context, c net.Conn) context.Context {
				return context.WithValue(ctx, connInfoKey{}, info(c))
			},
		}
	}
	e.proxySrv = server(e.serveProxy, func(c net.Conn) *connInfo {
		fc, _ := c.(*framingConn)
		info := &connInfo{id: e.connIDs.Add(1), accepted: time.Now(), framing: fc, proc: e.lookupProcess(c)}
		e.setInfo(c, info)
		return info
	}, e.proxyConnState)
	e.mitmLn = newChanListener(e.ln.Addr())
	e.mitmSrv = server(e.serveExchange, infoOf, e.mitmConnState)
	e.h2srv = &http2.Server{
		IdleTimeout: e.cfg.IdleTimeout,
		// The protocol's initial frame size (16 KiB) rather than x/net's 1 MiB default:
		// h2spec 4.2/3 expects it, and larger client frames buy nothing here.
		MaxReadFrameSize:     16 << 10,
		MaxConcurrentStreams: 250,
	}
	// Links h2 connections to mitmSrv so its Shutdown sends them GOAWAY.
	_ = http2.ConfigureServer(e.mitmSrv, e.h2srv)

	var ticketKey [32]byte
	_, _ = rand.Read(ticketKey[:])
	e.tlsConf.server = &tls.Config{
		NextProtos:   []string{"h2", "http/1.1"},
		MinVersion:   tls.VersionTLS10,
		KeyLogWriter: e.keyLog,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			host := hello.ServerName
			if host == "" {
				if cc, ok := hello.Conn.(*clientConn); ok {
					host, _, _ = net.SplitHostPort(cc.info.target)
				}
			}
			if host == "" {
				return nil, errors.New("no server name and no CONNECT host to mint a certificate for")
			}
			return e.cfg.CA.LeafFor(host)
		},
	}
	e.tlsConf.server.SetSessionTicketKeys([][32]byte{ticketKey})
}

// infoOf is what the engine knows about a client connection, under any layer (see
// setInfo); a fresh record for a connection outside the connection table.
func infoOf(c net.Conn) *connInfo {
	if info, ok := slotOf(c).Info().(*connInfo); ok {
		return info
	}
	return &connInfo{accepted: time.Now()}
}

type logWriter struct{ logf func(string, ...any) }

func (w logWriter) Write(p []byte) (int, error) {
	w.logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// proxyConnState follows the proxy listener's connections (http.Server.ConnState): a
// connection running a request is busy at the connection cap.
func (e *Engine) proxyConnState(c net.Conn, st http.ConnState) {
	slotOf(c).SetActive(st == http.StateActive)
}

// mitmConnState follows the connections the MITM server serves, HTTP/1 and h2 (x/net
// reports its states here too).
func (e *Engine) mitmConnState(c net.Conn, st http.ConnState) {
	slot := slotOf(c)
	slot.SetActive(st == http.StateActive)
	if _, h1 := c.(*framingConn); !h1 && (st == http.StateIdle || st == http.StateActive) {
		// An HTTP/2 connection with no stream open waits for a request like an idle
		// keep-alive one: at the connection cap it makes room. HTTP/1 connections are
		// marked by their framing check instead.
		slot.SetWaiting(st == http.StateIdle)
	}
	if st == http.StateHijacked {
		// A WebSocket takes the connection over: no more requests will use its own
		// origin connection (closing the client connection hands it on otherwise).
		infoOf(c).pin.Close()
	}
}

// serveProxy handles requests on the proxy listener: CONNECT and absolute-form requests.
func (e *Engine) serveProxy(w http.ResponseWriter, r *http.Request) {
	if e.refuseFraming(w, r) || !e.checkProxyAuth(w, r) {
		return
	}
	if r.Method == http.MethodConnect {
		e.serveConnect(w, r)
		return
	}
	if r.Method == http.MethodOptions && r.RequestURI == "*" {
		// Asked of the proxy itself (inside a tunnel it goes to the origin): what net/http's
		// general OPTIONS handler answers.
		w.Header().Set("Content-Length", "0")
		return
	}
	if !r.URL.IsAbs() {
		if r.URL.Path == "/" || isCertHost(r.Host) {
			e.serveCertPage(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		http.Error(w, "Inspector is an HTTP proxy: send absolute-form requests (http://host/path) or CONNECT.\n"+
			"Set this address as your HTTP and HTTPS proxy, then open http://inspector.cert/ to get the CA certificate.", http.StatusBadRequest)
		return
	}
	e.serveExchange(w, r)
}

func (e *Engine) serveConnect(w http.ResponseWriter, r *http.Request) {
	target := r.Host
	if target == "" {
		target = r.URL.Host
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil || host == "" || port == "" {
		w.Header().Set("Connection", "close")
		http.Error(w, "CONNECT needs host:port, got "+strings.TrimSpace(target), http.StatusBadRequest)
		return
	}
	if !validPort(port) {
		w.Header().Set("Connection", "close")
		http.Error(w, "CONNECT "+target+": the port must be a number from 1 to 65535", http.StatusBadRequest)
		return
	}
	if e.isReserved(host, port) {
		http.Error(w, "Inspector refuses to connect to its own addresses (a proxy loop or a request to its control API)", http.StatusLoopDetected)
		return
	}
	info := r.Context().Value(connInfoKey{}).(*connInfo)
	info.target = target
	info.vetted = !isCertHost(host) // isReserved passed above
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "cannot take over the connection: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		conn.Close()
		return
	}
	cc := &clientConn{Conn: conn, r: brw.Reader, info: info}
	e.serveTunnelled(cc, r, target, host, time.Now())
}

// serveTunnelled serves a client connection that has been told its tunnel to target
// (host:port, host already split off) is established: it sniffs the first bytes and
// decrypts TLS, serves HTTP/1 or h2, or relays an opaque tunnel. connect is the CONNECT
// request (or one standing for it: ServeConn); the loop check has passed.
func (e *Engine) serveTunnelled(cc *clientConn, r *http.Request, target, host string, established time.Time) {
	conn := cc.Conn
	if matchAny(e.cfg.NoDecrypt, host) || e.cfg.CA == nil {
		e.tunnel(cc, r, target, established)
		return
	}
	// Until its first byte the tunnel waits like a connection between requests: at the
	// connection cap it makes room for others.
	slot := slotOf(conn)
	slot.SetWaiting(true)
	_ = conn.SetReadDeadline(time.Now().Add(e.cfg.SniffTimeout))
	first, err := cc.r.Peek(1)
	_ = conn.SetReadDeadline(time.Time{})
	slot.SetWaiting(false)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			e.tunnel(cc, r, target, established) // server-speaks-first protocol
			return
		}
		conn.Close()
		return
	}
	switch {
	case first[0] == 0x16: // TLS handshake record
		e.serveTLS(cc, r)
	case looksLikeHTTP(cc.r):
		if isH2Preface(cc.r) {
			cc.info.fpRec = &clientFP{h2: newH2Recorder()}
			cc.rec = cc.info.fpRec.h2
			e.serveH2(cc)
			return
		}
		cc.info.framing = newFramingConn(cc)
		e.mitmLn.push(cc.info.framing)
	default:
		e.tunnel(cc, r, target, time.Now())
	}
}

// validPort reports whether port is a TCP port one can connect to: decimal, 1 to 65535
// (leading zeros allowed, as net's dialer allows them).
func validPort(port string) bool {
	n, err := strconv.ParseUint(port, 10, 16)
	return err == nil && n > 0
}

func looksLikeHTTP(r *bufio.Reader) bool {
	b, _ := r.Peek(3)
	if len(b) < 3 {
		return false
	}
	for _, c := range b {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

func isH2Preface(r *bufio.Reader) bool {
	b, _ := r.Peek(len(http2.ClientPreface))
	return string(b) == http2.ClientPreface
}

func (e *Engine) serveTLS(cc *clientConn, connect *http.Request) {
	fp := &clientFP{hello: newHelloRecorder()}
	cc.info.fpRec, cc.rec = fp, fp.hello
	tc := tls.Server(cc, e.tlsConf.server)
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.TLSTimeout)
	slot := slotOf(cc)    // Close cuts a stalled handshake with the connection
	slot.SetWaiting(true) // a stalled handshake makes room at the connection cap, like a stalled head
	err := tc.HandshakeContext(ctx)
	slot.SetWaiting(false)
	cancel()
	cc.rec = nil
	if err != nil {
		e.recordHandshakeFailure(cc, connect, tc, err)
		tc.Close()
		return
	}
	cc.info.tlsDone = time.Now()
	cc.info.decrypted = true
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		fp.h2 = newH2Recorder()
		e.serveH2(&recTLSConn{Conn: tc, rec: fp.h2})
		return
	}
	cc.info.framing = newFramingConn(tc)
	e.mitmLn.push(cc.info.framing)
}

func (e *Engine) serveH2(c net.Conn) {
	info := infoOf(c)
	if e.cfg.FrameSink != nil {
		if info.id == 0 {
			info.id = e.connIDs.Add(1)
		}
		tap := e.frameCap.NewH2Tap(c, frames.LegClient, info.id)
		info.frames = tap.Rec()
		c = tap
		defer tap.Close()
	}
	ctx := context.WithValue(context.Background(), connInfoKey{}, info)
	e.h2srv.ServeConn(c, &http2.ServeConnOpts{
		Context:    ctx,
		BaseConfig: e.mitmSrv,
		Handler:    http.HandlerFunc(e.serveExchange),
	})
}

// recordHandshakeFailure makes a session of a client that failed the TLS handshake, so
// the user sees why (typically: the client does not trust Inspector's CA yet).
func (e *Engine) recordHandshakeFailure(cc *clientConn, connect *http.Request, tc *tls.Conn, err error) {
	if !e.capture.Load() {
		return
	}
	now := time.Now()
	s := &session.Session{
		ID:      e.newID(),
		Started: now,
		Client:  session.Conn{Addr: cc.RemoteAddr().String(), ConnID: cc.info.id},
		Request: session.Request{Method: http.MethodConnect, URL: "https://" + cc.info.target, Proto: connect.Proto, Header: connect.Header},
		Timings: session.Timings{ClientConnected: cc.info.accepted, RequestHeaders: now, ResponseDone: now},
		Flags:   session.FlagHandshakeFailed,
		Error: &session.Error{
			Phase: session.PhaseClientTLS, Side: session.SideClient,
			Message: handshakeReason(err),
		},
	}
	if st := tc.ConnectionState(); st.ServerName != "" {
		s.Client.TLS = &session.TLSInfo{ServerName: st.ServerName}
	}
	cc.info.proc.fill(&s.Client)
	e.publish(Event{Kind: EventComplete, Summary: s.Summarize(), Session: s, proc: cc.info.proc})
}

func handshakeReason(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "unknown certificate authority"), strings.Contains(msg, "bad certificate"),
		strings.Contains(msg, "certificate unknown"):
		return "the client rejected Inspector's certificate (" + msg + "): install and trust the CA from http://inspector.cert/ or `inspector ca install`"
	case errors.Is(err, io.EOF), strings.Contains(msg, "connection reset"):
		return "the client closed the connection during the TLS handshake (" + msg + "); often it does not trust Inspector's CA, or pins certificates"
	}
	return msg
}

// tunnel relays bytes both ways without looking at them, and records a tunnel session.
// Its client has sent nothing since quiet (see tunnelActivity).
func (e *Engine) tunnel(cc *clientConn, connect *http.Request, target string, quiet time.Time) {
	defer cc.Close()
	act := newTunnelActivity(slotOf(cc.Conn), quiet) // idle from the start: the dial may hang
	defer act.end()
	s := &session.Session{
		Started: time.Now(),
		Client:  session.Conn{Addr: cc.RemoteAddr().String(), ConnID: cc.info.id},
		Request: session.Request{Method: http.MethodConnect, URL: target, Proto: connect.Proto, Header: connect.Header},
		Flags:   session.FlagTunnel,
	}
	s.Timings.ClientConnected = cc.info.accepted
	s.Timings.RequestHeaders = s.Started
	cc.info.proc.fill(&s.Client)
	capture := e.capture.Load()
	if capture {
		s.ID = e.newID()
		e.publish(Event{Kind: EventBegin, Summary: inflight(s)})
	}
	finish := func() {
		s.Timings.ResponseDone = time.Now()
		if capture {
			if s.Client.PID == 0 {
				cc.info.proc.fill(&s.Client)
			}
			e.publish(Event{Kind: EventComplete, Summary: s.Summarize(), Session: s, proc: cc.info.proc})
		}
	}
	s.Timings.ConnectStart = time.Now()
	up, err := e.up.DialContext(context.Background(), "tcp", target)
	if err != nil {
		s.Error = classifyDial(err)
		finish()
		return
	}
	s.Timings.ConnectDone = time.Now()
	s.Upstream.Addr = up.RemoteAddr().String()
	s.Response = &session.Response{Status: http.StatusOK, Reason: "Connection Established", Proto: session.HTTP1}
	// Engine.Close cuts the client connection, which ends both directions.
	// Both directions end at EOF (passed on as a half-close), on an error, or when the
	// tunnel has relayed nothing either way for TunnelIdleTimeout (then both are cut).
	idle := e.cfg.TunnelIdleTimeout
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		n, err := act.pump(up, cc, idle)
		s.Request.Body.Size = n
		if err != nil {
			cc.Close()
			up.Close()
		}
		closeWrite(up)
	}()
	n, err := act.pump(cc, up, idle)
	s.Response.Body.Size = n
	if err != nil {
		cc.Close()
		up.Close()
	}
	closeWrite(cc.Conn)
	wg.Wait()
	up.Close()
	if errors.Is(err, errTunnelIdle) {
		e.cfg.Logf("closed the tunnel to %s from %s: nothing relayed for %s (Config.TunnelIdleTimeout)", target, cc.RemoteAddr(), idle)
	}
	finish()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		c.Close()
	}
}

// chanListener hands connections that the engine accepted and prepared (TLS terminated,
// sniffed) to an http.Server.
type chanListener struct {
	addr   net.Addr
	c      chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, c: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) push(c net.Conn) {
	select {
	case l.c <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.c:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }
