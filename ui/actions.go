package ui

import (
	"errors"
	"fmt"
	"io"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/storage"
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
	ScopeSelected              // the selected session
)

var scopeNames = []string{"All sessions", "Filtered (visible)", "Selected"}

// ErrNoHAR is returned by export and import when no HAR codec is wired.
var ErrNoHAR = errors.New("HAR support is not available in this build")

// exportIDs lists the sessions of a scope, oldest first.
func (u *UI) exportIDs(scope Scope) ([]session.ID, error) {
	switch scope {
	case ScopeSelected:
		id, ok := u.model.Selected()
		if !ok {
			return nil, errors.New("no session selected")
		}
		return []session.ID{id}, nil
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
			return ids, nil
		}
		after = page[len(page)-1].ID
	}
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
// session from the calling goroutine. It reads only the Store and the immutable sessions
// collected before it starts, so it is safe off the UI goroutine.
func (u *UI) ExportIDs(w io.Writer, ids []session.ID, progress func(done, total int)) (int, error) {
	if u.deps.HAR == nil || u.deps.HAR.NewWriter == nil {
		return 0, ErrNoHAR
	}
	cached := make(map[session.ID]*session.Session, len(ids))
	for _, id := range ids {
		if s, ok := u.recent[id]; ok {
			cached[id] = s
		}
	}
	hw, err := u.deps.HAR.NewWriter(w)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, id := range ids {
		s := cached[id]
		if s == nil && u.deps.Store != nil {
			if s, err = u.deps.Store.Get(id); errors.Is(err, store.ErrNotFound) {
				continue // deleted meanwhile
			} else if err != nil {
				hw.Close()
				return n, fmt.Errorf("loading session %d: %w", id, err)
			}
		}
		if s == nil {
			continue
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
	scope := widget.NewRadioGroup(scopeNames, nil)
	scope.SetSelected(scopeNames[ScopeFiltered])
	dialog.ShowCustomConfirm("Export HAR", "Choose file…", "Cancel", scope, func(ok bool) {
		if !ok {
			return
		}
		sc := ScopeAll
		for i, n := range scopeNames {
			if n == scope.Selected {
				sc = Scope(i)
			}
		}
		ids, err := u.exportIDs(sc)
		if err != nil {
			dialog.ShowError(err, u.win)
			return
		}
		save := dialog.NewFileSave(func(wc fyne.URIWriteCloser, err error) {
			if err != nil {
				dialog.ShowError(err, u.win)
				return
			}
			if wc == nil {
				return
			}
			u.runExport(wc, ids)
		}, u.win)
		save.SetFileName("inspector.har")
		save.SetFilter(storage.NewExtensionFileFilter([]string{".har"}))
		save.Show()
	}, u.win)
}

// runExport writes in the background with a progress dialog.
func (u *UI) runExport(wc io.WriteCloser, ids []session.ID) {
	bar := widget.NewProgressBar()
	prog := dialog.NewCustomWithoutButtons("Exporting HAR…", bar, u.win)
	prog.Show()
	go func() {
		n, err := u.ExportIDs(wc, ids, func(done, total int) {
			if done%100 == 0 || done == total {
				fyne.Do(func() { bar.SetValue(float64(done) / float64(max(total, 1))) })
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
			dialog.ShowInformation("Export HAR", fmt.Sprintf("Exported %d sessions.", n), u.win)
		})
	}()
}

// ImportHAR reads a HAR document and adds its sessions (marked imported, with new ids) to
// the store, or to the list when there is no store. It returns how many were added.
func (u *UI) ImportHAR(r io.Reader) (int, error) {
	if u.deps.HAR == nil || u.deps.HAR.Read == nil {
		return 0, ErrNoHAR
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
	open := dialog.NewFileOpen(func(rc fyne.URIReadCloser, err error) {
		if err != nil {
			dialog.ShowError(err, u.win)
			return
		}
		if rc == nil {
			return
		}
		defer rc.Close()
		n, err := u.ImportHAR(rc)
		if err != nil {
			dialog.ShowError(err, u.win)
			return
		}
		dialog.ShowInformation("Import HAR", fmt.Sprintf("Imported %d sessions.", n), u.win)
	}, u.win)
	open.SetFilter(storage.NewExtensionFileFilter([]string{".har", ".json"}))
	open.Show()
}

// DeleteSelected deletes the selected session from the store and the list.
func (u *UI) DeleteSelected() {
	id, ok := u.model.Selected()
	if !ok {
		return
	}
	next := u.model.IndexOf(id)
	if u.deps.Store != nil {
		if err := u.deps.Store.Delete(id); err != nil {
			dialog.ShowError(fmt.Errorf("delete failed: %w", err), u.win)
			return
		}
	}
	delete(u.recent, id)
	u.changed(u.model.Delete(id))
	u.list.table.UnselectAll()
	if p := u.model.Stored(); p != nil && id <= p.Hi() {
		u.rebuildPages() // a paged row: its pages shift
		return
	}
	if n := u.model.Len(); n > 0 && next >= 0 {
		if r := u.model.At(min(next, n-1)); r != nil {
			u.SelectID(r.ID)
		}
	}
}

func (u *UI) confirmClear() {
	dialog.ShowConfirm("Clear sessions", "Delete every stored session?", func(ok bool) {
		if ok {
			u.Clear()
		}
	}, u.win)
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
	u.list.table.UnselectAll()
	u.windowLo, u.windowFull = 0, false
	u.model.SetStored(nil)
	u.storedHosts = nil
	u.nextPagesBuild()
	u.changed(u.model.Replace(nil))
	if u.deps.Engine != nil {
		u.changed(u.model.Upsert(u.deps.Engine.InFlight()))
	}
	u.detail.shown = 0
	u.detail.title.SetText("Select a session to see it here.")
	u.detail.clear()
}

// CopyURL copies the selected session's URL to the clipboard.
func (u *UI) CopyURL() {
	if id, ok := u.model.Selected(); ok {
		if r, ok := u.model.Get(id); ok {
			u.app.Clipboard().SetContent(r.URL)
		}
	}
}

// CopyCurl copies the selected request as a curl command.
func (u *UI) CopyCurl() {
	if s := u.selectedSession(); s != nil {
		u.app.Clipboard().SetContent(render.Curl(&s.Request))
	}
}

// Shortcuts lists the keyboard shortcuts (shown in the help dialog and the docs).
var Shortcuts = []struct{ Keys, Does string }{
	{"Ctrl+F", "focus the filter"},
	{"Ctrl+E", "capture on/off"},
	{"Ctrl+Down / Ctrl+Up", "next / previous session"},
	{"Ctrl+Shift+C", "copy the selected URL"},
	{"Ctrl+Delete", "delete the selected session"},
	{"Ctrl+Shift+X", "clear all sessions"},
	{"Ctrl+S", "export HAR"},
	{"Ctrl+O", "import HAR"},
	{"Ctrl+G", "follow newest on/off"},
}

func (u *UI) addShortcuts() {
	c := u.win.Canvas()
	ctrl := fyne.KeyModifierShortcutDefault
	add := func(k fyne.KeyName, m fyne.KeyModifier, f func()) {
		c.AddShortcut(&desktop.CustomShortcut{KeyName: k, Modifier: m}, func(fyne.Shortcut) { f() })
	}
	add(fyne.KeyF, ctrl, func() { c.Focus(u.filter.entry) })
	add(fyne.KeyE, ctrl, u.ToggleCapture)
	add(fyne.KeyDown, ctrl, func() { u.Step(1) })
	add(fyne.KeyUp, ctrl, func() { u.Step(-1) })
	add(fyne.KeyC, ctrl|fyne.KeyModifierShift, u.CopyURL)
	add(fyne.KeyDelete, ctrl, u.DeleteSelected)
	add(fyne.KeyX, ctrl|fyne.KeyModifierShift, u.confirmClear)
	add(fyne.KeyS, ctrl, u.exportDialog)
	add(fyne.KeyO, ctrl, u.importDialog)
	add(fyne.KeyG, ctrl, func() { u.follow.SetChecked(!u.follow.Checked) })
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
