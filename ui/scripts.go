package ui

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/hooks/script"
	"inspector/internal/atomicfile"
)

// Scripts is the instance's JavaScript addon manager (*script.Manager).
type Scripts interface {
	Status() []script.Status
	Log() []script.LogEntry
	Reload() bool
}

// scriptsPanel is Tools ▸ Scripts…: the loaded addons with their handlers and errors, the
// log, and a small editor that saves DATA_DIR/scripts/NAME.js and reloads.
type scriptsPanel struct {
	u       *UI
	win     fyne.Window
	dir     string
	status  []script.Status
	list    *widget.List
	log     *widget.Entry
	name    *widget.Entry
	editor  *widget.Entry
	fileErr *widget.Label // the edited file's load error
	sel     int
}

// scriptName is what NAME may be: a file name without folders.
var scriptName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func (u *UI) showScripts() *scriptsPanel {
	if u.deps.Scripts == nil || u.deps.DataDir == "" {
		dialog.ShowInformation("Scripts", "Scripts are not available in this window (no proxy running).", u.win)
		return nil
	}
	if u.scripts != nil {
		u.scripts.win.RequestFocus()
		return u.scripts
	}
	p := &scriptsPanel{u: u, dir: filepath.Join(u.deps.DataDir, "scripts"), sel: -1}
	p.list = widget.NewList(func() int { return len(p.status) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis // the whole error shows beside the editor
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			l := o.(*widget.Label)
			l.SetText(scriptLine(p.status[i]))
			if p.status[i].Error != "" {
				l.Importance = widget.DangerImportance
			} else {
				l.Importance = widget.MediumImportance
			}
			l.Refresh()
		})
	p.list.OnSelected = func(i widget.ListItemID) { p.open(i) }
	p.log = widget.NewMultiLineEntry()
	p.log.Wrapping = fyne.TextWrapWord
	p.log.TextStyle = fyne.TextStyle{Monospace: true}
	p.name = widget.NewEntry()
	p.name.SetPlaceHolder("name (saved as DATA_DIR/scripts/NAME.js)")
	p.editor = widget.NewMultiLineEntry()
	p.editor.TextStyle = fyne.TextStyle{Monospace: true}
	p.editor.SetPlaceHolder("exports.request = function (flow) {\n  flow.request.headers.set('X-Debug', '1')\n}")
	p.fileErr = widget.NewLabel("")
	p.fileErr.Wrapping = fyne.TextWrapWord
	p.fileErr.Importance = widget.DangerImportance

	save := widget.NewButtonWithIcon("Save and reload", theme.DocumentSaveIcon(), func() {
		if err := p.save(); err != nil {
			dialog.ShowError(err, p.win)
		}
	})
	save.Importance = widget.HighImportance
	newBtn := widget.NewButtonWithIcon("New", theme.ContentAddIcon(), func() {
		p.list.UnselectAll()
		p.sel = -1
		p.name.SetText("")
		p.editor.SetText("")
		p.fileErr.SetText("")
	})
	openDir := widget.NewButtonWithIcon("Open scripts folder", theme.FolderOpenIcon(), func() { p.openPath(p.dir) })
	openEd := widget.NewButtonWithIcon("Open in editor", theme.DocumentCreateIcon(), func() {
		if p.sel >= 0 && p.sel < len(p.status) {
			p.openPath(p.status[p.sel].File)
		}
	})
	reload := widget.NewButtonWithIcon("Reload", theme.ViewRefreshIcon(), func() { p.u.deps.Scripts.Reload(); p.refresh() })

	left := container.NewBorder(widget.NewLabelWithStyle("Loaded scripts", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		container.NewHBox(reload, openDir, openEd), nil, nil, p.list)
	edit := container.NewBorder(container.NewBorder(nil, nil, nil, container.NewHBox(newBtn, save), p.name),
		p.fileErr, nil, nil, p.editor)
	logBox := container.NewBorder(widget.NewLabelWithStyle("Log", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), nil, nil, nil, p.log)
	top := container.NewHSplit(left, edit)
	top.SetOffset(0.35)
	split := container.NewVSplit(top, logBox)
	split.SetOffset(0.65)

	u.scripts = p
	p.win = u.liveWindow("Scripts", fyne.NewSize(1000, 680), split, p.refresh, func() { u.scripts = nil })
	return p
}

func scriptLine(s script.Status) string {
	name := filepath.Base(s.File)
	if s.Error != "" {
		return name + " — error: " + s.Error
	}
	if len(s.Handlers) == 0 {
		return name + " — no handlers"
	}
	return name + " — " + strings.Join(s.Handlers, ", ")
}

// refresh reads the statuses and the log again.
func (p *scriptsPanel) refresh() {
	p.status = p.u.deps.Scripts.Status()
	p.list.Refresh()
	var b strings.Builder
	for _, e := range p.u.deps.Scripts.Log() {
		fmt.Fprintf(&b, "%s %s", e.Time.Local().Format("15:04:05"), e.File)
		if e.Session != 0 {
			fmt.Fprintf(&b, " #%d", e.Session)
		}
		if e.Error {
			b.WriteString(" ERROR")
		}
		b.WriteString(": " + e.Text + "\n")
	}
	if b.String() != p.log.Text {
		p.log.SetText(b.String())
	}
	p.showFileError()
}

// open loads script i into the editor.
func (p *scriptsPanel) open(i int) {
	if i < 0 || i >= len(p.status) {
		return
	}
	p.sel = i
	b, err := os.ReadFile(p.status[i].File)
	if err != nil {
		p.fileErr.SetText(err.Error())
		return
	}
	p.name.SetText(strings.TrimSuffix(filepath.Base(p.status[i].File), ".js"))
	p.editor.SetText(string(b))
	p.showFileError()
}

// path is the file the editor saves to.
func (p *scriptsPanel) path() (string, error) {
	n := strings.TrimSuffix(strings.TrimSpace(p.name.Text), ".js")
	if !scriptName.MatchString(n) {
		return "", fmt.Errorf("script name %q: use letters, digits, '.', '-' and '_' only (no folders)", p.name.Text)
	}
	return filepath.Join(p.dir, n+".js"), nil
}

// save writes the editor to DATA_DIR/scripts/NAME.js and reloads; the file's error, if
// any, shows next to the editor.
func (p *scriptsPanel) save() error {
	path, err := p.path()
	if err != nil {
		return err
	}
	if strings.TrimSpace(p.editor.Text) == "" {
		return errors.New("the script is empty")
	}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, []byte(p.editor.Text), 0o600); err != nil {
		return err
	}
	p.u.deps.Scripts.Reload()
	p.refresh()
	for i, s := range p.status {
		if s.File == path {
			p.sel = i
			p.list.Select(i)
		}
	}
	if p.fileErr.Text == "" {
		p.u.notify("Saved and loaded " + filepath.Base(path))
	}
	return nil
}

// showFileError shows the load error of the file being edited.
func (p *scriptsPanel) showFileError() {
	path, err := p.path()
	msg := ""
	if err == nil {
		for _, s := range p.status {
			if s.File == path && s.Error != "" {
				msg = s.Error
				if !strings.Contains(msg, filepath.Base(path)) {
					msg = filepath.Base(path) + ": " + msg
				}
			}
		}
	}
	if p.fileErr.Text != msg {
		p.fileErr.SetText(msg)
	}
}

// openPath opens a file or folder with the OS default application (xdg-open on Linux).
func (p *scriptsPanel) openPath(path string) {
	abs, err := filepath.Abs(path)
	if err == nil {
		err = p.u.app.OpenURL(&url.URL{Scheme: "file", Path: abs})
	}
	if err != nil {
		dialog.ShowError(fmt.Errorf("open %s: %w", path, err), p.win)
	}
}
