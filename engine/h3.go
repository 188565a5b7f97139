package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"inspector/engine/internal/frames"
)

// h3Server is the inbound HTTP/3 listener (Config.ListenH3): an HTTP/3 server that
// decrypts, or, under the pass-through policy, a relay to the origin (relay non-nil).
type h3Server struct {
	srv   *http3.Server
	relay *quicRelay
	conn  net.PacketConn
}

// serve runs the listener until shutdown.
func (h *h3Server) serve() {
	if h.relay != nil {
		h.relay.serve()
		return
	}
	_ = h.srv.Serve(h.conn)
}

// shutdown stops the listener, letting HTTP/3 exchanges finish until ctx ends; relayed
// flows end at once (QUIC has no graceful hand-off for a relay).
func (h *h3Server) shutdown(ctx context.Context) error {
	if h.relay != nil {
		h.relay.close()
		return nil
	}
	err := h.srv.Shutdown(ctx)
	_ = h.srv.Close()
	_ = h.conn.Close()
	return err
}

// initH3 opens the HTTP/3 listener when configured.
func (e *Engine) initH3() error {
	if e.cfg.ListenH3 == "" {
		return nil
	}
	if e.cfg.CA == nil {
		return errors.New("--listen-h3 needs a CA to mint certificates")
	}
	if !e.cfg.AllowRemote && !isLoopbackListen(e.cfg.ListenH3) {
		return fmt.Errorf("%w: %s", ErrRemoteListen, e.cfg.ListenH3)
	}
	passthrough := false
	if len(e.cfg.H3Passthrough) > 0 {
		if e.rev == nil {
			return errors.New("--h3-passthrough needs --reverse: choosing per host needs the SNI of the QUIC Initial, which is not read")
		}
		passthrough = matchAny(e.cfg.H3Passthrough, e.rev.host)
	}
	pc, err := net.ListenPacket("udp", e.cfg.ListenH3)
	if err != nil {
		return fmt.Errorf("HTTP/3 listener: %w", err)
	}
	if passthrough {
		_, port, _ := net.SplitHostPort(e.rev.authority)
		if e.isReserved(e.rev.host, port) || pc.LocalAddr().String() == e.rev.authority {
			pc.Close()
			return fmt.Errorf("--h3-passthrough: %s is one of Inspector's own addresses", e.rev.authority)
		}
		e.h3srv = &h3Server{relay: newQUICRelay(e, pc, e.rev.authority), conn: pc}
		return nil
	}
	tlsConf := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		KeyLogWriter: e.keyLog,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			host := hello.ServerName
			if host == "" && e.rev != nil {
				host = e.rev.host
			}
			if host == "" {
				if ua, ok := pc.LocalAddr().(*net.UDPAddr); ok && !ua.IP.IsUnspecified() {
					host = ua.IP.String()
				}
			}
			if host == "" {
				return nil, errors.New("no server name to mint a certificate for")
			}
			if matchAny(e.cfg.H3Refuse, host) {
				e.cfg.Logf("refused QUIC for %s (--h3-refuse): the client should fall back to TCP", host)
				return nil, fmt.Errorf("QUIC refused for %s by policy", host)
			}
			return e.cfg.CA.LeafFor(host)
		},
	}
	srv := &http3.Server{
		TLSConfig:      http3.ConfigureTLSConfig(tlsConf),
		QUICConfig:     e.quicConfig(frames.LegClient, 0),
		Handler:        http.HandlerFunc(e.serveH3),
		MaxHeaderBytes: maxHeaderBytes,
		IdleTimeout:    e.cfg.IdleTimeout,
		ConnContext: func(ctx context.Context, c *quic.Conn) context.Context {
			now := time.Now()
			info := &connInfo{accepted: now, tlsDone: now, decrypted: true}
			if rec := frames.TraceRec(c.QlogTrace()); rec != nil {
				info.id, info.frames = rec.ConnID(), rec
			} else {
				info.id = e.connIDs.Add(1)
			}
			if e.rev != nil {
				info.target, info.scheme, info.reverse = e.rev.authority, e.rev.scheme, true
			}
			return context.WithValue(ctx, connInfoKey{}, info)
		},
	}
	e.h3srv = &h3Server{srv: srv, conn: pc}
	return nil
}

// H3Addr is the HTTP/3 listener's UDP address, or "" without one.
func (e *Engine) H3Addr() string {
	if e.h3srv == nil {
		return ""
	}
	return e.h3srv.conn.LocalAddr().String()
}

// serveH3 handles a request from an HTTP/3 client. In forward mode the request goes to
// its :authority over https.
func (e *Engine) serveH3(w http.ResponseWriter, r *http.Request) {
	if info, _ := r.Context().Value(connInfoKey{}).(*connInfo); info != nil && info.target == "" && !r.URL.IsAbs() {
		r.URL.Scheme, r.URL.Host = "https", r.Host
	}
	e.serveExchange(w, r)
}

// quicConfig returns the QUIC settings for a connection on leg; with frame capture on it
// carries a tracer that records the connection's HTTP/3 frames. connID 0 means "number
// it when it starts" (inbound connections).
func (e *Engine) quicConfig(leg string, connID uint64) *quic.Config {
	conf := &quic.Config{MaxIdleTimeout: min(e.cfg.IdleTimeout, 120*time.Second), MaxIncomingStreams: 250}
	if e.cfg.FrameSink != nil {
		conf.Tracer = e.frameCap.QUICTracer(leg, connID)
	}
	return conf
}
