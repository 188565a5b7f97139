// Package engine is Inspector's MITM proxy: it accepts proxy clients, decrypts HTTPS with
// leaf certificates from a Minter, relays HTTP/1.1 and HTTP/2 on both legs, and turns every
// exchange into a session.Session that it publishes to observers.
//
// # Stages and hooks
//
// Each request passes: request head (EventBegin) → RequestHeaders hooks → Request hooks
// (body buffered) → upstream round trip → response head → ResponseHeaders hooks →
// Response hooks (body buffered) → EventUpdate → body relayed → Error hooks (when it
// failed) → EventComplete → Done hooks. stages.go documents each stage. A session ends
// in exactly one of a response or an error; an HTTP 500 from the origin is a response.
//
// # Observers
//
// Observers never sit in the request path: the engine never waits for one. Observe
// registers a callback the engine calls with every event, in order, from a delivery
// goroutine of its own (an observer that takes its time delays only later deliveries,
// never a request or response; the backlog is bounded, see the section Observer delivery below).
// Close delivers
// what is queued before it returns (until its context ends); Send returns once its
// session is delivered. Subscribe returns a buffered channel. A subscriber that falls
// behind loses events, is counted in Stats.DroppedEvents, and gets an EventResync as soon
// as its channel has room again: it never slows the proxy.
//
// # The pipeline
//
// One exchange from accept to publish. serveExchange reads top to bottom,
// each step a named method; the reverse proxy that relays bodies (with its flushing,
// trailers, hop-by-hop rules and Upgrade handling) only calls back into named steps:
//
//	accept           where the request goes; refusals (framing, loops, the cert page)
//	begin            the session, EventBegin, the request body's capture
//	requestHeaders   RequestHeaders hooks, their pauses; an answer short-circuits
//	requestBody      Request hooks on the buffered body (only when one is registered)
//	send             the request as it goes upstream is recorded
//	forward          the reverse proxy: rewrite → RoundTrip (transport choice, trace,
//	                 response head recorded and captured; an HTTP/1.1 client connection's
//	                 bodiless requests run on its own origin connection, upstream.Pinned)
//	                 → modifyResponse
//	                 (responseHeaders, responseBody, EventUpdate) → body relayed;
//	                 handleError when there is no response
//	complete         (deferred) delivered or not, Error hooks, EventComplete, Done hooks
//
// # Delivery
//
// Did the client get the whole response before it went away?
//
// A client that knows a response's length (curl, browsers) closes its connection or
// stream as soon as it has the last byte. The request's context then ends while the
// handler is still returning, and "the context ended before the exchange did" alone would
// call a complete exchange a failure. What tells the two apart is whether the last byte
// had been handed to the client's connection before it left:
//
//   - clientWriter counts the body bytes written to the client. Before it writes the last
//     bytes of a body with a Content-Length on HTTP/2 or HTTP/3 it flushes what is still
//     buffered: that flush fails once the stream or connection is closed, so the client
//     left before it could have the last byte. The last write's own result is not
//     trusted there: x/net reports a connection closed right after a frame was written
//     as that frame's failure, and a client closing its connection as soon as it has the
//     last byte is exactly that.
//   - On HTTP/1 the last write is flushed at once; but a write into a socket the peer has
//     closed still succeeds, so framingConn also notes how many bytes had been written
//     when the client's close was read: a complete delivery wrote nothing after it (see
//     wroteAfterGone).
//
// A response shorter than the smallest buffer in front of the client's connection
// (flushThreshold) stays buffered until the handler returns: a client gone before then
// never saw it, so such responses need no early flush. The end of a chunked or unframed
// body is written only after the handler returns, so a client gone before cannot have
// seen it either. What stays open: on HTTP/2 and HTTP/3 a client that leaves in the
// moment between the flush before the last write and that write is recorded as served.
//
// # Strict HTTP/1 framing
//
// net/http's server already rejects much ambiguous framing, but it normalises some of it
// (Content-Length together with Transfer-Encoding, obs-fold, Transfer-Encoding on
// HTTP/1.0, bare LF line ends) and finds chunked-body errors only while the body streams
// upstream. A framingConn sits between a client connection and the server: it reads each
// request head whole, checks it, and only then hands it on; it follows the body's framing
// byte by byte so it always knows where the next head starts. Chunk framing that has
// already arrived with the head is checked before the head is handed on, so a smuggling
// attempt in one packet is refused with nothing sent upstream; a chunk error later in a
// long body makes the body read fail, so the origin sees a cut-off request, never a
// second one.
//
// On a head error the conn hands the server a fixed placeholder request instead and then
// EOF; the handler sees framingErr on the connection and answers 400 with the reason,
// after any earlier responses on the connection (pipelining keeps its order).
//
// # Observer delivery
//
// Observers registered with Observe are called in event order on a
// delivery goroutine of the engine's, never on an exchange's: an observer that takes its
// time delays later deliveries, never a
// request or response. What an undelivered backlog can hold is bounded twice: a
// completed session's in-memory bodies stay counted in Config.CaptureMemory until its
// EventComplete has been delivered (so a stalled observer makes new bodies spill to disk
// instead of growing memory), and at most maxObserverBacklog events wait; beyond that an
// event is dropped and counted in Stats.ObserverDropped (the only way an observer can
// miss an event).
//
// The store's observer does not block either: store.Put reserves memory for a session's
// bodies or parks them in the store's overflow file through a queue of its own, and when
// both are full it keeps the session without its bodies and counts it. A stalled disk
// therefore reaches neither the delivery goroutine nor the relay path: spill files are
// written by goroutines of their own, and a body whose spill stalls is marked not captured.
//
// # Frame capture
//
// Package engine/internal/frames. The engine hands it its capture flag, FrameSink, Logf
// and connection ids (frames.Env); it keeps the upstream recorders and the dropped-frames
// count (Stats.FramesDropped).
//
// With Config.FrameSink set, every HTTP/2 and HTTP/3 connection on either leg gets a
// recorder (frames.Rec). HTTP/2 frames come from a tap on the decrypted bytes (H2Tap): Read and Write
// append a shortened copy of what passed (frame headers and non-DATA payloads) to a
// per-direction buffer and return; nothing runs in the background. The buffer is parsed,
// with x/net/http2's Framer and the direction's own HPACK decoder, in order, on the
// goroutine that needs the frames: the engine completing a session (Rec.SessionDone), a read
// or write that ends a stream a completed session waits for, a read or write that finds
// the buffer over its bounds, and the connection closing (see the tap's section in frames.go).
// While capture is off (Engine.SetCapture) a tap passes bytes straight through, and a tap
// that saw capture off stays a pass-through for the rest of its connection. HTTP/3 frames
// come from quic-go's qlog events (HEADERS already QPACK-decoded by quic-go, DATA,
// SETTINGS, GOAWAY); an HTTP/3 stream's frames are delivered when the engine completes
// its session.
//
// A stream is linked to its session by the request it carries: the first HEADERS of a
// stream gives method and path, and the engine announces each session's method and path
// on the connection; both sides queue in order, so requests on one connection pair up in
// arrival order. A session gets its stream's frames plus the connection-level frames of
// the connection's opening (connOpening; copied into a stream's slice when the stream
// begins, so most deliveries need no merge; otherwise they are merged into the stream's
// own array, which has room for them) and of its stream's lifetime. When a linked stream
// ends (HTTP/2: END_STREAM both ways or a reset; HTTP/3: its session completed) or the
// connection closes, its frames, with the connection-level frames seen so far, go to
// FrameSink in one slice that the sink owns from then on, array and spare capacity
// included (the recorder keeps no reference to it); frames seen later go on their own.
// An HTTP/2 parse hands the streams it completed to the sink when it ends, in order. The
// newest maxRetired delivered streams are kept for such late frames; later frames of
// older ones are let go.
//
// Cost per exchange (the lazy parse runs on the proxy's request goroutines, often on a
// fresh goroutine of x/net's): one slice per stream (an upstream one with room for the
// client leg's frames, see streamCap), header fields from a shared array (keepFields),
// the stream records of retired streams reused, linked streams found by session id, and
// the parser's stack frames kept small so that a parse grows a fresh goroutine's stack
// less.
//
// Bounds: a connection holds at most maxHeldFrames frames not yet delivered; more are
// dropped and counted (Stats.FramesDropped). A tap direction holding one unfinished frame
// or header block over tapMaxPartial bytes stops parsing (counted too), as does one whose
// bytes do not parse as HTTP/2 (logged).
//
// # WebSocket over HTTP/2
//
// Package engine/internal/ws (h2.go): ws.IsExtendedConnect, ws.H1UpgradeFor. RFC 8441. An h2 client opens a stream with
// ":method CONNECT" and ":protocol websocket"; the stream's DATA then carries the
// WebSocket frames both ways. The engine relays such a stream to the origin as an
// HTTP/1.1 Upgrade request, so the usual upgrade path (httputil.ReverseProxy's
// hijack, the upstream ws.Tap recording messages) serves it unchanged: the translated
// request goes to the origin, and the ResponseWriter given to the proxy "hijacks" into
// the h2 stream itself (request body for reads, flushed response writes for writes).
//
// x/net's HTTP/2 server advertises SETTINGS_ENABLE_CONNECT_PROTOCOL (and accepts
// :protocol) only if GODEBUG contained "http2xconnect=1" when package http2 was
// initialised: it reads the variable once, in its init. The binary sets it from package
// appenv (cmd/inspector/appenv), whose import path sorts before golang.org/x/net and so
// initialises first; the engine's tests import appenv for the same reason. Without it
// h2 clients are never offered extended CONNECT and use HTTP/1.1 WebSockets instead.
//
// # The hooked WebSocket relay
//
// Package engine/internal/ws (relay.go). The engine keeps the public MessageHook and
// WebSocketMessage and hands the relay its hooks as ws.Hook: ws.Message is
// WebSocketMessage field for field, so a hook gets the relay's message itself.
//
// With message hooks registered, an upgraded connection's
// frames are parsed in both directions and each data message is assembled, given to the
// hooks and forwarded as one frame (or dropped). Each direction has a parser, fed by the
// goroutine that brings its bytes (the reverse proxy's copier calling Write for
// client→origin, the relay's own reader for origin→client), and a forwarder goroutine
// that runs the hooks and writes, in order. Ping and pong frames are written by the
// parser at once, ahead of messages waiting for the forwarder, so a slow hook never holds
// them; close frames queue in order. Raw frames (messages passed unmodified) are written
// under the direction's output lock from their first byte to their last, so a ping never
// lands inside one.
//
// # QUIC pass-through
//
// Config.H3Passthrough. The HTTP/3 listener then does not
// terminate QUIC: it relays each client's datagrams, undecrypted, to the origin's UDP
// port and the origin's answers back, so the TLS handshake is end to end and the client
// sees the origin's certificate. Each client address is one flow, recorded as a tunnel
// session (Method "QUIC", URL udp://host:port, request and response body sizes = bytes
// client→origin and origin→client) that completes after the flow was idle for
// Config.IdleTimeout or when the engine closes.
//
// The policy is per listener, not per host: choosing per host would need the SNI of the
// client's QUIC Initial (decrypting the Initial packets and reassembling the ClientHello
// from their CRYPTO frames), which is not done. So it applies in reverse mode only, where
// the destination is known without the SNI, and matches the reverse target's host.
package engine
