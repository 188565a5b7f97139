package ui

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"inspector/engine/session"
	"inspector/store"
)

// TestSettingsRetentionPreviewAndApply: Tools ▸ Settings… shows what lower limits would
// remove before anything is removed; Apply saves the limits, applies them live (the kept
// session stays), and the status bar says what went. A bad entry is an error shown in
// place of the preview, with Apply disabled; a failing save applies nothing.
func TestSettingsRetentionPreviewAndApply(t *testing.T) {
	var ss []*session.Session
	for i := range 10 {
		ss = append(ss, mkSession(0, "a.example", "/p"+string(rune('a'+i)), 200, "text/plain", "x"))
	}
	st := openStore(t, ss...)
	if err := st.SetKeep(ss[0].ID, true); err != nil {
		t.Fatal(err)
	}
	var saved []store.Limits
	var saveErr error
	ret := StoreRetention(st, func(l store.Limits) error {
		if saveErr != nil {
			return saveErr
		}
		saved = append(saved, l)
		return nil
	})
	u, w := newTestUI(t, Deps{Store: st, Retention: ret})
	menuItem(t, editMenu(t, w, "Tools"), "Settings").Action()
	p := u.settings
	if p == nil {
		t.Fatal("no settings window")
	}
	if got := p.sessions.Text; got != "1000000" {
		t.Errorf("sessions entry %q, want the limit in force", got)
	}
	if !strings.HasPrefix(p.Preview(), "Nothing will be removed") {
		t.Errorf("preview at the limits in force: %q", p.Preview())
	}

	// A bad entry: said in place, Apply off.
	p.sessions.SetText("")
	test.Type(p.sessions, "lots")
	if !strings.Contains(p.Preview(), "positive whole number") || !p.apply.Disabled() {
		t.Fatalf("bad entry: preview %q, apply disabled %v", p.Preview(), p.apply.Disabled())
	}

	// 4 sessions: 6 go (#2–#7), the kept #1 is passed over.
	p.sessions.SetText("")
	test.Type(p.sessions, "4")
	want := "6 sessions, #" + idText(ss[1].ID) + "–#" + idText(ss[6].ID)
	if got := p.Preview(); !strings.Contains(got, want) || !strings.Contains(got, "kept sessions are never removed") || !strings.Contains(got, "1 kept passed over") {
		t.Fatalf("preview %q, want %q", got, want)
	}
	if p.apply.Text != "Apply and remove 6 sessions" {
		t.Errorf("button %q", p.apply.Text)
	}
	if st.Stats().Sessions != 10 {
		t.Fatal("the preview removed sessions")
	}

	// A save that fails applies nothing.
	saveErr = errors.New("disk full")
	test.Tap(p.apply)
	if st.Stats().Sessions != 10 || st.Limits().MaxSessions != 1_000_000 {
		t.Fatalf("a failed save applied the limits: %d sessions, %+v", st.Stats().Sessions, st.Limits())
	}
	saveErr = nil

	test.Tap(p.apply)
	if len(saved) != 1 || saved[0].MaxSessions != 4 {
		t.Fatalf("saved %+v", saved)
	}
	if st.Limits().MaxSessions != 4 {
		t.Errorf("limits in force %+v", st.Limits())
	}
	var ids []session.ID
	sums, _ := st.List(store.Query{})
	for _, s := range sums {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []session.ID{ss[0].ID, ss[7].ID, ss[8].ID, ss[9].ID}) {
		t.Fatalf("stored after apply %v", ids)
	}
	if n := u.status.Note(); !strings.Contains(n, "6 old sessions removed to stay under 4 sessions") {
		t.Errorf("status note %q", n)
	}
	if !strings.HasPrefix(p.Preview(), "Nothing will be removed") || p.apply.Text != "Apply" {
		t.Errorf("after apply: preview %q, button %q", p.Preview(), p.apply.Text)
	}
	// Size and age are read too.
	p.size.SetText("")
	test.Type(p.size, "1KiB")
	test.Type(p.ag, "30d")
	if l, err := p.limits(); err != nil || l.MaxBytes != 1024 || l.MaxAge.Hours() != 720 {
		t.Errorf("limits %+v %v", l, err)
	}
	p.win.Close()
	if u.settings != nil {
		t.Error("the closed window is still held")
	}
}
