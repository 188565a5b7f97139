package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"inspector/engine/transparent"
	"inspector/engine/wireguard"
)

// captureModes are the entry points for clients that have no proxy setting
// (docs/capture-without-proxy.md): a transparent listener and WireGuard.
type captureModes struct {
	transparent string // --transparent ADDR
	wireguard   string // --wireguard [HOST]:PORT
}

func captureModeFlags(fs *flag.FlagSet, m *captureModes) {
	fs.StringVar(&m.wireguard, "wireguard", "", "WireGuard mode: accept the peers of DATA_DIR/wireguard on this UDP :PORT (every address) and capture their devices' TCP (inspector wireguard config makes a peer)")
	fs.StringVar(&m.transparent, "transparent", "", "also accept redirected TCP (nftables/iptables REDIRECT, a router rule) on this address: the target is each connection's original destination (Linux)")
}

// startCaptureModes starts the listeners m asks for; call it before the engine serves
// (their addresses are reserved against loops).
func (inst *instance) startCaptureModes(m captureModes, allowRemote bool) error {
	if m.wireguard != "" {
		if err := inst.startWireGuard(m.wireguard); err != nil {
			return err
		}
	}
	if m.transparent == "" {
		return nil
	}
	if !allowRemote && !loopbackAddr(m.transparent) {
		return usagef("--transparent %s: refusing a non-loopback address without --allow-remote", m.transparent)
	}
	ln, err := net.Listen("tcp", m.transparent)
	if err != nil {
		return fmt.Errorf("--transparent: %w", err)
	}
	inst.engine.Reserve(ln.Addr().String())
	srv := transparent.New(inst.engine, ln, transparent.Options{Logf: func(f string, a ...any) {
		fmt.Fprintf(stderr, "inspector: "+f+"\n", a...)
	}})
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	inst.stops = append(inst.stops, func() error {
		srv.Close()
		return <-done
	})
	fmt.Fprintf(stderr, "inspector: transparent listener on %s\n", ln.Addr()) // stdout's first line stays "listening on"
	return nil
}

// startWireGuard starts WireGuard mode on addr (":PORT"; it listens on every address).
func (inst *instance) startWireGuard(addr string) error {
	host, portStr, err := net.SplitHostPort(addr)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil || port < 0 || port > 65535 {
		return usagef("--wireguard %q: give :PORT (UDP; 51820 is WireGuard's usual port)", addr)
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return usagef("--wireguard %s: WireGuard mode listens on every address; give :%d", addr, port)
	}
	if err := inst.wireGuardOn(port); err != nil {
		return fmt.Errorf("--wireguard: %w", err)
	}
	return nil
}

// wireGuardOn starts WireGuard mode on UDP port with the peers of DATA_DIR/wireguard, or
// restarts it on its port so that it knows peers added since (the window's Phone over
// WireGuard… adds them while the instance runs; devices reconnect on their own).
func (inst *instance) wireGuardOn(port int) error {
	inst.wgMu.Lock()
	defer inst.wgMu.Unlock()
	keys, err := wireguard.LoadKeys(filepath.Join(inst.dataDir, "wireguard"))
	if err != nil {
		return err
	}
	if inst.wg != nil {
		port = inst.wg.Port()
		inst.wg.Close()
		inst.wg = nil
	}
	logf := func(f string, a ...any) { fmt.Fprintf(stderr, "inspector: "+f+"\n", a...) }
	rc, _ := os.ReadFile("/etc/resolv.conf")
	ts := transparent.New(inst.engine, nil, transparent.Options{Via: "wireguard", Logf: logf})
	srv, err := wireguard.Start(keys, ts, wireguard.Options{Port: port, DNS: transparent.SystemResolver(rc), Logf: logf})
	if err != nil {
		return err
	}
	inst.wg = srv
	fmt.Fprintf(stderr, "inspector: WireGuard mode on UDP port %d, %s (inspector wireguard config --name NAME prints a device's configuration)\n",
		srv.Port(), plural(uint64(len(keys.Peers)), "peer", "peers"))
	return nil
}

// wireGuardOff ends WireGuard mode (instance shutdown).
func (inst *instance) wireGuardOff() error {
	inst.wgMu.Lock()
	defer inst.wgMu.Unlock()
	if inst.wg == nil {
		return nil
	}
	err := inst.wg.Close()
	inst.wg = nil
	return err
}

// wireGuardPort is WireGuard mode's UDP port, 0 while it is off.
func (inst *instance) wireGuardPort() int {
	inst.wgMu.Lock()
	defer inst.wgMu.Unlock()
	if inst.wg == nil {
		return 0
	}
	return inst.wg.Port()
}

func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
