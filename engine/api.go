package engine

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/netip"
	"time"

	"inspector/engine/session"
)

// Config configures an Engine. The zero value of every field is a safe default.
type Config struct {
	// Listen is the proxy listener address; default "127.0.0.1:8080". Port 0 picks one.
	Listen string
	// AllowRemote permits a non-loopback Listen address.
	AllowRemote bool

	// CA signs the leaf certificates shown to clients. Required to decrypt HTTPS.
	CA Minter

	// UpstreamRoots are the roots trusted for origins; nil means the system roots. (The
	// command line builds the system pool plus --upstream-ca.)
	UpstreamRoots *x509.CertPool
	// UpstreamInsecure lists host globs whose certificate errors are ignored.
	UpstreamInsecure []string
	// NoDecrypt lists host globs that are tunnelled without decryption.
	NoDecrypt []string
	// UpstreamProto is "auto" (default: ALPN follows the client: requests from HTTP/1.1
	// clients offer http/1.1, those from HTTP/2 and HTTP/3 clients and from Send offer h2
	// and http/1.1; and an origin that advertises h3 with Alt-Svc is reached over HTTP/3
	// until the advertisement's max age, falling back to TCP when QUIC fails), "h1", "h2"
	// or "h3" (for https origins; plain http origins always get HTTP/1.1).
	UpstreamProto string
	// Fingerprint is what origins see of the client's TLS: "mirror" (the default, ""):
	// the upstream ClientHello is built from the client's (docs/fingerprint.md); "go":
	// Go's own ClientHello for every origin.
	Fingerprint string
	// FingerprintGo lists host globs that get Go's ClientHello whatever Fingerprint says.
	FingerprintGo []string

	// CaptureLimit caps the bytes of each body kept in memory for the session; the rest
	// streams through uncaptured and the session is marked truncated. Default 1 MiB.
	// Negative disables body capture.
	CaptureLimit int64

	// CaptureMemory caps the bytes of bodies held in memory across all running exchanges
	// together: DefaultCaptureMemory (64 MiB) when zero, no cap when negative. A body that
	// would go beyond it keeps what it holds in memory and treats the rest like bytes
	// beyond CaptureLimit: spilled (SpillDir), else counted and the body marked truncated.
	// Stats.CaptureCapped counts such bodies. A session's bytes count until its
	// EventComplete has been delivered to the observers.
	CaptureMemory int64

	// SpillDir receives the bytes of bodies beyond CaptureLimit, one file per body (named
	// in session.Body.Spilled); SpillLimit bounds the bytes kept of one body in all (memory
	// and file). The store moves the files into its own and deletes them. Empty SpillDir:
	// no spilling, bodies beyond the cap are truncated.
	SpillDir   string
	SpillLimit int64

	// NewID returns the next session id. Default: an in-memory counter from 1. The store
	// provides one that persists across restarts.
	NewID func() session.ID

	// Timeouts; zero means the default given on each field.
	HeaderTimeout   time.Duration // reading a request head from a client: 30s
	IdleTimeout     time.Duration // idle keep-alive client connection: 120s
	DialTimeout     time.Duration // upstream TCP connect: 15s
	TLSTimeout      time.Duration // each TLS handshake: 15s
	ResponseTimeout time.Duration // waiting for response headers after the request: 120s
	// TunnelIdleTimeout ends an opaque CONNECT tunnel (undecrypted, or not HTTP) that
	// relayed nothing either way for this long: DefaultTunnelIdleTimeout (5 min). A tunnel
	// silent for TunnelEvictAfter, or one still waiting for its first byte, also makes
	// room at the connection cap (MaxConns) like an idle keep-alive connection.
	TunnelIdleTimeout time.Duration
	// TunnelEvictAfter is how long a tunnel must have relayed nothing, either way, to make
	// room at the connection cap: 1s.
	TunnelEvictAfter time.Duration
	// SniffTimeout is how long a tunnel (CONNECT, ServeConn) waits for its client's first
	// byte before relaying it as opaque, for protocols where the server speaks first: 3s.
	// (At 1s a TLS client on a loaded machine could send its hello too late and find its
	// tunnel relayed undecrypted; a server-speaks-first greeting waits this long once.)
	SniffTimeout time.Duration

	// ProxyAuth, when set ("user:password"), makes the proxy listener demand these Basic
	// credentials (Proxy-Authorization) on every CONNECT and absolute-form request; others
	// get 407. The command line turns it on with --allow-remote.
	ProxyAuth string

	// MaxConns caps concurrent client connections on the proxy listener and the listeners
	// wrapped with LimitListener, together (DefaultMaxConns when zero). At the cap a new connection takes the slot of the one that has waited
	// longest for a request head (idle, or trickling one in), which is closed; when every
	// connection is busy the new one gets a 503 and is closed at once.
	MaxConns int

	// ReservedAddrs are addresses (host:port) the proxy must never forward to, for example
	// its control API. The proxy's own listener is always reserved.
	ReservedAddrs []string

	// ListenH3 is a UDP address on which the engine also accepts HTTP/3 (QUIC), decrypting
	// with a certificate minted for the client's SNI (or the Reverse target's host). Empty:
	// no HTTP/3 listener. Non-loopback addresses need AllowRemote.
	ListenH3 string
	// H3Refuse lists host globs (matched against the client's SNI, or the Reverse target's
	// host) whose QUIC handshakes on the HTTP/3 listener are refused, so the client falls
	// back to TCP: the "refuse UDP" QUIC policy. Other hosts are intercepted.
	H3Refuse []string
	// H3Passthrough lists host globs for the "pass through" QUIC policy: when the Reverse
	// target's host matches, the HTTP/3 listener relays QUIC datagrams to the target's UDP
	// port undecrypted (one tunnel session per client address, with byte counts) instead
	// of intercepting. Reverse mode only (New fails otherwise): the policy cannot yet be
	// chosen per client SNI. It wins over H3Refuse.
	H3Passthrough []string
	// Reverse, when set (an http:// or https:// URL), makes the engine a reverse proxy: the
	// TCP listener (and the HTTP/3 one) forwards every request to this origin. TLS from
	// clients is terminated with certificates minted for the SNI or the target's host;
	// plain HTTP is accepted too. The Host header sent upstream is the target's.
	Reverse string

	// KeyLog, when set, receives the TLS secrets of both legs as NSS key-log lines
	// (SSLKEYLOGFILE format, which Wireshark and tshark read): the client leg, where the
	// proxy is the server, and the upstream leg, where it is the client; TCP and QUIC.
	// Each line is written whole, in one Write.
	KeyLog io.Writer

	// FrameSink, when set, turns on HTTP/2 and HTTP/3 frame capture: it receives the frames
	// of a session's stream (with its connection's connection-level frames) once the
	// stream ended or its connection closed, once per leg, so a session usually gets two
	// calls. HTTP/2 frames are parsed lazily, so the sink runs on whichever goroutine
	// parsed them: a request handler completing its session, a connection's read or write
	// (x/net's goroutines), or the one closing it. It must not block (queue and return).
	// The slice, spare capacity included, is the sink's to keep: the engine keeps no
	// reference to it.
	FrameSink func(id session.ID, frames []session.Frame)

	// ProcessOf, when set, names the local process that owns a client connection: client
	// is the client's address (its socket's local end), proxy the proxy's address the
	// client connected to (platform.ProcessOf fits). It is called once per accepted TCP
	// client connection, in a goroutine of its own; the sessions of the connection carry
	// its answer (session.Conn.PID/Process) once it has come. An error leaves them
	// unattributed.
	ProcessOf func(client, proxy netip.AddrPort) (pid int, name string, err error)

	// Logf receives diagnostics; nil discards them.
	Logf func(format string, args ...any)
}

