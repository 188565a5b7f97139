package engine

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"inspector/engine/internal/conn"
	"inspector/engine/session"
)

// Strict HTTP/1 framing: see the section "Strict HTTP/1 framing" in doc.go.

// FramingError is a request the proxy refused because its HTTP/1 framing is ambiguous or
// malformed.
type FramingError struct{ Reason string }

func (e *FramingError) Error() string { return "ambiguous or malformed HTTP/1 framing: " + e.Reason }

const (
	maxChunkExt   = 4 << 10
	maxTrailers   = 64 << 10
	framingBufLen = 16 << 10
)

// placeholderHead is what the server reads in place of a refused head.
const placeholderHead = "GET / HTTP/1.1\r\nHost: inspector.invalid\r\nConnection: close\r\n\r\n"

type framingConn struct {
	net.Conn
	src *bufio.Reader

	mu      sync.Mutex // guards refused (read by the handler goroutine)
	refused *FramingError

	out         []byte // checked bytes not yet delivered
	body        bodyFramer
	inBody      bool
	passthrough bool   // after CONNECT or an upgrade: raw bytes
	stop        error  // after a refusal or a broken body: returned once out is empty
	partial     []byte // a head read in part when a read deadline interrupted it

	tls  *tls.ConnectionState // of the wrapped *tls.Conn (net/http only sees a plain conn)
	slot *conn.Conn           // the client connection's entry in the connection table, marked waiting while a head is read

	// written counts the bytes handed to Write, counted before each write starts, so a
	// reader that sees the client leave counts a write in progress as done. goneAt is
	// written+1 as it was when a read from the client first failed (it closed or reset
	// the connection), 0 while none has: see wroteAfterGone.
	written atomic.Int64
	goneAt  atomic.Int64
}

// newFramingConn wraps c. Read must be called from one goroutine at a time (net/http's
// server does); framingErr is safe from any goroutine.
func newFramingConn(c net.Conn) *framingConn {
	f := &framingConn{Conn: c, src: bufio.NewReaderSize(c, framingBufLen), slot: slotOf(c)}
	if tc, ok := c.(*tls.Conn); ok {
		st := tc.ConnectionState() // the handshake is done before the conn is wrapped
		f.tls = &st
	}
	return f
}

// NetConn is the connection f wraps (conn.Of reaches the table's entry through it).
func (f *framingConn) NetConn() net.Conn { return f.Conn }

// framingErr returns the refusal of a head on this connection, if any.
func (f *framingConn) framingErr() *FramingError {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}

func (f *framingConn) refuse(reason string) {
	f.mu.Lock()
	f.refused = &FramingError{Reason: reason}
	f.mu.Unlock()
	f.out = append(f.out[:0], placeholderHead...)
	f.stop = f.refused
}

func (f *framingConn) Read(p []byte) (int, error) {
	n, err := f.read(p)
	if err != nil && err != f.stop && f.goneAt.Load() == 0 && !errors.Is(err, os.ErrDeadlineExceeded) {
		// The client closed or reset the connection (net/http's read-ahead sees it first
		// and then cancels the request's context).
		f.goneAt.Store(f.written.Load() + 1)
	}
	return n, err
}

// Write counts the bytes before writing them (see written).
func (f *framingConn) Write(p []byte) (int, error) {
	f.written.Add(int64(len(p)))
	return f.Conn.Write(p)
}

// wroteAfterGone reports whether the client left (a read from it failed) and bytes were
// written to the connection after that: bytes it cannot have had. Call it after
// flushing the response.
func (f *framingConn) wroteAfterGone() bool {
	g := f.goneAt.Load()
	return g != 0 && f.written.Load() != g-1
}

func (f *framingConn) read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if len(f.out) > 0 {
			n := copy(p, f.out)
			f.out = f.out[n:]
			return n, nil
		}
		if f.stop != nil {
			return 0, f.stop
		}
		if f.passthrough {
			return f.src.Read(p)
		}
		if f.inBody {
			return f.readBody(p)
		}
		if err := f.readHead(); err != nil {
			return 0, err
		}
	}
}

