//go:build darwin

package platform

import (
	"context"
	"inspector/platform/osapi"
	"net/netip"
	"time"

	"inspector/platform/darwin"
)

func newTrustStore(o Options) TrustStore { return darwin.NewTrustStore(o.Runner, o.Home) }

func proxyBackends(_ context.Context, o Options) []ProxyBackend {
	return []ProxyBackend{&darwin.NetworkSetup{Runner: o.Runner}}
}

func processOf(local, remote netip.AddrPort) (Process, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return darwin.ProcessOf(ctx, osapi.ExecRunner{}, local, remote)
}
