package engine

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"inspector/engine/internal/capture"
	"inspector/engine/internal/conn"
	"inspector/engine/internal/frames"
	"inspector/engine/internal/upstream"
	"inspector/engine/session"
)

// Engine is a running proxy. Create it with New, then call Serve.
type Engine struct {
	cfg Config
	ln  net.Listener

	proxySrv *http.Server // the listener clients point at: absolute-form requests and CONNECT
	mitmSrv  *http.Server // HTTP/1.1 inside CONNECT tunnels (decrypted or plain)
	mitmLn   *chanListener
	h2srv    *http2.Server
	up       *upstream.Upstream
	tlsInfos tlsCache    // upstream TLS records, one per connection state
	proxyLog *log.Logger // the exchanges' reverse proxies log here
	tlsConf  baseTLS
	keyLog   *keyLogWriter // Config.KeyLog and the in-memory key table (keylog.go)

	capture    atomic.Bool
	captureMem *capture.Budget // Config.CaptureMemory; nil: no cap
	nextID     atomic.Uint64
	connIDs    atomic.Uint64

	observers atomic.Pointer[[]Observer]
	obsQ      observerQueue
	subsMu    sync.Mutex
	subs      atomic.Pointer[[]*Subscription]
	dropped   atomic.Uint64
	completed atomic.Uint64

	flightMu sync.Mutex
	inFlight map[session.ID]session.Summary
	peeks    sync.Map // session.ID -> *peekEntry: running exchanges Peek reads (peek.go)

	hooksMu  sync.Mutex
	hooks    atomic.Pointer[hookSet]
	msgObs   atomic.Pointer[[]MessageObserver] // nil or empty: no WebSocket message observers
	msgHooks atomic.Pointer[[]MessageHook]     // nil or empty: WebSockets are copied, not parsed (messages.go)

	conns    *conn.Table // every client connection: the cap, eviction, Stats.Connections, Close
	wg       sync.WaitGroup
	closed   atomic.Bool
	reserved map[string]bool // host:port literals never dialed (canonicalHostPort)
	// reservedLoopPorts: ports of loopback or wildcard listeners of ours; any loopback or
	// unspecified IP with such a port is reserved.
	reservedLoopPorts map[string]bool

	frameCap *frames.Capture // frame capture (used when Config.FrameSink is set)
	h3srv    *h3Server
	rev      *reverseTarget // reverse mode (Config.Reverse), else nil
}

// Observer receives every event, in order, on the engine's delivery goroutine (see
// observe.go): never on an exchange's, so a slow observer delays only later deliveries.
// It should still return promptly: while it holds a completed session, that session's
// bodies count against Config.CaptureMemory, and at most 65,536 events wait for it
// (beyond that events are dropped and counted in Stats.ObserverDropped). It must not call
// Send or Close, which wait for deliveries (its own among them).
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

func (f ObserverFunc) Observe(ev Event) { f(ev) }

// Subscription is a buffered event feed; see the package comment for slow consumers.
type Subscription struct {
	C       <-chan Event
	c       chan Event
	e       *Engine
	kinds   uint32 // bit k set: events of kind k are delivered (EventResync always is)
	behind  atomic.Bool
	dropped atomic.Uint64
	once    sync.Once
}

// Dropped counts events this subscriber lost.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Close stops delivery. Events already queued stay readable; C is not closed, so readers
// should stop on their own signal.
func (s *Subscription) Close() {
	s.once.Do(func() {
		e := s.e
		e.subsMu.Lock()
		defer e.subsMu.Unlock()
		old := *e.subs.Load()
		n := make([]*Subscription, 0, len(old))
		for _, x := range old {
			if x != s {
				n = append(n, x)
			}
		}
		e.subs.Store(&n)
	})
}

// DefaultCaptureMemory is Config.CaptureMemory's default.
const DefaultCaptureMemory = 64 << 20

// ErrRemoteListen is returned by New for a non-loopback Listen without AllowRemote.
var ErrRemoteListen = errors.New("refusing to listen on a non-loopback address without --allow-remote")

