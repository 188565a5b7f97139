package darwin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/netip"
	"strconv"
	"strings"

	"inspector/platform/osapi"
)

// LsofArgs are lsof's arguments to list the processes with a TCP socket on local: numeric
// hosts and ports, machine-readable pid, command and name fields.
func LsofArgs(local netip.AddrPort) []string {
	host := local.Addr().Unmap().String()
	if local.Addr().Unmap().Is6() {
		host = "[" + host + "]"
	}
	return []string{"-nP", "-iTCP@" + host + ":" + strconv.Itoa(int(local.Port())), "-Fpcn"}
}

// ProcessOf finds the process owning the TCP connection local→remote with lsof (macOS has
// no /proc; libproc's proc_pidfdinfo needs cgo, which this package does without).
func ProcessOf(ctx context.Context, r osapi.Runner, local, remote netip.AddrPort) (osapi.Process, error) {
	out, err := r.Run(ctx, "lsof", LsofArgs(local)...)
	var ee *osapi.ExitError
	if err != nil && !(errors.As(err, &ee) && len(out) == 0) { // lsof exits 1 when nothing matches
		return osapi.Process{}, err
	}
	return ParseLsof(out, local, remote)
}

// ParseLsof reads lsof -Fpcn output: "p<pid>", "c<command>", then per file "f<fd>" and
// "n<local>-><remote>".
func ParseLsof(out []byte, local, remote netip.AddrPort) (osapi.Process, error) {
	var cur osapi.Process
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if l == "" {
			continue
		}
		switch l[0] {
		case 'p':
			pid, err := strconv.Atoi(l[1:])
			if err != nil {
				return osapi.Process{}, errors.New("lsof: bad pid line " + strconv.Quote(l))
			}
			cur = osapi.Process{PID: pid}
		case 'c':
			cur.Name = l[1:]
		case 'n':
			a, b, ok := strings.Cut(l[1:], "->")
			if !ok {
				continue // a listening socket
			}
			la, err1 := netip.ParseAddrPort(a)
			ra, err2 := netip.ParseAddrPort(b)
			if err1 == nil && err2 == nil && osapi.SameAddrPort(la, local) && osapi.SameAddrPort(ra, remote) && cur.PID > 0 {
				return cur, nil
			}
		}
	}
	return osapi.Process{}, osapi.ErrNoProcess
}
