package ui

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/session"
	"inspector/store"
	"inspector/ui/render"
)

// Scope says which sessions an export covers.
type Scope int

// Export scopes.
const (
	ScopeAll      Scope = iota // every stored session (or every held one without a store)
	ScopeFiltered              // the sessions visible in the list
	ScopeSelected              // the selected sessions
)

var scopeNames = []string{"All sessions", "Filtered (visible)", "Selected"}

// ErrNoHAR is returned by export and import when no HAR codec is wired.
var ErrNoHAR = errors.New("HAR support is not available in this build")

// exportIDs lists the sessions of a scope, oldest first.
func (u *UI) exportIDs(scope Scope) ([]session.ID, error) {
	switch scope {
	case ScopeSelected:
		ids := u.model.SelectedIDs()
		if len(ids) == 0 {
			return nil, errors.New("no session selected")
		}
		return ids, nil
	case ScopeFiltered:
		var ids []session.ID
		if p := u.model.Stored(); p != nil && p.Len() > 0 && u.deps.Store != nil {
			// The matching stored sessions older than the rows held.
			var after session.ID
			for {
				page, err := u.deps.Store.List(store.Query{Filter: p.Filter(), After: after, Before: p.Hi() + 1, Limit: 10_000})
				if err != nil {
					return nil, err
				}
				for _, r := range page {
					ids = append(ids, r.ID)
				}
				if len(page) < 10_000 {
					break
				}
				after = page[len(page)-1].ID
			}
		}
		return append(ids, u.model.VisibleIDs()...), nil
	}
	if u.deps.Store == nil {
		u.model.SetFilter(nil)
		ids := u.model.VisibleIDs()
		u.filter.rematch()
		return ids, nil
	}
	var ids []session.ID
	var after session.ID
	for {
		page, err := u.deps.Store.List(store.Query{After: after, Limit: 10_000})
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			ids = append(ids, r.ID)
		}
		if len(page) < 10_000 {
			break
		}
		after = page[len(page)-1].ID
	}
	return u.withUncommitted(ids), nil
}

// withUncommitted adds to ids (ascending, from the store) the completed sessions the
// window already shows but the store has not committed yet: the engine publishes a session
// to the window and to the store's writer at once, and an export the user starts the
// moment a row turns complete must include it.
func (u *UI) withUncommitted(ids []session.ID) []session.ID {
	have := make(map[session.ID]struct{}, len(ids))
	for _, id := range ids {
		have[id] = struct{}{}
	}
	added := false
	for _, id := range u.rorder {
		if _, held := u.recent[id]; !held {
			continue // deleted from the window
		}
		if _, ok := have[id]; !ok {
			ids = append(ids, id)
			added = true
		}
	}
	if added {
		slices.Sort(ids)
	}
	return ids
}

// ExportHAR writes the sessions of scope as one HAR document to w. The id list is taken on
// the calling (UI) goroutine; the sessions are then loaded and written by ExportIDs, which
// may run on any goroutine.
func (u *UI) ExportHAR(w io.Writer, scope Scope) (int, error) {
	ids, err := u.exportIDs(scope)
	if err != nil {
		return 0, err
	}
	return u.ExportIDs(w, ids, nil)
}

// ExportIDs writes the given sessions as HAR. progress (optional) is called after each
// session from the calling goroutine. Sessions are read from the Store, whose bodies are
// whole (the sessions the engine hands the window may carry only a capped preview of a
// large body): the output is the CLI's `har export` for the same sessions, byte for byte.
// Only sessions the store does not have yet (or every one without a store) come from the
// window's cache. It reads only the Store and the immutable sessions collected before it
// starts, so it is safe off the UI goroutine.
func (u *UI) ExportIDs(w io.Writer, ids []session.ID, progress func(done, total int)) (int, error) {
	return u.exportWith(w, ids, progress, nil)
}

