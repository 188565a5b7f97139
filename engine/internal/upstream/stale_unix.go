//go:build unix

package upstream

import "syscall"

// stale reports whether an idle pinned connection may not take a request: the origin
// sent something (a close_notify, an unsolicited response) or closed it while it was
// idle. It peeks at the socket without blocking, as net/http's Transport learns the same
// from the read goroutine it keeps on every idle connection.
func (c *h1Conn) stale() bool {
	if c.br.Buffered() > 0 {
		return true
	}
	sc, err := c.raw.Conn.(syscall.Conn)
	if !err {
		return false
	}
	rc, e := sc.SyscallConn()
	if e != nil {
		return true
	}
	stale := false
	var b [1]byte
	e = rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK:
			// nothing to read: the connection is idle and open
		case rerr != nil || n >= 0:
			stale = true // data, EOF (n == 0) or an error
		}
		return true // never wait for readiness
	})
	return stale || e != nil
}
