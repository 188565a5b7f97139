package main

import (
	"flag"
	"fmt"
	"net"

	"inspector/engine/transparent"
)

// captureModes are the entry points for clients that have no proxy setting
// (docs/capture-without-proxy.md): a transparent listener and WireGuard.
type captureModes struct {
	transparent string // --transparent ADDR
}

func captureModeFlags(fs *flag.FlagSet, m *captureModes) {
	fs.StringVar(&m.transparent, "transparent", "", "also accept redirected TCP (nftables/iptables REDIRECT, a router rule) on this address: the target is each connection's original destination (Linux)")
}

// startCaptureModes starts the listeners m asks for; call it before the engine serves
// (their addresses are reserved against loops).
func (inst *instance) startCaptureModes(m captureModes, allowRemote bool) error {
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