// exportLoader returns the loader of whole sessions ExportIDs uses: the Store's, else the
// window's cache; nil, nil for a session gone meanwhile. Safe off the UI goroutine once
// made (on the UI goroutine).
func (u *UI) exportLoader(ids []session.ID) func(id session.ID) (*session.Session, error) {
	cached := make(map[session.ID]*session.Session, len(ids))
	for _, id := range ids {
		if s, ok := u.recent[id]; ok {
			cached[id] = s
		}
	}
	st := u.deps.Store
	return func(id session.ID) (*session.Session, error) {
		if st == nil {
			return cached[id], nil
		}
		s, err := st.Get(id)
		if errors.Is(err, store.ErrNotFound) {
			return cached[id], nil // not committed yet, or deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("loading session %d: %w", id, err)
		}
		return s, nil
	}
}

// exportWith is ExportIDs with each session passed through transform (nil: as stored).
func (u *UI) exportWith(w io.Writer, ids []session.ID, progress func(done, total int), transform func(*session.Session) *session.Session) (int, error) {
	if u.deps.HAR == nil || u.deps.HAR.NewWriter == nil {
		return 0, ErrNoHAR
	}
	load := u.exportLoader(ids)
	hw, err := u.deps.HAR.NewWriter(w)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, id := range ids {
		s, err := load(id)
		if err != nil {
			hw.Close()
			return n, err
		}
		if s == nil {
			continue
		}
		if transform != nil {
			s = transform(s)
		}
		if err := hw.Add(s); err != nil {
			hw.Close()
			return n, fmt.Errorf("writing session %d: %w", id, err)
		}
		n++
		if progress != nil {
			progress(i+1, len(ids))
		}
	}
	return n, hw.Close()
}

func (u *UI) exportDialog() {
	if u.deps.HAR == nil {
		dialog.ShowError(ErrNoHAR, u.win)
		return
	}
	scope := u.scopeRadio()
	home, _ := os.UserHomeDir()
	u.pathDialogWith("Export HAR", "Export", filepath.Join(home, "inspector.har"), true, scope, func(path string) {
		u.exportScopeTo(path, scopeOf(scope.Selected), u.ExportIDs, "Exported %d sessions with their whole bodies to %s.")
	})
}

// scopeOf is the Scope a radio label names.
func scopeOf(label string) Scope {
	for i, n := range scopeNames {
		if n == label {
			return Scope(i)
		}
	}
	return ScopeAll
}

// exportScopeTo writes the sessions of sc to path with export, in the background.
func (u *UI) exportScopeTo(path string, sc Scope, export func(io.Writer, []session.ID, func(done, total int)) (int, error), done string) {
	ids, err := u.exportIDs(sc)
	if err != nil {
		dialog.ShowError(err, u.win)
		return
	}
	f, err := os.Create(path)
	if err != nil {
		dialog.ShowError(fmt.Errorf("cannot write the HAR file: %w", err), u.win)
		return
	}
	u.runExportWith(f, ids, path, export, done)
}

// runExportWith writes with export in the background with a progress dialog, then says
// done (a format with the count and the path).
func (u *UI) runExportWith(wc io.WriteCloser, ids []session.ID, path string,
	export func(io.Writer, []session.ID, func(done, total int)) (int, error), done string) {
	bar := widget.NewProgressBar()
	prog := dialog.NewCustomWithoutButtons("Exporting HAR…", bar, u.win)
	prog.Show()
	go func() {
		n, err := export(wc, ids, func(i, total int) {
			if i%100 == 0 || i == total {
				fyne.Do(func() { bar.SetValue(float64(i) / float64(max(total, 1))) })
			}
		})
		if cerr := wc.Close(); err == nil {
			err = cerr
		}
		fyne.Do(func() {
			prog.Hide()
			if err != nil {
				dialog.ShowError(fmt.Errorf("export failed after %d sessions: %w", n, err), u.win)
				return
			}
			dialog.ShowInformation("Export HAR", fmt.Sprintf(done, n, path), u.win)
		})
	}()
}

