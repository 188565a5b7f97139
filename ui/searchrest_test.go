package ui

import (
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"

	"inspector/filter"
)

// TestSearchTheRestFindsPastTheBound: body: misses a needle past the first 256 KiB and
// the result line says so; "Search the rest" reads those bodies whole and the session
// joins the list; a new filter drops the extra match and offers the search again.
func TestSearchTheRestFindsPastTheBound(t *testing.T) {
	big := mkSession(0, "big.example", "/dump", 200, "text/plain",
		strings.Repeat("x", filter.MaxSearchBody+100)+" DEEPNEEDLE")
	near := mkSession(0, "a.example", "/near", 200, "text/plain", "a DEEPNEEDLE near the start")
	other := mkSession(0, "c.example", "/other", 200, "text/plain", strings.Repeat("y", filter.MaxSearchBody+100))
	st := openStore(t, big, near, other)
	posts := make(chan func(), 64)
	u, _ := newTestUI(t, Deps{Store: st, Post: func(f func()) { posts <- f }})
	u.filter.entry.SetText("body:deepneedle")
	u.status.update()
	if u.model.Len() != 1 {
		t.Fatalf("indexed body: shows %d rows, want 1 (the needle past 256 KiB is not indexed)", u.model.Len())
	}
	if !strings.Contains(u.status.label.Text, "first 256 KiB of each body") || !u.status.rest.btn.Visible() {
		t.Fatalf("result line %q, button shown %v", u.status.label.Text, u.status.rest.btn.Visible())
	}
	test.Tap(u.status.rest.btn)
	deadline := time.After(30 * time.Second)
	for u.RestSearchDone() == 0 {
		select {
		case f := <-posts:
			f()
		case <-deadline:
			t.Fatal("the search of the rest did not finish")
		}
	}
	if u.model.Len() != 2 {
		t.Fatalf("after searching the rest %d rows, want 2", u.model.Len())
	}
	if got := u.model.At(0).Host + " " + u.model.At(1).Host; !strings.Contains(got, "big.example") || strings.Contains(got, "c.example") {
		t.Fatalf("rows %q", got)
	}
	if txt := u.status.label.Text; !strings.Contains(txt, "whole bodies searched: 1 session more") || u.status.rest.btn.Visible() {
		t.Fatalf("result line after the search %q (button shown %v)", txt, u.status.rest.btn.Visible())
	}
	// Another filter: the extra match belongs to the old one.
	u.filter.entry.SetText("body:deepneedle status:200")
	u.status.update()
	if u.model.Len() != 1 || !u.status.rest.btn.Visible() {
		t.Fatalf("new filter: %d rows, button shown %v", u.model.Len(), u.status.rest.btn.Visible())
	}
}

// TestSearchWindowClosesFromItsField: the Search everything window's field has the
// keyboard, and Esc and Ctrl+W in it close the window (a focused entry took both).
func TestSearchWindowClosesFromItsField(t *testing.T) {
	u, _ := newTestUI(t, Deps{Store: openStore(t, sampleSessions()...)})
	for _, send := range []func(e *windowEntry){
		func(e *windowEntry) { e.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEscape}) },
		func(e *windowEntry) {
			e.TypedShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyW, Modifier: fyne.KeyModifierShortcutDefault})
		},
	} {
		u.OpenSearch()
		s := u.search
		if s == nil || s.win.Canvas().Focused() != s.entry {
			t.Fatal("the search field does not have the keyboard")
		}
		send(s.entry)
		if u.search != nil {
			t.Fatal("the search window stayed open")
		}
	}
}
