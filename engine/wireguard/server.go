// Package wireguard is Inspector's WireGuard mode (--wireguard): a userspace WireGuard
// endpoint (wireguard-go) whose tunnel ends in a gVisor network stack of this process.
// Every TCP flow a peer's device opens, to any address, is accepted by the stack's TCP
// forwarder and served by the transparent path (engine/transparent) with the peer's name
// as the client; DNS to any address goes to a forwarder; other UDP is refused with an
// ICMP port unreachable, so QUIC clients fall back to TCP.
package wireguard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"

	"inspector/engine/transparent"
)

// Options configure a Server.
type Options struct {
	// Port is the UDP port to listen on, on every address (0 picks a free one).
	Port int
	// DNS is the resolver (host:port) the peers' DNS queries go to; "" for none.
	DNS string
	// MTU of the tunnel (1420 when 0).
	MTU int
	// Logf receives the server's notes (nil discards them).
	Logf func(format string, args ...any)
}

// Server is a running WireGuard endpoint.
type Server struct {
	keys  *Keys
	dev   *device.Device
	tun   *netTun
	srv   *transparent.Server
	opts  Options
	port  int
	peers map[netip.Addr]string // tunnel address → peer name

	mu      sync.Mutex
	unknown map[string]bool // endpoints whose unknown key was logged
	wg      sync.WaitGroup
	closed  chan struct{}
}

// Start brings the endpoint up with the peers in keys; each TCP flow goes to srv (a
// transparent.Server made with a nil listener).
func Start(keys *Keys, srv *transparent.Server, opts Options) (*Server, error) {
	if opts.MTU == 0 {
		opts.MTU = 1420
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	s := &Server{keys: keys, srv: srv, opts: opts, peers: map[netip.Addr]string{}, unknown: map[string]bool{}, closed: make(chan struct{})}
	t, err := newNetTun(opts.MTU)
	if err != nil {
		return nil, err
	}
	s.tun = t
	tcpFwd := tcp.NewForwarder(t.stack, 0, 4096, s.acceptTCP)
	t.stack.SetTransportProtocolHandler(tcp.ProtocolNumber, tcpFwd.HandlePacket)
	udpFwd := udp.NewForwarder(t.stack, s.acceptUDP)
	t.stack.SetTransportProtocolHandler(udp.ProtocolNumber, func(id stack.TransportEndpointID, pkt *stack.PacketBuffer) bool {
		if id.LocalPort != 53 || opts.DNS == "" {
			return false // no endpoint: the stack answers ICMP port unreachable
		}
		return udpFwd.HandlePacket(id, pkt)
	})

	logger := &device.Logger{Verbosef: s.verbosef, Errorf: s.errorf}
	s.dev = device.NewDevice(t, conn.NewDefaultBind(), logger)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "private_key=%s\nlisten_port=%d\n", keys.Server.hex(), opts.Port)
	for _, p := range keys.Peers {
		fmt.Fprintf(&cfg, "public_key=%s\nallowed_ip=%s/32\n", p.PublicKey.hex(), p.Address)
		s.peers[p.Address] = p.Name
	}
	if err := s.dev.IpcSet(cfg.String()); err != nil {
		s.dev.Close()
		return nil, fmt.Errorf("wireguard: %w", err)
	}
	if err := s.dev.Up(); err != nil {
		s.dev.Close()
		return nil, fmt.Errorf("wireguard: %w", err)
	}
	port, err := s.listenPort()
	if err != nil {
		s.dev.Close()
		return nil, err
	}
	s.port = port
	return s, nil
}

func (s *Server) listenPort() (int, error) {
	get, err := s.dev.IpcGet()
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(get))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "listen_port="); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("wireguard: no listen port")
}

// Port is the UDP port the endpoint listens on.
func (s *Server) Port() int { return s.port }

// Close takes the endpoint down; flows being served end with the engine.
func (s *Server) Close() error {
	select {
	case <-s.closed:
		return nil
	default:
	}
	close(s.closed)
	s.dev.Close()
	s.wg.Wait()
	return nil
}