// ImportHAR reads a HAR document and adds its sessions (marked imported, with new ids) to
// the store, or to the list when there is no store. It returns how many were added.
func (u *UI) ImportHAR(r io.Reader) (int, error) {
	if u.deps.HAR == nil || u.deps.HAR.Read == nil {
		return 0, ErrNoHAR
	}
	if n, ok, err := u.importStream(r); ok {
		if err == nil {
			u.Reload()
		}
		return n, err
	}
	ss, err := u.deps.HAR.Read(r)
	if err != nil {
		return 0, fmt.Errorf("import failed: %w", err)
	}
	imported := make([]*session.Session, len(ss))
	for i, s := range ss {
		c := s.Clone()
		c.Flags |= session.FlagImported
		imported[i] = c
	}
	if u.deps.Store != nil {
		if _, err := u.deps.Store.Import(imported); err != nil {
			return 0, fmt.Errorf("import failed: %w", err)
		}
	} else {
		for _, c := range imported {
			c.ID = u.nextLocalID()
			u.remember(c)
		}
	}
	rows := make([]session.Summary, len(imported))
	for i, c := range imported {
		u.remember(c)
		rows[i] = c.Summarize()
	}
	u.changed(u.model.Upsert(rows))
	return len(imported), nil
}

// importStream imports a HAR document into a store that imports streams: one entry in
// memory at a time, all or none. ok is false when the store or codec cannot stream. It
// touches no widget (the import dialog runs it off the UI goroutine).
func (u *UI) importStream(r io.Reader) (n int, ok bool, err error) {
	si, ok := u.deps.Store.(StreamImporter)
	if !ok || u.deps.HAR == nil || u.deps.HAR.Decode == nil {
		return 0, false, nil
	}
	// Large bodies spill beside the data (as `inspector har import` does); the folder goes
	// once the store has written them.
	spill := ""
	if u.deps.DataDir != "" {
		if d, err := os.MkdirTemp(u.deps.DataDir, "import-spill-"); err == nil {
			spill = d
			defer os.RemoveAll(d)
		}
	}
	ids, err := si.ImportStream(func(add func(*session.Session) error) error {
		return u.deps.HAR.Decode(r, spill, func(s *session.Session) error {
			s.Flags |= session.FlagImported
			return add(s)
		})
	})
	if err != nil {
		return 0, true, fmt.Errorf("import failed: %w", err)
	}
	return len(ids), true, nil
}

func (u *UI) nextLocalID() session.ID {
	var maxID session.ID
	for id := range u.recent {
		maxID = max(maxID, id)
	}
	for _, id := range u.model.VisibleIDs() { // only used without a store: nothing is paged
		maxID = max(maxID, id)
	}
	return maxID + 1
}

func (u *UI) importDialog() {
	if u.deps.HAR == nil {
		dialog.ShowError(ErrNoHAR, u.win)
		return
	}
	if u.deps.ReadOnly {
		return
	}
	home, _ := os.UserHomeDir()
	u.pathDialog("Import HAR into this capture", "Import", home+string(filepath.Separator), false, u.importFile)
}

// importFile imports a HAR file into this capture: streamed in the background (a progress
// dialog while it runs) when the store can, and says how it went.
func (u *UI) importFile(path string) {
	f, err := os.Open(path)
	if err != nil {
		dialog.ShowError(err, u.win)
		return
	}
	done := func(n int, err error) {
		if err != nil {
			dialog.ShowError(err, u.win)
			return
		}
		u.notify(fmt.Sprintf("Imported %s from %s", plural(n, "session", "sessions"), filepath.Base(path)))
		dialog.ShowInformation("Import HAR", fmt.Sprintf("Imported %s from %s into this capture (marked imported).", plural(n, "session", "sessions"), path), u.win)
	}
	if _, ok := u.deps.Store.(StreamImporter); !ok || u.deps.HAR.Decode == nil {
		defer f.Close()
		done(u.ImportHAR(f))
		return
	}
	// A large file streams in the background; the window stays responsive.
	prog := dialog.NewCustomWithoutButtons("Importing "+filepath.Base(path)+"…", widget.NewProgressBarInfinite(), u.win)
	prog.Show()
	go func() {
		defer f.Close()
		n, _, err := u.importStream(f)
		u.post(func() {
			prog.Hide()
			if err == nil {
				u.Reload()
			}
			done(n, err)
		})
	}()
}

