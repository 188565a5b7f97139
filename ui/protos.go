package ui

import (
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"
)

// ProtoSchemas is the instance's protobuf schema setting (--proto-path): folders of .proto
// files or descriptor sets that name gRPC and protobuf messages in the body views.
type ProtoSchemas interface {
	// State returns the folders, the files loaded from them, and the load error ("" when
	// every file loaded).
	State() (paths, files []string, loadErr string)
	// SetPaths loads the folders now (none: no schemas); files that fail are in the error,
	// the others are used.
	SetPaths(paths []string) error
}

// schemasDialog is Capture ▸ Protobuf schemas…: the folders, what loaded from them, and an
// entry to change them.
type schemasDialog struct {
	u     *UI
	paths *widget.Entry
	files *widget.Label
	errs  *widget.Label
	d     dialog.Dialog
}

func (u *UI) schemasDialog() *schemasDialog {
	if u.deps.Schemas == nil {
		dialog.ShowInformation("Protobuf schemas", "Protobuf schemas are set on the running instance (inspector --proto-path DIR); this window has none.", u.win)
		return nil
	}
	s := &schemasDialog{u: u, paths: widget.NewEntry(), files: widget.NewLabel(""), errs: widget.NewLabel("")}
	s.paths.SetPlaceHolder("folders of .proto files or descriptor sets, separated by commas")
	s.files.Wrapping = fyne.TextWrapWord
	s.errs.Wrapping = fyne.TextWrapWord
	s.errs.Importance = widget.DangerImportance
	s.load()
	apply := widget.NewButton("Load", func() { s.apply() })
	apply.Importance = widget.HighImportance
	body := container.NewVBox(
		widget.NewLabel("gRPC and protobuf bodies are decoded with names when their method (from the :path) or message type is in these schemas; without them they are decoded by field number."),
		widget.NewForm(widget.NewFormItem("Folders", s.paths)),
		container.NewHBox(apply),
		widget.NewLabelWithStyle("Loaded", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		s.files, s.errs,
	)
	s.d = dialog.NewCustom("Protobuf schemas", "Close", container.NewVScroll(body), u.win)
	s.d.Resize(fyne.NewSize(640, 420))
	s.d.Show()
	return s
}

func (s *schemasDialog) load() {
	paths, files, loadErr := s.u.deps.Schemas.State()
	s.paths.SetText(strings.Join(paths, ", "))
	switch {
	case len(files) == 0 && len(paths) == 0:
		s.files.SetText("No schemas: protobuf is decoded by field number.")
	case len(files) == 0:
		s.files.SetText("No .proto file or descriptor set loaded from these folders.")
	default:
		names := make([]string, len(files))
		for i, f := range files {
			names[i] = filepath.Base(f)
		}
		s.files.SetText(strings.Join(names, "\n"))
	}
	s.errs.SetText(loadErr)
}

// apply loads the folders typed, shows what loaded, and redraws the selected session's
// body views with the new schemas.
func (s *schemasDialog) apply() error {
	var paths []string
	for _, p := range strings.Split(s.paths.Text, ",") {
		if p = strings.TrimSpace(p); p != "" {
			paths = append(paths, expandPath(p))
		}
	}
	err := s.u.deps.Schemas.SetPaths(paths)
	s.load()
	if err != nil && s.errs.Text == "" {
		s.errs.SetText(err.Error())
	}
	if id, ok := s.u.model.Selected(); ok {
		s.u.detail.shown = 0 // the same session, shown again with the new schemas
		s.u.SelectID(id)
	}
	return err
}