// verbosef turns wireguard-go's notes into one line per device with an unknown key, and
// drops the rest (they are per packet).
func (s *Server) verbosef(format string, args ...any) {
	if !strings.HasPrefix(format, "Received invalid initiation message from") || len(args) == 0 {
		return
	}
	from := fmt.Sprint(args[0])
	if host, _, err := net.SplitHostPort(from); err == nil {
		from = host
	}
	s.mu.Lock()
	seen := s.unknown[from]
	if !seen && len(s.unknown) < 1024 {
		s.unknown[from] = true
	}
	s.mu.Unlock()
	if !seen {
		s.opts.Logf("wireguard: a device at %s offered a key that is no peer of this instance; nothing is captured from it (inspector wireguard config --name NAME makes a peer)", from)
	}
}

func (s *Server) errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if strings.Contains(msg, "use of closed") {
		return
	}
	s.opts.Logf("wireguard: %s", msg)
}

func (s *Server) peerName(a netip.Addr) string {
	if n, ok := s.peers[a.Unmap()]; ok {
		return n
	}
	return "wireguard " + a.String()
}

func addrOf(a tcpip.Address) netip.Addr {
	ip, _ := netip.AddrFromSlice(a.AsSlice())
	return ip.Unmap()
}

// acceptTCP completes a peer's TCP handshake to any address and serves the flow.
func (s *Server) acceptTCP(r *tcp.ForwarderRequest) {
	id := r.ID()
	var wq waiter.Queue
	ep, terr := r.CreateEndpoint(&wq)
	if terr != nil {
		r.Complete(true)
		return
	}
	r.Complete(false)
	c := gonet.NewTCPConn(&wq, ep)
	dst := netip.AddrPortFrom(addrOf(id.LocalAddress), id.LocalPort)
	client := s.peerName(addrOf(id.RemoteAddress))
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.srv.ServeConnFrom(c, dst, client)
	}()
}

// acceptUDP relays one DNS query flow of a peer to the resolver.
func (s *Server) acceptUDP(r *udp.ForwarderRequest) {
	var wq waiter.Queue
	ep, terr := r.CreateEndpoint(&wq)
	if terr != nil {
		return
	}
	c := gonet.NewUDPConn(&wq, ep)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer c.Close()
		up, err := net.Dial("udp", s.opts.DNS)
		if err != nil {
			return
		}
		defer up.Close()
		buf := make([]byte, 65535)
		for {
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			_ = up.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := up.Write(buf[:n]); err != nil {
				return
			}
			n, err = up.Read(buf)
			if err != nil {
				return
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
	}()
}

// netTun is the tun.Device wireguard-go writes decrypted packets to: a gVisor stack that
// accepts packets to every address (promiscuous) and answers from every address
// (spoofing), so each flow ends here whatever its destination.
//
// Outbound packets wait in the channel endpoint's queue until wireguard-go reads them, up
// to a batch at a time (BatchSize), copied once, straight into its buffers: a batch is
// encrypted together and leaves in one sendmmsg, coalesced by UDP GSO where the kernel
// has it.
type netTun struct {
	ep     *channel.Endpoint
	stack  *stack.Stack
	events chan tun.Event
	mtu    int
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
}

// tunBatch is the most packets one Read hands wireguard-go (its ideal batch size).
const tunBatch = conn.IdealBatchSize

// tunQueue is the channel endpoint's outbound queue, in packets. Beyond it the stack
// drops a packet (and TCP sends it again), so it is larger than the send window of a
// few fast flows.
const tunQueue = 4096

func newNetTun(mtu int) (*netTun, error) {
	ctx, cancel := context.WithCancel(context.Background())
	t := &netTun{
		ep: channel.New(tunQueue, uint32(mtu), ""),
		stack: stack.New(stack.Options{
			NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol},
			TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol, icmp.NewProtocol4, icmp.NewProtocol6},
			HandleLocal:        false,
		}),
		events: make(chan tun.Event, 4),
		mtu:    mtu,
		ctx:    ctx,
		cancel: cancel,
	}
	sack := tcpip.TCPSACKEnabled(true)
	t.stack.SetTransportProtocolOption(tcp.ProtocolNumber, &sack)
	// gVisor's own segmentation: TCP sends up to 32 KiB at a time through its sender and
	// cuts it into MSS-sized packets only when it writes them, so the sender's work per
	// segment is done once per 32 KiB rather than per 1,380 bytes.
	t.ep.SupportedGSOKind = stack.GVisorGSOSupported
	// Inbound packets were authenticated by WireGuard (Poly1305) on their way in: the
	// stack need not check their IP and TCP checksums again.
	t.ep.LinkEPCapabilities |= stack.CapabilityRXChecksumOffload
	if err := t.stack.CreateNIC(1, t.ep); err != nil {
		return nil, fmt.Errorf("wireguard: netstack: %v", err)
	}
	if err := t.stack.SetPromiscuousMode(1, true); err != nil {
		return nil, fmt.Errorf("wireguard: netstack: %v", err)
	}
	if err := t.stack.SetSpoofing(1, true); err != nil {
		return nil, fmt.Errorf("wireguard: netstack: %v", err)
	}
	t.stack.SetRouteTable([]tcpip.Route{
		{Destination: header.IPv4EmptySubnet, NIC: 1},
		{Destination: header.IPv6EmptySubnet, NIC: 1},
	})
	t.events <- tun.EventUp
	return t, nil
}

