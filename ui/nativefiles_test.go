//go:build linux

package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"inspector/ui/nativedialog/portaltest"
)

// nativeRig is a UI whose session bus is a private dbus-daemon; posts to the UI goroutine
// are queued for the test to run.
type nativeRig struct {
	u     *UI
	w     fyne.Window
	bus   *portaltest.Bus
	posts chan func()
}

func newNativeRig(t *testing.T) *nativeRig {
	useNativeDialogs = true
	t.Cleanup(func() { useNativeDialogs = false })
	bus, err := portaltest.StartBus(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Close() })
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", bus.Addr)
	t.Setenv("PATH", t.TempDir()) // no zenity or kdialog: the portal or nothing
	posts := make(chan func(), 16)
	u, w := newTestUI(t, Deps{Post: func(f func()) { posts <- f }})
	w.Show()
	return &nativeRig{u: u, w: w, bus: bus, posts: posts}
}

func (r *nativeRig) portal(t *testing.T, code uint32, uri string) *portaltest.Portal {
	t.Helper()
	p, err := portaltest.Serve(r.bus.Addr, 4, func(portaltest.Call, <-chan struct{}) (uint32, []string) {
		return code, []string{uri}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// settle waits for the native dialog's goroutine and runs what it posted.
func (r *nativeRig) settle() {
	nativeWG.Wait()
	for {
		select {
		case f := <-r.posts:
			f()
		default:
			return
		}
	}
}

// typedEntry is the path entry of the built-in dialog, nil when it is not shown.
func (r *nativeRig) typedEntry() *widget.Entry {
	top := r.w.Canvas().Overlays().Top()
	if top == nil {
		return nil
	}
	var e *widget.Entry
	walkDrawn(top, func(o fyne.CanvasObject) {
		if x, ok := o.(*widget.Entry); ok && e == nil {
			e = x
		}
	})
	return e
}

func TestPathDialogUsesPortal(t *testing.T) {
	r := newNativeRig(t)
	p := r.portal(t, 0, "file:///tmp/from%20portal.har")
	dir := t.TempDir()
	var got []string
	r.u.pathDialog("Save the full body", "Save", filepath.Join(dir, "body.json"), true, func(p string) { got = append(got, p) })
	r.settle()
	if len(got) != 1 || got[0] != "/tmp/from portal.har" {
		t.Fatalf("done got %q", got)
	}
	if r.typedEntry() != nil {
		t.Error("the built-in dialog was shown as well")
	}
	c := p.Calls()
	if len(c) != 1 || c[0].Method != "SaveFile" || c[0].Title != "Save the full body" ||
		c[0].Options["current_name"].Value() != "body.json" ||
		string(c[0].Options["current_folder"].Value().([]byte)) != dir+"\x00" {
		t.Fatalf("portal calls %+v", c)
	}
	if f := c[0].Options["filters"].Value().([][]any); len(f) != 2 || f[0][0] != "JSON files" {
		t.Errorf("filters %#v", f)
	}
}

func TestPathDialogPortalCancelShowsNothing(t *testing.T) {
	r := newNativeRig(t)
	p := r.portal(t, 1, "")
	called := false
	r.u.pathDialog("Open HAR in a viewer", "Open", t.TempDir()+string(filepath.Separator), false, func(string) { called = true })
	r.settle()
	if called || r.typedEntry() != nil || len(p.Calls()) != 1 {
		t.Fatalf("after a cancel: done %v, built-in dialog %v, %d portal calls", called, r.typedEntry() != nil, len(p.Calls()))
	}
}

func TestPathDialogFallsBackWithoutPortal(t *testing.T) {
	r := newNativeRig(t)
	initial := filepath.Join(t.TempDir(), "ca.pem")
	var got string
	r.u.pathDialog("Save the CA certificate", "Save", initial, true, func(p string) { got = p })
	r.settle()
	e := r.typedEntry()
	if e == nil || e.Text != initial {
		t.Fatalf("no built-in dialog with %q after no portal answered (entry %v)", initial, e)
	}
	e.OnSubmitted(e.Text)
	if got != initial {
		t.Fatalf("done got %q, want %q", got, initial)
	}
}

func TestPathDialogPortalFailureFallsBack(t *testing.T) {
	r := newNativeRig(t)
	r.portal(t, 2, "")
	r.u.pathDialog("Import HAR into this capture", "Import", "~/", false, func(string) {})
	r.settle()
	if r.typedEntry() == nil {
		t.Fatal("a portal error showed no dialog at all")
	}
	if !strings.Contains(r.u.status.note.Text, "system file dialog failed") {
		t.Errorf("status note %q", r.u.status.note.Text)
	}
}

// The export dialog keeps its scope choice, so it is the built-in one; its Browse… asks
// the portal and fills the entry.
func TestExportBrowseUsesPortal(t *testing.T) {
	r := newNativeRig(t)
	r.portal(t, 0, "file:///srv/out.har")
	r.u.pathDialogWith("Export HAR", "Export", filepath.Join(os.TempDir(), "inspector.har"), true, widget.NewLabel("scope"), func(string) {})
	e := r.typedEntry()
	if e == nil {
		t.Fatal("no built-in export dialog")
	}
	var browse *widget.Button
	walkDrawn(r.w.Canvas().Overlays().Top(), func(o fyne.CanvasObject) {
		if b, ok := o.(*widget.Button); ok && b.Text == "Browse…" {
			browse = b
		}
	})
	test.Tap(browse)
	r.settle()
	if e.Text != "/srv/out.har" {
		t.Fatalf("entry %q after Browse…", e.Text)
	}
}

func TestNativeOptions(t *testing.T) {
	dir := t.TempDir()
	o := nativeOptions("T", dir, false)
	if o.InitialDir != dir || o.InitialName != "" || o.Filters != nil {
		t.Errorf("a folder: %+v", o)
	}
	o = nativeOptions("T", filepath.Join(dir, "x.har"), false)
	if o.InitialDir != dir || o.InitialName != "" || len(o.Filters) != 2 || o.Filters[0].Patterns[0] != "*.har" {
		t.Errorf("an open of x.har: %+v", o)
	}
	o = nativeOptions("T", filepath.Join(dir, "x.har"), true)
	if o.InitialName != "x.har" || !o.Save {
		t.Errorf("a save of x.har: %+v", o)
	}
}

// While a native dialog is open a second request is dropped (no second dialog of either
// kind); the first still answers.
func TestPathDialogOneNativeAtATime(t *testing.T) {
	r := newNativeRig(t)
	release := make(chan struct{})
	asked := make(chan struct{}, 2)
	p, err := portaltest.Serve(r.bus.Addr, 4, func(portaltest.Call, <-chan struct{}) (uint32, []string) {
		asked <- struct{}{}
		<-release
		return 0, []string{"file:///tmp/first.har"}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	var got []string
	r.u.pathDialog("Open HAR in a viewer", "Open", "~/", false, func(p string) { got = append(got, "first "+p) })
	<-asked
	r.u.pathDialog("Import HAR into this capture", "Import", "~/", false, func(p string) { got = append(got, "second "+p) })
	if r.typedEntry() != nil {
		t.Fatal("the second request showed the built-in dialog")
	}
	close(release)
	r.settle()
	if len(got) != 1 || got[0] != "first /tmp/first.har" || len(p.Calls()) != 1 {
		t.Fatalf("done calls %q, %d portal calls", got, len(p.Calls()))
	}
}
