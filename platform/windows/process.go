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

// Row sizes of MIB_TCPROW_OWNER_PID and MIB_TCP6ROW_OWNER_PID.
const (
	tcpRowSize  = 24 // state, local addr, local port, remote addr, remote port, pid
	tcp6RowSize = 56 // local addr[16], scope, port, remote addr[16], scope, port, state, pid
)

// ParseTCPTable decodes a MIB_TCPTABLE_OWNER_PID (v6 false) or MIB_TCP6TABLE_OWNER_PID
// buffer: a little-endian entry count, then the rows. Addresses are in network order;
// ports are DWORDs whose first two bytes hold the port in network order.
func ParseTCPTable(buf []byte, v6 bool) ([]TCPRow, error) {
	if len(buf) < 4 {
		return nil, fmt.Errorf("tcp table: %d bytes, want at least 4", len(buf))
	}
	n := int(binary.LittleEndian.Uint32(buf))
	size := tcpRowSize
	if v6 {
		size = tcp6RowSize
	}
	if n < 0 || n > (len(buf)-4)/size {
		return nil, fmt.Errorf("tcp table: %d rows do not fit in %d bytes", n, len(buf))
	}
	port := func(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
	rows := make([]TCPRow, 0, n)
	for i := range n {
		r := buf[4+i*size : 4+(i+1)*size]
		var row TCPRow
		if v6 {
			la, _ := netip.AddrFromSlice(r[0:16])
			ra, _ := netip.AddrFromSlice(r[24:40])
			row = TCPRow{
				Local:  netip.AddrPortFrom(la, port(r[20:24])),
				Remote: netip.AddrPortFrom(ra, port(r[44:48])),
				PID:    int(binary.LittleEndian.Uint32(r[52:56])),
			}
		} else {
			la, _ := netip.AddrFromSlice(r[4:8])
			ra, _ := netip.AddrFromSlice(r[12:16])
			row = TCPRow{
				Local:  netip.AddrPortFrom(la, port(r[8:12])),
				Remote: netip.AddrPortFrom(ra, port(r[16:20])),
				PID:    int(binary.LittleEndian.Uint32(r[20:24])),
			}
		}
		rows = append(rows, row)
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
