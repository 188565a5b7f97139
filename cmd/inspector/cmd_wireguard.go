package main

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	qrcode "github.com/skip2/go-qrcode"

	"inspector/engine/wireguard"
)

func init() {
	register("wireguard config", "print a WireGuard device's client configuration (and QR code) for --wireguard, making the peer the first time", runWireGuardConfig)
}

// runWireGuardConfig is `inspector wireguard config [--name N] [--endpoint HOST:PORT] [--qr]`.
func runWireGuardConfig(args []string) error {
	fs := newFlagSet("wireguard config")
	dataDir := dataDirFlag(fs)
	name := fs.String("name", "device", "the peer's name (its sessions' Process column)")
	endpoint := fs.String("endpoint", "", "HOST:PORT the device reaches this machine's --wireguard at (default: this machine's first non-loopback IPv4 address, port 51820)")
	qr := fs.Bool("qr", false, "also print the configuration as a QR code for the WireGuard app to scan")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	ep := *endpoint
	if ep == "" {
		ip := firstLANAddr()
		if ip == "" {
			return errors.New("wireguard config: this machine has no non-loopback IPv4 address; give --endpoint HOST:PORT")
		}
		ep = net.JoinHostPort(ip, "51820")
	} else if _, _, err := net.SplitHostPort(ep); err != nil {
		return usagef("--endpoint %q is not HOST:PORT", ep)
	}
	wgDir := filepath.Join(dir, "wireguard")
	keys, err := wireguard.LoadKeys(wgDir)
	if err != nil {
		return err
	}
	p, added, err := keys.Peer(strings.TrimSpace(*name))
	if err != nil {
		return usageError{err.Error()}
	}
	if added {
		if err := keys.Save(wgDir); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "inspector: added the peer %q (%s); a running --wireguard instance knows it after a restart\n", p.Name, p.Address)
	}
	cfg := keys.ClientConfig(p, ep)
	fmt.Fprint(stdout, cfg)
	if *qr {
		code, err := qrcode.New(cfg, qrcode.Low)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, "\n"+code.ToSmallString(false))
	}
	return nil
}

// firstLANAddr is this machine's first non-loopback, non-link-local IPv4 address, or "".
func firstLANAddr() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}
