package ui

import (
	"fmt"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"

	"inspector/engine/session"
)

// Repeat sends the selection again at once: from Tools ▸ Repeat selected (Ctrl+R), the
// toolbar and the context menu, with no dialog; the status bar names the new sessions.
// The dialog stays on Replay… for counts and parallelism.
func TestRepeatInOneClick(t *testing.T) {
	r := newDebugRig(t)
	u, w := r.u, r.u.win
	var orig []*session.Session
	for _, p := range []string{"/echo?a", "/echo?b", "/status?code=404"} {
		<-r.get(p)
		s := r.p.Next(t)
		r.add(s)
		orig = append(orig, s)
	}
	repeated := func(n int) map[session.ID]int {
		t.Helper()
		r.run(func() bool { return u.lastRepeat != nil })
		if top := w.Canvas().Overlays().Top(); top != nil {
			t.Errorf("repeat opened a dialog: %T", top)
		}
		links := map[session.ID]int{}
		for range n {
			links[r.p.Next(t).ReplayOf]++
		}
		u.lastRepeat = nil
		return links
	}

	// Ctrl+R, from the menu, on two selected rows.
	clickRow(t, u, w, 0, 0)
	clickRow(t, u, w, 1, fyne.KeyModifierShift)
	var tools *fyne.Menu
	for _, m := range u.menus.main.Items {
		if m.Label == "Tools" {
			tools = m
		}
	}
	it := menuItem(t, tools, "Repeat selected")
	if sc, ok := it.Shortcut.(*desktop.CustomShortcut); !ok || sc.KeyName != fyne.KeyR || sc.Modifier != fyne.KeyModifierShortcutDefault {
		t.Errorf("Repeat selected shortcut %v, want Ctrl+R", it.Shortcut)
	}
	it.Action()
	if links := repeated(2); links[orig[0].ID] != 1 || links[orig[1].ID] != 1 {
		t.Errorf("Ctrl+R repeated %v", links)
	}
	if note := u.status.Note(); !strings.HasPrefix(note, "Repeated 2 sessions: 2 sent, 0 failed (new #") {
		t.Errorf("status after Ctrl+R: %q", note)
	}

	// The toolbar's Repeat on one session: the note names the new id and status.
	u.SelectID(orig[2].ID)
	var tb *tipAction
	for _, x := range u.tools.bar.Items {
		if a, ok := x.(*tipAction); ok && strings.HasPrefix(a.Tip(), "Repeat selected now") {
			tb = a
		}
	}
	if tb == nil {
		t.Fatal("no Repeat button on the toolbar")
	}
	test.Tap(tb.button)
	links := repeated(1)
	if links[orig[2].ID] != 1 {
		t.Errorf("toolbar repeated %v", links)
	}
	if note := u.status.Note(); !strings.HasPrefix(note, "Repeated #"+idText(orig[2].ID)+" → #") || !strings.HasSuffix(note, "(404)") {
		t.Errorf("status after the toolbar's repeat: %q", note)
	}

	// The context menu has Repeat and, for counts, Replay… (the dialog).
	u.SelectID(orig[0].ID)
	cm := u.contextMenu()
	menuItem(t, cm, "Repeat").Action()
	if links := repeated(1); links[orig[0].ID] != 1 {
		t.Errorf("context menu repeated %v", links)
	}
	menuItem(t, cm, "Replay…").Action()
	if w.Canvas().Overlays().Top() == nil || u.debug.replayer == nil {
		t.Error("Replay… opened no dialog")
	}

	// Nothing selected: a note, nothing sent.
	u.model.Toggle(orig[0].ID)
	if n := len(u.SelectedIDs()); n != 0 {
		t.Fatalf("%d still selected", n)
	}
	u.RepeatSelection()
	if u.status.Note() != "Select one or more sessions to repeat." {
		t.Errorf("empty selection: %q", u.status.Note())
	}
}

func idText(id session.ID) string { return fmt.Sprint(id) }