// DeleteSelection asks, then deletes the selected sessions (Delete in the list).
func (u *UI) DeleteSelection() {
	n := u.model.SelectionLen()
	if n == 0 || u.deps.ReadOnly {
		return
	}
	msg := "Delete the selected session?"
	if n > 1 {
		msg = fmt.Sprintf("Delete the %d selected sessions?", n)
	}
	u.confirmDlg = confirm(u.win, "Delete", msg, "Delete", u.DeleteSelected)
}

// DeleteSelected deletes the selected sessions from the store and the list, and selects
// the row that followed the first of them.
func (u *UI) DeleteSelected() {
	ids := u.model.SelectedIDs()
	if len(ids) == 0 || u.deps.ReadOnly {
		return
	}
	next := -1
	for _, id := range ids {
		if i := u.model.IndexOf(id); i >= 0 && (next < 0 || i < next) {
			next = i
		}
	}
	if u.deps.Store != nil {
		if err := u.deps.Store.Delete(ids...); err != nil {
			dialog.ShowError(fmt.Errorf("delete failed: %w", err), u.win)
			return
		}
	}
	paged := false
	for _, id := range ids {
		delete(u.recent, id)
		if p := u.model.Stored(); p != nil && id <= p.Hi() {
			paged = true
		}
	}
	u.model.Unselect()
	u.changed(u.model.Delete(ids...))
	u.detail.reset()
	if paged {
		u.rebuildPages() // paged rows: their pages shift
	}
	if n := u.model.Len(); n > 0 && next >= 0 {
		if r := u.model.At(min(next, n-1)); r != nil {
			u.SelectID(r.ID)
		}
	}
	u.notify(fmt.Sprintf("Deleted %d session(s)", len(ids)))
}

func (u *UI) confirmClear() {
	if u.deps.ReadOnly {
		return
	}
	u.confirmDlg = confirm(u.win, "Clear sessions", "Delete every stored session?", "Delete all", u.Clear)
}

// Clear deletes every session from the store and the list.
func (u *UI) Clear() {
	if u.deps.Store != nil {
		if err := u.deps.Store.Clear(); err != nil {
			dialog.ShowError(fmt.Errorf("clear failed: %w", err), u.win)
			return
		}
	}
	clear(u.recent)
	u.rorder = nil
	u.model.Unselect()
	u.windowLo, u.windowFull = 0, false
	u.model.SetStored(nil)
	u.storedHosts = nil
	u.nextPagesBuild()
	u.changed(u.model.Replace(nil))
	if u.deps.Engine != nil {
		u.changed(u.model.Upsert(u.deps.Engine.InFlight()))
	}
	u.detail.reset()
}

// copyText puts s on the clipboard and says so in the status bar.
func (u *UI) copyText(what, s string) {
	u.app.Clipboard().SetContent(s)
	u.lastCopy = what
	u.notify("Copied " + what)
}

// CopyURL copies the selected sessions' URLs (one a line) to the clipboard.
func (u *UI) CopyURL() {
	var urls []string
	for _, id := range u.model.SelectedIDs() {
		if r, ok := u.model.Get(id); ok {
			urls = append(urls, r.URL)
		}
	}
	switch len(urls) {
	case 0:
	case 1:
		u.copyText("URL", urls[0])
	default:
		u.copyText(fmt.Sprintf("%d URLs", len(urls)), strings.Join(urls, "\n"))
	}
}

// CopyCurl copies the selected requests as curl commands.
func (u *UI) CopyCurl() {
	ss := u.SelectedSessions()
	if len(ss) == 0 {
		return
	}
	cmds := make([]string, len(ss))
	for i, s := range ss {
		cmds[i] = render.Curl(&s.Request)
	}
	what := "as curl"
	if len(ss) > 1 {
		what = fmt.Sprintf("%d requests as curl", len(ss))
	}
	u.copyText(what, strings.Join(cmds, "\n\n"))
}

