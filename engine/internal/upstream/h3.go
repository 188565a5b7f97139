package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// Reasons recorded in session.Conn.ProtoReason for the upstream leg.
const (
	reasonForcedH3 = "forced by --upstream-proto h3"
	reasonAltSvc   = "the origin advertised h3 with Alt-Svc"
)

// h3Pool is the upstream HTTP/3 side: one QUIC connection per origin address, reused by
// every request to it, with its own UDP socket. It is safe for concurrent use.
type h3Pool struct {
	u   *Upstream
	h3t *http3.Transport // settings for NewClientConn only; never dials

	mu     sync.Mutex
	tr     *quic.Transport // created on first use
	conns  map[string]*h3Conn
	closed bool
}

// h3Conn is one upstream QUIC connection with its HTTP/3 client.
type h3Conn struct {
	qc    *quic.Conn
	cc    *http3.ClientConn
	id    uint64
	state *tls.ConnectionState // one value per connection, so TLS records are shared
	used  bool
}

func newH3Pool(u *Upstream) *h3Pool {
	return &h3Pool{
		u:     u,
		h3t:   &http3.Transport{DisableCompression: true, MaxResponseHeaderBytes: u.cfg.MaxHeaderBytes},
		conns: map[string]*h3Conn{},
	}
}

// errQUICDial marks a failure to establish the QUIC connection: nothing was sent, so the
// request may go over TCP instead.
type errQUICDial struct{ err error }

func (e *errQUICDial) Error() string { return "QUIC connection failed: " + e.err.Error() }
func (e *errQUICDial) Unwrap() error { return e.err }

func (p *h3Pool) transport() (*quic.Transport, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("the engine is closing")
	}
	if p.tr == nil {
		udp, err := net.ListenUDP("udp", nil)
		if err != nil {
			return nil, err
		}
		p.tr = &quic.Transport{Conn: udp}
	}
	return p.tr, nil
}

// roundTrip sends req over HTTP/3 to dialAddr (host:port; the request URL keeps the
// name used for SNI and :authority). A failure to connect is an *errQUICDial. The dial
// reports to the context's httptrace, the connection and the request's write to tr.
func (p *h3Pool) roundTrip(req *http.Request, dialAddr string, tlsConf *tls.Config, tr ConnTrace) (*http.Response, error) {
	key := dialAddr + "|" + req.URL.Hostname()
	if tlsConf.InsecureSkipVerify {
		key += "|insecure"
	}
	for attempt := 0; ; attempt++ {
		c, reused, err := p.get(req.Context(), key, dialAddr, req.URL.Hostname(), tlsConf)
		if err != nil {
			return nil, &errQUICDial{err}
		}
		tr.ConnGot(c.id, c.qc.RemoteAddr().String(), reused)
		resp, err := c.cc.RoundTrip(req)
		if err != nil {
			if c.qc.Context().Err() != nil {
				p.drop(key, c)
				if reused && attempt == 0 && (req.Body == nil || req.Body == http.NoBody) {
					continue // the idle connection had died: one fresh try
				}
			}
			return nil, err
		}
		resp.TLS = c.state
		tr.RequestWritten()
		return resp, nil
	}
}

func (p *h3Pool) get(ctx context.Context, key, dialAddr, sni string, base *tls.Config) (*h3Conn, bool, error) {
	p.mu.Lock()
	if c := p.conns[key]; c != nil {
		if c.qc.Context().Err() == nil {
			reused := c.used
			c.used = true
			p.mu.Unlock()
			return c, reused, nil
		}
		delete(p.conns, key)
	}
	p.mu.Unlock()
	c, err := p.dial(ctx, dialAddr, sni, base)
	if err != nil {
		return nil, false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.qc.CloseWithError(0, "")
		return nil, false, errors.New("the engine is closing")
	}
	if old := p.conns[key]; old != nil && old.qc.Context().Err() == nil {
		// Another request dialed at the same time: keep one connection.
		_ = c.qc.CloseWithError(0, "")
		old.used = true
		return old, true, nil
	}
	c.used = true
	p.conns[key] = c
	return c, false, nil
}

func (p *h3Pool) dial(ctx context.Context, dialAddr, sni string, base *tls.Config) (*h3Conn, error) {
	cfg := &p.u.cfg
	host, port, err := net.SplitHostPort(dialAddr)
	if err != nil {
		return nil, err
	}
	if cfg.Reserved(host, port) {
		return nil, ErrReserved
	}
	tr, err := p.transport()
	if err != nil {
		return nil, err
	}
	trace := httptrace.ContextClientTrace(ctx)
	ip := net.ParseIP(strings.Trim(host, "[]"))
	if ip == nil {
		if trace != nil && trace.DNSStart != nil {
			trace.DNSStart(httptrace.DNSStartInfo{Host: host})
		}
		ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
		if trace != nil && trace.DNSDone != nil {
			trace.DNSDone(httptrace.DNSDoneInfo{Err: err})
		}
		if err != nil {
			return nil, err
		}
		ip = ips[0]
	}
	pn, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("bad port in %q", dialAddr)
	}
	if cfg.Reserved(ip.String(), port) {
		return nil, ErrReserved
	}
	udpAddr := &net.UDPAddr{IP: ip, Port: pn}
	tlsConf := base.Clone()
	tlsConf.ServerName = sni
	tlsConf.NextProtos = []string{http3.NextProtoH3}
	if trace != nil && trace.ConnectStart != nil {
		trace.ConnectStart("udp", udpAddr.String())
	}
	if trace != nil && trace.TLSHandshakeStart != nil {
		trace.TLSHandshakeStart()
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	id := p.u.nextConnID()
	qc, err := tr.Dial(dctx, udpAddr, tlsConf, cfg.QUICConfig(id))
	var st tls.ConnectionState
	if qc != nil {
		st = qc.ConnectionState().TLS
	}
	if trace != nil && trace.TLSHandshakeDone != nil {
		trace.TLSHandshakeDone(st, err)
	}
	if trace != nil && trace.ConnectDone != nil {
		trace.ConnectDone("udp", udpAddr.String(), err)
	}
	if err != nil {
		return nil, err
	}
	return &h3Conn{qc: qc, cc: p.h3t.NewClientConn(qc), id: id, state: &st}, nil
}

