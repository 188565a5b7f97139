//go:build windows

package windows

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"unsafe"

	"inspector/platform/osapi"

	xwin "golang.org/x/sys/windows"
)

var procGetExtendedTcpTable = xwin.NewLazySystemDLL("iphlpapi.dll").NewProc("GetExtendedTcpTable")

const tcpTableOwnerPIDAll = 5 // TCP_TABLE_OWNER_PID_ALL

// tcpTable reads GetExtendedTcpTable for one address family.
func tcpTable(v6 bool) ([]TCPRow, error) {
	if err := procGetExtendedTcpTable.Find(); err != nil {
		return nil, err
	}
	af := uintptr(xwin.AF_INET)
	if v6 {
		af = xwin.AF_INET6
	}
	size := uint32(16 << 10)
	for range 8 { // the table may grow between the size query and the read
		buf := make([]byte, size)
		r, _, _ := procGetExtendedTcpTable.Call(uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0, af, tcpTableOwnerPIDAll, 0)
		switch xwin.Errno(r) {
		case 0:
			return ParseTCPTable(buf[:size], v6)
		case xwin.ERROR_INSUFFICIENT_BUFFER:
			size += 4 << 10
			continue
		default:
			return nil, fmt.Errorf("GetExtendedTcpTable: %w", xwin.Errno(r))
		}
	}
	return nil, errors.New("GetExtendedTcpTable: the table kept growing")
}

// ProcessOf finds the process owning the TCP connection local→remote through
// GetExtendedTcpTable, and its image name through QueryFullProcessImageName (empty when the
// process is another user's and cannot be opened).
func ProcessOf(local, remote netip.AddrPort) (osapi.Process, error) {
	var errs []error
	for _, v6 := range []bool{false, true} {
		rows, err := tcpTable(v6)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pid, err := FindTCPOwner(rows, local, remote)
		if err != nil {
			continue
		}
		return osapi.Process{PID: pid, Name: imageName(pid)}, nil
	}
	if len(errs) == 2 {
		return osapi.Process{}, errors.Join(errs...)
	}
	return osapi.Process{}, osapi.ErrNoProcess
}

func imageName(pid int) string {
	h, err := xwin.OpenProcess(xwin.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return ""
	}
	defer xwin.CloseHandle(h)
	buf := make([]uint16, xwin.MAX_LONG_PATH)
	n := uint32(len(buf))
	if err := xwin.QueryFullProcessImageName(h, 0, &buf[0], &n); err != nil {
		return ""
	}
	return filepath.Base(xwin.UTF16ToString(buf[:n]))
}
