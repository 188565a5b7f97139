package main

import (
	"context"
	"crypto/x509"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"inspector/platform"
	"inspector/platform/linux"
	"inspector/platform/osapi"
	"inspector/rootca"
)

// nssHome makes a home with an empty Chromium NSS database and returns the store over it.
func nssHome(t *testing.T) (*linux.NSSStore, string) {
	t.Helper()
	if _, err := exec.LookPath("certutil"); err != nil {
		t.Skip("certutil not installed (package libnss3-tools)")
	}
	home := t.TempDir()
	db := filepath.Join(home, ".pki", "nssdb")
	os.MkdirAll(db, 0o700)
	if out, err := exec.Command("certutil", "-N", "-d", "sql:"+db, "--empty-password").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return &linux.NSSStore{Runner: osapi.ExecRunner{}, Home: home}, db
}

func nssHas(t *testing.T, db string, cert *x509.Certificate) bool {
	t.Helper()
	list, err := exec.Command("certutil", "-L", "-d", "sql:"+db).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(list), osapi.Nickname(cert))
}

// brokenStore trusts the old root (so a renewal must re-install there) and fails to
// install any other: the failing installer step of a renewal.
type brokenStore struct{ old *x509.Certificate }

func (b *brokenStore) Install(_ context.Context, c *x509.Certificate) error {
	if c.Equal(b.old) {
		return nil
	}
	return errors.New("keychain refused the certificate")
}
func (b *brokenStore) Remove(context.Context, *x509.Certificate) error { return nil }
func (b *brokenStore) Status(_ context.Context, c *x509.Certificate) (osapi.TrustStatus, error) {
	return osapi.TrustStatus{Places: []osapi.TrustPlace{{Store: "broken store", Trusted: c.Equal(b.old)}}}, nil
}

func useTrustStore(t *testing.T, ts platform.TrustStore) {
	old := newTrustStore
	newTrustStore = func(context.Context, string) (platform.TrustStore, error) { return ts, nil }
	t.Cleanup(func() { newTrustStore = old })
}

// TestCARenew: a renewal that fails halfway leaves the old root installed and in use; one
// that works trusts the new root where the old one was, and the old one nowhere.
func TestCARenew(t *testing.T) {
	nss, db := nssHome(t)
	untouched, untouchedDB := nssHome(t) // the old root is not in it: the new one must not go there
	dir := t.TempDir()

	if code, _, _ := runCmd(t, "ca", "renew", "--data-dir", dir); code == 0 {
		t.Fatal("renew without a CA succeeded")
	}
	useTrustStore(t, nss)
	if code, out, errs := runCmd(t, "ca", "install", "--data-dir", dir); code != 0 {
		t.Fatalf("install: %d %q %q", code, out, errs)
	}
	old, err := rootca.Load(filepath.Join(dir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCmd(t, "ca", "status", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "root CA valid until "+old.Cert().NotAfter.UTC().Format("2006-01-02")) {
		t.Fatalf("status shows no expiry: %d %q", code, out)
	}

	// Halfway: the NSS store takes the new root, the next store refuses it.
	useTrustStore(t, osapi.MultiTrust{nss, untouched, &brokenStore{old: old.Cert()}})
	code, out, errs := runCmd(t, "ca", "renew", "--data-dir", dir)
	if code == 0 || !strings.Contains(errs, "old root CA stays installed and in use") || !strings.Contains(errs, "keychain refused") {
		t.Fatalf("failing renew: %d %q %q", code, out, errs)
	}
	now, err := rootca.Load(filepath.Join(dir, "ca"))
	if err != nil || now.Fingerprint() != old.Fingerprint() {
		t.Fatalf("after a failed renewal the CA in use changed (%v)", err)
	}
	if !nssHas(t, db, old.Cert()) {
		t.Fatal("a failed renewal removed the old root from the NSS db")
	}
	list, _ := exec.Command("certutil", "-L", "-d", "sql:"+db).Output()
	if strings.Count(string(list), "Inspector Root CA") != 1 {
		t.Fatalf("a failed renewal left the new root in the NSS db:\n%s", list)
	}
	if _, err := os.Stat(filepath.Join(dir, "ca.new")); !os.IsNotExist(err) {
		t.Fatal("a failed renewal left ca.new")
	}
	// The old root still works for what it is for: a leaf from it verifies in that db's terms.
	if _, err := now.LeafFor("still.example"); err != nil {
		t.Fatal(err)
	}

	useTrustStore(t, osapi.MultiTrust{nss, untouched})
	code, out, errs = runCmd(t, "ca", "renew", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "the old root CA is removed") {
		t.Fatalf("renew: %d %q %q", code, out, errs)
	}
	fresh, err := rootca.Load(filepath.Join(dir, "ca"))
	if err != nil || fresh.Fingerprint() == old.Fingerprint() {
		t.Fatalf("renew kept the old CA (%v)", err)
	}
	if !nssHas(t, db, fresh.Cert()) || nssHas(t, db, old.Cert()) {
		t.Fatal("after renew the NSS db should hold the new root and not the old one")
	}
	if nssHas(t, untouchedDB, fresh.Cert()) {
		t.Fatal("renew installed the new root where the old one was not")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "ca.*")); len(m) != 0 {
		t.Fatalf("renew left %v", m)
	}
}
