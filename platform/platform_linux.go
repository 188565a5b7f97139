//go:build linux

package platform

import (
	"context"
	"net/netip"
	"os/exec"
	"strconv"

	"inspector/platform/linux"
)

func newTrustStore(o Options) TrustStore { return linux.NewTrustStore(o.Runner, o.Home) }

// proxyBackends returns GNOME when gsettings has the proxy schema and KDE when
// kwriteconfig6 or kwriteconfig5 is installed; both when both are (a KDE session still runs
// GTK apps that read GNOME's settings).
func proxyBackends(ctx context.Context, o Options) []ProxyBackend {
	var out []ProxyBackend
	if g := (&linux.GNOME{Runner: o.Runner}); g.Available(ctx) {
		out = append(out, g)
	}
	for _, v := range []int{6, 5} {
		if _, err := exec.LookPath("kwriteconfig" + strconv.Itoa(v)); err == nil {
			out = append(out, &linux.KDE{Runner: o.Runner, Version: v})
			break
		}
	}
	return out
}

func processOf(local, remote netip.AddrPort) (Process, error) {
	return linux.ProcessOf("/proc", local, remote)
}
