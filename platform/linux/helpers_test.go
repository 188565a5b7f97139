package linux

import (
	"crypto/x509"
	"errors"
	"testing"

	"inspector/platform/osapi"
)

func mustPool(t *testing.T, pemBundle []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pemBundle) {
		t.Fatal("no certificates in bundle")
	}
	return p
}

func x509VerifyOpts(roots *x509.CertPool) x509.VerifyOptions {
	return x509.VerifyOptions{Roots: roots}
}

func asNeedsRoot(err error, target **osapi.NeedsRootError) bool { return errors.As(err, target) }
