package windows

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"inspector/platform/osapi"
)

func v4row(state uint32, la string, lp uint16, ra string, rp uint16, pid uint32) []byte {
	b := make([]byte, tcpRow.size)
	binary.LittleEndian.PutUint32(b[0:], state)
	a := netip.MustParseAddr(la).As4()
	copy(b[4:8], a[:])
	binary.BigEndian.PutUint16(b[8:], lp)
	a = netip.MustParseAddr(ra).As4()
	copy(b[12:16], a[:])
	binary.BigEndian.PutUint16(b[16:], rp)
	binary.LittleEndian.PutUint32(b[20:], pid)
	return b
}

func v6row(la string, lp uint16, ra string, rp uint16, pid uint32) []byte {
	b := make([]byte, tcp6Row.size)
	a := netip.MustParseAddr(la).As16()
	copy(b[0:16], a[:])
	binary.BigEndian.PutUint16(b[20:], lp)
	a = netip.MustParseAddr(ra).As16()
	copy(b[24:40], a[:])
	binary.BigEndian.PutUint16(b[44:], rp)
	binary.LittleEndian.PutUint32(b[48:], 5) // established
	binary.LittleEndian.PutUint32(b[52:], pid)
	return b
}

func table(rows ...[]byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(rows)))
	for _, r := range rows {
		b = append(b, r...)
	}
	return b
}

func TestParseTCPTable(t *testing.T) {
	buf := table(v4row(2, "0.0.0.0", 8080, "0.0.0.0", 0, 4), v4row(5, "127.0.0.1", 50000, "127.0.0.1", 8080, 1234))
	rows, err := ParseTCPTable(buf, false)
	if err != nil || len(rows) != 2 {
		t.Fatalf("%v %v", rows, err)
	}
	pid, err := FindTCPOwner(rows, netip.MustParseAddrPort("127.0.0.1:50000"), netip.MustParseAddrPort("[::ffff:127.0.0.1]:8080"))
	if err != nil || pid != 1234 {
		t.Fatalf("owner %d %v", pid, err)
	}
	if _, err := FindTCPOwner(rows, netip.MustParseAddrPort("127.0.0.1:8080"), netip.MustParseAddrPort("127.0.0.1:50000")); !errors.Is(err, osapi.ErrNoProcess) {
		t.Fatalf("reversed: %v", err)
	}
	rows6, err := ParseTCPTable(table(v6row("::1", 50001, "::1", 8080, 77)), true)
	if err != nil || len(rows6) != 1 || rows6[0].Local.String() != "[::1]:50001" || rows6[0].Remote.String() != "[::1]:8080" || rows6[0].PID != 77 {
		t.Fatalf("v6 %+v %v", rows6, err)
	}
	for _, bad := range [][]byte{nil, {1, 0}, table(v4row(5, "1.2.3.4", 1, "1.2.3.4", 2, 3))[:20], binary.LittleEndian.AppendUint32(nil, 1<<30)} {
		if _, err := ParseTCPTable(bad, false); err == nil {
			t.Errorf("%x accepted", bad)
		}
	}
}
