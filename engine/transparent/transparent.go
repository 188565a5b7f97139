// Package transparent serves connections whose destination was rewritten on the way (an
// nftables or iptables REDIRECT, a router rule, a network namespace of 'inspector run', a
// WireGuard peer's flow): the target is the connection's original destination, with the
// TLS server name or the HTTP Host header as the name to use for it, and each connection
// goes to Engine.ServeConn, so it is decrypted and recorded as inside a CONNECT tunnel.
package transparent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"inspector/engine"
)

// Options tune a Server.
type Options struct {
	// Via names the entry point in sessions ("transparent" when empty).
	Via string
	// Client, when set, names the client of every connection (a launched command);
	// otherwise the engine's process lookup runs.
	Client string
	// OriginalDst finds a connection's destination before the redirect. Nil means the
	// kernel's (SO_ORIGINAL_DST; Linux only).
	OriginalDst func(net.Conn) (netip.AddrPort, error)
	// Resolve looks a name up for the check of a TLS server name or Host header against
	// the original destination. Nil means net.DefaultResolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// SniffTimeout bounds the wait for the client's first bytes (3s when 0, as the engine's); a client
	// that sends nothing by then (a server-speaks-first protocol) is tunnelled to the
	// original destination.
	SniffTimeout time.Duration
	// Logf receives the listener's notes (nil discards them).
	Logf func(format string, args ...any)
}

// Server accepts redirected connections on a listener.
type Server struct {
	e    *engine.Engine
	ln   net.Listener
	opts Options

	mu     sync.Mutex
	noted  map[string]bool // names whose check failed, logged once each
	closed bool
	local  localAddrs
}

// New returns a server for the redirected connections accepted on ln (nil for a server
// that is only given connections, with ServeConn). A connection whose
// original destination is ln itself is refused; reserve ln's address in the engine too
// (Config.ReservedAddrs, or Engine.Reserve before Serve) so that no other entry point
// forwards to it.
func New(e *engine.Engine, ln net.Listener, opts Options) *Server {
	if opts.Via == "" {
		opts.Via = "transparent"
	}
	if opts.OriginalDst == nil {
		opts.OriginalDst = OriginalDst
	}
	if opts.Resolve == nil {
		opts.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if opts.SniffTimeout <= 0 {
		opts.SniffTimeout = 3 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	return &Server{e: e, ln: ln, opts: opts, noted: map[string]bool{}}
}

// Engine is the engine the server hands connections to.
func (s *Server) Engine() *engine.Engine {
	return s.e
}

// Addr is the listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts connections until Close or the listener fails; it returns nil after Close.
// Connections are capped at the engine's Config.MaxConns.
func (s *Server) Serve() error {
	dl := &dstListener{Listener: s.ln, s: s, dsts: map[string]dstResult{}}
	ln := s.e.LimitListener(dl)
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		r := dl.take(c.RemoteAddr().String())
		if r.err != nil {
			s.opts.Logf("transparent: %s: no original destination (%v); is the traffic redirected here by a NAT rule?", c.RemoteAddr(), r.err)
			c.Close()
			continue
		}
		go s.ServeConn(c, r.dst)
	}
}

// dstListener reads each connection's original destination as it is accepted, under the
// engine's connection cap, which hides the socket.
type dstListener struct {
	net.Listener
	s    *Server
	mu   sync.Mutex
	dsts map[string]dstResult // by client address, until Serve takes it
}

type dstResult struct {
	dst netip.AddrPort
	err error
}

func (l *dstListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	dst, derr := l.s.opts.OriginalDst(c)
	l.mu.Lock()
	l.dsts[c.RemoteAddr().String()] = dstResult{dst, derr}
	l.mu.Unlock()
	return c, nil
}

func (l *dstListener) take(remote string) dstResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.dsts[remote]
	if !ok {
		return dstResult{err: errors.New("connection not seen by the listener")}
	}
	delete(l.dsts, remote)
	return r
}

// Close stops the listener; connections being served go on until the engine closes.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Close()
}

// ServeConn serves one redirected connection whose original destination is dst: it
// reads the client's first bytes for a TLS server name or a Host header, picks the
// target (see Target) and hands the connection to the engine. It returns the engine's
// error: engine.ErrLoop for a destination that is the instance itself.
func (s *Server) ServeConn(c net.Conn, dst netip.AddrPort) error {
	return s.ServeConnFrom(c, dst, s.opts.Client)
}

