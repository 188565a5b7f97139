//go:build !linux

package transparent

import (
	"errors"
	"net"
	"net/netip"
)

// OriginalDst is the destination of c before a NAT redirect. Only Linux's connection
// tracking tells it; elsewhere it is an error (pass Options.OriginalDst).
func OriginalDst(c net.Conn) (netip.AddrPort, error) {
	return netip.AddrPort{}, wrapOrigErr(errors.New("SO_ORIGINAL_DST is Linux only"))
}
