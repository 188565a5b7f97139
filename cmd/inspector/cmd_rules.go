package main

import (
	"fmt"
	"os"
	"path/filepath"

	"inspector/engine/hooks/rules"
)

func init() {
	register("rules folders", "list the folders map_local rules may serve files from", runRulesFolders)
	register("rules allow-folder", "let map_local rules serve files under DIR (never the data directory)", runRulesAllowFolder)
	register("rules remove-folder", "stop map_local rules serving files under DIR", runRulesRemoveFolder)
}

// The map-local folders are the user's choice (DATA_DIR/map-local-folders.json): the
// window's Rules form and these commands set them, the control API and MCP cannot. A
// running instance sees a change at the next request a map_local rule answers.

func openRulesDir(name string, args []string, wantDir bool) (*rules.Manager, string, error) {
	fs := newFlagSet(name)
	dataDir := dataDirFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return nil, "", err
	}
	arg := ""
	switch {
	case wantDir && fs.NArg() != 1:
		return nil, "", usagef("%s takes one folder", name)
	case !wantDir && fs.NArg() != 0:
		return nil, "", usagef("%s takes no arguments", name)
	case wantDir:
		abs, err := filepath.Abs(fs.Arg(0))
		if err != nil {
			return nil, "", err
		}
		arg = abs
	}
	dir, err := dataDir()
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	m, err := rules.New(filepath.Join(dir, "rules.json"))
	if err != nil {
		return nil, "", fmt.Errorf("rules: %w", err)
	}
	return m, arg, nil
}

func runRulesFolders(args []string) error {
	m, _, err := openRulesDir("rules folders", args, false)
	if err != nil {
		return err
	}
	for _, d := range m.Folders() {
		fmt.Fprintln(stdout, d)
	}
	return nil
}

func runRulesAllowFolder(args []string) error {
	m, dir, err := openRulesDir("rules allow-folder", args, true)
	if err != nil {
		return err
	}
	if err := m.AllowFolder(dir); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "map_local rules may serve files under %s\n", dir)
	return nil
}

func runRulesRemoveFolder(args []string) error {
	m, dir, err := openRulesDir("rules remove-folder", args, true)
	if err != nil {
		return err
	}
	return m.RemoveFolder(dir)
}
