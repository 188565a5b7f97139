package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"inspector/codegen"
	"inspector/engine/session"
)

func windowTitled(a fyne.App, prefix string) fyne.Window {
	for _, w := range a.Driver().AllWindows() {
		if strings.HasPrefix(w.Title(), prefix) {
			return w
		}
	}
	return nil
}

func editMenu(t *testing.T, w fyne.Window, name string) *fyne.Menu {
	t.Helper()
	for _, m := range w.MainMenu().Items {
		if m.Label == name {
			return m
		}
	}
	t.Fatalf("no %s menu", name)
	return nil
}

func TestCompareFromContextMenuAndCtrlD(t *testing.T) {
	ss := sampleSessions()
	st := openStore(t, ss[0], ss[1], ss[3])
	u, w := newTestUI(t, Deps{Store: st})

	// One row: the context menu asks for the other session.
	u.SelectID(1)
	it := menuItem(t, u.contextMenu(), "Compare with")
	if it.Disabled {
		t.Fatal("Compare with… is disabled with a store")
	}
	it.Action()
	if w.Canvas().Overlays().Top() == nil {
		t.Fatal("no dialog asking which session")
	}
	var entry *widget.Entry
	walkDrawn(w.Canvas().Overlays().Top(), func(o fyne.CanvasObject) {
		if e, ok := o.(*widget.Entry); ok && entry == nil {
			entry = e
		}
	})
	test.Type(entry, "#2")
	var compare *widget.Button
	walkDrawn(w.Canvas().Overlays().Top(), func(o fyne.CanvasObject) {
		if b, ok := o.(*widget.Button); ok && b.Text == "Compare" {
			compare = b
		}
	})
	test.Tap(compare)
	if windowTitled(u.app, "Compare #1 with #2") == nil {
		t.Fatal("no exchange diff window for #1 and #2")
	}

	// Edit ▸ Compare selected (Ctrl+D) needs exactly two rows.
	cs := menuItem(t, editMenu(t, w, "Edit"), "Compare selected")
	if sc, ok := cs.Shortcut.(interface{ ShortcutName() string }); !ok || sc.ShortcutName() != shortcut(fyne.KeyD, fyne.KeyModifierShortcutDefault).ShortcutName() {
		t.Fatalf("Compare selected shortcut = %v", cs.Shortcut)
	}
	u.SelectAll()
	cs.Action()
	if !strings.Contains(u.status.Note(), "exactly two") {
		t.Fatalf("three selected: note %q", u.status.Note())
	}
	u.SelectID(2)
	u.model.Toggle(3) // the selection becomes #2 and #3
	cs.Action()
	if windowTitled(u.app, "Compare #2 with #3") == nil {
		t.Fatalf("Ctrl+D with two rows opened no diff (selected %v)", u.SelectedIDs())
	}
}

func TestCompareRecordingsDialog(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, w := newTestUI(t, Deps{Store: st})
	menuItem(t, editMenu(t, w, "Tools"), "Compare recordings").Action()
	if w.Canvas().Overlays().Top() == nil {
		t.Fatal("no Compare recordings dialog")
	}
	rw, err := u.compareRecordings("ids:1-2", "ids:3-4")
	if err != nil || rw == nil {
		t.Fatalf("compare ids:1-2 with ids:3-4: %v", err)
	}
	// Bad specs are a clear error, and nothing opens.
	before := len(u.app.Driver().AllWindows())
	for _, bad := range [][2]string{{"", "ids:1-2"}, {"ids:2-1", "ids:3-4"}, {"/no/such/file.har", "ids:1-2"}} {
		if _, err := u.compareRecordings(bad[0], bad[1]); err == nil {
			t.Errorf("compare %q with %q: no error", bad[0], bad[1])
		}
	}
	if n := len(u.app.Driver().AllWindows()); n != before {
		t.Fatalf("bad specs opened %d windows", n-before)
	}
}

func TestCopyAsSubmenusActOnTheSelection(t *testing.T) {
	ss := sampleSessions()
	ss[1].Request.Method = "POST"
	ss[1].Request.Body = session.Body{Data: []byte(`{"a":1}`), Size: 7}
	st := openStore(t, ss[0], ss[1])
	u, w := newTestUI(t, Deps{Store: st})
	u.SelectAll()
	ca := exactItem(t, u.contextMenu(), "Copy as")
	if ca.Disabled || len(ca.ChildMenu.Items) != len(codegen.Langs) {
		t.Fatalf("context Copy as: disabled %v, %d languages", ca.Disabled, len(ca.ChildMenu.Items))
	}
	menuItem(t, ca.ChildMenu, codegen.Titles["go"]).Action()
	got := u.app.Clipboard().Content()
	if !strings.Contains(got, "https://a.example/api/users") || !strings.Contains(got, "https://b.example/missing") || !strings.Contains(got, "http.NewRequest") {
		t.Fatalf("Go code for two requests = %q", got)
	}
	if u.status.Note() != "Copied 2 requests as "+codegen.Titles["go"] {
		t.Fatalf("feedback = %q", u.status.Note())
	}
	u.SelectID(2)
	ea := exactItem(t, editMenu(t, w, "Edit"), "Copy as")
	menuItem(t, ea.ChildMenu, codegen.Titles["python"]).Action()
	if got := u.app.Clipboard().Content(); !strings.Contains(got, "requests.Request('POST', 'https://b.example/missing'") {
		t.Fatalf("Edit ▸ Copy as ▸ Python = %q", got)
	}
	if u.status.Note() != "Copied as "+codegen.Titles["python"] {
		t.Fatalf("feedback = %q", u.status.Note())
	}
	u.model.SelectOnly(0)
	if exactItem(t, u.contextMenu(), "Copy as").Disabled == false && u.model.SelectionLen() == 0 {
		t.Fatal("Copy as is enabled with nothing selected")
	}
}

func exactItem(t *testing.T, m *fyne.Menu, label string) *fyne.MenuItem {
	t.Helper()
	for _, it := range m.Items {
		if it.Label == label {
			return it
		}
	}
	t.Fatalf("no menu item %q in %v", label, labels(m))
	return nil
}