// ServeConnFrom is ServeConn for a connection whose client has a name of its own (a
// WireGuard peer), which its sessions carry ("" for the engine's process lookup).
func (s *Server) ServeConnFrom(c net.Conn, dst netip.AddrPort, client string) error {
	if s.isSelf(dst) || s.e.Reserved(dst.String()) || s.isOwnWildcard(dst) {
		c.Close()
		s.opts.Logf("transparent: refused %s from %s: the original destination is Inspector itself", dst, c.RemoteAddr())
		return engine.ErrLoop
	}
	pc := newPeekConn(c)
	name := pc.sniff(s.opts.SniffTimeout)
	target := s.Target(dst, name)
	err := s.e.ServeConn(pc, target, engine.ConnSource{Via: s.opts.Via, Client: client})
	if errors.Is(err, engine.ErrLoop) {
		s.opts.Logf("transparent: refused %s from %s: the original destination is Inspector itself", target, c.RemoteAddr())
	}
	return err
}

// isSelf reports whether dst is the listener's own address.
func (s *Server) isSelf(dst netip.AddrPort) bool {
	if s.ln == nil {
		return false
	}
	la, ok := s.ln.Addr().(*net.TCPAddr)
	if !ok || la.Port != int(dst.Port()) {
		return false
	}
	ip, _ := netip.AddrFromSlice(la.IP)
	ip = ip.Unmap()
	d := dst.Addr().Unmap()
	return ip == d || (ip.IsUnspecified() || ip.IsLoopback()) && (d.IsLoopback() || d.IsUnspecified())
}

// isOwnWildcard reports whether dst is one of this machine's own addresses at the port
// of a listener of the instance on every address (":8080", "0.0.0.0:8080"): a device on
// the network (a WireGuard peer) reaches such a listener at the machine's address, which
// the engine's reservations, kept for loopback and unspecified forms, do not name. A
// service of another program at that port on one of the machine's addresses, beside a
// loopback-only listener of ours, is refused too: loop protection errs on that side.
func (s *Server) isOwnWildcard(dst netip.AddrPort) bool {
	port := strconv.Itoa(int(dst.Port()))
	if !s.e.Reserved(net.JoinHostPort("0.0.0.0", port)) && !s.e.Reserved(net.JoinHostPort("::", port)) {
		return false
	}
	return s.local.has(dst.Addr().Unmap())
}

// localAddrs is this machine's interface addresses, read again when older than a few
// seconds (a read is a netlink dump, too dear for every connection).
type localAddrs struct {
	mu    sync.Mutex
	read  time.Time
	addrs map[netip.Addr]bool
}

func (l *localAddrs) has(a netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.addrs == nil || time.Since(l.read) > 5*time.Second {
		l.addrs = map[netip.Addr]bool{}
		l.read = time.Now()
		ifas, _ := net.InterfaceAddrs()
		for _, ifa := range ifas {
			if n, ok := ifa.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok {
					l.addrs[ip.Unmap()] = true
				}
			}
		}
	}
	return l.addrs[a]
}

