package ui

import (
	"errors"
	"testing"
)

// caOS is an OS integration whose CA state the test sets; the proxy side is unused.
type caOS struct {
	trusted bool
	detail  string
	err     error
}

func (o *caOS) CAStatus() (bool, string, error)    { return o.trusted, o.detail, o.err }
func (o *caOS) InstallCA() error                   { return nil }
func (o *caOS) RemoveCA() error                    { return nil }
func (o *caOS) ProxyStatus() (bool, string, error) { return false, "", nil }
func (o *caOS) EnableProxy(string) error           { return nil }
func (o *caOS) DisableProxy() error                { return nil }

// TestStatusBarCAPhrase: the status bar shows the CA state as one short phrase, never the
// per-store dump that CAStatus's detail is (Windows returns two lines of it).
func TestStatusBarCAPhrase(t *testing.T) {
	o := &caOS{trusted: true, detail: "trusted      Windows CurrentUser Root store\ntrusted      Windows LocalMachine Root store"}
	u, _ := newTestUI(t, Deps{OS: o})
	for _, c := range []struct {
		trusted bool
		err     error
		want    string
	}{
		{true, nil, "CA trusted"},
		{false, nil, "CA not trusted"},
		{false, errors.New("crypt32: access denied\nmore"), "CA state unknown"},
	} {
		o.trusted, o.err = c.trusted, c.err
		u.status.refreshOS()
		if got := u.status.caLabel.Text; got != c.want {
			t.Errorf("trusted=%v err=%v: label %q, want %q", c.trusted, c.err, got, c.want)
		}
	}
}

// TestStatusBarCAExpiryWarning: a root within 30 days of its end says so in the label.
func TestStatusBarCAExpiryWarning(t *testing.T) {
	o := &caOS{trusted: true, detail: "warning: the root CA expires on 2036-12-03 (in 12 days): run 'inspector ca renew'\ntrusted      NSS db"}
	u, _ := newTestUI(t, Deps{OS: o})
	u.status.refreshOS()
	if got := u.status.caLabel.Text; got != "CA trusted · expires soon" {
		t.Fatalf("label %q, want the expiry warning", got)
	}
	o.detail = "root CA valid until 2036-12-03 (3650 days left)\ntrusted      NSS db"
	u.status.refreshOS()
	if got := u.status.caLabel.Text; got != "CA trusted" {
		t.Fatalf("label %q without a warning", got)
	}
}