// Minter mints TLS certificates for host names and IP addresses. rootca.CA implements it.
type Minter interface {
	// RootDER is the root certificate (DER), served at http://inspector.cert/.
	RootDER() []byte
	// LeafFor returns a leaf certificate valid for host (a name or an IP literal).
	// It must be safe for concurrent use and should cache.
	LeafFor(host string) (*tls.Certificate, error)
}

// EventKind says what happened to a session.
type EventKind uint8

const (
	// EventBegin: a request head arrived (Summary.InFlight is true).
	EventBegin EventKind = iota + 1
	// EventUpdate: the response head arrived.
	EventUpdate
	// EventComplete: the session ended with a response or an error; Session is set and
	// immutable from now on.
	EventComplete
	// EventResync: the subscriber fell behind and events were dropped; it should rebuild
	// its view from Engine.InFlight and its own storage.
	EventResync
)

// Event is one notification to a subscriber.
type Event struct {
	Kind    EventKind
	Summary session.Summary
	Session *session.Session // EventComplete only

	proc *procLookup // the client connection's process lookup, if one runs
}

// Stats are the engine's counters.
type Stats struct {
	Sessions      uint64 // completed sessions
	InFlight      int
	Connections   int64  // open client connections
	DroppedEvents uint64 // events dropped across all slow subscribers
	// ObserverDropped counts events not delivered to the Observe observers because
	// 65,536 were already waiting for them (see Observer).
	ObserverDropped uint64
	// CaptureMemory is the bytes of bodies held in memory by running exchanges and by
	// completed sessions not yet delivered to the observers, and
	// CaptureCapped counts bodies whose in-memory capture stopped early because
	// Config.CaptureMemory was spent (the rest was spilled or the body truncated).
	CaptureMemory int64
	CaptureCapped uint64
	// FramesDropped counts HTTP/2 and HTTP/3 frames not recorded because a connection hit
	// its frame cap or a frame or header block exceeded the capture's bounds (see
	// FrameSink).
	FramesDropped uint64
}