// New validates cfg and opens the proxy listener (so Addr is known at once).
func New(cfg Config) (*Engine, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:8080"
	}
	setDefault(&cfg.HeaderTimeout, 30*time.Second)
	setDefault(&cfg.IdleTimeout, 120*time.Second)
	setDefault(&cfg.DialTimeout, 15*time.Second)
	setDefault(&cfg.TLSTimeout, 15*time.Second)
	setDefault(&cfg.ResponseTimeout, 120*time.Second)
	setDefault(&cfg.TunnelIdleTimeout, DefaultTunnelIdleTimeout)
	setDefault(&cfg.TunnelEvictAfter, conn.DefaultTunnelIdleAfter)
	setDefault(&cfg.SniffTimeout, 3*time.Second)
	if cfg.CaptureLimit == 0 {
		cfg.CaptureLimit = 1 << 20
	}
	if cfg.CaptureMemory == 0 {
		cfg.CaptureMemory = DefaultCaptureMemory
	}
	switch cfg.UpstreamProto {
	case "":
		cfg.UpstreamProto = "auto"
	case "auto", "h1", "h2", "h3":
	default:
		return nil, fmt.Errorf("unknown upstream protocol %q (want auto, h1, h2 or h3)", cfg.UpstreamProto)
	}
	switch cfg.Fingerprint {
	case "", "mirror", "go":
	default:
		return nil, fmt.Errorf("unknown fingerprint policy %q (want mirror or go)", cfg.Fingerprint)
	}
	for _, g := range slices.Concat(cfg.NoDecrypt, cfg.UpstreamInsecure, cfg.H3Refuse, cfg.H3Passthrough, cfg.FingerprintGo) {
		if err := checkGlob(g); err != nil {
			return nil, err
		}
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if !cfg.AllowRemote && !isLoopbackListen(cfg.Listen) {
		return nil, fmt.Errorf("%w: %s", ErrRemoteListen, cfg.Listen)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("proxy listener: %w", err)
	}
	e := &Engine{
		keyLog:   newKeyLog(cfg.KeyLog),
		cfg:      cfg,
		ln:       ln,
		inFlight: map[session.ID]session.Summary{},
		conns:    conn.NewTable(cfg.MaxConns, cfg.TunnelEvictAfter, cfg.Logf),
		reserved: map[string]bool{},

		reservedLoopPorts: map[string]bool{},
	}
	if cfg.CaptureMemory > 0 {
		e.captureMem = capture.NewBudget(cfg.CaptureMemory)
	}
	e.capture.Store(true)
	e.frameCap = frames.New(frames.Env{Capture: &e.capture, Sink: cfg.FrameSink, Logf: cfg.Logf,
		NextConnID: func() uint64 { return e.connIDs.Add(1) }})
	e.observers.Store(&[]Observer{})
	e.subs.Store(&[]*Subscription{})
	e.hooks.Store(&hookSet{})
	e.reserve(ln.Addr().String())
	for _, a := range cfg.ReservedAddrs {
		e.reserve(a)
	}
	if cfg.Reverse != "" {
		if e.rev, err = parseReverse(cfg.Reverse); err != nil {
			ln.Close()
			return nil, err
		}
	}
	e.proxyLog = log.New(logWriter{cfg.Logf}, "", 0)
	if e.up, err = e.newUpstream(); err != nil {
		ln.Close()
		return nil, err
	}
	e.initServers()
	if err := e.initH3(); err != nil {
		ln.Close()
		e.up.Close()
		return nil, err
	}
	if e.h3srv != nil {
		e.reserve(e.h3srv.conn.LocalAddr().String())
	}
	return e, nil
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

func isLoopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// reserve marks an address as one the proxy must never forward to. When the address is a
// wildcard or loopback one, every loopback form of its port is reserved.
func (e *Engine) reserve(addr string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return
	}
	host, port = canonicalHostPort(host, port)
	e.reserved[net.JoinHostPort(host, port)] = true
	ip := net.ParseIP(host)
	if host == "localhost" || ip == nil || ip.IsLoopback() || ip.IsUnspecified() {
		// Every loopback or unspecified address reaches such a listener.
		e.reserved[net.JoinHostPort("localhost", port)] = true
		e.reservedLoopPorts[port] = true
	}
}

// canonicalHostPort spells host and port the one way reservations are keyed: IPs in their
// canonical form (IPv4-mapped IPv6 as IPv4), names lower-case without a trailing dot,
// ports as plain decimal ("08080" is 8080).
func canonicalHostPort(host, port string) (string, string) {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if ip := net.ParseIP(host); ip != nil {
		if v4 := ip.To4(); v4 != nil {
			ip = v4
		}
		host = ip.String()
	}
	if n, err := strconv.ParseUint(port, 10, 16); err == nil {
		port = strconv.FormatUint(n, 10)
	}
	return host, port
}

// Reserve adds an address (host:port) the proxy must refuse to forward to, e.g. a control
// API started after New. Call it before Serve.
func (e *Engine) Reserve(addr string) { e.reserve(addr) }

// Addr is the proxy listener's actual address.
func (e *Engine) Addr() string { return e.ln.Addr().String() }

