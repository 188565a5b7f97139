// Package upstream picks and runs the transport of each request towards its origin:
// HTTP/1.1 and HTTP/2 over TCP (net/http with x/net/http2; ALPN mirrors an HTTP/1.1
// client in auto mode), HTTP/3 over QUIC (quic-go's http3, one connection per origin),
// and the Alt-Svc cache that moves auto mode to HTTP/3 and back to TCP when QUIC fails.
//
// The lighter HTTP/1.1 path (h1.go): a caller that serves one request at a time per
// client connection hands RoundTrip that connection's Pinned, and bodiless GET, HEAD,
// OPTIONS and TRACE requests that go over HTTP/1.1 then run on the Pinned's own origin
// connection, written and read on the caller's goroutine, with the Transport's header
// checks, response-head cap, 1xx handling, ResponseTimeout and retry of a kept-alive
// connection the origin closed while idle. Everything else uses the Transports' pools.
//
// Contract:
//   - It knows nothing of sessions or exchanges. What it learns about a round trip goes
//     to the request context's httptrace.ClientTrace (DNS, connect, TLS, GotConn for TCP
//     connections, first byte) and to the ConnTrace handed to RoundTrip (the HTTP/3
//     connection, which is no net.Conn, and when its request was written). RoundTrip
//     returns why the protocol was chosen when that is worth recording.
//   - Every connection it dials is numbered (ConnID), TCP and QUIC alike, from one
//     counter, so a session can say which connection it used.
//   - Certificates are verified with Config.Roots unless Config.Insecure says otherwise
//     for the host; addresses Config.Reserved names are never dialed (ErrReserved),
//     checked before and after name resolution.
//   - It is safe for concurrent use; Close closes idle pooled connections (a Pinned's
//     connection is closed by Pinned.Close, when its client connection ends).
package upstream
