package ui

import (
	"fmt"

	"fyne.io/fyne/v2"

	"inspector/codegen"
	"inspector/engine/session"
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
// happens); done, when not nil, hears what was copied (n requests in lang) or the error.
func CopyAsMenuItem(a fyne.App, selected func() []*session.Request, done ...func(lang string, n int, err error)) *fyne.MenuItem {
	var items []*fyne.MenuItem
	for _, lang := range codegen.Langs {
		items = append(items, fyne.NewMenuItem(codegen.Titles[lang], func() {
			reqs := selected()
			if len(reqs) == 0 {
				return
			}
			err := CopyAs(a, lang, reqs)
			for _, f := range done {
				f(lang, len(reqs), err)
			}
		}))
	}
	it := fyne.NewMenuItem("Copy as", nil)
	it.ChildMenu = fyne.NewMenu("", items...)
	return it
}

// copyAsItem is the window's "Copy as" submenu: the selected requests, with the
// outcome in the status bar.
func (u *UI) copyAsItem() *fyne.MenuItem {
	it := CopyAsMenuItem(u.app, u.selectedRequests, func(lang string, n int, err error) {
		if err != nil {
			u.notify("Copy as " + codegen.Titles[lang] + " failed: " + err.Error())
			return
		}
		what := "as " + codegen.Titles[lang]
		if n > 1 {
			what = fmt.Sprintf("%d requests as %s", n, codegen.Titles[lang])
		}
		u.lastCopy = what
		u.notify("Copied " + what)
	})
	it.Disabled = u.model.SelectionLen() == 0
	return it
}

// selectedRequests are the requests of the selection, in capture order.
func (u *UI) selectedRequests() []*session.Request {
	ss := u.SelectedSessions()
	out := make([]*session.Request, len(ss))
	for i, s := range ss {
		out[i] = &s.Request
	}
	return out
}

// copyAsMaskedItem is "Copy as, secrets masked": the same languages, with the requests
// passed through the redaction rules first (one placeholder per secret in the snippet).
func (u *UI) copyAsMaskedItem() *fyne.MenuItem {
	it := CopyAsMenuItem(u.app, u.selectedMaskedRequests, func(lang string, n int, err error) {
		if err != nil {
			u.notify("Copy as " + codegen.Titles[lang] + " failed: " + err.Error())
			return
		}
		u.lastCopy = "as " + codegen.Titles[lang] + ", secrets masked"
		u.notify(fmt.Sprintf("Copied %d request(s) as %s with secrets masked", n, codegen.Titles[lang]))
	})
	it.Label = "Copy as, secrets masked"
	it.Disabled = u.model.SelectionLen() == 0
	return it
}

// selectedMaskedRequests are selectedRequests with secrets masked; nil (nothing copied)
// when the rules cannot be loaded, which the status bar says.
func (u *UI) selectedMaskedRequests() []*session.Request {
	red, err := u.Redactor()
	if err != nil {
		u.notify("Copy with secrets masked: " + err.Error())
		return nil
	}
	ss := u.SelectedSessions()
	for _, s := range ss {
		red.Learn(s)
	}
	out := make([]*session.Request, len(ss))
	for i, s := range ss {
		m, _ := red.Session(s)
		out[i] = &m.Request
	}
	return out
}
