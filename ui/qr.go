package ui

import (
	"image"
	"net"
	"strings"

	qrcode "github.com/skip2/go-qrcode"

	"inspector/engine"
)

// lanProxyAddrs lists the addresses a phone on the LAN reaches the proxy on: when the
// listener is not loopback-only (--allow-remote), the machine's non-loopback IPv4
// addresses with the listener's port; else none.
func lanProxyAddrs(listen string) []string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.IsLoopback() {
		return nil
	}
	if ip != nil && !ip.IsUnspecified() {
		return []string{listen}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.To4() == nil || n.IP.IsLinkLocalUnicast() {
			continue
		}
		out = append(out, net.JoinHostPort(n.IP.String(), port))
	}
	return out
}

// certPageURL is the page phones get the CA from once their proxy points at Inspector.
const certPageURL = "http://" + engine.CertHost + "/"

// qrImage is a QR code of s, size pixels square.
func qrImage(s string, size int) (image.Image, error) {
	q, err := qrcode.New(s, qrcode.Medium)
	if err != nil {
		return nil, err
	}
	q.DisableBorder = false
	return q.Image(size), nil
}

// phoneSteps is the start page's text for phones on the LAN.
func phoneSteps(addrs []string) string {
	if len(addrs) == 0 {
		return "Phones: start Inspector with --allow-remote --listen 0.0.0.0:8080 to reach it from the LAN."
	}
	return "Phones on this network: set the Wi-Fi proxy to " + strings.Join(addrs, " or ") +
		", then scan the code to open " + certPageURL + " and install the CA."
}