// readBody delivers body bytes up to the end of the message, checking chunk framing.
func (f *framingConn) readBody(p []byte) (int, error) {
	if (f.body.st == stLength || f.body.st == stData) && f.src.Buffered() == 0 {
		// Bytes that surely belong to the body: read them straight into p (bufio reads
		// large requests directly from the connection).
		n, err := f.src.Read(p[:min(uint64(len(p)), f.body.n)])
		f.body.feed(p[:n]) // cannot fail inside a length or chunk
		if f.body.done() {
			f.inBody = false
		}
		return n, err
	}
	if f.src.Buffered() == 0 {
		if _, err := f.src.Peek(1); err != nil {
			return 0, err
		}
	}
	b, _ := f.src.Peek(min(len(p), f.src.Buffered()))
	n, err := f.body.feed(b)
	copy(p, b[:n])
	_, _ = f.src.Discard(n)
	if err != nil {
		f.stop = err // nothing after a broken body can be framed
		if n > 0 {
			return n, nil
		}
		return 0, err
	}
	if f.body.done() {
		f.inBody = false
	}
	return n, nil
}

// readHead reads one request head, checks it and queues it (or the placeholder).
func (f *framingConn) readHead() error {
	f.slot.SetWaiting(true)
	defer func() {
		if f.partial == nil {
			f.slot.SetWaiting(false)
		}
	}()
	head := f.partial
	f.partial = nil
	lineStart := bytes.LastIndexByte(head, '\n') + 1
	for {
		part, err := f.src.ReadSlice('\n')
		head = append(head, part...)
		if err == bufio.ErrBufferFull {
			if len(head) > maxHeaderBytes+4096 {
				// Too large for the server anyway: let it answer 431 and close.
				f.out, f.passthrough = head, true
				return nil
			}
			continue
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// net/http interrupts its read-ahead with a past deadline when a handler
				// ends: keep what arrived and go on with the next Read.
				f.partial = head
				return err
			}
			if len(head) > 0 {
				f.out, f.passthrough = head, true // a partial head: the server reports it
				return nil
			}
			return err
		}
		if len(head) > maxHeaderBytes+4096 {
			f.out, f.passthrough = head, true
			return nil
		}
		if bytes.Equal(head, []byte("\r\n")) {
			// An empty line before a request line (RFC 9112 2.2): pass it on.
			f.out = head
			return nil
		}
		if !bytes.HasSuffix(head, []byte("\r\n")) {
			f.refuse("a header line ends in a bare LF (need CRLF)")
			return nil
		}
		if string(head[lineStart:]) == "\r\n" {
			break
		}
		lineStart = len(head)
	}
	framer, pass, reason := checkHead(head)
	if reason != "" {
		f.refuse(reason)
		return nil
	}
	if framer.chunked {
		// Check the chunk framing that already arrived with the head, before handing the
		// head on: a one-packet smuggling attempt is refused with nothing sent upstream.
		probe := framer
		if buf, _ := f.src.Peek(f.src.Buffered()); len(buf) > 0 {
			if _, err := probe.feed(buf); err != nil {
				var fe *FramingError
				if errors.As(err, &fe) {
					f.refuse(fe.Reason)
					return nil
				}
			}
		}
	}
	f.out = head
	f.passthrough = pass
	f.body = framer
	f.inBody = !pass && !framer.done()
	return nil
}

