package osapi

import (
	"context"
	"crypto/x509"
	"errors"
)

// MultiTrust is a TrustStore over several stores: Install and Remove try every store and
// join the errors, so one failing store (say, the system store without root) does not stop
// the others; Status concatenates the places.
type MultiTrust []TrustStore

// Install implements TrustStore.
func (m MultiTrust) Install(ctx context.Context, cert *x509.Certificate) error {
	if err := CheckCert(cert); err != nil {
		return err
	}
	var errs []error
	for _, s := range m {
		errs = append(errs, s.Install(ctx, cert))
	}
	return errors.Join(errs...)
}

// Remove implements TrustStore.
func (m MultiTrust) Remove(ctx context.Context, cert *x509.Certificate) error {
	if err := CheckCert(cert); err != nil {
		return err
	}
	var errs []error
	for _, s := range m {
		errs = append(errs, s.Remove(ctx, cert))
	}
	return errors.Join(errs...)
}

// Status implements TrustStore.
func (m MultiTrust) Status(ctx context.Context, cert *x509.Certificate) (TrustStatus, error) {
	if err := CheckCert(cert); err != nil {
		return TrustStatus{}, err
	}
	var all TrustStatus
	var errs []error
	for _, s := range m {
		st, err := s.Status(ctx, cert)
		all.Places = append(all.Places, st.Places...)
		errs = append(errs, err)
	}
	return all, errors.Join(errs...)
}
