package nativedialog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// tool is a dialog program: it prints the chosen path and exits 0, or exits with
// cancelCode when the user cancels.
type tool struct {
	name        string
	args        func(Options) []string
	cancelCode  int
	needDisplay bool
	cancelled   func(stderr string) bool // other signs of a cancel (osascript's -128)
}

var (
	zenity  = tool{name: "zenity", args: zenityArgs, cancelCode: 1, needDisplay: true}
	kdialog = tool{name: "kdialog", args: kdialogArgs, cancelCode: 1, needDisplay: true}
)

// usable reports whether the program is on PATH and has a display to show on.
func (t tool) usable() bool {
	if t.needDisplay && os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return false
	}
	_, err := exec.LookPath(t.name)
	return err == nil
}

// run shows the dialog; ErrUnavailable when the program is missing or does not start.
func (t tool) run(ctx context.Context, o Options) (string, error) {
	if !t.usable() {
		return "", ErrUnavailable
	}
	cmd := exec.CommandContext(ctx, t.name, t.args(o)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrUnavailable, t.name, err)
	}
	err := cmd.Wait()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == t.cancelCode && (t.cancelled == nil || t.cancelled(stderr.String())) {
			return "", ErrCancelled
		}
		return "", fmt.Errorf("%s: %v: %s", t.name, err, strings.TrimSpace(stderr.String()))
	}
	p := strings.TrimRight(stdout.String(), "\r\n")
	if p == "" || strings.Contains(p, "\n") {
		return "", fmt.Errorf("%s printed %q, not one path", t.name, stdout.String())
	}
	return p, nil
}

// zenityArgs: zenity --file-selection [--save] [--directory] --filename=… --file-filter=….
func zenityArgs(o Options) []string {
	args := []string{"--file-selection"}
	if o.Title != "" {
		args = append(args, "--title="+o.Title)
	}
	switch {
	case o.Save:
		args = append(args, "--save") // zenity 4 asks before overwriting; 3 took --confirm-overwrite, which 4 rejects
	case o.Folder:
		args = append(args, "--directory")
	}
	if p := initialPath(o); p != "" {
		args = append(args, "--filename="+p)
	}
	if !o.Folder {
		for _, f := range o.Filters {
			args = append(args, "--file-filter="+f.Name+" | "+strings.Join(f.Patterns, " "))
		}
	}
	return args
}

// kdialogArgs: kdialog --title … --getopenfilename|--getsavefilename|--getexistingdirectory
// start [filter], the filter in KDE's "patterns|name" lines.
func kdialogArgs(o Options) []string {
	var args []string
	if o.Title != "" {
		args = append(args, "--title", o.Title)
	}
	start := initialPath(o)
	if start == "" {
		start = "."
	}
	switch {
	case o.Save:
		args = append(args, "--getsavefilename", start)
	case o.Folder:
		return append(args, "--getexistingdirectory", start)
	default:
		args = append(args, "--getopenfilename", start)
	}
	if len(o.Filters) > 0 {
		lines := make([]string, len(o.Filters))
		for i, f := range o.Filters {
			lines[i] = strings.Join(f.Patterns, " ") + "|" + f.Name
		}
		args = append(args, strings.Join(lines, "\n"))
	}
	return args
}