func (t *netTun) Name() (string, error)    { return "inspector", nil }
func (t *netTun) File() *os.File           { return nil }
func (t *netTun) Events() <-chan tun.Event { return t.events }
func (t *netTun) MTU() (int, error)        { return t.mtu, nil }
func (t *netTun) BatchSize() int           { return tunBatch }

// Read gives wireguard-go the stack's next outbound packets: it waits for one, then takes
// those already queued, up to len(bufs).
func (t *netTun) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	pkt := t.ep.ReadContext(t.ctx)
	if pkt == nil {
		return 0, os.ErrClosed
	}
	n := 0
	for {
		sizes[n] = copyPacket(bufs[n][offset:], pkt)
		pkt.DecRef()
		n++
		if n == len(bufs) {
			return n, nil
		}
		if pkt = t.ep.Read(); pkt == nil {
			return n, nil
		}
	}
}

// copyPacket copies pkt's bytes (headers and payload) into b and returns how many. It
// walks the views under pkt rather than AsSlices, which allocates per packet.
func copyPacket(b []byte, pkt *stack.PacketBuffer) int {
	vl, skip := pkt.AsViewList()
	n := 0
	for v := vl.Front(); v != nil; v = v.Next() {
		s := v.AsSlice()
		if skip >= len(s) {
			skip -= len(s)
			continue
		}
		n += copy(b[n:], s[skip:])
		skip = 0
	}
	return n
}

// Write injects decrypted packets from a peer into the stack. A packet that is not IP
// is dropped (the flow it belongs to, if any, goes on without it).
func (t *netTun) Write(bufs [][]byte, offset int) (int, error) {
	for _, b := range bufs {
		pkt := b[offset:]
		if len(pkt) == 0 {
			continue
		}
		pkb := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(pkt)})
		switch pkt[0] >> 4 {
		case 4:
			t.ep.InjectInbound(header.IPv4ProtocolNumber, pkb)
		case 6:
			t.ep.InjectInbound(header.IPv6ProtocolNumber, pkb)
		}
		pkb.DecRef()
	}
	return len(bufs), nil
}

func (t *netTun) Close() error {
	t.once.Do(func() {
		t.cancel()
		t.stack.RemoveNIC(1)
		t.stack.Close()
		t.ep.Close()
		close(t.events)
	})
	return nil
}