// checkHead checks a request head (lines ending in CRLF, the empty line last) and returns
// the body's framing, whether the connection turns into raw bytes after it (CONNECT,
// upgrades), or the reason to refuse it.
func checkHead(head []byte) (bodyFramer, bool, string) {
	lines := bytes.Split(head[:len(head)-2], []byte("\r\n"))
	for _, l := range lines {
		if bytes.IndexByte(l, '\n') >= 0 {
			return bodyFramer{}, false, "a header line ends in a bare LF (need CRLF)"
		}
	}
	reqLine := lines[0]
	method, rest, ok1 := bytes.Cut(reqLine, []byte(" "))
	_, proto, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok1 || !ok2 {
		return bodyFramer{}, false, "malformed request line"
	}
	major, minor, ok := http.ParseHTTPVersion(string(proto))
	preHTTP11 := !ok || major < 1 || (major == 1 && minor < 1)
	var cls, tes [][]byte
	upgrade := false
	for _, l := range lines[1 : len(lines)-1] {
		if len(l) == 0 {
			continue
		}
		if l[0] == ' ' || l[0] == '\t' {
			return bodyFramer{}, false, "obsolete line folding (obs-fold) in a header"
		}
		name, value, ok := bytes.Cut(l, []byte(":"))
		if !ok {
			return bodyFramer{}, false, "a header line without a colon"
		}
		for _, c := range name {
			if !isTokenChar(c) {
				return bodyFramer{}, false, "invalid character " + strconv.QuoteRune(rune(c)) + " in header name " + strconv.Quote(string(name))
			}
		}
		if len(name) == 0 {
			return bodyFramer{}, false, "empty header name"
		}
		for _, c := range value {
			if (c < 0x20 && c != '\t') || c == 0x7f {
				return bodyFramer{}, false, "control character " + strconv.QuoteRune(rune(c)) + " in the value of " + string(name)
			}
		}
		value = bytes.Trim(value, " \t")
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			cls = append(cls, value)
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			tes = append(tes, value)
		case bytes.EqualFold(name, []byte("Upgrade")):
			upgrade = true
		}
	}
	var fr bodyFramer
	switch {
	case len(tes) > 0 && len(cls) > 0:
		return fr, false, "both Content-Length and Transfer-Encoding"
	case len(tes) > 0 && preHTTP11:
		return fr, false, "Transfer-Encoding in a request older than HTTP/1.1"
	case len(tes) > 1:
		return fr, false, "more than one Transfer-Encoding header"
	case len(tes) == 1:
		if !bytes.EqualFold(tes[0], []byte("chunked")) {
			return fr, false, "Transfer-Encoding " + strconv.Quote(string(tes[0])) + " (only \"chunked\" is accepted)"
		}
		fr.chunked = true
		fr.st = stSize
	case len(cls) > 1:
		return fr, false, "more than one Content-Length header"
	case len(cls) == 1:
		if len(cls[0]) == 0 || len(cls[0]) > 18 {
			return fr, false, "invalid Content-Length " + strconv.Quote(string(cls[0]))
		}
		for _, c := range cls[0] {
			if c < '0' || c > '9' {
				return fr, false, "invalid Content-Length " + strconv.Quote(string(cls[0]))
			}
		}
		n, _ := strconv.ParseUint(string(cls[0]), 10, 63)
		fr.n = n
		fr.st = stLength
		if n == 0 {
			fr.st = stDone
		}
	default:
		fr.st = stDone
	}
	pass := string(method) == "CONNECT" || (upgrade && fr.st == stDone)
	return fr, pass, ""
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0
}

// bodyFramer follows a request body's framing (Content-Length or chunked).
type bodyFramer struct {
	chunked bool
	st      uint8
	n       uint64 // bytes left (length, chunk data) or the chunk size being read
	digits  int
	extra   int // chunk-extension or trailer bytes seen
}

const (
	stDone uint8 = iota
	stLength
	stSize
	stExt
	stSizeLF
	stData
	stDataCR
	stDataLF
	stTrailerStart
	stTrailer
	stTrailerLF
	stEndLF
)

func (b *bodyFramer) done() bool { return b.st == stDone }

func framingErr(reason string) error { return &FramingError{Reason: reason} }

