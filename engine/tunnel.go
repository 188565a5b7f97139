package engine

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"

	"inspector/engine/internal/conn"
)

// Tunnel idleness. An opaque tunnel (undecrypted, or a protocol that is not HTTP) ends
// after Config.TunnelIdleTimeout without a byte either way, and at the connection cap it
// can be evicted like an idle keep-alive connection once it has been silent for
// Config.TunnelEvictAfter: a client that opens tunnels and sends nothing cannot lock others out.

// DefaultTunnelIdleTimeout is Config.TunnelIdleTimeout's default.
const DefaultTunnelIdleTimeout = 5 * time.Minute

// tunnelActivity is when a tunnel last relayed a byte, either way.
type tunnelActivity struct {
	last atomic.Int64 // UnixNano
	slot *conn.Conn   // the client connection's entry in the connection table, told too (nil when none)
}

// newTunnelActivity starts the record of a tunnel whose client has been silent since
// quiet (the CONNECT answer).
func newTunnelActivity(slot *conn.Conn, quiet time.Time) *tunnelActivity {
	a := &tunnelActivity{slot: slot}
	a.last.Store(quiet.UnixNano())
	slot.TunnelRelayed(quiet.UnixNano())
	return a
}

// end stops the tunnel's slot from counting as an idle tunnel.
func (a *tunnelActivity) end() { a.slot.TunnelRelayed(0) }

func (a *tunnelActivity) touch() {
	now := time.Now().UnixNano()
	a.last.Store(now)
	a.slot.TunnelRelayed(now)
}

// idleFor reports how long the tunnel has been silent.
func (a *tunnelActivity) idleFor() time.Duration {
	return time.Since(time.Unix(0, a.last.Load()))
}

// errTunnelIdle ends a tunnel that relayed nothing for its idle timeout.
var errTunnelIdle = errors.New("tunnel idle")

// pump copies src to dst until src ends, a write fails, or the tunnel (both ways) has
// been silent for idle. It returns the bytes copied and why it stopped (nil at EOF).
func (a *tunnelActivity) pump(dst io.Writer, src net.Conn, idle time.Duration) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var n int64
	for {
		_ = src.SetReadDeadline(time.Now().Add(idle))
		k, err := src.Read(buf)
		if k > 0 {
			a.touch()
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		switch {
		case err == nil:
		case err == io.EOF:
			return n, nil
		case isTimeout(err):
			if a.idleFor() < idle {
				continue // the other direction is busy
			}
			return n, errTunnelIdle
		default:
			return n, err
		}
	}
}
