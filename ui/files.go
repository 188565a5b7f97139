package ui

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/session"
	"inspector/ui/render"
)

// expandPath turns a typed path into an absolute one ("~/x" is under the home folder).
func expandPath(p string) string {
	p = strings.TrimSpace(p)
	if p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, `~\`) {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// pathDialog asks for a file path with the system's file dialog where there is one (see
// nativePath), else typed (or pasted) into an entry or picked with Fyne's file dialog
// through "Browse…".
func (u *UI) pathDialog(title, confirm, initial string, save bool, done func(path string)) {
	u.pathDialogWith(title, confirm, u.inLastFolder(initial), save, nil, func(p string) {
		u.prefs.SetString(prefLastFolder, filepath.Dir(p))
		done(p)
	})
}

// prefLastFolder is the folder of the last file chosen in a path dialog.
const prefLastFolder = "files.folder"

// inLastFolder moves a path the caller proposes in the home folder (its default) to the
// folder used last, while that folder exists: file dialogs start where the user was.
func (u *UI) inLastFolder(initial string) string {
	last := u.prefs.String(prefLastFolder)
	home, err := os.UserHomeDir()
	if last == "" || err != nil {
		return initial
	}
	if fi, err := os.Stat(last); err != nil || !fi.IsDir() {
		return initial
	}
	switch {
	case filepath.Clean(initial) == filepath.Clean(home):
		return last + string(filepath.Separator)
	case filepath.Dir(initial) == filepath.Clean(home):
		return filepath.Join(last, filepath.Base(initial))
	}
	return initial
}

// pathDialogWith is pathDialog with extra content (the export scope) above the path: that
// dialog is always shown, its "Browse…" trying the system's dialog first.
func (u *UI) pathDialogWith(title, confirm, initial string, save bool, extra fyne.CanvasObject, done func(path string)) {
	if extra == nil {
		u.nativePath(title, initial, save, done, func() { u.typedPathDialog(title, confirm, initial, save, nil, done) })
		return
	}
	u.typedPathDialog(title, confirm, initial, save, extra, done)
}

// typedPathDialog is the built-in path dialog: an entry, "Browse…" and the confirm button.
func (u *UI) typedPathDialog(title, confirm, initial string, save bool, extra fyne.CanvasObject, done func(path string)) {
	entry := widget.NewEntry()
	entry.SetText(initial)
	errLabel := widget.NewLabel("")
	errLabel.Importance = widget.DangerImportance
	errLabel.Hide()
	var fyneBrowse func()
	browse := widget.NewButtonWithIcon("Browse…", theme.FolderOpenIcon(), func() {
		u.nativePath(title, entry.Text, save, entry.SetText, fyneBrowse)
	})
	fyneBrowse = func() {
		start := expandPath(entry.Text)
		if fi, err := os.Stat(start); err != nil || !fi.IsDir() {
			start = filepath.Dir(start)
		}
		var lister fyne.ListableURI
		if l, err := storage.ListerForURI(storage.NewFileURI(start)); err == nil {
			lister = l
		}
		if save {
			d := dialog.NewFileSave(func(wc fyne.URIWriteCloser, err error) {
				if err == nil && wc != nil {
					entry.SetText(wc.URI().Path())
					wc.Close()
				}
			}, u.win)
			d.SetFileName(filepath.Base(expandPath(entry.Text)))
			d.SetLocation(lister)
			d.Show()
			return
		}
		d := dialog.NewFileOpen(func(rc fyne.URIReadCloser, err error) {
			if err == nil && rc != nil {
				entry.SetText(rc.URI().Path())
				rc.Close()
			}
		}, u.win)
		d.SetLocation(lister)
		d.Show()
	}
	body := container.NewVBox()
	if extra != nil {
		body.Add(extra)
	}
	body.Add(widget.NewLabel("File (type or paste a path; ~ is your home folder):"))
	body.Add(container.NewBorder(nil, nil, nil, browse, entry))
	body.Add(errLabel)
	var dlg dialog.Dialog
	submit := func() {
		p := expandPath(entry.Text)
		fi, err := os.Stat(p)
		switch {
		case !save && err != nil:
			errLabel.SetText("Cannot open: " + err.Error())
			errLabel.Show()
			return
		case fi != nil && fi.IsDir():
			errLabel.SetText(p + " is a folder: add a file name.")
			errLabel.Show()
			return
		case save:
			if _, err := os.Stat(filepath.Dir(p)); err != nil {
				errLabel.SetText("No such folder: " + filepath.Dir(p))
				errLabel.Show()
				return
			}
		}
		dlg.Hide()
		done(p)
	}
	entry.OnSubmitted = func(string) { submit() }
	ok := widget.NewButtonWithIcon(confirm, theme.ConfirmIcon(), submit)
	ok.Importance = widget.HighImportance
	cancel := widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), func() { dlg.Hide() })
	dlg = dialog.NewCustomWithoutButtons(title, container.NewBorder(nil, container.NewHBox(cancel, ok), nil, nil, body), u.win)
	dlg.Resize(fyne.NewSize(560, 0))
	dlg.Show()
	u.win.Canvas().Focus(entry)
}

// openHARDialog asks for a HAR file and opens it in a read-only viewer window.
func (u *UI) openHARDialog() {
	home, _ := os.UserHomeDir()
	u.pathDialog("Open HAR in a viewer", "Open", home+string(filepath.Separator), false, func(p string) {
		if err := u.OpenHARViewer(p); err != nil {
			dialog.ShowError(err, u.win)
		}
	})
}

// OpenHARViewer reads a HAR file and opens its sessions in a read-only viewer window; the
// live capture is not touched.
func (u *UI) OpenHARViewer(path string) error {
	if u.deps.HAR == nil || u.deps.HAR.Read == nil {
		return ErrNoHAR
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	ss, err := u.deps.HAR.Read(f)
	if err != nil {
		return fmt.Errorf("%s is not a readable HAR file: %w", filepath.Base(path), err)
	}
	d := Deps{HAR: u.deps.HAR, ReadOnly: true, Post: u.deps.Post}
	title := fmt.Sprintf("Inspector — %s (read-only, %d sessions)", filepath.Base(path), len(ss))
	u.openViewer(title, d, func(v *UI) { v.ShowSessions(ss) })
	return nil
}

// openViewer opens a read-only window of this app on d; fill runs on it before it shows.
// The viewer reads this window's preferences, so it has the same theme and density
// (with the app's own preferences it applied their theme, "system", to every window).
func (u *UI) openViewer(title string, d Deps, fill func(v *UI)) {
	if d.Prefs == nil {
		d.Prefs = u.prefs
	}
	w := u.app.NewWindow(title)
	v := New(u.app, w, d)
	if fill != nil {
		fill(v)
	}
	u.viewers = append(u.viewers, v)
	w.Resize(fyne.NewSize(1100, 720))
	closeKeys(w, false) // Esc in a viewer clears its filter, as in the main window
	w.Show()
}

// ShowSessions puts sessions into a window without a store (a HAR viewer), numbering
// them 1… in file order.
func (u *UI) ShowSessions(ss []*session.Session) {
	rows := make([]session.Summary, len(ss))
	for i, s := range ss {
		c := s.Clone()
		c.ID = session.ID(i + 1)
		u.remember(c)
		rows[i] = c.Summarize()
	}
	u.changed(u.model.Upsert(rows))
}

// openStoreDialog asks for another data directory (or its sessions.db) and opens it
// read-only in a viewer window.
func (u *UI) openStoreDialog() {
	if u.deps.OpenStore == nil {
		return
	}
	home, _ := os.UserHomeDir()
	u.pathDialog("Open a store (data directory or sessions.db) in a viewer", "Open", home+string(filepath.Separator), false, func(p string) {
		if err := u.OpenStoreViewer(p); err != nil {
			dialog.ShowError(err, u.win)
		}
	})
}

// OpenStoreViewer opens another data directory's store read-only in a viewer window.
func (u *UI) OpenStoreViewer(path string) error {
	if u.deps.OpenStore == nil {
		return fmt.Errorf("opening a store is not available here")
	}
	if filepath.Base(path) == "sessions.db" {
		path = filepath.Dir(path)
	}
	st, closeFn, err := u.deps.OpenStore(path)
	if err != nil {
		return fmt.Errorf("cannot open the store in %s: %w", path, err)
	}
	d := Deps{Store: st, HAR: u.deps.HAR, ReadOnly: true, Post: u.deps.Post}
	u.openViewer("Inspector — "+path+" (read-only)", d, func(v *UI) {
		v.win.SetOnClosed(func() { closeFn() })
	})
	return nil
}

// dropped opens HAR files dropped on the window in viewer windows.
func (u *UI) dropped(_ fyne.Position, uris []fyne.URI) {
	for _, uri := range uris {
		if uri.Scheme() != "file" {
			continue
		}
		if err := u.OpenHARViewer(uri.Path()); err != nil {
			dialog.ShowError(err, u.win)
		}
	}
}

// decodeForSave undoes the content encoding of a whole body for saving it to a file.
func decodeForSave(h http.Header, b session.Body) ([]byte, string, bool, error) {
	out, enc, cut, err := render.Decode(h, b.Data)
	if err != nil {
		return b.Data, "", false, nil // save the bytes as they travelled
	}
	return out, enc, cut, nil
}

// saveBodyDialog writes a whole body (decoded) to a file the user names.
func (u *UI) saveBodyDialog(name string, h http.Header, b session.Body) {
	home, _ := os.UserHomeDir()
	u.pathDialog("Save the full body", "Save", filepath.Join(home, name), true, func(p string) {
		data, _, _, _ := decodeForSave(h, b)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			dialog.ShowError(err, u.win)
			return
		}
		msg := fmt.Sprintf("Saved %d bytes to %s.", len(data), p)
		if b.Truncated || b.Size > int64(len(b.Data)) {
			msg += fmt.Sprintf(" Only %d of the %d bytes were captured.", len(b.Data), b.Size)
		}
		u.notify(msg)
	})
}
