package osapi

import (
	"errors"
	"net/netip"
)

// Process is the local process that owns one end of a TCP connection.
type Process struct {
	PID int
	// Name is the program's short name ("curl", "firefox-esr", "chrome.exe").
	Name string
}

// ErrNoProcess means no process owns a connection with those addresses (it closed, or it
// belongs to another machine or a namespace this process cannot see).
var ErrNoProcess = errors.New("no local process owns that connection")

// SameAddrPort compares addresses with IPv4-mapped IPv6 addresses unmapped, as the kernel
// tables and Go's net package write them differently.
func SameAddrPort(a, b netip.AddrPort) bool {
	return a.Port() == b.Port() && a.Addr().Unmap() == b.Addr().Unmap()
}
