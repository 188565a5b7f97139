package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"inspector/platform"
	"inspector/platform/osapi"
	"inspector/rootca"
)

func init() {
	register("ca install", "trust the root CA in the OS and browser stores", runCAInstall)
	register("ca uninstall", "remove the root CA from the OS and browser stores (--delete-key: delete the CA too)", runCAUninstall)
	register("ca status", "say where the root CA is trusted and when it expires", runCAStatus)
	register("ca renew", "make a new root CA, trust it wherever the old one is trusted, then remove the old one", runCARenew)
}

// newTrustStore returns the OS trust store. A variable so tests can substitute stores.
var newTrustStore = func(ctx context.Context, dataDir string) (platform.TrustStore, error) {
	ts, _, err := platform.New(ctx, platform.Options{DataDir: dataDir})
	return ts, err
}

func caDir(dataDir string) string { return filepath.Join(dataDir, "ca") }

// existingCA loads the CA of dataDir without creating one; nil when there is none yet.
func existingCA(dataDir string) (*x509.Certificate, error) {
	if _, err := os.Stat(filepath.Join(caDir(dataDir), rootca.CertFile)); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	ca, err := rootca.Load(caDir(dataDir))
	if err != nil {
		return nil, err
	}
	return ca.Cert(), nil
}

func caFlags(name string, args []string, extra func(*flag.FlagSet)) (string, error) {
	fs := newFlagSet(name)
	dataDir := dataDirFlag(fs)
	if extra != nil {
		extra(fs)
	}
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		return "", usagef("%s takes no arguments, got %q", name, fs.Arg(0))
	}
	return dataDir()
}

// explainRoot adds the exact commands for stores that need administrator rights.
func explainRoot(err error) error {
	var nr *platform.NeedsRootError
	if errors.As(err, &nr) {
		fmt.Fprintf(stderr, "%s needs administrator rights; run:\n  %s\n", nr.Store, nr.Command)
	}
	return err
}

func runCAInstall(args []string) error {
	dir, err := caFlags("ca install", args, nil)
	if err != nil {
		return err
	}
	ca, err := rootca.Load(caDir(dir)) // creates the CA on first use
	if err != nil {
		return err
	}
	ctx := context.Background()
	ts, err := newTrustStore(ctx, dir)
	if err != nil {
		return err
	}
	ierr := ts.Install(ctx, ca.Cert())
	st, serr := ts.Status(ctx, ca.Cert())
	fmt.Fprintln(stdout, st.String())
	if ierr != nil {
		return explainRoot(ierr)
	}
	if serr != nil {
		return serr
	}
	fmt.Fprintln(stdout, "restart running browsers so they pick up the new root")
	return nil
}

func runCAUninstall(args []string) error {
	var deleteKey *bool
	dir, err := caFlags("ca uninstall", args, func(fs *flag.FlagSet) {
		deleteKey = fs.Bool("delete-key", false, "also delete the CA certificate and key from the data directory (a new CA is made on next start)")
	})
	if err != nil {
		return err
	}
	cert, err := existingCA(dir)
	if err != nil {
		return err
	}
	if cert == nil {
		fmt.Fprintf(stdout, "no root CA in %s; nothing to remove\n", caDir(dir))
		return nil
	}
	ctx := context.Background()
	ts, err := newTrustStore(ctx, dir)
	if err != nil {
		return err
	}
	if err := ts.Remove(ctx, cert); err != nil {
		// Keep the key: it is needed to find the certificate again for another try.
		return explainRoot(err)
	}
	st, _ := ts.Status(ctx, cert)
	fmt.Fprintln(stdout, st.String())
	if *deleteKey {
		if err := rootca.Remove(caDir(dir)); err != nil {
			return fmt.Errorf("deleting the CA: %w", err)
		}
		fmt.Fprintf(stdout, "deleted the root CA and its key from %s\n", caDir(dir))
		return nil
	}
	fmt.Fprintf(stdout, "the CA key stays in %s; run 'inspector ca uninstall --delete-key' to delete it too\n", caDir(dir))
	return nil
}

func runCAStatus(args []string) error {
	var asJSON *bool
	dir, err := caFlags("ca status", args, func(fs *flag.FlagSet) {
		asJSON = fs.Bool("json", false, "print the status as JSON")
	})
	if err != nil {
		return err
	}
	cert, err := existingCA(dir)
	if err != nil {
		return err
	}
	if cert == nil {
		if *asJSON {
			return json.NewEncoder(stdout).Encode(map[string]any{"ca": false, "places": []any{}})
		}
		fmt.Fprintf(stdout, "no root CA yet in %s (made on first start or by 'inspector ca install')\n", caDir(dir))
		return nil
	}
	ctx := context.Background()
	ts, err := newTrustStore(ctx, dir)
	if err != nil {
		return err
	}
	st, err := ts.Status(ctx, cert)
	if err != nil {
		return err
	}
	exp := rootca.ExpiryOf(cert, time.Now())
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"ca": true, "places": st.Places, "expiry": exp})
	}
	fmt.Fprintln(stdout, exp.String())
	fmt.Fprintln(stdout, st.String())
	return nil
}

// storesOf splits a TrustStore into the stores it manages, so that a renewal re-installs
// the new root only where the old one is trusted.
func storesOf(ts platform.TrustStore) []platform.TrustStore {
	if m, ok := ts.(osapi.MultiTrust); ok {
		var out []platform.TrustStore
		for _, s := range m {
			out = append(out, storesOf(s)...)
		}
		return out
	}
	return []platform.TrustStore{ts}
}

// runCARenew replaces the root CA. Order: the new root is made aside and installed in
// every store that trusts the old one; only when all of that worked does it take the old
// one's place, and the old one is removed from the stores. A failure before the swap takes
// back what was installed and leaves the old root in place, installed and in use.
func runCARenew(args []string) error {
	dir, err := caFlags("ca renew", args, nil)
	if err != nil {
		return err
	}
	old, err := existingCA(dir)
	if err != nil {
		return err
	}
	if old == nil {
		return fmt.Errorf("no root CA in %s to renew (one is made on first start or by 'inspector ca install')", caDir(dir))
	}
	ctx := context.Background()
	ts, err := newTrustStore(ctx, dir)
	if err != nil {
		return err
	}
	var where []platform.TrustStore
	for _, s := range storesOf(ts) {
		if st, err := s.Status(ctx, old); err == nil && st.Trusted() {
			where = append(where, s)
		} else if err != nil {
			fmt.Fprintf(stderr, "inspector: warning: %v\n", oneLine(err.Error()))
		}
	}
	r, err := rootca.BeginRenewal(caDir(dir))
	if err != nil {
		return err
	}
	fresh := r.New.Cert()
	undo := func(done []platform.TrustStore, cause error) error {
		errs := []error{fmt.Errorf("renewal stopped, the old root CA stays installed and in use: %w", cause)}
		for _, s := range done {
			if err := s.Remove(ctx, fresh); err != nil {
				errs = append(errs, fmt.Errorf("taking the new root back out: %w", err))
			}
		}
		if err := r.Abort(); err != nil {
			errs = append(errs, err)
		}
		return explainRoot(errors.Join(errs...))
	}
	var done []platform.TrustStore
	for _, s := range where {
		done = append(done, s) // Install may have done part of its work before failing
		if err := s.Install(ctx, fresh); err != nil {
			return undo(done, err)
		}
	}
	retired, err := r.Commit()
	if err != nil {
		return undo(done, err)
	}
	fmt.Fprintf(stdout, "new root CA %s in %s\n", r.New.Fingerprint()[:16], caDir(dir))
	fmt.Fprintln(stdout, rootca.ExpiryOf(fresh, time.Now()).String())
	var errs []error
	for _, s := range where {
		if err := s.Remove(ctx, old); err != nil {
			errs = append(errs, explainRoot(fmt.Errorf("removing the old root CA: %w", err)))
		}
	}
	if st, err := ts.Status(ctx, fresh); err == nil {
		fmt.Fprintln(stdout, st.String())
	}
	if len(errs) > 0 {
		fmt.Fprintf(stdout, "the old root CA is kept in %s until it is removed everywhere\n", retired)
		return errors.Join(errs...)
	}
	if err := os.RemoveAll(retired); err != nil {
		return fmt.Errorf("deleting the old root CA: %w", err)
	}
	fmt.Fprintln(stdout, "the old root CA is removed; restart running Inspector instances and browsers so they use the new one")
	return nil
}