// ReplaySelection replays the selected sessions (Tools ▸ Replay, the context menu).
func (u *UI) ReplaySelection() {
	if u.deps.Debug == nil {
		return
	}
	ss := u.SelectedSessions()
	if len(ss) <= 1 {
		u.debug.replaySelected()
		return
	}
	r := NewReplayer(u.deps.Debug, ss)
	r.post = u.debug.post
	u.debug.replayer = r
	dlg := dialog.NewCustom(fmt.Sprintf("Replay %d sessions", len(ss)), "Close", r.Content, u.win)
	dlg.SetOnClosed(r.Cancel)
	dlg.Resize(fyne.NewSize(480, 320))
	dlg.Show()
}

// notify shows a short message in the status bar (copy feedback and the like).
func (u *UI) notify(msg string) { u.status.flash(msg) }

// Shortcuts lists the keyboard shortcuts (shown in the help dialog and the docs).
var Shortcuts = []struct{ Keys, Does string }{
	{"Ctrl+F", "focus the filter (in the body pane: find in the body)"},
	{"Esc", "clear the filter (in the list)"},
	{"Up / Down, Page Up / Down, Home / End", "select in the list (Shift extends)"},
	{"Click, Shift+click, Ctrl+click", "select, extend, add or remove"},
	{"Ctrl+A", "select every session (in the list)"},
	{"Enter", "focus the detail pane"},
	{"Delete", "delete the selection (asks first)"},
	{"Menu key, right-click", "context menu of the selection"},
	{"Ctrl+E", "capture on/off"},
	{"Ctrl+Down / Ctrl+Up", "next / previous session"},
	{"Ctrl+Shift+C", "copy the selected URLs"},
	{"Ctrl+Shift+K", "copy as curl"},
	{"Ctrl+R", "repeat the selection at once (Tools ▸ Replay selected… for counts and parallelism)"},
	{"Ctrl+Delete", "delete the selection"},
	{"Ctrl+Shift+X", "clear all sessions"},
	{"Ctrl+S", "export HAR"},
	{"Ctrl+O", "open a HAR file in a viewer window"},
	{"Ctrl+I", "import a HAR file into this capture"},
	{"Ctrl+G", "follow newest on/off"},
	{"Ctrl+D", "compare the two selected sessions"},
	{"Ctrl+Shift+F", "search everything (URLs, headers, bodies of every session)"},
}

// addShortcuts registers the shortcuts that are not menu items (those fire from the
// main menu wherever the focus is).
func (u *UI) addShortcuts() {
	c := u.win.Canvas()
	c.AddShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyF, Modifier: fyne.KeyModifierShortcutDefault}, func(fyne.Shortcut) { u.find() })
}

// find is Ctrl+F: find in the body when the user is in the detail pane (its body has
// the focus, or the last click was in the detail with a Body tab open), else the filter.
func (u *UI) find() {
	if u.detail.hasFocus() || (u.inDetail && u.detail.bodyShown()) {
		u.detail.openFind()
		return
	}
	u.win.Canvas().Focus(u.filter.entry)
}

// shortcut runs a shortcut typed while the list has the focus (the list takes the
// keyboard, so the canvas' own shortcuts are forwarded from it).
func (u *UI) shortcut(s fyne.Shortcut) {
	if cs, ok := s.(*desktop.CustomShortcut); ok && cs.KeyName == fyne.KeyF && cs.Modifier == fyne.KeyModifierShortcutDefault {
		u.win.Canvas().Focus(u.filter.entry) // typed in the list: the filter
	}
}

// ShowShortcuts opens a dialog listing the shortcuts.
func (u *UI) ShowShortcuts() {
	box := container.NewGridWithColumns(2)
	for _, s := range Shortcuts {
		box.Add(widget.NewLabelWithStyle(s.Keys, fyne.TextAlignLeading, fyne.TextStyle{Monospace: true}))
		box.Add(widget.NewLabel(s.Does))
	}
	dialog.ShowCustom("Keyboard shortcuts", "Close", box, u.win)
}
