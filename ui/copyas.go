package ui

import (
	"fyne.io/fyne/v2"

	"inspector/engine/session"
	"inspector/internal/codegen"
)

// CopyAs puts the requests, as code in lang (one of codegen.Langs), on the clipboard.
func CopyAs(a fyne.App, lang string, reqs []*session.Request) error {
	code, err := codegen.GenerateMany(lang, reqs)
	if err != nil {
		return err
	}
	a.Clipboard().SetContent(code)
	return nil
}

// CopyAsMenuItem is the "Copy as" item with one child per language, for the Edit menu
// and the row context menu. selected returns the requests to copy (none: nothing
// happens).
func CopyAsMenuItem(a fyne.App, selected func() []*session.Request) *fyne.MenuItem {
	var items []*fyne.MenuItem
	for _, lang := range codegen.Langs {
		items = append(items, fyne.NewMenuItem(codegen.Titles[lang], func() {
			if reqs := selected(); len(reqs) > 0 {
				CopyAs(a, lang, reqs)
			}
		}))
	}
	it := fyne.NewMenuItem("Copy as", nil)
	it.ChildMenu = fyne.NewMenu("", items...)
	return it
}
