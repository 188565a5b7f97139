//go:build !unix

package upstream

// stale reports whether an idle pinned connection may not take a request. Without a
// non-blocking peek here, only bytes already read count; a connection the origin closed
// while idle fails its next request before any response byte, and that request (always
// one safe to send twice on this path) is sent again on a new connection.
func (c *h1Conn) stale() bool { return c.br.Buffered() > 0 }
