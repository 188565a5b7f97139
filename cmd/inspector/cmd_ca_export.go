package main

import (
	"fmt"
	"os"
	"path/filepath"

	"inspector/rootca"
)

func init() {
	register("ca export", "write the root CA certificate (PEM, or --der) to -o FILE or stdout", runCAExport)
}

func runCAExport(args []string) error {
	fs := newFlagSet("ca export")
	dataDir := dataDirFlag(fs)
	der := fs.Bool("der", false, "write DER instead of PEM")
	out := fs.String("o", "", "output file (default stdout)")
	dir, err := parseNoArgsDir(fs, args, dataDir)
	if err != nil {
		return err
	}
	ca, err := rootca.Load(filepath.Join(dir, "ca"))
	if err != nil {
		return err
	}
	data := ca.PEM()
	if *der {
		data = ca.RootDER()
	}
	if *out == "" {
		_, err = stdout.Write(data)
		return err
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		return fmt.Errorf("ca export: %w", err)
	}
	return nil
}
