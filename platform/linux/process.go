package linux

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"inspector/platform/osapi"
)

// ProcessOf finds the process whose TCP socket has local address local and remote address
// remote, from /proc under procRoot ("/proc"): the socket's inode from net/tcp and net/tcp6,
// then the process holding "socket:[inode]" among its fds. Processes of other users are
// only visible to root; a socket not found is osapi.ErrNoProcess.
func ProcessOf(procRoot string, local, remote netip.AddrPort) (osapi.Process, error) {
	ps, errs := ProcessesOf(procRoot, []Conn{{local, remote}})
	return ps[0], errs[0]
}

// Conn is one TCP socket to attribute: its local and remote address.
type Conn struct{ Local, Remote netip.AddrPort }

// ProcessesOf is ProcessOf for several sockets with one pass over /proc: the TCP tables
// are read once, and every process's fds once, however many sockets are asked about (a
// pass costs milliseconds of kernel time on a busy machine, so callers batch).
func ProcessesOf(procRoot string, conns []Conn) ([]osapi.Process, []error) {
	out := make([]osapi.Process, len(conns))
	errs := make([]error, len(conns))
	want := map[string][]int{} // "socket:[inode]" → indices into conns
	inodes, err := socketInodes(procRoot, conns)
	for i := range conns {
		switch {
		case inodes[i] != "":
			want["socket:["+inodes[i]+"]"] = append(want["socket:["+inodes[i]+"]"], i)
			errs[i] = osapi.ErrNoProcess // until found
		case err != nil:
			errs[i] = err
		default:
			errs[i] = osapi.ErrNoProcess
		}
	}
	if len(want) > 0 {
		if err := inodeOwners(procRoot, want, out, errs); err != nil {
			for _, is := range want {
				for _, i := range is {
					errs[i] = err
				}
			}
		}
	}
	return out, errs
}

// socketInodes finds each connection's socket inode ("" when absent) with one read of
// net/tcp and net/tcp6.
func socketInodes(procRoot string, conns []Conn) ([]string, error) {
	inodes := make([]string, len(conns))
	var errs []error
	for _, f := range []string{"tcp", "tcp6"} {
		if err := scanTCPTable(filepath.Join(procRoot, "net", f), conns, inodes); err != nil {
			errs = append(errs, err)
		}
	}
	return inodes, errors.Join(errs...)
}

// scanTCPTable fills inodes for the connections found in one /proc/net/tcp{,6} file.
func scanTCPTable(path string, conns []Conn, inodes []string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no IPv6 in this kernel
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		l, err1 := ParseProcAddr(fields[1])
		r, err2 := ParseProcAddr(fields[2])
		if err1 != nil || err2 != nil {
			return fmt.Errorf("%s: bad line %q", path, sc.Text())
		}
		if fields[9] == "0" {
			continue
		}
		for i, c := range conns {
			if inodes[i] == "" && osapi.SameAddrPort(l, c.Local) && osapi.SameAddrPort(r, c.Remote) {
				inodes[i] = fields[9]
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ParseProcAddr parses an address of /proc/net/tcp ("0100007F:1F90") or tcp6: the address
// as 32-bit words in the kernel's (little-endian, on every Linux Go supports but a few)
// byte order, the port in big-endian hex.
func ParseProcAddr(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad port in %q", s)
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	for i := 0; i < len(raw); i += 4 { // each 32-bit word is in host order
		binary.BigEndian.PutUint32(raw[i:], binary.LittleEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

// inodeOwners finds the processes with an fd on the sockets of want ("socket:[inode]" →
// indices), filling out and clearing errs for each one found; it stops when all are.
func inodeOwners(procRoot string, want map[string][]int, out []osapi.Process, errs []error) error {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return err
	}
	// Newest processes first: a connection just accepted most often comes from a process
	// started recently (a CLI call), which must be found before it exits.
	pids := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	left := len(want)
	for _, pid := range slices.Backward(pids) {
		name := strconv.Itoa(pid)
		fdDir := filepath.Join(procRoot, name, "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or another user's
		}
		for _, fd := range fds {
			l, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil {
				continue
			}
			is, ok := want[l]
			if !ok {
				continue
			}
			comm, _ := os.ReadFile(filepath.Join(procRoot, name, "comm"))
			for _, i := range is {
				out[i], errs[i] = osapi.Process{PID: pid, Name: strings.TrimSpace(string(comm))}, nil
			}
			delete(want, l)
			if left--; left == 0 {
				return nil
			}
		}
	}
	return nil
}
