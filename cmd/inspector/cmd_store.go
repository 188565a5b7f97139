package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"inspector/store"
)

func init() {
	register("store compact", "rewrite sessions.db without its free pages (Inspector must not be running)", runStoreCompact)
}

// runStoreCompact reclaims the disk space bbolt keeps after deletions: it writes a
// compacted copy next to the store, checks it, and swaps it in, keeping the old file
// until the swap succeeded.
func runStoreCompact(args []string) error {
	fs := newFlagSet("store compact")
	dataDir := dataDirFlag(fs)
	dir, err := parseNoArgsDir(fs, args, dataDir)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "sessions.db")
	before, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("no session store at %s", path)
	}
	st, err := store.Open(path, store.Options{})
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return fmt.Errorf("%w: stop it before compacting", err)
		}
		return err
	}
	tmp := store.CompactPath(path) // Open removed one left by a killed compact
	err = st.Compact(tmp)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	check, err := store.Open(tmp, store.Options{ReadOnly: true})
	if err == nil {
		err = check.Check()
		check.Close()
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("the compacted copy failed its check, the store is unchanged: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	after, _ := os.Stat(path)
	fmt.Fprintf(stdout, "compacted %s: %d → %d bytes (body index rebuilt)\n", path, before.Size(), after.Size())
	return nil
}
