//go:build !linux && !windows && !darwin

package platform

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/netip"
	"runtime"
)

type unsupportedTrust struct{}

func (unsupportedTrust) Install(context.Context, *x509.Certificate) error {
	return fmt.Errorf("trusting the CA on %s: %w; export it with 'inspector ca export' and add it by hand", runtime.GOOS, ErrUnsupported)
}

func (unsupportedTrust) Remove(context.Context, *x509.Certificate) error {
	return fmt.Errorf("removing the CA on %s: %w", runtime.GOOS, ErrUnsupported)
}

func (unsupportedTrust) Status(context.Context, *x509.Certificate) (TrustStatus, error) {
	return TrustStatus{}, nil
}

func newTrustStore(Options) TrustStore { return unsupportedTrust{} }

func proxyBackends(context.Context, Options) []ProxyBackend { return nil }

func processOf(netip.AddrPort, netip.AddrPort) (Process, error) {
	return Process{}, fmt.Errorf("process attribution on %s: %w", runtime.GOOS, ErrUnsupported)
}
