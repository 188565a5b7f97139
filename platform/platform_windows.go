//go:build windows

package platform

import (
	"context"
	"net/netip"

	"inspector/platform/windows"
)

func newTrustStore(Options) TrustStore { return windows.NewTrustStore() }

// proxyBackends returns the WinINet per-user settings; none when the registry key cannot be
// opened (then Enable reports ErrNoProxyBackend).
func proxyBackends(context.Context, Options) []ProxyBackend {
	b, err := windows.NewProxyBackend()
	if err != nil {
		return nil
	}
	return []ProxyBackend{b}
}

func processOf(local, remote netip.AddrPort) (Process, error) {
	return windows.ProcessOf(local, remote)
}
