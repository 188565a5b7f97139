// Package nativedialog shows the operating system's own file dialogs: the XDG desktop
// portal (GTK and KDE desktops both provide it) or zenity / kdialog on Linux, comdlg32 on
// Windows and AppleScript's choose file on macOS. It imports no Fyne and builds with
// CGO_ENABLED=0 for every OS; where no dialog is available, Open returns ErrUnavailable
// and the caller shows its own.
package nativedialog

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
)

var (
	// ErrCancelled is returned when the user closed the dialog without choosing.
	ErrCancelled = errors.New("nativedialog: cancelled")
	// ErrUnavailable is returned when no native dialog could be started here.
	ErrUnavailable = errors.New("nativedialog: no native file dialog available")
)

// Filter is one entry of a dialog's file-type list: a name and glob patterns ("*.har").
type Filter struct {
	Name     string
	Patterns []string
}

// Options says which dialog to show.
type Options struct {
	Title       string
	Folder      bool // choose a folder (ignored when Save is set)
	Save        bool // choose a file name to write
	InitialDir  string
	InitialName string // file name proposed by a save dialog
	Filters     []Filter
	// Parent is the native handle of the window the dialog belongs to (an X11 window id,
	// a Windows HWND); 0 when unknown.
	Parent uintptr
}

// Open shows a native dialog and returns the absolute path chosen. It blocks until the
// user answers; cancelling ctx gives up waiting (where the OS allows the dialog is closed).
func Open(ctx context.Context, o Options) (string, error) {
	if o.Save {
		o.Folder = false
	}
	p, err := open(ctx, o)
	if err != nil {
		return "", err
	}
	if p == "" {
		return "", ErrCancelled
	}
	return p, nil
}

// Available reports whether Open can show a native dialog here (a cheap check: it does
// not show anything).
func Available() bool { return available() }

// initialPath is the directory and name joined, for the tools that take one path.
func initialPath(o Options) string {
	switch {
	case o.InitialDir == "" && o.InitialName == "":
		return ""
	case o.InitialName == "" || o.Folder:
		return withSlash(o.InitialDir)
	case o.InitialDir == "":
		return o.InitialName
	}
	return filepath.Join(o.InitialDir, o.InitialName)
}

// withSlash ends a directory with a separator, which zenity and kdialog read as "start
// inside this folder" rather than "propose this name".
func withSlash(dir string) string {
	if dir == "" || strings.HasSuffix(dir, string(filepath.Separator)) {
		return dir
	}
	return dir + string(filepath.Separator)
}
