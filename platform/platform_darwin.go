//go:build darwin

package platform

import (
	"context"

	"inspector/platform/darwin"
)

func newTrustStore(o Options) TrustStore { return darwin.NewTrustStore(o.Runner, o.Home) }

func proxyBackends(_ context.Context, o Options) []ProxyBackend {
	return []ProxyBackend{&darwin.NetworkSetup{Runner: o.Runner}}
}
