package engine

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// reverseTarget is the origin of reverse mode (Config.Reverse).
type reverseTarget struct {
	scheme    string // "http" or "https"
	authority string // host:port
	host      string // without port
}

func parseReverse(raw string) (*reverseTarget, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("--reverse: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("--reverse: want an http:// or https:// URL, got %q", raw)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("--reverse: %q has no host", raw)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("--reverse: give only scheme://host[:port], got %q", raw)
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return &reverseTarget{scheme: u.Scheme, authority: net.JoinHostPort(u.Hostname(), port), host: u.Hostname()}, nil
}

// serveReverse accepts clients in reverse mode: each connection is sniffed like the
// inside of a CONNECT tunnel (TLS, h2 preface, or HTTP/1.1) and every request on it goes
// to the reverse target.
func (e *Engine) serveReverse() error {
	ln := e.conns.Listener(e.ln)
	for {
		c, err := ln.Accept()
		if err != nil {
			if e.closed.Load() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.serveReverseConn(c)
		}()
	}
}

func (e *Engine) serveReverseConn(c net.Conn) {
	info := &connInfo{id: e.connIDs.Add(1), accepted: time.Now(), target: e.rev.authority,
		scheme: e.rev.scheme, reverse: true, proc: e.lookupProcess(c)}
	e.setInfo(c, info)
	cc := &clientConn{Conn: c, r: bufio.NewReader(c), info: info}
	_ = c.SetReadDeadline(time.Now().Add(e.cfg.HeaderTimeout))
	first, err := cc.r.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil || e.closed.Load() {
		c.Close()
		return
	}
	switch {
	case first[0] == 0x16:
		if e.cfg.CA == nil {
			c.Close()
			return
		}
		e.serveTLS(cc, &http.Request{Method: http.MethodConnect, Proto: "HTTP/1.1", Header: http.Header{}})
	case isH2Preface(cc.r):
		e.serveH2(cc)
	default:
		cc.info.framing = newFramingConn(cc)
		e.mitmLn.push(cc.info.framing)
	}
}
