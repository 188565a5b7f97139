package transparent

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const soOriginalDst = 80 // SO_ORIGINAL_DST (SOL_IP) and IP6T_SO_ORIGINAL_DST (SOL_IPV6)

// OriginalDst is the destination of c before a NAT redirect (nftables redirect or dnat,
// iptables REDIRECT), from the kernel's connection tracking: getsockopt SO_ORIGINAL_DST
// for IPv4, IP6T_SO_ORIGINAL_DST for IPv6. c must be a TCP connection accepted in the
// network namespace where the redirect happened (or wrap one, with NetConn).
func OriginalDst(c net.Conn) (netip.AddrPort, error) {
	for {
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = u.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return netip.AddrPort{}, wrapOrigErr(errors.New("not a socket"))
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, wrapOrigErr(err)
	}
	v4 := true
	if la, ok := c.LocalAddr().(*net.TCPAddr); ok && la.IP.To4() == nil {
		v4 = false
	}
	var ap netip.AddrPort
	var serr error
	err = raw.Control(func(fd uintptr) {
		var buf [28]byte // sockaddr_in6 is the larger
		n := uint32(len(buf))
		level := unix.SOL_IP
		if !v4 {
			level = unix.SOL_IPV6
		}
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, uintptr(level), soOriginalDst,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
		if errno != 0 {
			serr = errno
			return
		}
		port := binary.BigEndian.Uint16(buf[2:4])
		switch binary.NativeEndian.Uint16(buf[0:2]) {
		case unix.AF_INET:
			ap = netip.AddrPortFrom(netip.AddrFrom4([4]byte(buf[4:8])), port)
		case unix.AF_INET6:
			ap = netip.AddrPortFrom(netip.AddrFrom16([16]byte(buf[8:24])), port)
		default:
			serr = errors.New("unknown address family")
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return netip.AddrPort{}, wrapOrigErr(err)
	}
	return ap, nil
}
