package rootca

import (
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"
)

// ExpiryWarning is how long before the root's own expiry Inspector warns about it.
const ExpiryWarning = 30 * 24 * time.Hour

// Expiry describes when a root certificate stops being valid, as of a moment.
type Expiry struct {
	NotAfter time.Time `json:"not_after"`
	// DaysLeft is the number of whole days until NotAfter (negative once expired).
	DaysLeft int `json:"days_left"`
	// Warn is set within ExpiryWarning of NotAfter and after it.
	Warn bool `json:"warn"`
	// Expired is set from NotAfter on.
	Expired bool `json:"expired"`
}

// ExpiryOf is cert's expiry as of now.
func ExpiryOf(cert *x509.Certificate, now time.Time) Expiry {
	left := cert.NotAfter.Sub(now)
	return Expiry{
		NotAfter: cert.NotAfter.UTC(),
		DaysLeft: int(math.Floor(left.Hours() / 24)),
		Warn:     left <= ExpiryWarning,
		Expired:  !now.Before(cert.NotAfter),
	}
}

// String is one line for people: the date, the days left, and what to do when it is near.
func (e Expiry) String() string {
	date := e.NotAfter.Format("2006-01-02")
	switch {
	case e.Expired:
		return fmt.Sprintf("warning: the root CA expired on %s; clients no longer trust it: run 'inspector ca renew'", date)
	case e.Warn:
		return fmt.Sprintf("warning: the root CA expires on %s (in %d days): run 'inspector ca renew'", date, e.DaysLeft)
	}
	return fmt.Sprintf("root CA valid until %s (%d days left)", date, e.DaysLeft)
}

// Renewal is a new root CA made next to the one in use, in DIR.new, not yet in use. Commit
// puts it in place; Abort throws it away. Until Commit, DIR is untouched.
type Renewal struct {
	dir, staging string
	// New is the new CA.
	New *CA
}

// BeginRenewal makes a new CA in dir+".new" (replacing what an interrupted renewal left
// there). The CA in dir must exist and load.
func BeginRenewal(dir string) (*Renewal, error) {
	if _, err := os.Stat(filepath.Join(dir, CertFile)); err != nil {
		return nil, fmt.Errorf("no root CA in %s to renew: %w", dir, err)
	}
	if _, err := Load(dir); err != nil {
		return nil, err
	}
	staging := filepath.Clean(dir) + ".new"
	if err := os.RemoveAll(staging); err != nil {
		return nil, fmt.Errorf("remove the leftover %s: %w", staging, err)
	}
	ca, err := create(staging)
	if err != nil {
		_ = os.RemoveAll(staging)
		return nil, err
	}
	return &Renewal{dir: filepath.Clean(dir), staging: staging, New: ca}, nil
}

// Abort deletes the new CA.
func (r *Renewal) Abort() error { return os.RemoveAll(r.staging) }

// Commit moves the current CA to DIR.old-TIMESTAMP (returned) and the new one to DIR. On
// failure the current CA stays in DIR.
func (r *Renewal) Commit() (retired string, err error) {
	retired = r.dir + ".old-" + time.Now().UTC().Format("20060102T150405")
	if err := os.Rename(r.dir, retired); err != nil {
		return "", fmt.Errorf("move the old CA aside: %w", err)
	}
	if err := os.Rename(r.staging, r.dir); err != nil {
		if rerr := os.Rename(retired, r.dir); rerr != nil {
			return "", errors.Join(fmt.Errorf("put the new CA in place: %w", err), fmt.Errorf("put the old CA back from %s: %w", retired, rerr))
		}
		return "", fmt.Errorf("put the new CA in place: %w", err)
	}
	return retired, nil
}
