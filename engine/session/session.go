// Package session holds the core data type of Inspector: one HTTP exchange (or tunnel,
// or failed handshake) as the engine saw it, with both legs, timings and the outcome.
//
// It imports only the standard library, so every other package (engine, store, ui,
// filters, exporters) can share it.
//
// # Ownership
//
// While an exchange is in flight its *Session is owned and mutated by exactly one engine
// goroutine. Observers never see that live value: they get Summary copies while it runs and
// the final *Session once it is complete. A completed *Session is immutable; any holder may
// read it concurrently, none may modify it (use Clone for an editable copy).
package session

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ID identifies a session. IDs are assigned in capture order, start at 1 and grow
// monotonically across restarts of one data directory.
type ID uint64

// Protocol names as they appear in the contract (PRODUCT.md).
const (
	HTTP1 = "http/1.1"
	HTTP2 = "h2"
	HTTP3 = "h3"
)

// Flags mark special kinds of sessions.
type Flags uint32

const (
	// FlagTunnel: the connection was relayed opaquely (CONNECT without decryption).
	FlagTunnel Flags = 1 << iota
	// FlagWebSocket: the exchange upgraded to WebSocket; Messages holds the frames.
	FlagWebSocket
	// FlagReqTruncated: the captured request body is shorter than what was sent.
	FlagReqTruncated
	// FlagRespTruncated: the captured response body is shorter than what was received.
	FlagRespTruncated
	// FlagHandshakeFailed: the client's TLS handshake with the proxy failed.
	FlagHandshakeFailed
	// FlagImported: the session came from a HAR import rather than live traffic.
	FlagImported
	// FlagAnswered: a hook answered the request; nothing was sent upstream.
	FlagAnswered
	// FlagKept: the user marked the session Keep; retention never evicts it.
	FlagKept
)

// Has reports whether all of f2 are set in f.
func (f Flags) Has(f2 Flags) bool { return f&f2 == f2 }

// Session is one exchange. See the package comment for ownership rules.
type Session struct {
	ID       ID        `json:"id"`
	ReplayOf ID        `json:"replay_of,omitempty"`
	Started  time.Time `json:"started"`

	// Client is the leg between the client and the proxy; Upstream between the proxy and
	// the origin. Upstream.Addr is empty when no upstream connection was made.
	Client   Conn `json:"client"`
	Upstream Conn `json:"upstream"`

	Request Request `json:"request"`
	// Interim holds the informational (1xx) responses the origin sent before its final
	// one (100 Continue, 103 Early Hints), in order; each was passed on to the client.
	Interim  []Interim `json:"interim,omitempty"`
	Response *Response `json:"response,omitempty"` // nil when there was no response
	Timings  Timings   `json:"timings"`
	Error    *Error    `json:"error,omitempty"` // nil unless the exchange failed
	Flags    Flags     `json:"flags,omitempty"`

	// Messages holds WebSocket messages in order, for sessions with FlagWebSocket.
	Messages []Message `json:"messages,omitempty"`
	// MessagesSeen is how many WebSocket messages the session carried when that is more
	// than Messages keeps (the engine keeps the first 10,000 of a session and counts the
	// rest); 0 when every message was kept. See MessageCounts.
	MessagesSeen int64 `json:"messages_seen,omitempty"`

	// Mark and Comment are the user's annotations.
	Mark    string `json:"mark,omitempty"`
	Comment string `json:"comment,omitempty"`
}

// Interim is an informational (1xx) response: its status, its header fields and when
// it arrived from the origin.
type Interim struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	At     time.Time   `json:"at"`
}

