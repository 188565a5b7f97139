package platform

import (
	"net/netip"

	"inspector/platform/osapi"
)

// Process is the local process owning a connection; see osapi.Process.
type Process = osapi.Process

// ErrNoProcess means no local process owns the connection (closed, or not local).
var ErrNoProcess = osapi.ErrNoProcess

// ProcessOf reports which local process owns the TCP socket whose local address is local
// and whose remote address is remote. For a client connection the proxy accepted, pass
// conn.RemoteAddr() as local and conn.LocalAddr() as remote: the client's own socket.
//
// Linux reads /proc/net/tcp{,6} and /proc/PID/fd (other users' processes are visible to
// root only), Windows GetExtendedTcpTable, macOS lsof. A lookup costs a few milliseconds
// (a scan of every process's fds on Linux, a process start on macOS): call it once per
// client connection, off the request path, and cache the result with the connection.
func ProcessOf(local, remote netip.AddrPort) (pid int, name string, err error) {
	p, err := processOf(local, remote)
	return p.PID, p.Name, err
}
