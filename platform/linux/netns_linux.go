package linux

import (
	"errors"
	"fmt"
	"net"
	"runtime"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Netns is a network namespace of its own, made for one command: it lives as long as a
// thread of this process or a process started in it holds it, and is never given a name
// in /run/netns, so nothing of it outlives them (not even after a kill -9 of this
// process). Its loopback is up and carries the default routes, so every connection a
// program in it opens reaches the namespace's nftables rules (see Redirect) and nothing
// else: the namespace has no link to the host's network.
type Netns struct {
	handle netns.NsHandle
	work   chan func()
	done   chan struct{}
}

// ErrNetnsPermission is wrapped by NewNetns when the process may not make a network
// namespace (no CAP_NET_ADMIN).
var ErrNetnsPermission = errors.New("making a network namespace needs CAP_NET_ADMIN (run as root, or give the binary cap_net_admin,cap_sys_admin)")

// NewNetns makes a network namespace. Its thread runs the functions given to Do.
func NewNetns() (*Netns, error) {
	n := &Netns{work: make(chan func()), done: make(chan struct{})}
	errc := make(chan error, 1)
	go func() {
		// The thread enters the namespace and never leaves it: it is not unlocked, so
		// the Go runtime ends it with this goroutine instead of reusing it elsewhere.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			if errors.Is(err, unix.EPERM) {
				err = fmt.Errorf("%w: %v", ErrNetnsPermission, err)
			} else {
				err = fmt.Errorf("making a network namespace: %w", err)
			}
			errc <- err
			return
		}
		h, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("opening the network namespace: %w", err)
			return
		}
		n.handle = h
		if err := setupLoopback(); err != nil {
			h.Close()
			errc <- err
			return
		}
		errc <- nil
		for {
			select {
			case f := <-n.work:
				f()
			case <-n.done:
				return
			}
		}
	}()
	if err := <-errc; err != nil {
		return nil, err
	}
	return n, nil
}

// The namespace's own addresses, on its loopback: connections to other hosts leave from
// them (a source on 127.0.0.0/8 could not go to another address at all).
var (
	NetnsAddr4 = net.IPv4(10, 233, 233, 1)
	NetnsAddr6 = net.ParseIP("fd69:6e73:7065:6374::1")
)

// setupLoopback brings lo up with the namespace's addresses and routes every address to
// it, on the calling thread's namespace.
func setupLoopback() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("network namespace: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("network namespace: bringing lo up: %w", err)
	}
	for _, a := range []struct {
		ip   net.IP
		bits int
		dst  string
	}{{NetnsAddr4, 32, "0.0.0.0/0"}, {NetnsAddr6, 128, "::/0"}} {
		v6 := a.ip.To4() == nil
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: a.ip, Mask: net.CIDRMask(a.bits, a.bits)}}
		if v6 {
			addr.Flags = unix.IFA_F_NODAD
		}
		if err := netlink.AddrAdd(lo, addr); err != nil {
			if v6 && (errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EOPNOTSUPP)) {
				continue // IPv6 off in this kernel
			}
			return fmt.Errorf("network namespace: address %s on lo: %w", a.ip, err)
		}
		_, ipnet, _ := net.ParseCIDR(a.dst)
		r := &netlink.Route{LinkIndex: lo.Attrs().Index, Dst: ipnet, Src: a.ip, Scope: netlink.SCOPE_UNIVERSE}
		if err := netlink.RouteAdd(r); err != nil {
			return fmt.Errorf("network namespace: default route %s via lo: %w", a.dst, err)
		}
	}
	return nil
}

// Do runs f on the namespace's thread: sockets f makes (net.Listen, net.Dial) and
// processes it starts (exec.Cmd.Start) are in the namespace. f must not block for long:
// Do calls are served one at a time.
func (n *Netns) Do(f func() error) error {
	errc := make(chan error, 1)
	select {
	case n.work <- func() { errc <- f() }:
	case <-n.done:
		return net.ErrClosed
	}
	return <-errc
}

// Fd is the namespace's file descriptor (valid until Close).
func (n *Netns) Fd() int { return int(n.handle) }

// Close ends the namespace's thread and closes its descriptor; the namespace goes away
// with the last process and socket in it.
func (n *Netns) Close() error {
	select {
	case <-n.done:
		return nil
	default:
	}
	close(n.done)
	return n.handle.Close()
}

// Redirect is what the namespace's nftables rules do with its traffic.
type Redirect struct {
	// TCPPort: every TCP connection goes to this port on the namespace's loopback
	// (nftables redirect), where a transparent listener reads the original destination.
	TCPPort uint16
	// DNSPort, when non-zero: UDP to port 53 goes to this port on the loopback.
	DNSPort uint16
	// RejectUDP443: UDP to port 443 is refused with an ICMP port unreachable, so QUIC
	// clients fall back to TCP at once.
	RejectUDP443 bool
}

// NftTable is the name of the nftables table Inspector adds in its namespaces.
const NftTable = "inspector"

// Apply installs r as the namespace's nftables table (inet family), replacing an
// earlier one.
func (n *Netns) Apply(r Redirect) error {
	c, err := nftables.New(nftables.WithNetNSFd(n.Fd()))
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: NftTable}
	c.AddTable(t)
	c.FlushTable(t)
	nat := c.AddChain(&nftables.Chain{
		Name: "redirect", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest,
	})
	redirect := func(proto byte, dport uint16, to uint16) {
		ex := []expr.Any{
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		}
		if dport != 0 {
			ex = append(ex,
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: be16(dport)})
		}
		ex = append(ex,
			&expr.Immediate{Register: 1, Data: be16(to)},
			&expr.Redir{RegisterProtoMin: 1})
		c.AddRule(&nftables.Rule{Table: t, Chain: nat, Exprs: ex})
	}
	if r.DNSPort != 0 {
		redirect(unix.IPPROTO_UDP, 53, r.DNSPort)
	}
	if r.TCPPort != 0 {
		redirect(unix.IPPROTO_TCP, 0, r.TCPPort)
	}
	if r.RejectUDP443 {
		filter := c.AddChain(&nftables.Chain{
			Name: "refuse", Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter,
		})
		c.AddRule(&nftables.Rule{Table: t, Chain: filter, Exprs: []expr.Any{
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_UDP}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: be16(443)},
			&expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_PORT_UNREACH},
		}})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables rules in the namespace: %w", err)
	}
	return nil
}

func be16(v uint16) []byte { return []byte{byte(v >> 8), byte(v)} }

// NetnsSupported reports whether this process may make network namespaces, without
// making one that lasts: nil, or an error wrapping ErrNetnsPermission (or saying why not).
func NetnsSupported() error {
	n, err := NewNetns()
	if err != nil {
		return err
	}
	return n.Close()
}