// Conn describes one leg's connection.
type Conn struct {
	// Addr is the peer's address: the client's for the client leg, the origin's (as dialed,
	// ip:port) for the upstream leg.
	Addr  string `json:"addr,omitempty"`
	Proto string `json:"proto,omitempty"` // HTTP1, HTTP2, HTTP3, or "" for tunnels
	// ConnID identifies the connection this exchange used, unique within one run; several
	// sessions share it when a connection carries several requests.
	ConnID uint64   `json:"conn_id,omitempty"`
	TLS    *TLSInfo `json:"tls,omitempty"`
	// Reused is true when the connection carried an earlier exchange.
	Reused bool `json:"reused,omitempty"`
	// ProtoReason says why this leg used Proto when the engine chose among several (for
	// the upstream leg: forced by configuration, upgraded after the origin's Alt-Svc, or
	// fell back to TCP after a QUIC failure, with the failure).
	ProtoReason string `json:"proto_reason,omitempty"`
	// PID and Process name the local process that owns the client's socket (client leg
	// only; zero and empty when unknown: not local, not visible, or the lookup is off).
	PID     int    `json:"pid,omitempty"`
	Process string `json:"process,omitempty"`
	// Fingerprint is how the client side of this leg introduced itself (the user's client
	// on the client leg, Inspector on the upstream leg); nil when nothing was recorded.
	// Sessions on one connection share it (immutable).
	Fingerprint *Fingerprint `json:"fingerprint,omitempty"`
}

// Fingerprint is what a connection's client sent before its first request: JA3 and JA4
// of its TLS ClientHello, the Akamai fingerprint of its HTTP/2 opening.
type Fingerprint struct {
	JA3    string `json:"ja3,omitempty"`     // MD5 (hex) of JA3Raw
	JA3Raw string `json:"ja3_raw,omitempty"` // version,ciphers,extensions,groups,point formats
	JA4    string `json:"ja4,omitempty"`
	H2     string `json:"h2,omitempty"` // SETTINGS|WINDOW_UPDATE|PRIORITY|pseudo-header order
	// Mirror (upstream leg): "mirrored" when the ClientHello was built from the
	// client's, otherwise why Go's own was sent (policy, an extension that cannot be
	// reproduced, no ClientHello to mirror).
	Mirror string `json:"mirror,omitempty"`
}

// Mirrored is Fingerprint.Mirror when the upstream ClientHello was built from the client's.
const Mirrored = "mirrored"

// TLSInfo is what was negotiated on one leg.
type TLSInfo struct {
	Version     string `json:"version"` // "TLS 1.3"
	CipherSuite string `json:"cipher_suite"`
	ServerName  string `json:"sni,omitempty"`
	ALPN        string `json:"alpn,omitempty"`
	Resumed     bool   `json:"resumed,omitempty"`
	// Certificates is the chain the server presented, leaf first, DER encoded.
	Certificates [][]byte `json:"certificates,omitempty"`
}

// Request is the request as received from the client (after any hook edits, which are
// what was sent upstream).
type Request struct {
	Method   string      `json:"method"`
	URL      string      `json:"url"` // absolute: scheme://host[:port]/path?query
	Proto    string      `json:"proto"`
	Header   http.Header `json:"header,omitempty"`
	Trailer  http.Header `json:"trailer,omitempty"`
	Body     Body        `json:"body"`
	HeadSize int64       `json:"head_size,omitempty"` // bytes of request line + headers, when known
}

// Response is the response as received from the origin (or produced by a hook).
type Response struct {
	Status   int         `json:"status"`
	Reason   string      `json:"reason,omitempty"`
	Proto    string      `json:"proto"`
	Header   http.Header `json:"header,omitempty"`
	Trailer  http.Header `json:"trailer,omitempty"`
	Body     Body        `json:"body"`
	HeadSize int64       `json:"head_size,omitempty"`
}

