package ui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"fyne.io/fyne/v2/driver"

	"inspector/ui/nativedialog"
)

// useNativeDialogs makes pathDialog try the OS's file dialog (ui/nativedialog) before its
// own; the ui tests turn it off except where they test it.
var useNativeDialogs = true

var (
	nativeBusy atomic.Bool    // one native dialog at a time: a second request is dropped
	nativeWG   sync.WaitGroup // the running native dialog, for tests to wait on
)

// nativePath shows the native file dialog for a path dialog, off the UI goroutine. done
// gets the path on the UI goroutine; a cancel ends it quietly; when no native dialog can
// be shown (or it fails) fallback runs on the UI goroutine instead.
func (u *UI) nativePath(title, initial string, save bool, done func(path string), fallback func()) {
	if !useNativeDialogs {
		fallback()
		return
	}
	if !nativeBusy.CompareAndSwap(false, true) {
		return // a native dialog is already open
	}
	o := nativeOptions(title, initial, save)
	o.Parent = u.nativeParent()
	nativeWG.Add(1)
	go func() {
		defer nativeWG.Done()
		p, err := nativedialog.Open(context.Background(), o)
		nativeBusy.Store(false)
		switch {
		case err == nil:
			u.post(func() { done(p) })
		case errors.Is(err, nativedialog.ErrCancelled):
		default:
			if !errors.Is(err, nativedialog.ErrUnavailable) {
				u.post(func() { u.notify("The system file dialog failed (" + err.Error() + "); using the built-in one.") })
			}
			u.post(fallback)
		}
	}()
}

// nativeOptions turns a path dialog's initial path into the native dialog's folder, name
// and (from the name's extension) file-type filter.
func nativeOptions(title, initial string, save bool) nativedialog.Options {
	o := nativedialog.Options{Title: title, Save: save}
	p := expandPath(initial)
	if strings.HasSuffix(initial, string(filepath.Separator)) || isDir(p) {
		o.InitialDir = p
		return o
	}
	o.InitialDir = filepath.Dir(p)
	if save {
		o.InitialName = filepath.Base(p)
	}
	if ext := filepath.Ext(p); ext != "" && !strings.ContainsAny(ext, "*?[") {
		o.Filters = []nativedialog.Filter{
			{Name: strings.ToUpper(ext[1:]) + " files", Patterns: []string{"*" + ext}},
			{Name: "All files", Patterns: []string{"*"}},
		}
	}
	return o
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// nativeParent is the window's X11 id or HWND, so the dialog opens over it; 0 elsewhere.
func (u *UI) nativeParent() uintptr {
	nw, ok := u.win.(driver.NativeWindow)
	if !ok {
		return 0
	}
	var h uintptr
	nw.RunNative(func(c any) {
		switch c := c.(type) {
		case driver.X11WindowContext:
			h = c.WindowHandle
		case driver.WindowsWindowContext:
			h = c.HWND
		}
	})
	return h
}
