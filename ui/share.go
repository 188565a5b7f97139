package ui

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/session"
	"inspector/redact"
)

// sharePreviewSessions bounds the sessions the export-for-sharing dialog previews.
const sharePreviewSessions = 500

// Redactor returns a Redactor with the default rules and the user's
// (DATA_DIR/redaction.json, when the window has a data directory).
func (u *UI) Redactor() (*redact.Redactor, error) {
	if u.deps.DataDir == "" {
		return redact.Default(), nil
	}
	rs, err := redact.Open(filepath.Join(u.deps.DataDir, redact.FileName))
	if err != nil {
		return nil, err
	}
	return rs.Redactor(nil, redact.Options{})
}

// ExportSharedIDs writes the sessions as a HAR for sharing: secrets masked, one
// placeholder per secret through the file (a first pass learns every secret, so one
// revealed late is masked early too). The store keeps the originals.
func (u *UI) ExportSharedIDs(w io.Writer, ids []session.ID, progress func(done, total int)) (int, error) {
	red, err := u.Redactor()
	if err != nil {
		return 0, err
	}
	load := u.exportLoader(ids)
	for _, id := range ids {
		s, err := load(id)
		if err != nil {
			return 0, err
		}
		if s != nil {
			red.Learn(s)
		}
	}
	return u.exportWith(w, ids, progress, func(s *session.Session) *session.Session {
		m, _ := red.Session(s)
		return m
	})
}

// SharePreview lists what an export for sharing would mask in the first sessions of ids:
// one line per place, never the secret itself.
func (u *UI) SharePreview(ids []session.ID) (string, error) {
	red, err := u.Redactor()
	if err != nil {
		return "", err
	}
	load := u.exportLoader(ids)
	var b strings.Builder
	places := 0
	for i, id := range ids {
		if i == sharePreviewSessions {
			fmt.Fprintf(&b, "… (the preview shows the first %d of %d sessions; the export masks all of them)\n", sharePreviewSessions, len(ids))
			break
		}
		s, err := load(id)
		if err != nil {
			return "", err
		}
		if s == nil {
			continue
		}
		_, found := red.Session(s)
		for _, f := range found {
			places++
			ph := f.Placeholder
			if ph == "" {
				ph = "—"
			}
			fmt.Fprintf(&b, "#%d  %s → %s  (%s; %s)\n", id, f.Where, ph, f.Hint, f.Rule)
		}
	}
	if places == 0 {
		return "Nothing to mask was found.", nil
	}
	return fmt.Sprintf("%d places masked, %d distinct secrets:\n", places, red.Placeholders()) + b.String(), nil
}

// shareDialog is File ▸ Export for sharing…: the scope, a preview of what will be masked,
// then the file.
func (u *UI) shareDialog() {
	if u.deps.HAR == nil {
		dialog.ShowError(ErrNoHAR, u.win)
		return
	}
	preview := widget.NewMultiLineEntry()
	preview.Wrapping = fyne.TextWrapOff
	preview.Disable()
	scope := widget.NewRadioGroup(scopeNames, nil)
	scope.Required = true
	current := func() Scope { return scopeOf(scope.Selected) }
	update := func() {
		ids, err := u.exportIDs(current())
		if err == nil {
			var text string
			text, err = u.SharePreview(ids)
			preview.SetText(text)
		}
		if err != nil {
			preview.SetText(err.Error())
		}
	}
	scope.OnChanged = func(string) { update() }
	if u.model.SelectionLen() > 1 {
		scope.SetSelected(scopeNames[ScopeSelected])
	} else {
		scope.SetSelected(scopeNames[ScopeFiltered])
	}
	u.sharePreviewText = func() string { return preview.Text }
	box := container.NewBorder(scope, nil, nil, nil, container.NewGridWrap(fyne.NewSize(760, 260), preview))
	home, _ := os.UserHomeDir()
	u.pathDialogWith("Export for sharing", "Export", filepath.Join(home, "inspector-shared.har"), true, box, func(path string) {
		u.exportScopeTo(path, current(), u.ExportSharedIDs, "Exported %d sessions with secrets masked to %s (the store keeps the originals).")
	})
}

// CaptureSaver is a store that writes a standalone copy of itself (*store.Store's
// Compact): File ▸ Save capture as… makes an archive File ▸ Open store… reopens.
type CaptureSaver interface {
	Compact(dst string) error
}

// saveCaptureDialog is File ▸ Save capture as….
func (u *UI) saveCaptureDialog() {
	cs, ok := u.deps.Store.(CaptureSaver)
	if !ok {
		dialog.ShowInformation("Save capture as", "This window has no store to save; use Export HAR….", u.win)
		return
	}
	home, _ := os.UserHomeDir()
	u.pathDialogWith("Save capture as", "Save", filepath.Join(home, "inspector-capture.db"), true, nil, func(path string) {
		go func() {
			err := u.SaveCapture(cs, path)
			fyne.Do(func() {
				if err != nil {
					dialog.ShowError(err, u.win)
					return
				}
				u.notify("Capture saved to " + path + " (File ▸ Open store… reopens it)")
			})
		}()
	})
}

// SaveCapture writes the store's sessions to path as a standalone store file. An existing
// file is replaced only once the copy is complete.
func (u *UI) SaveCapture(cs CaptureSaver, path string) error {
	tmp := path + ".saving"
	os.Remove(tmp)
	if err := cs.Compact(tmp); err != nil {
		return fmt.Errorf("saving the capture: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("saving the capture: %w", err)
	}
	return nil
}