// feed consumes bytes of the body and returns how many belong to it (it stops at the end
// of the message), or a *FramingError.
func (b *bodyFramer) feed(p []byte) (int, error) {
	i := 0
	for i < len(p) && b.st != stDone {
		c := p[i]
		switch b.st {
		case stLength, stData:
			k := uint64(len(p) - i)
			if k > b.n {
				k = b.n
			}
			b.n -= k
			i += int(k)
			if b.n == 0 {
				if b.st == stLength {
					b.st = stDone
				} else {
					b.st = stDataCR
				}
			}
			continue
		case stSize:
			switch {
			case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
				if b.digits == 15 {
					return i, framingErr("chunk size too large")
				}
				b.n = b.n<<4 | uint64(unhex(c))
				b.digits++
			case c == ';' && b.digits > 0:
				b.st, b.extra = stExt, 0
			case c == '\r' && b.digits > 0:
				b.st = stSizeLF
			case c == '\n':
				return i, framingErr("a chunk-size line ends in a bare LF (need CRLF)")
			default:
				return i, framingErr("invalid chunk size")
			}
		case stExt:
			switch {
			case c == '\r':
				b.st = stSizeLF
			case c == '\n':
				return i, framingErr("a chunk-size line ends in a bare LF (need CRLF)")
			case (c < 0x20 && c != '\t') || c == 0x7f:
				return i, framingErr("control character in a chunk extension")
			default:
				b.extra++
				if b.extra > maxChunkExt {
					return i, framingErr("chunk extension too long")
				}
			}
		case stSizeLF:
			if c != '\n' {
				return i, framingErr("a chunk-size line has a CR without LF")
			}
			if b.n == 0 {
				b.st, b.extra = stTrailerStart, 0
			} else {
				b.st = stData
			}
		case stDataCR:
			if c != '\r' {
				if c == '\n' {
					return i, framingErr("chunk data ends in a bare LF (need CRLF)")
				}
				return i, framingErr("chunk data longer than its chunk size")
			}
			b.st = stDataLF
		case stDataLF:
			if c != '\n' {
				return i, framingErr("chunk data is followed by CR without LF")
			}
			b.st, b.n, b.digits = stSize, 0, 0
		case stTrailerStart:
			switch c {
			case '\r':
				b.st = stEndLF
			case ' ', '\t':
				return i, framingErr("obsolete line folding (obs-fold) in a trailer")
			case '\n':
				return i, framingErr("a trailer line ends in a bare LF (need CRLF)")
			default:
				b.st = stTrailer
			}
		case stTrailer:
			switch {
			case c == '\r':
				b.st = stTrailerLF
			case c == '\n':
				return i, framingErr("a trailer line ends in a bare LF (need CRLF)")
			case (c < 0x20 && c != '\t') || c == 0x7f:
				return i, framingErr("control character in a trailer")
			}
		case stTrailerLF:
			if c != '\n' {
				return i, framingErr("a trailer line has a CR without LF")
			}
			b.st = stTrailerStart
		case stEndLF:
			if c != '\n' {
				return i, framingErr("the last chunk's empty line has a CR without LF")
			}
			b.st = stDone
		}
		if b.st == stTrailer || b.st == stTrailerLF || b.st == stTrailerStart {
			b.extra++
			if b.extra > maxTrailers {
				return i, framingErr("trailers too long")
			}
		}
		i++
	}
	return i, nil
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// framingListener wraps every accepted connection in a framingConn.
type framingListener struct{ net.Listener }

func (l framingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newFramingConn(c), nil
}

// refuseFraming answers 400 with the reason when the server is reading the placeholder of
// a refused head (see framingConn), or when an HTTP/2 or HTTP/3 request carries what would
// be ambiguous once rewritten as HTTP/1.1. It reports whether it answered. It also gives r the
// TLS state net/http could not see through the framingConn.
func (e *Engine) refuseFraming(w http.ResponseWriter, r *http.Request) bool {
	if r.ProtoMajor >= 2 {
		// What HTTP/2 and HTTP/3 servers let through but an HTTP/1.1 origin would see
		// ambiguously once the request is rewritten for it.
		reason := ""
		if len(r.Header["Content-Length"]) > 1 {
			reason = "more than one content-length"
		}
		for i := 0; i < len(r.RequestURI) && reason == ""; i++ {
			if c := r.RequestURI[i]; c <= ' ' || c == 0x7f {
				reason = "space or control character in :path"
			}
		}
		if reason != "" {
			e.cfg.Logf("refused a request from %s: %s", r.RemoteAddr, reason)
			http.Error(w, "Inspector refused this request: "+reason, http.StatusBadRequest)
			return true
		}
	}
	info, _ := r.Context().Value(connInfoKey{}).(*connInfo)
	if info == nil || info.framing == nil {
		return false
	}
	if r.TLS == nil {
		r.TLS = info.framing.tls
	}
	fe := info.framing.framingErr()
	if fe == nil {
		return false
	}
	e.cfg.Logf("refused a request from %s: %v", r.RemoteAddr, fe)
	w.Header().Set("Connection", "close")
	http.Error(w, "Inspector refused this request: "+fe.Error(), http.StatusBadRequest)
	return true
}

// CloseWrite half-closes the connection when the underlying one can (tunnels use it).
func (f *framingConn) CloseWrite() error {
	if cw, ok := f.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return f.Close()
}

// bodyFramingErr returns the framing error that broke the request body, if that is why
// the round trip failed (err itself, or the body's read error: net/http also cancels the
// request's context when its connection read fails).
func (x *exchange) bodyFramingErr(err error) *FramingError {
	var fe *FramingError
	if errors.As(err, &fe) {
		return fe
	}
	if x.reqBody != nil {
		if _, _, _, berr := x.reqBody.Result(); errors.As(berr, &fe) {
			return fe
		}
	}
	return nil
}

// refuseBody ends an exchange whose request body broke its framing part-way: the origin
// got a cut-off request (never a complete one), the client gets 400 and the session a
// client-side error.
func (x *exchange) refuseBody(w http.ResponseWriter, fe *FramingError) {
	x.fail(session.PhaseRequest, session.SideClient, fe, fe.Error())
	if x.s != nil {
		x.s.Response = nil
	}
	w.Header().Set("Connection", "close")
	writeProxyError(w, http.StatusBadRequest, "Inspector refused this request: "+fe.Error())
}