// Serve accepts proxy clients until Close; it returns nil after Close.
func (e *Engine) Serve() error {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		_ = e.mitmSrv.Serve(e.mitmLn)
	}()
	if e.h3srv != nil {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.h3srv.serve()
		}()
	}
	if e.rev != nil {
		return e.serveReverse()
	}
	err := e.proxySrv.Serve(framingListener{e.conns.Listener(e.ln)})
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops accepting, lets in-flight exchanges finish until ctx ends, then closes
// every remaining connection (tunnels and WebSockets included). In-flight sessions are
// completed (with an error when cut short) and delivered to the observers before Close
// returns (the delivery until ctx ends).
func (e *Engine) Close(ctx context.Context) error {
	if !e.closed.CompareAndSwap(false, true) {
		return nil
	}
	errc := make(chan error, 3)
	go func() { errc <- e.proxySrv.Shutdown(ctx) }()
	go func() { errc <- e.mitmSrv.Shutdown(ctx) }()
	go func() {
		if e.h3srv == nil {
			errc <- nil
			return
		}
		errc <- e.h3srv.shutdown(ctx)
	}()
	if e.rev != nil {
		e.ln.Close()
	}
	err := errors.Join(<-errc, <-errc, <-errc)
	if err != nil {
		_ = e.proxySrv.Close()
		_ = e.mitmSrv.Close()
	}
	e.conns.CloseAll() // tunnels, WebSockets, h2, handshakes and sniffs in progress
	e.wg.Wait()
	e.obsQ.wait(ctx) // every session that completed reaches the observers
	e.obsQ.close()
	e.up.Close()
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// SetCapture turns recording on or off. With capture off the proxy still relays traffic
// but creates no sessions and publishes nothing.
func (e *Engine) SetCapture(on bool) { e.capture.Store(on) }

// Capturing reports whether recording is on.
func (e *Engine) Capturing() bool { return e.capture.Load() }

// Observe registers a synchronous observer (see Observer).
func (e *Engine) Observe(o Observer) {
	e.subsMu.Lock()
	defer e.subsMu.Unlock()
	n := append(append([]Observer(nil), *e.observers.Load()...), o)
	e.observers.Store(&n)
}

// Subscribe returns a feed of events with the given buffer (default 1024): of the given
// kinds only, or of every kind when none is given (EventResync is always delivered). A
// subscriber that wants only completed sessions saves the engine two channel sends and
// wake-ups per session. Call InFlight after subscribing for the sessions already running.
func (e *Engine) Subscribe(buffer int, kinds ...EventKind) *Subscription {
	if buffer <= 0 {
		buffer = 1024
	}
	c := make(chan Event, buffer)
	s := &Subscription{C: c, c: c, e: e, kinds: ^uint32(0)}
	if len(kinds) > 0 {
		s.kinds = 1 << EventResync
		for _, k := range kinds {
			s.kinds |= 1 << k
		}
	}
	e.subsMu.Lock()
	defer e.subsMu.Unlock()
	n := append(append([]*Subscription(nil), *e.subs.Load()...), s)
	e.subs.Store(&n)
	return s
}

// InFlight returns summaries of the sessions that have begun and not completed.
func (e *Engine) InFlight() []session.Summary {
	e.flightMu.Lock()
	defer e.flightMu.Unlock()
	out := make([]session.Summary, 0, len(e.inFlight))
	for _, s := range e.inFlight {
		out = append(out, s)
	}
	return out
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	e.flightMu.Lock()
	n := len(e.inFlight)
	e.flightMu.Unlock()
	return Stats{
		Sessions:        e.completed.Load(),
		InFlight:        n,
		Connections:     int64(e.conns.Open()),
		DroppedEvents:   e.dropped.Load(),
		FramesDropped:   e.frameCap.Dropped(),
		ObserverDropped: e.obsQ.dropped.Load(),
		CaptureMemory:   e.captureMem.InUse(),
		CaptureCapped:   e.captureMem.CappedCount(),
	}
}

func (e *Engine) newID() session.ID {
	if e.cfg.NewID != nil {
		return e.cfg.NewID()
	}
	return session.ID(e.nextID.Add(1))
}

func (e *Engine) publish(ev Event) { e.publishFor(ev, nil) }

// publishFor publishes ev, the event of exchange x (nil for sessions without one): to
// the observers through their delivery queue, to subscribers at once. Neither waits.
func (e *Engine) publishFor(ev Event, x *exchange) {
	switch ev.Kind {
	case EventBegin, EventUpdate:
		e.flightMu.Lock()
		e.inFlight[ev.Summary.ID] = ev.Summary
		e.flightMu.Unlock()
	case EventComplete:
		e.flightMu.Lock()
		delete(e.inFlight, ev.Summary.ID)
		e.flightMu.Unlock()
		e.peeks.Delete(ev.Summary.ID)
		e.completed.Add(1)
	}
	if len(*e.observers.Load()) > 0 {
		e.obsQ.push(e, ev, x)
	} else {
		x.delivered()
	}
	for _, s := range *e.subs.Load() {
		if s.kinds&(1<<ev.Kind) == 0 {
			continue
		}
		if s.behind.Load() {
			select {
			case s.c <- Event{Kind: EventResync}:
				s.behind.Store(false)
			default:
				s.dropped.Add(1)
				e.dropped.Add(1)
				continue
			}
		}
		select {
		case s.c <- ev:
		default:
			s.behind.Store(true)
			s.dropped.Add(1)
			e.dropped.Add(1)
		}
	}
}
