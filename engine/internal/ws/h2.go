package ws

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// WebSocket over HTTP/2: see the section "WebSocket over HTTP/2" in engine/doc.go.

// IsExtendedConnect reports whether r is an RFC 8441 WebSocket request.
func IsExtendedConnect(r *http.Request) bool {
	return r.ProtoMajor == 2 && r.Method == http.MethodConnect &&
		strings.EqualFold(r.Header.Get(":protocol"), "websocket")
}

// H1UpgradeFor returns the HTTP/1.1 Upgrade request that carries the extended CONNECT r
// to the origin, and the ResponseWriter to hand the reverse proxy in place of w. r and
// its header are not modified (the session keeps them as the client sent them). The
// origin's Sec-WebSocket-Accept is not checked: RFC 8441 has no key, so the proxy makes
// one up, and the origin's answer only concerns this hop.
func H1UpgradeFor(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	out := r.Clone(r.Context())
	out.Method = http.MethodGet
	out.Header.Del(":protocol")
	out.Header.Set("Connection", "Upgrade")
	out.Header.Set("Upgrade", "websocket")
	if out.Header.Get("Sec-WebSocket-Version") == "" {
		out.Header.Set("Sec-WebSocket-Version", "13")
	}
	var key [16]byte
	_, _ = rand.Read(key[:])
	out.Header.Set("Sec-WebSocket-Key", base64.StdEncoding.EncodeToString(key[:]))
	out.Body, out.ContentLength = http.NoBody, 0
	out.Trailer = nil
	return &h2WSWriter{ResponseWriter: w, stream: r.Body}, out
}

// h2WSWriter is the ResponseWriter of an extended CONNECT stream as the reverse proxy
// sees it: Hijack returns the stream as a net.Conn. A response that does not switch
// protocols but is 2xx would tell an RFC 8441 client the WebSocket is open, so it reaches
// the client as a 502 naming the origin's status instead (other statuses pass as they are).
// It is used by the handler's goroutine only.
type h2WSWriter struct {
	http.ResponseWriter
	stream io.ReadCloser // the request body: client→origin bytes

	wroteHeader bool
	refused     bool // a 2xx without upgrade was turned into a 502; its body is dropped
}

func (h *h2WSWriter) WriteHeader(code int) {
	if h.wroteHeader {
		return
	}
	h.wroteHeader = true
	if code < 200 || code > 299 {
		h.ResponseWriter.WriteHeader(code)
		return
	}
	h.refused = true
	for k := range h.Header() {
		delete(h.Header(), k)
	}
	h.Header().Set("Content-Type", "text/plain; charset=utf-8")
	h.ResponseWriter.WriteHeader(http.StatusBadGateway)
	_, _ = io.WriteString(h.ResponseWriter, "Inspector: the origin answered the WebSocket request with status "+
		strconv.Itoa(code)+" instead of switching protocols\n")
}

func (h *h2WSWriter) Write(p []byte) (int, error) {
	if !h.wroteHeader {
		h.WriteHeader(http.StatusOK)
	}
	if h.refused {
		return len(p), nil
	}
	return h.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the stream's Flush and deadlines.
func (h *h2WSWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// Hijack returns the stream. The first bytes written to it must be the origin's 101
// response head (what ReverseProxy writes): it becomes a 200 on the h2 stream, with
// the header already set on w minus HTTP/1.1 connection-specific fields.
func (h *h2WSWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h.stream == nil {
		return nil, nil, errors.New("extended CONNECT stream has no body")
	}
	c := &h2StreamConn{w: h.ResponseWriter, rc: http.NewResponseController(h.ResponseWriter), stream: h.stream}
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}

// h2StreamConn is one extended CONNECT stream as a net.Conn. Read is called from one
// goroutine and Write from another (ReverseProxy's two copiers); Close from any. The
// proxy closes the conn before its handler returns but may leave a copier running, so
// Close waits for a Write in progress and later Writes fail: nothing touches the h2
// ResponseWriter once the handler has returned.
type h2StreamConn struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	stream io.ReadCloser

	mu      sync.Mutex
	closed  bool
	head    []byte // the response head while it is incomplete
	started bool   // the 200 has been sent; later writes are stream data
}

// maxWSHead bounds the buffered response head.
const maxWSHead = 64 << 10

func (c *h2StreamConn) Read(p []byte) (int, error) { return c.stream.Read(p) }

func (c *h2StreamConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	if !c.started {
		c.head = append(c.head, p...)
		i := bytes.Index(c.head, []byte("\r\n\r\n"))
		if i < 0 {
			if len(c.head) > maxWSHead {
				return 0, errors.New("upgrade response head too large")
			}
			return len(p), nil
		}
		rest := c.head[i+4:]
		c.head = nil
		c.started = true
		hdr := c.w.Header()
		for _, k := range []string{"Connection", "Upgrade", "Keep-Alive", "Proxy-Connection",
			"Transfer-Encoding", "Sec-WebSocket-Accept", "Content-Length"} {
			hdr.Del(k)
		}
		c.w.WriteHeader(http.StatusOK)
		if len(rest) > 0 {
			if _, err := c.w.Write(rest); err != nil {
				return 0, err
			}
		}
		if err := c.rc.Flush(); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	n, err := c.w.Write(p)
	if err == nil {
		err = c.rc.Flush()
	}
	return n, err
}

// Close ends the client→origin side and stops writes; the h2 stream itself ends when
// the handler returns.
func (c *h2StreamConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		c.stream.Close()
	}
	return nil
}

func (c *h2StreamConn) LocalAddr() net.Addr  { return streamAddr{} }
func (c *h2StreamConn) RemoteAddr() net.Addr { return streamAddr{} }
func (c *h2StreamConn) SetDeadline(t time.Time) error {
	return errors.Join(c.rc.SetReadDeadline(t), c.rc.SetWriteDeadline(t))
}
func (c *h2StreamConn) SetReadDeadline(t time.Time) error  { return c.rc.SetReadDeadline(t) }
func (c *h2StreamConn) SetWriteDeadline(t time.Time) error { return c.rc.SetWriteDeadline(t) }

type streamAddr struct{}

func (streamAddr) Network() string { return "h2-stream" }
func (streamAddr) String() string  { return "h2-stream" }