// Body is a captured message body. Data holds the bytes as they travelled (still
// content-encoded), at most the engine's capture cap; Size counts every body byte that
// passed, so Truncated is Size > len(Data).
type Body struct {
	Data      []byte `json:"data,omitempty"`
	Size      int64  `json:"size"`
	Truncated bool   `json:"truncated,omitempty"`
	// Spilled is set when bytes beyond the in-memory cap were written elsewhere (the store);
	// its value is the store's reference for them.
	Spilled string `json:"spilled,omitempty"`
	// NotCaptured says why bytes of a Truncated body were not kept, when that was not
	// the capture limits: "disk stalled" (the disk did not keep up with the bytes beyond
	// memory), or a spill file's write error.
	NotCaptured string `json:"not_captured,omitempty"`
}

// Timings are wall-clock instants of each phase; a zero value means the phase did not
// happen (for example no DNS on a reused connection).
type Timings struct {
	ClientConnected time.Time `json:"client_connected"`           // client TCP/QUIC connection accepted
	ClientTLSDone   time.Time `json:"client_tls_done,omitzero"`   // handshake with the client finished
	RequestHeaders  time.Time `json:"request_headers"`            // request head fully read
	RequestDone     time.Time `json:"request_done,omitzero"`      // request body fully read
	DNSStart        time.Time `json:"dns_start,omitzero"`         //
	DNSDone         time.Time `json:"dns_done,omitzero"`          //
	ConnectStart    time.Time `json:"connect_start,omitzero"`     // upstream dial began
	ConnectDone     time.Time `json:"connect_done,omitzero"`      // upstream TCP established
	UpstreamTLSDone time.Time `json:"upstream_tls_done,omitzero"` // handshake with the origin finished
	RequestSent     time.Time `json:"request_sent,omitzero"`      // request fully written upstream
	FirstByte       time.Time `json:"first_byte,omitzero"`        // response headers arrived
	ResponseDone    time.Time `json:"response_done,omitzero"`     // response fully relayed to the client
}

// Phase names where an exchange failed.
type Phase string

const (
	PhaseClientTLS Phase = "client_tls" // TLS handshake with the client
	PhaseRequest   Phase = "request"    // reading the request from the client
	PhaseDNS       Phase = "dns"
	PhaseDial      Phase = "dial"
	PhaseTLS       Phase = "tls" // TLS handshake with the origin
	PhaseSend      Phase = "send"
	PhaseResponse  Phase = "response" // reading the response head from the origin
	PhaseBody      Phase = "body"     // relaying the response body
	PhaseTunnel    Phase = "tunnel"
	PhaseWebSocket Phase = "websocket"
	PhaseHook      Phase = "hook"
)

// Side says who caused a failure.
type Side string

const (
	SideClient   Side = "client"
	SideUpstream Side = "upstream"
	SideProxy    Side = "proxy"
)

