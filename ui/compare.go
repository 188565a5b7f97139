package ui

import (
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"inspector/diff"
	"inspector/engine/session"
)

// ignoreConfig is the diff ignore list of the data directory (DATA_DIR/diff-ignore.json);
// a bad file is said in the status bar and the defaults are used.
func (u *UI) ignoreConfig() *diff.IgnoreConfig {
	if u.deps.DataDir == "" {
		return diff.DefaultIgnore()
	}
	ig, err := diff.LoadIgnore(u.deps.DataDir)
	if err != nil {
		u.notify("Diff ignore list not used: " + err.Error())
		return diff.DefaultIgnore()
	}
	return ig
}

// openCompare is the window's compare hook: the exchange diff of a and b; with b nil it
// asks which session to compare a with.
func (u *UI) openCompare(a, b *session.Session) {
	if a == nil || u.deps.Store == nil {
		return
	}
	if b != nil {
		u.compareIDs(a.ID, b.ID)
		return
	}
	e := widget.NewEntry()
	e.SetPlaceHolder("session number, e.g. 12")
	dialog.ShowForm(fmt.Sprintf("Compare #%d with…", a.ID), "Compare", "Cancel",
		[]*widget.FormItem{widget.NewFormItem("Session #", e)}, func(ok bool) {
			if !ok {
				return
			}
			n, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(e.Text), "#"), 10, 64)
			if err != nil || n == 0 {
				dialog.ShowError(fmt.Errorf("%q is not a session number", e.Text), u.win)
				return
			}
			u.compareIDs(a.ID, session.ID(n))
		}, u.win)
}

func (u *UI) compareIDs(a, b session.ID) {
	if _, err := OpenExchangeDiff(u.app, u.deps.Store.Get, a, b, u.ignoreConfig(), u.deps.DataDir); err != nil {
		dialog.ShowError(fmt.Errorf("compare #%d with #%d: %w", a, b, err), u.win)
		return
	}
	u.notify(fmt.Sprintf("Comparing #%d with #%d", a, b))
}

// compareTwo is Ctrl+D / Edit ▸ Compare selected: the diff of exactly two selected rows.
func (u *UI) compareTwo() {
	ss := u.SelectedSessions()
	if len(ss) != 2 {
		u.notify("Compare selected needs exactly two selected sessions")
		return
	}
	u.openCompare(ss[0], ss[1])
}

// compareRecordingsDialog is Tools ▸ Compare recordings…: two recordings, each a HAR
// file, a data directory, or filter:EXPR / ids:N-M of this capture.
func (u *UI) compareRecordingsDialog() {
	a, b := widget.NewEntry(), widget.NewEntry()
	a.SetPlaceHolder("before.har, /path/to/data-dir, filter:host:api, ids:1-50")
	b.SetPlaceHolder("after.har, ids:51-100, …")
	hint := widget.NewLabel("Each side: a HAR file, a data directory, or filter:EXPR / ids:N-M of this capture.")
	hint.Wrapping = fyne.TextWrapWord
	d := dialog.NewForm("Compare recordings", "Compare", "Cancel",
		[]*widget.FormItem{widget.NewFormItem("A", a), widget.NewFormItem("B", b), widget.NewFormItem("", hint)},
		func(ok bool) {
			if ok {
				u.compareRecordings(a.Text, b.Text)
			}
		}, u.win)
	d.Resize(fyne.NewSize(620, 260))
	d.Show()
}

// compareRecordings opens the recording diff of two specs; a bad spec is an error dialog.
func (u *UI) compareRecordings(specA, specB string) (fyne.Window, error) {
	specA, specB = strings.TrimSpace(specA), strings.TrimSpace(specB)
	var err error
	if specA == "" || specB == "" {
		err = fmt.Errorf("give both recordings")
	}
	var cur diff.Eacher
	if e, ok := u.deps.Store.(diff.Eacher); ok {
		cur = e
	}
	var get func(session.ID) (*session.Session, error)
	if u.deps.Store != nil {
		get = u.deps.Store.Get
	}
	if err == nil && cur == nil && (diff.IsCurrentStore(specA) || diff.IsCurrentStore(specB)) {
		err = fmt.Errorf("filter: and ids: need the open capture's store")
	}
	var w fyne.Window
	if err == nil {
		w, err = OpenRecordingDiff(u.app, specA, specB, cur, get, u.ignoreConfig(), u.deps.DataDir)
	}
	if err != nil {
		dialog.ShowError(fmt.Errorf("compare recordings: %w", err), u.win)
		return nil, err
	}
	return w, nil
}