func (p *h3Pool) drop(key string, c *h3Conn) {
	p.mu.Lock()
	if p.conns[key] == c {
		delete(p.conns, key)
	}
	p.mu.Unlock()
	_ = c.qc.CloseWithError(0, "")
}

func (p *h3Pool) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[string]*h3Conn{}
	tr := p.tr
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.qc.CloseWithError(0, "")
	}
	if tr != nil {
		_ = tr.Close()
		_ = tr.Conn.Close()
	}
}

// altSvcCache remembers origins that advertised HTTP/3 with Alt-Svc, until their max age.
// It is safe for concurrent use.
type altSvcCache struct {
	mu sync.Mutex
	m  map[string]altSvcEntry // origin authority (host:port) → where to reach h3
}

type altSvcEntry struct {
	addr    string // host:port to dial over UDP
	expires time.Time
	broken  time.Time // QUIC failed at this time: use TCP until expires or 5 minutes pass
	reason  string
}

// brokenFor is how long an origin whose QUIC failed stays on TCP.
const brokenFor = 5 * time.Minute

// lookup returns the h3 address of an origin, if one is remembered and not broken.
func (c *altSvcCache) lookup(authority string, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	en, ok := c.m[authority]
	if !ok {
		return "", false
	}
	if now.After(en.expires) {
		delete(c.m, authority)
		return "", false
	}
	if !en.broken.IsZero() && now.Sub(en.broken) < brokenFor {
		return "", false
	}
	return en.addr, true
}

// markBroken records that QUIC to an origin failed.
func (c *altSvcCache) markBroken(authority string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if en, ok := c.m[authority]; ok {
		en.broken = now
		c.m[authority] = en
	}
}

// learn records the Alt-Svc header values of a response from authority (host:port).
func (c *altSvcCache) learn(authority string, values []string, now time.Time) {
	if len(values) == 0 {
		return
	}
	host, _, err := net.SplitHostPort(authority)
	if err != nil {
		return
	}
	for _, v := range values {
		if strings.TrimSpace(v) == "clear" {
			c.mu.Lock()
			delete(c.m, authority)
			c.mu.Unlock()
			return
		}
		alt, ok := parseAltSvcH3(v, now)
		if !ok {
			continue
		}
		if alt.host == "" {
			alt.host = host
		}
		c.mu.Lock()
		if c.m == nil {
			c.m = map[string]altSvcEntry{}
		}
		if len(c.m) >= 4096 {
			for k := range c.m {
				delete(c.m, k)
				break
			}
		}
		old := c.m[authority]
		en := altSvcEntry{addr: net.JoinHostPort(alt.host, alt.port), expires: alt.expires}
		if old.addr == en.addr {
			en.broken = old.broken
		}
		c.m[authority] = en
		c.mu.Unlock()
		return
	}
}

type altSvc struct {
	host, port string
	expires    time.Time
}

// parseAltSvcH3 finds the first h3 alternative in one Alt-Svc header value (RFC 7838):
// `h3=":443"; ma=3600, h3-29=":443"`. ma defaults to 24 hours.
func parseAltSvcH3(v string, now time.Time) (altSvc, bool) {
	for _, alt := range strings.Split(v, ",") {
		parts := strings.Split(alt, ";")
		proto, val, ok := strings.Cut(strings.TrimSpace(parts[0]), "=")
		if !ok || strings.TrimSpace(proto) != "h3" {
			continue
		}
		val = strings.Trim(strings.TrimSpace(val), `"`)
		h, p, err := net.SplitHostPort(val)
		if err != nil || p == "" {
			continue
		}
		if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
			continue
		}
		ma := 24 * time.Hour
		for _, param := range parts[1:] {
			k, pv, _ := strings.Cut(strings.TrimSpace(param), "=")
			if strings.TrimSpace(k) == "ma" {
				if secs, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(pv), `"`), 10, 64); err == nil && secs >= 0 {
					ma = time.Duration(min(secs, int64(365*24*3600))) * time.Second
				}
			}
		}
		return altSvc{host: h, port: p, expires: now.Add(ma)}, true
	}
	return altSvc{}, false
}
