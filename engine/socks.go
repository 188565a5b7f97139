package engine

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"inspector/engine/internal/socks"
)

// socksHandshakeTimeout bounds a SOCKS client's greeting, authentication and request.
const socksHandshakeTimeout = 30 * time.Second

// SOCKS is a SOCKS5 listener whose CONNECTs enter the engine like an HTTP CONNECT
// (ServeConn): sniffed, decrypted with minted leaves and recorded. It answers BIND and
// UDP ASSOCIATE with "command not supported" (0x07). With Config.ProxyAuth set it demands
// RFC 1929 user/password authentication with those credentials.
type SOCKS struct {
	e      *Engine
	ln     net.Listener
	client string
	wg     sync.WaitGroup
	once   sync.Once
}

// ListenSOCKS starts a SOCKS5 listener on addr (host:port; port 0 picks one). A
// non-loopback addr needs Config.AllowRemote. client, when set, names every connection's
// client (ConnSource.Client): the sessions carry it as their process, as for a launched
// browser with a listener of its own. Close the returned listener when done; Engine.Close
// cuts its connections but does not close it.
func (e *Engine) ListenSOCKS(addr, client string) (*SOCKS, error) {
	if !e.cfg.AllowRemote && !isLoopbackListen(addr) {
		return nil, fmt.Errorf("%w: SOCKS %s", ErrRemoteListen, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("SOCKS listener: %w", err)
	}
	s := &SOCKS{e: e, ln: e.LimitListener(ln), client: client}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Addr is the listener's address.
func (s *SOCKS) Addr() string { return s.ln.Addr().String() }

// Close stops accepting and waits for the accept loop; connections already handed to the
// engine live on until they end or Engine.Close.
func (s *SOCKS) Close() error {
	var err error
	s.once.Do(func() {
		err = s.ln.Close()
		s.wg.Wait()
	})
	return err
}

func (s *SOCKS) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		go s.handle(c)
	}
}

func (s *SOCKS) handle(c net.Conn) {
	release := s.e.hold(c) // Engine.Close cuts a handshake in progress
	_ = c.SetDeadline(time.Now().Add(socksHandshakeTimeout))
	br := bufio.NewReader(c)
	req, err := socks.Handshake(br, c, s.e.cfg.ProxyAuth)
	if err != nil {
		release()
		c.Close()
		s.e.cfg.Logf("SOCKS client %s: %v", c.RemoteAddr(), err)
		return
	}
	host, port, _ := net.SplitHostPort(req.Target)
	if s.e.isReserved(host, port) {
		socks.Reply(c, socks.ReplyNotAllowed)
		release()
		c.Close()
		s.e.cfg.Logf("SOCKS client %s: %v", c.RemoteAddr(), ErrLoop)
		return
	}
	// The origin is dialled when the first bytes say what they are (as after an HTTP
	// CONNECT's 200), so success is answered now; a dial failure then closes the
	// connection and is recorded in the session.
	if err := socks.Reply(c, socks.ReplySucceeded); err != nil {
		release()
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	release()
	var conn net.Conn = c
	if br.Buffered() > 0 {
		conn = &bufferedConn{Conn: c, r: br}
	}
	_ = s.e.ServeConn(conn, req.Target, ConnSource{Via: "SOCKS5", Client: s.client})
}

// bufferedConn reads first what a handshake's reader read ahead.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }
