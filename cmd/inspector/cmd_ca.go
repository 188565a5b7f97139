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

	"inspector/platform"
	"inspector/rootca"
)

func init() {
	register("ca install", "trust the root CA in the OS and browser stores", runCAInstall)
	register("ca uninstall", "remove the root CA from the OS and browser stores (--delete-key: delete the CA too)", runCAUninstall)
	register("ca status", "say where the root CA is trusted", runCAStatus)
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
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"ca": true, "places": st.Places})
	}
	fmt.Fprintln(stdout, st.String())
	return nil
}
