package ui

import (
	"errors"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"inspector/engine/session"
	"inspector/store"
)

// fakeKeys is a TLSKeys whose switch fails for paths under /bad (the real one, over a real
// engine, is TestWindowKeyLogSwitchAndCopyTLSKeys in cmd/inspector).
type fakeKeys struct {
	path string
	keys map[session.ID][2][]string
}

func (f *fakeKeys) SessionKeys(id session.ID) ([]string, []string) {
	k := f.keys[id]
	return k[0], k[1]
}
func (f *fakeKeys) KeyLogFile() string { return f.path }
func (f *fakeKeys) SetKeyLogFile(p string) error {
	if strings.HasPrefix(p, "/bad") {
		return errors.New("TLS key log: open " + p + ": permission denied")
	}
	f.path = p
	return nil
}

// TestKeyLogSwitchAndCopyTLSKeys: Tools ▸ TLS key log… turns the key log on for the file
// entered and off again; an unwritable file is said and the switch stays off. The TLS
// tab's Copy TLS keys copies both legs' lines, each under a comment naming it.
func TestKeyLogSwitchAndCopyTLSKeys(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	sums, _ := st.List(store.Query{})
	id := sums[0].ID
	k := &fakeKeys{keys: map[session.ID][2][]string{id: {{"CLIENT_RANDOM aa 11\n"}, {"CLIENT_TRAFFIC_SECRET_0 bb 22\n"}}}}
	u, w := newTestUI(t, Deps{Store: st, TLSKeys: k})
	menuItem(t, editMenu(t, w, "Tools"), "TLS key log").Action()
	p := u.showKeyLog()
	test.Tap(p.on)
	if k.path != "" || p.on.Checked || !strings.Contains(p.note.Text, "Choose a file") {
		t.Fatalf("on without a file: %q %v %q", k.path, p.on.Checked, p.note.Text)
	}
	test.Type(p.path, "/bad/keys.log")
	test.Tap(p.on)
	if k.path != "" || p.on.Checked || !strings.Contains(p.note.Text, "permission denied") {
		t.Fatalf("unwritable: %q %v %q", k.path, p.on.Checked, p.note.Text)
	}
	p.path.SetText("/tmp/keys.log")
	test.Tap(p.on)
	if k.path != "/tmp/keys.log" || !p.on.Checked || !strings.Contains(u.status.Note(), "TLS key log: /tmp/keys.log") {
		t.Fatalf("on: %q %v %q", k.path, p.on.Checked, u.status.Note())
	}
	test.Tap(p.on)
	if k.path != "" || p.on.Checked {
		t.Fatalf("off: %q %v", k.path, p.on.Checked)
	}

	u.SelectID(id)
	u.CopyTLSKeys()
	got := u.app.Clipboard().Content()
	want := "# session " + idText(id) + ", client leg (Inspector as the server)\nCLIENT_RANDOM aa 11\n# session " + idText(id) + ", upstream leg (Inspector as the client)\nCLIENT_TRAFFIC_SECRET_0 bb 22\n"
	if got != want {
		t.Fatalf("copied %q, want %q", got, want)
	}
	u.SelectID(sums[1].ID)
	u.CopyTLSKeys()
	if !strings.Contains(u.status.Note(), "No TLS keys for #"+idText(sums[1].ID)) {
		t.Errorf("note %q", u.status.Note())
	}
}