// Target is host:port to serve a connection to dst as. The name the client sent (TLS
// server name or Host header, "" for none) is used when it passes the check: an IP
// literal must be dst's address; a host name must resolve (Options.Resolve) to dst's
// address among others ("localhost" to a loopback one). Otherwise the target is dst
// itself, and the mismatch is logged once for that name: a client cannot steer the
// instance elsewhere than where its connection went.
func (s *Server) Target(dst netip.AddrPort, name string) string {
	port := strconv.Itoa(int(dst.Port()))
	dstAddr := dst.Addr().Unmap()
	plain := net.JoinHostPort(dstAddr.String(), port)
	if name == "" {
		return plain
	}
	if ip, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil {
		if ip.Unmap() != dstAddr {
			s.note(name, "transparent: the client names %s, but its connection went to %s; serving it as %s", name, dstAddr, plain)
		}
		return plain
	}
	if !validName(name) {
		return plain
	}
	if dstAddr.IsLoopback() && strings.EqualFold(name, "localhost") {
		return net.JoinHostPort(name, port)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	addrs, err := s.opts.Resolve(ctx, name)
	cancel()
	for _, a := range addrs {
		if a.Unmap() == dstAddr {
			return net.JoinHostPort(name, port)
		}
	}
	why := "resolves to other addresses"
	if err != nil {
		why = "does not resolve here (" + err.Error() + ")"
	}
	s.note(name, "transparent: %s %s than the original destination %s; serving the connection as %s", name, why, dstAddr, plain)
	return plain
}

func (s *Server) note(key, format string, args ...any) {
	s.mu.Lock()
	seen := s.noted[key]
	if !seen && len(s.noted) < 4096 {
		s.noted[key] = true
	}
	s.mu.Unlock()
	if !seen {
		s.opts.Logf(format, args...)
	}
}

// validName reports whether name is a plausible DNS host name (letters, digits, '-',
// '_', dots; 253 bytes at most).
func validName(name string) bool {
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// peekConn is a connection whose first bytes have been read for sniffing and are read
// again by its user.
type peekConn struct {
	net.Conn
	r *bufio.Reader
}

func newPeekConn(c net.Conn) *peekConn { return &peekConn{Conn: c, r: bufio.NewReaderSize(c, 16<<10)} }

func (c *peekConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite half-closes the connection when the underlying one can (tunnels use it).
func (c *peekConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// NetConn is the connection under the sniffing buffer.
func (c *peekConn) NetConn() net.Conn { return c.Conn }

// sniff waits up to timeout for the client's first bytes and returns the TLS server
// name or HTTP Host it names, or "".
func (c *peekConn) sniff(timeout time.Duration) string {
	_ = c.Conn.SetReadDeadline(time.Now().Add(timeout))
	defer c.Conn.SetReadDeadline(time.Time{})
	first, err := c.r.Peek(1)
	if err != nil {
		return ""
	}
	if first[0] == 0x16 {
		return c.sniffSNI()
	}
	return c.sniffHost()
}

// sniffSNI reads the ClientHello record(s) from the buffer without consuming them and
// returns its server name.
func (c *peekConn) sniffSNI() string {
	hdr, err := c.r.Peek(5)
	if err != nil {
		return ""
	}
	n := int(hdr[3])<<8 | int(hdr[4])
	if n > c.r.Size()-5 {
		n = c.r.Size() - 5
	}
	rec, err := c.r.Peek(5 + n)
	if err != nil && len(rec) < 5 {
		return ""
	}
	return serverName(rec)
}

// serverName parses the TLS server name from the bytes of a ClientHello with crypto/tls
// itself, on a connection that only replays them.
func serverName(hello []byte) string {
	var name string
	conn := &replayConn{r: bytes.NewReader(hello)}
	cfg := &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		name = h.ServerName
		return nil, errSniffed
	}}
	_ = tls.Server(conn, cfg).Handshake()
	return name
}

var errSniffed = errors.New("sniffed")

// replayConn is a net.Conn that reads from r and discards writes.
type replayConn struct {
	net.Conn
	r io.Reader
}

func (c *replayConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *replayConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *replayConn) Close() error                     { return nil }
func (c *replayConn) SetDeadline(time.Time) error      { return nil }
func (c *replayConn) SetReadDeadline(time.Time) error  { return nil }
func (c *replayConn) SetWriteDeadline(time.Time) error { return nil }
func (c *replayConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *replayConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *replayConn) String() string                   { return "sniff" }

// sniffHost reads an HTTP/1 request head from the buffer without consuming it and
// returns its Host's name. An h2 prior-knowledge preface or anything else gives "".
func (c *peekConn) sniffHost() string {
	for {
		b, _ := c.r.Peek(c.r.Buffered())
		if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
			return hostOf(b[:i+4])
		}
		if len(b) >= 3 && !isToken(b[:3]) || len(b) >= c.r.Size() {
			return "" // not an HTTP/1 request, or a head larger than the buffer
		}
		if _, err := c.r.Peek(len(b) + 1); err != nil {
			return ""
		}
	}
}

func isToken(b []byte) bool {
	for _, c := range b {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

func hostOf(head []byte) string {
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
	if err != nil || req.Method == "PRI" {
		return ""
	}
	host := req.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.Trim(host, "[]")
}

// ErrNoOriginalDst is returned by OriginalDst where the connection carries none.
var ErrNoOriginalDst = errors.New("no original destination")

func wrapOrigErr(err error) error { return fmt.Errorf("%w: %v", ErrNoOriginalDst, err) }