// Error records why an exchange failed. An HTTP error status is not an Error.
type Error struct {
	Phase   Phase  `json:"phase"`
	Side    Side   `json:"side"`
	Proto   string `json:"proto,omitempty"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	return string(e.Side) + " " + string(e.Phase) + ": " + e.Message
}

// Is matches another *Error by Phase and Side (empty fields match anything), so callers
// can write errors.Is(err, &session.Error{Phase: session.PhaseTLS}).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return (t.Phase == "" || t.Phase == e.Phase) && (t.Side == "" || t.Side == e.Side)
}

// Message is one WebSocket message.
type Message struct {
	Time       time.Time `json:"time"`
	FromClient bool      `json:"from_client"`
	Opcode     int       `json:"opcode"` // 1 text, 2 binary, 8 close, 9 ping, 10 pong
	Data       []byte    `json:"data,omitempty"`
	Size       int64     `json:"size"`
	// Set by the engine's message hooks (engine.MessageHook). Data and Size are what was
	// forwarded, except for a dropped message: there they are what was not.
	Modified  bool   `json:"modified,omitempty"`   // a hook changed the payload or opcode
	Dropped   bool   `json:"dropped,omitempty"`    // a hook dropped the message
	HookError string `json:"hook_error,omitempty"` // why hooks failed; the message went on unmodified
	// Unhooked says why a data message passed on without the hooks while hooks were on
	// (compressed, too large, not a parsable frame stream).
	Unhooked string `json:"unhooked,omitempty"`
}

// Frame is one HTTP/2 or HTTP/3 frame seen on one leg of a session's connection. Frames
// of the connection as a whole (stream 0 in HTTP/2, control streams in HTTP/3) are listed
// with the sessions on that connection: its opening ones (SETTINGS exchange) with every
// session, later ones with the sessions whose streams were open then.
type Frame struct {
	Leg    string    `json:"leg"` // "client" or "upstream"
	Dir    string    `json:"dir"` // "in" (received by the proxy) or "out" (sent by it)
	Time   time.Time `json:"time"`
	Proto  string    `json:"proto"` // HTTP2 or HTTP3
	ConnID uint64    `json:"conn_id,omitempty"`
	Stream uint64    `json:"stream"`
	Type   string    `json:"type"`   // "HEADERS", "DATA", "SETTINGS", …
	Flags  string    `json:"flags"`  // HTTP/2 flag names joined by "|", e.g. "END_STREAM|END_HEADERS"; "" for none
	Length int       `json:"length"` // payload length in bytes
	// Headers are the decoded (HPACK or QPACK) fields of a header frame, pseudo-headers
	// first, in wire order.
	Headers []HeaderField `json:"headers,omitempty"`
	// Detail is the decoded payload of control frames: SETTINGS values, a WINDOW_UPDATE
	// increment, RST_STREAM and GOAWAY codes, PING data, PRIORITY fields.
	Detail string `json:"detail,omitempty"`
}

// HeaderField is one decoded header field of a frame.
type HeaderField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Clone returns a deep copy that the caller may modify.
func (s *Session) Clone() *Session {
	c := *s
	c.Request.Header = s.Request.Header.Clone()
	c.Request.Trailer = s.Request.Trailer.Clone()
	c.Request.Body.Data = append([]byte(nil), s.Request.Body.Data...)
	if s.Response != nil {
		r := *s.Response
		r.Header = s.Response.Header.Clone()
		r.Trailer = s.Response.Trailer.Clone()
		r.Body.Data = append([]byte(nil), s.Response.Body.Data...)
		c.Response = &r
	}
	if s.Error != nil {
		e := *s.Error
		c.Error = &e
	}
	c.Client.TLS = s.Client.TLS.clone()
	c.Upstream.TLS = s.Upstream.TLS.clone()
	c.Client.Fingerprint = s.Client.Fingerprint.clone()
	c.Upstream.Fingerprint = s.Upstream.Fingerprint.clone()
	c.Messages = append([]Message(nil), s.Messages...)
	return &c
}

func (f *Fingerprint) clone() *Fingerprint {
	if f == nil {
		return nil
	}
	c := *f
	return &c
}

func (t *TLSInfo) clone() *TLSInfo {
	if t == nil {
		return nil
	}
	c := *t
	c.Certificates = append([][]byte(nil), t.Certificates...)
	return &c
}

// Host returns the host (without port) of the request URL.
func (s *Session) Host() string {
	u, err := url.Parse(s.Request.URL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// Status returns the response status, or 0 when there is none.
func (s *Session) Status() int {
	if s.Response == nil {
		return 0
	}
	return s.Response.Status
}

// Duration is the time from the request head to the end of the response (or of the
// failure), or zero if unknown.
func (s *Session) Duration() time.Duration {
	start := s.Timings.RequestHeaders
	if start.IsZero() {
		start = s.Started
	}
	end := s.Timings.ResponseDone
	if end.IsZero() {
		return 0
	}
	return end.Sub(start)
}

// Summary is what a session list row needs; it is small and copied by value.
// Its JSON form is the `sessions --json` contract of PRODUCT.md.
type Summary struct {
	ID            ID        `json:"id"`
	Started       time.Time `json:"started"`
	Method        string    `json:"method"`
	URL           string    `json:"url"`
	Host          string    `json:"host"`
	Path          string    `json:"path"`
	Status        int       `json:"status"`
	ClientProto   string    `json:"client_proto"`
	UpstreamProto string    `json:"upstream_proto"`
	ReqBytes      int64     `json:"req_bytes"`
	RespBytes     int64     `json:"resp_bytes"`
	DurationMS    float64   `json:"duration_ms"`
	Error         string    `json:"error"`
	ErrorPhase    Phase     `json:"error_phase,omitempty"`
	ReplayOf      ID        `json:"replay_of"`
	TLS           bool      `json:"tls"`
	ContentType   string    `json:"content_type,omitempty"` // response Content-Type
	Flags         Flags     `json:"flags,omitempty"`
	Mark          string    `json:"mark,omitempty"`
	InFlight      bool      `json:"in_flight,omitempty"` // not complete yet (live events only)
	// PID and Process: the client's local process (session.Conn.PID/Process), if known.
	PID     int    `json:"pid,omitempty"`
	Process string `json:"process,omitempty"`
}

// Summarize derives the list row of s.
func (s *Session) Summarize() Summary {
	sum := Summary{
		ID:            s.ID,
		Started:       s.Started,
		Method:        s.Request.Method,
		URL:           s.Request.URL,
		Status:        s.Status(),
		ClientProto:   s.Client.Proto,
		UpstreamProto: s.Upstream.Proto,
		ReqBytes:      s.Request.Body.Size,
		ReplayOf:      s.ReplayOf,
		TLS:           s.Client.TLS != nil,
		Flags:         s.Flags,
		Mark:          s.Mark,
		DurationMS:    float64(s.Duration().Microseconds()) / 1000,
		PID:           s.Client.PID,
		Process:       s.Client.Process,
	}
	sum.Host, sum.Path = splitURL(s.Request.URL)
	if s.Response != nil {
		sum.RespBytes = s.Response.Body.Size
		sum.ContentType = s.Response.Header.Get("Content-Type")
	}
	if s.Error != nil {
		sum.Error = s.Error.Error()
		sum.ErrorPhase = s.Error.Phase
	}
	return sum
}

// splitURL returns the host (no port, no brackets) and the path with query of an absolute
// URL, or of a CONNECT target (host:port). It avoids url.Parse on the hot path for the
// common shapes and falls back to it for the rest.
func splitURL(raw string) (host, path string) {
	rest := raw
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	} else if !strings.Contains(rest, "/") {
		// CONNECT target
		if h, _, err := net.SplitHostPort(rest); err == nil {
			return h, ""
		}
		return rest, ""
	}
	authority, p := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, p = rest[:i], rest[i:]
	}
	if strings.Contains(authority, "@") || strings.Contains(p, "#") {
		u, err := url.Parse(raw)
		if err != nil {
			return "", ""
		}
		path = u.EscapedPath()
		if u.RawQuery != "" {
			path += "?" + u.RawQuery
		}
		return u.Hostname(), path
	}
	host = authority
	if strings.Contains(authority, ":") { // SplitHostPort allocates its error for "host"
		if h, _, err := net.SplitHostPort(authority); err == nil {
			host = h
		}
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if p == "" || p[0] == '?' {
		p = "/" + p
	}
	return host, p
}

// MessageCounts returns how many WebSocket messages the session carried and how many of
// them it keeps (Messages).
func (s *Session) MessageCounts() (seen, kept int64) {
	kept = int64(len(s.Messages))
	return max(s.MessagesSeen, kept), kept
}

// MessagesNote says, for a session that carried more WebSocket messages than it keeps,
// how many it saw and kept ("12000 WebSocket messages seen, the first 10000 kept"); ""
// when every message was kept.
func (s *Session) MessagesNote() string {
	seen, kept := s.MessageCounts()
	if seen == kept {
		return ""
	}
	return strconv.FormatInt(seen, 10) + " WebSocket messages seen, the first " + strconv.FormatInt(kept, 10) + " kept"
}
