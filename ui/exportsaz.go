package ui

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"fyne.io/fyne/v2/widget"

	"inspector/engine/session"
	"inspector/store/archive"
)

// ExportSAZIDs writes the given sessions as a Fiddler .saz archive (File ▸ Export Fiddler
// .saz…), loaded as ExportIDs loads them (the store's whole bodies); sessions without a
// response are left out, as `har export --saz` does. Safe off the UI goroutine once the
// ids are taken.
func (u *UI) ExportSAZIDs(w io.Writer, ids []session.ID, progress func(done, total int)) (int, error) {
	load := u.exportLoader(ids)
	sw, err := archive.NewSAZWriter(w, len(ids))
	if err != nil {
		return 0, err
	}
	for i, id := range ids {
		s, err := load(id)
		if err != nil {
			sw.Close()
			return sw.Count(), err
		}
		if s != nil {
			if err := sw.Add(s); err != nil {
				sw.Close()
				return sw.Count(), fmt.Errorf("writing session %d: %w", id, err)
			}
		}
		if progress != nil {
			progress(i+1, len(ids))
		}
	}
	return sw.Count(), sw.Close()
}

// scopeRadio is the export dialogs' choice of sessions: the selection when several are
// selected, else the filtered ones.
func (u *UI) scopeRadio() *widget.RadioGroup {
	scope := widget.NewRadioGroup(scopeNames, nil)
	scope.Required = true
	if u.model.SelectionLen() > 1 {
		scope.SetSelected(scopeNames[ScopeSelected])
	} else {
		scope.SetSelected(scopeNames[ScopeFiltered])
	}
	return scope
}

func (u *UI) exportSAZDialog() {
	scope := u.scopeRadio()
	home, _ := os.UserHomeDir()
	u.pathDialogWith("Export Fiddler .saz", "Export", filepath.Join(home, "inspector.saz"), true, scope, func(path string) {
		u.exportScopeTo(path, scopeOf(scope.Selected), u.ExportSAZIDs, "Exported %d sessions as a Fiddler archive to %s (sessions without a response are left out).")
	})
}
