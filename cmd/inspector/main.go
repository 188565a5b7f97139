// Command inspector is Inspector's single binary: the desktop window by default,
// --headless for a window-less instance, and subcommands for scripts (PRODUCT.md).
//
// This file is the composition root's dispatcher: every subcommand lives in its own file
// and registers itself here with register, so features stay in separate files.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"appenv"

	"inspector/engine/session"
)

// command is one subcommand. run gets the arguments after the command's words.
type command struct {
	summary string
	run     func(args []string) error
}

var commands = map[string]command{}

// register adds a subcommand; name may have two words ("ca export").
func register(name, summary string, run func(args []string) error) {
	if _, dup := commands[name]; dup {
		panic("duplicate command " + name)
	}
	commands[name] = command{summary: summary, run: run}
}

// usageError makes main exit with status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exitStatus makes main exit with that status and print nothing (`inspector run` passes
// on its command's).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// stdout and stderr are variables so tests can run commands in-process.
var (
	stdout io.Writer = os.Stdout
	stderr io.Writer = os.Stderr
)

func main() {
	appenv.Restore()
	os.Exit(run(os.Args[1:]))
}

// run dispatches args and returns the exit status: 0 ok, 2 usage, 1 other errors.
func run(args []string) int {
	err := dispatch(args)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(exitStatus)):
		var es exitStatus
		errors.As(err, &es)
		return int(es)
	default:
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(stderr, "inspector: "+ue.msg)
			fmt.Fprintln(stderr, "run 'inspector help' for usage")
			return 2
		}
		fmt.Fprintln(stderr, "inspector: "+oneLine(err.Error()))
		return 1
	}
}

func dispatch(args []string) error {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		if args[0] == "help" {
			printUsage(stdout)
			return nil
		}
		if len(args) > 1 {
			if c, ok := commands[args[0]+" "+args[1]]; ok {
				return c.run(args[2:])
			}
		}
		if c, ok := commands[args[0]]; ok {
			return c.run(args[1:])
		}
		return usagef("unknown command %q", strings.Join(args[:min(2, len(args))], " "))
	}
	return runInstance(args)
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: inspector [--headless] [flags]      run the proxy (window unless --headless)")
	fmt.Fprintln(w, "       inspector COMMAND [flags]           act on the data directory or the running instance")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-18s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nrun 'inspector COMMAND -h' for a command's flags")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// newFlagSet returns a flag set that reports errors as usage errors instead of exiting.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("inspector "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses and turns flag errors into usage errors. It also accepts flags after
// positional arguments (inspector show 12 --json), as users expect.
func parseFlags(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	// Re-parse with only the positionals left so fs.Args() returns them.
	return fs.Parse(append([]string{"--"}, pos...))
}

// parseNoArgs is parseFlags for commands that take flags only.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("%s takes no arguments, got %q", strings.TrimPrefix(fs.Name(), "inspector "), fs.Arg(0))
	}
	return nil
}

// parseNoArgsDir is parseNoArgs followed by resolving the --data-dir flag's directory.
func parseNoArgsDir(fs *flag.FlagSet, args []string, dataDir func() (string, error)) (string, error) {
	if err := parseNoArgs(fs, args); err != nil {
		return "", err
	}
	return dataDir()
}

// parseSessionArg is parseFlags for commands that take exactly one session id ("42" or
// "#42").
func parseSessionArg(fs *flag.FlagSet, args []string) (session.ID, error) {
	if err := parseFlags(fs, args); err != nil {
		return 0, err
	}
	name := strings.TrimPrefix(fs.Name(), "inspector ")
	if fs.NArg() != 1 {
		return 0, usagef("%s takes one session id", name)
	}
	return parseSessionID(name, fs.Arg(0))
}

// parseSessionID reads a session id ("42" or "#42").
func parseSessionID(cmd, s string) (session.ID, error) {
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "#"), 10, 64)
	if err != nil || n == 0 {
		return 0, usagef("%s: %q is not a session id", cmd, s)
	}
	return session.ID(n), nil
}

// dataDirFlag registers --data-dir on fs and returns a getter resolving the default.
func dataDirFlag(fs *flag.FlagSet) func() (string, error) {
	p := fs.String("data-dir", "", "data directory (default $INSPECTOR_DATA_DIR, else the user config dir + /Inspector)")
	return func() (string, error) { return resolveDataDir(*p) }
}

func resolveDataDir(flagValue string) (string, error) {
	if flagValue != "" {
		return filepath.Abs(flagValue)
	}
	if v := os.Getenv("INSPECTOR_DATA_DIR"); v != "" {
		return filepath.Abs(v)
	}
	cfg, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no data directory: %v (set --data-dir or INSPECTOR_DATA_DIR)", err)
	}
	return filepath.Join(cfg, "Inspector"), nil
}
