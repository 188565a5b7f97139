package transparent

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// DNSForwarder answers the DNS queries of clients that cannot reach a resolver of their
// own (a namespace of 'inspector run'): each query read on its packet connection is sent
// to Upstream and the answer relayed back. The addresses of A and AAAA answers are kept
// for a while, so that Resolve (the check of a TLS server name against the original
// destination) agrees with what the client was told.
type DNSForwarder struct {
	pcs      []net.PacketConn
	upstream string
	logf     func(string, ...any)

	mu      sync.Mutex
	answers map[string]map[netip.Addr]time.Time // name (lower case, no dot) → address → expiry
	closed  bool
	wg      sync.WaitGroup
	sem     chan struct{}
}

// dnsMaxNames bounds the answers kept (the oldest names are dropped beyond it).
const dnsMaxNames = 8192

// NewDNSForwarder serves the queries read on pcs by upstream (host:port, UDP). It starts
// serving at once; Close stops it. For queries redirected by nftables, bind each
// PacketConn to the address the redirect goes to (127.0.0.1, ::1), not to a wildcard:
// the answer must leave from that address for the kernel to undo the redirect.
func NewDNSForwarder(upstream string, logf func(string, ...any), pcs ...net.PacketConn) *DNSForwarder {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	f := &DNSForwarder{pcs: pcs, upstream: upstream, logf: logf, answers: map[string]map[netip.Addr]time.Time{}, sem: make(chan struct{}, 256)}
	for _, pc := range pcs {
		f.wg.Add(1)
		go f.serve(pc)
	}
	return f
}

func (f *DNSForwarder) serve(pc net.PacketConn) {
	defer f.wg.Done()
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			f.logf("dns: %v", err)
			return
		}
		var p dnsmessage.Parser
		if _, err := p.Start(buf[:n]); err != nil {
			continue // not DNS: dropped
		}
		q := append([]byte(nil), buf[:n]...)
		select {
		case f.sem <- struct{}{}:
		default:
			continue // too many queries in flight: the client retries
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer func() { <-f.sem }()
			f.forward(pc, q, from)
		}()
	}
}

func (f *DNSForwarder) forward(pc net.PacketConn, q []byte, from net.Addr) {
	c, err := net.DialTimeout("udp", f.upstream, 5*time.Second)
	if err != nil {
		f.logf("dns: %v", err)
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(q); err != nil {
		return
	}
	buf := make([]byte, 65535)
	n, err := c.Read(buf)
	if err != nil {
		return
	}
	f.remember(buf[:n])
	_, _ = pc.WriteTo(buf[:n], from)
}

// remember keeps the A and AAAA answers of a response.
func (f *DNSForwarder) remember(resp []byte) {
	var p dnsmessage.Parser
	if _, err := p.Start(resp); err != nil {
		return
	}
	if err := p.SkipAllQuestions(); err != nil {
		return
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		h, err := p.AnswerHeader()
		if err != nil {
			return
		}
		var addr netip.Addr
		switch h.Type {
		case dnsmessage.TypeA:
			r, err := p.AResource()
			if err != nil {
				return
			}
			addr = netip.AddrFrom4(r.A)
		case dnsmessage.TypeAAAA:
			r, err := p.AAAAResource()
			if err != nil {
				return
			}
			addr = netip.AddrFrom16(r.AAAA)
		default:
			if err := p.SkipAnswer(); err != nil {
				return
			}
			continue
		}
		ttl := time.Duration(h.TTL) * time.Second
		if ttl < time.Minute {
			ttl = time.Minute // the client may connect a little after the record expired
		}
		name := canonName(h.Name.String())
		m := f.answers[name]
		if m == nil {
			if len(f.answers) >= dnsMaxNames {
				f.dropOldest(now)
			}
			m = map[netip.Addr]time.Time{}
			f.answers[name] = m
		}
		m[addr] = now.Add(ttl + time.Minute)
	}
}

func (f *DNSForwarder) dropOldest(now time.Time) {
	for name, m := range f.answers {
		for a, exp := range m {
			if now.After(exp) {
				delete(m, a)
			}
		}
		if len(m) == 0 {
			delete(f.answers, name)
		}
	}
	for name := range f.answers { // still full: drop any
		if len(f.answers) < dnsMaxNames {
			break
		}
		delete(f.answers, name)
	}
}

func canonName(n string) string { return strings.ToLower(strings.TrimSuffix(n, ".")) }

// Answered is the addresses the forwarder's answers gave for name that have not expired.
func (f *DNSForwarder) Answered(name string) []netip.Addr {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []netip.Addr
	for a, exp := range f.answers[canonName(name)] {
		if now.Before(exp) {
			out = append(out, a)
		}
	}
	return out
}

// Resolve is an Options.Resolve: the forwarder's answers for name, then a lookup.
func (f *DNSForwarder) Resolve(ctx context.Context, name string) ([]netip.Addr, error) {
	if addrs := f.Answered(name); len(addrs) > 0 {
		return addrs, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", name)
}

// Close stops the forwarder and waits for the queries in flight.
func (f *DNSForwarder) Close() error {
	var errs []error
	for _, pc := range f.pcs {
		errs = append(errs, pc.Close())
	}
	f.wg.Wait()
	return errors.Join(errs...)
}

// SystemResolver is the first nameserver of /etc/resolv.conf as host:53, or "" when
// there is none.
func SystemResolver(resolvConf []byte) string {
	for _, line := range strings.Split(string(resolvConf), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 2 && fields[0] == "nameserver" {
			if ip, err := netip.ParseAddr(fields[1]); err == nil {
				return netip.AddrPortFrom(ip.WithZone(""), 53).String()
			}
		}
	}
	return ""
}

// ListenDNS binds UDP sockets for a DNS forwarder on 127.0.0.1 and, where IPv6 is on,
// ::1, with one port for both (a redirect names one port). Call it in the namespace
// whose DNS is redirected.
func ListenDNS() ([]net.PacketConn, uint16, error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pcs := []net.PacketConn{pc}
	if pc6, err := net.ListenPacket("udp", net.JoinHostPort("::1", strconv.Itoa(port))); err == nil {
		pcs = append(pcs, pc6)
	}
	return pcs, uint16(port), nil
}
