package ui

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/filter"
	"inspector/engine/session"
)

// presets are the filter bar's one-click expressions.
var presets = []struct{ Name, Expr string }{
	{"All", ""},
	{"Errors", "error:yes"},
	{"4xx/5xx", "status:400-599"},
	{"Images", "type:image"},
	{"JSON", "type:json"},
	{"h2", "proto:h2"},
	{"h3", "proto:h3"},
}

// filterBar holds the expression entry (PRODUCT.md filter language), the quick text
// field, the presets and the inline error.
type filterBar struct {
	u       *UI
	entry   *widget.Entry
	quick   *widget.Entry
	presets *widget.Select
	errText *widget.Label // the message, "" when the expression is valid
	caret   *widget.Label // a caret under the position of the mistake
	box     fyne.CanvasObject

	expr      *filter.Expr // the last valid expression; nil matches everything
	quickText string       // lower-cased quick-search text
	// storeMatches holds the ids the store matched for an expression that needs full
	// sessions (header:, body:); live sessions are matched on their full session.
	storeMatches map[session.ID]bool
}

func newFilterBar(u *UI) *filterBar {
	f := &filterBar{u: u}
	f.entry = widget.NewEntry()
	f.entry.TextStyle = fyne.TextStyle{Monospace: true}
	f.entry.SetPlaceHolder(`filter: host:*.example.com status:4xx -method:OPTIONS   (Ctrl+F)`)
	f.entry.OnChanged = func(string) { f.apply() }
	f.quick = widget.NewEntry()
	f.quick.SetPlaceHolder("quick search in URLs")
	f.quick.OnChanged = func(s string) {
		f.quickText = strings.ToLower(strings.TrimSpace(s))
		f.rematch()
	}
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.Name
	}
	f.presets = widget.NewSelect(names, func(name string) {
		for _, p := range presets {
			if p.Name == name {
				f.entry.SetText(p.Expr)
			}
		}
	})
	f.presets.PlaceHolder = "Presets"
	f.errText = widget.NewLabel("")
	f.errText.Importance = widget.DangerImportance
	f.errText.Hide()
	f.caret = widget.NewLabel("")
	f.caret.TextStyle = fyne.TextStyle{Monospace: true}
	f.caret.Importance = widget.DangerImportance
	f.caret.Hide()
	right := container.NewHBox(container.NewGridWrap(fyne.NewSize(220, f.quick.MinSize().Height), f.quick), f.presets)
	f.box = container.NewVBox(
		container.NewBorder(nil, nil, nil, right, f.entry),
		f.caret,
		f.errText,
	)
	return f
}

func (f *filterBar) object() fyne.CanvasObject { return f.box }

// Error is the message shown for an invalid expression, "" when valid.
func (f *filterBar) Error() string {
	if !f.errText.Visible() {
		return ""
	}
	return f.errText.Text
}

// apply parses the entry. An invalid expression keeps the previous valid one in force and
// shows the error at its position, never an empty list.
func (f *filterBar) apply() {
	text := f.entry.Text
	var expr *filter.Expr
	if strings.TrimSpace(text) != "" {
		e, err := filter.Parse(text)
		if err != nil {
			f.showError(text, err)
			return
		}
		expr = e
	}
	f.errText.Hide()
	f.caret.Hide()
	needed := expr != nil && expr.NeedsSession()
	hadNeeded := f.expr != nil && f.expr.NeedsSession()
	f.expr = expr
	f.storeMatches = nil
	if needed || hadNeeded {
		f.u.reload() // the store evaluates header:/body: over every stored session
	}
	f.rematch()
}

// storeExpr is the filter as one expression for the store: the expression AND the quick
// text as a quoted phrase (a URL substring, as the quick field matches). nil: everything.
func (f *filterBar) storeExpr() (*filter.Expr, error) {
	q := f.quickText
	if q == "" {
		return f.expr, nil
	}
	src := `"` + strings.ReplaceAll(strings.ReplaceAll(q, `\`, `\\`), `"`, `\"`) + `"`
	if f.expr != nil {
		src = "(" + f.expr.String() + ") " + src
	}
	return filter.Parse(src)
}

func (f *filterBar) showError(text string, err error) {
	var se *filter.SyntaxError
	if errors.As(err, &se) {
		pos := min(max(se.Pos, 0), len(text))
		col := len([]rune(text[:pos]))
		f.caret.SetText(strings.Repeat(" ", col) + "^")
		f.caret.Show()
		f.errText.SetText(fmt.Sprintf("Filter error at column %d: %s", col+1, se.Msg))
	} else {
		f.caret.Hide()
		f.errText.SetText("Filter error: " + err.Error())
	}
	f.errText.Show()
}

// rematch installs the combined matcher on the model.
func (f *filterBar) rematch() {
	expr, quick := f.expr, f.quickText
	defer f.u.rebuildPages() // the stored pages follow the same filter
	if expr == nil && quick == "" {
		f.u.changed(f.u.model.SetFilter(nil))
		f.u.list.reselect()
		return
	}
	needs := expr != nil && expr.NeedsSession()
	store := f.storeMatches
	f.u.changed(f.u.model.SetFilter(func(s *session.Summary) bool {
		if quick != "" && !strings.Contains(strings.ToLower(s.URL), quick) {
			return false
		}
		switch {
		case expr == nil:
			return true
		case !needs:
			return expr.MatchSummary(s)
		}
		if full, ok := f.u.recent[s.ID]; ok {
			return expr.Match(full)
		}
		return store[s.ID]
	}))
	f.u.list.reselect()
}

// hostList groups the held sessions by host; selecting a host puts it in the quick field.
type hostList struct {
	u     *UI
	hosts []string
	count map[string]int
	list  *widget.List
	box   fyne.CanvasObject
}

func newHostList(u *UI) *hostList {
	h := &hostList{u: u, count: map[string]int{}}
	h.list = widget.NewList(
		func() int { return len(h.hosts) + 1 },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i == 0 {
				o.(*widget.Label).SetText(fmt.Sprintf("All hosts (%d)", u.model.Total()))
				return
			}
			if i-1 < len(h.hosts) {
				o.(*widget.Label).SetText(fmt.Sprintf("%s (%d)", h.hosts[i-1], h.count[h.hosts[i-1]]))
			}
		},
	)
	h.list.OnSelected = func(i widget.ListItemID) {
		if i == 0 {
			u.filter.quick.SetText("")
			return
		}
		if i-1 < len(h.hosts) {
			u.filter.quick.SetText("://" + h.hosts[i-1])
		}
	}
	h.box = container.NewBorder(widget.NewLabelWithStyle("Hosts", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), nil, nil, nil, h.list)
	return h
}

func (h *hostList) object() fyne.CanvasObject { return h.box }

func (h *hostList) refresh() {
	h.count = h.u.model.Hosts()
	h.hosts = h.hosts[:0]
	for k := range h.count {
		h.hosts = append(h.hosts, k)
	}
	sort.Strings(h.hosts)
	h.list.Refresh()
}
