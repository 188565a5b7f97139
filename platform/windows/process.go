package windows

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"inspector/platform/osapi"
)

// TCPRow is one row of GetExtendedTcpTable(TCP_TABLE_OWNER_PID_ALL).
type TCPRow struct {
	Local, Remote netip.AddrPort
	PID           int
}

// tcpRowLayout is where a row's fields are: the size of the row, the addresses' length and
// the byte offsets of local address, local port, remote address, remote port and PID.
type tcpRowLayout struct{ size, addrLen, la, lp, ra, rp, pid int }

var (
	// MIB_TCPROW_OWNER_PID: state, local addr, local port, remote addr, remote port, pid.
	tcpRow = tcpRowLayout{size: 24, addrLen: 4, la: 4, lp: 8, ra: 12, rp: 16, pid: 20}
	// MIB_TCP6ROW_OWNER_PID: local addr[16], scope, port, remote addr[16], scope, port,
	// state, pid.
	tcp6Row = tcpRowLayout{size: 56, addrLen: 16, la: 0, lp: 20, ra: 24, rp: 44, pid: 52}
)

// ParseTCPTable decodes a MIB_TCPTABLE_OWNER_PID (v6 false) or MIB_TCP6TABLE_OWNER_PID
// buffer: a little-endian entry count, then the rows. Addresses are in network order;
// ports are DWORDs whose first two bytes hold the port in network order.
func ParseTCPTable(buf []byte, v6 bool) ([]TCPRow, error) {
	if len(buf) < 4 {
		return nil, fmt.Errorf("tcp table: %d bytes, want at least 4", len(buf))
	}
	n := int(binary.LittleEndian.Uint32(buf))
	l := tcpRow
	if v6 {
		l = tcp6Row
	}
	if n < 0 || n > (len(buf)-4)/l.size {
		return nil, fmt.Errorf("tcp table: %d rows do not fit in %d bytes", n, len(buf))
	}
	end := func(r []byte, addr, port int) netip.AddrPort {
		a, _ := netip.AddrFromSlice(r[addr : addr+l.addrLen])
		return netip.AddrPortFrom(a, binary.BigEndian.Uint16(r[port:]))
	}
	rows := make([]TCPRow, 0, n)
	for i := range n {
		r := buf[4+i*l.size : 4+(i+1)*l.size]
		rows = append(rows, TCPRow{Local: end(r, l.la, l.lp), Remote: end(r, l.ra, l.rp), PID: int(binary.LittleEndian.Uint32(r[l.pid:]))})
	}
	return rows, nil
}

// FindTCPOwner returns the PID of the row with these local and remote addresses.
func FindTCPOwner(rows []TCPRow, local, remote netip.AddrPort) (int, error) {
	for _, r := range rows {
		if osapi.SameAddrPort(r.Local, local) && osapi.SameAddrPort(r.Remote, remote) && r.PID > 0 {
			return r.PID, nil
		}
	}
	return 0, osapi.ErrNoProcess
}
