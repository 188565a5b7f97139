package ui

import "fyne.io/fyne/v2"

// Resize lays the list pane out and, while "follow newest" is on, keeps the newest row in
// view: a scroll asked for before the list was laid out (the rows New loads) is lost by
// the scroller, and the window opened at the oldest row.
func (f *listFocus) Resize(s fyne.Size) {
	if s == f.Size() {
		return
	}
	f.BaseWidget.Resize(s)
	if f.l.u.following && s.Height > 0 {
		f.l.u.scrollToNewest()
	}
}
