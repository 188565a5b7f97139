package ui

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/session"
	"inspector/filter"
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
	entry   *escEntry
	quick   *widget.Entry
	presets *widget.Select
	errText *widget.Label // the message, "" when the expression is valid
	caret   *widget.Label // a caret under the position of the mistake
	// caretBox draws the caret at the entry's monospace size; shown with the error.
	caretBox *container.ThemeOverride
	box      fyne.CanvasObject

	expr      *filter.Expr // the last valid expression; nil matches everything
	quickText string       // lower-cased quick-search text
	// storeMatches holds the ids the store matched for an expression that needs full
	// sessions (header:, body:); live sessions are matched on their full session.
	storeMatches map[session.ID]bool
}

func newFilterBar(u *UI) *filterBar {
	f := &filterBar{u: u}
	f.entry = newEscEntry(f.clear)
	f.entry.TextStyle = fyne.TextStyle{Monospace: true}
	f.entry.SetPlaceHolder(`filter: host:*.example.com status:4xx -method:OPTIONS   (Ctrl+F)`)
	f.entry.OnChanged = func(string) {
		f.syncPreset()
		f.apply()
	}
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
			if p.Name == name && f.entry.Text != p.Expr {
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
	f.caretBox = container.NewThemeOverride(f.caret, &monoTheme{})
	f.caretBox.Hide()
	right := container.NewHBox(container.NewGridWrap(fyne.NewSize(200, f.quick.MinSize().Height), f.quick), f.presets)
	f.box = container.NewVBox(
		container.NewBorder(nil, nil, nil, right, container.NewThemeOverride(f.entry, &monoTheme{})),
		// One row for an error: the caret under the column, the message after it (the
		// two rows they took made the toolbar three rows tall).
		container.NewHBox(f.caretBox, f.errText),
	)
	return f
}

func (f *filterBar) object() fyne.CanvasObject { return f.box }

// escEntry is an entry that runs onEsc when Esc is typed in it (the filter: clear it).
type escEntry struct {
	widget.Entry
	onEsc func()
}

func newEscEntry(onEsc func()) *escEntry {
	e := &escEntry{onEsc: onEsc}
	e.ExtendBaseWidget(e)
	return e
}

func (e *escEntry) TypedKey(k *fyne.KeyEvent) {
	if k.Name == fyne.KeyEscape && e.onEsc != nil {
		e.onEsc()
		return
	}
	e.Entry.TypedKey(k)
}

// syncPreset makes the Presets label follow the expression: the preset whose expression
// it is, or the placeholder after a hand edit.
func (f *filterBar) syncPreset() {
	text := strings.TrimSpace(f.entry.Text)
	for _, p := range presets {
		if p.Expr == text {
			if f.presets.Selected != p.Name {
				f.presets.Selected = p.Name
				f.presets.Refresh()
			}
			return
		}
	}
	if f.presets.Selected != "" {
		f.presets.ClearSelected()
	}
}

// empty reports whether no filter is typed (expression, quick text).
func (f *filterBar) empty() bool {
	return f == nil || (strings.TrimSpace(f.entry.Text) == "" && f.quickText == "")
}

// active reports whether a filter is in force (a valid expression or quick text).
func (f *filterBar) active() bool { return f != nil && (f.expr != nil || f.quickText != "") }

// clear empties the expression and the quick text (Esc in the list).
func (f *filterBar) clear() {
	f.entry.SetText("")
	f.quick.SetText("")
}

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
	f.caretBox.Hide()
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
		f.caretBox.Show()
		f.errText.SetText(fmt.Sprintf("Filter error at column %d: %s", col+1, se.Msg))
	} else {
		f.caretBox.Hide()
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
		f.u.syncDetail()
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
		if st := f.u.status; st != nil && st.rest.has(s.ID) {
			return true // matched past the index bound ("Search the rest")
		}
		if full, ok := f.u.recent[s.ID]; ok {
			return expr.Match(full)
		}
		return store[s.ID]
	}))
	f.u.list.reselect()
	f.u.syncDetail()
}

// hostList is the host tree: sessions grouped by domain (the last two labels of the
// host name; IP addresses and single-label names stand alone), then by host, each with
// its session count. Counts cover the rows held in memory plus the stored rows paged
// from the store as of the last unfiltered index. Selecting a node puts it in the quick
// field; "All hosts" clears it. UI goroutine only.
type hostList struct {
	u      *UI
	count  map[string]int      // per host
	groups []string            // sorted domains
	hosts  map[string][]string // domain -> sorted hosts
	gcount map[string]int      // per domain
	total  int
	tree   *widget.Tree
	box    fyne.CanvasObject
}

const hostAll = "all"

func newHostList(u *UI) *hostList {
	h := &hostList{u: u, count: map[string]int{}, hosts: map[string][]string{}, gcount: map[string]int{}}
	h.tree = widget.NewTree(h.children, h.isBranch,
		func(bool) fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(id widget.TreeNodeID, _ bool, o fyne.CanvasObject) { o.(*widget.Label).SetText(h.label(id)) },
	)
	h.tree.OnSelected = func(id widget.TreeNodeID) {
		switch kind, name := splitNode(id); kind {
		case "g":
			if hs := h.hosts[name]; len(hs) == 1 && hs[0] == name {
				u.filter.quick.SetText("://" + name)
			} else {
				u.filter.quick.SetText(name) // a URL substring: every host of the domain
			}
		case "h":
			u.filter.quick.SetText("://" + name)
		default:
			u.filter.quick.SetText("")
		}
	}
	h.box = container.NewBorder(widget.NewLabelWithStyle("Hosts", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), nil, nil, nil, h.tree)
	return h
}

func (h *hostList) object() fyne.CanvasObject { return h.box }

func splitNode(id string) (kind, name string) {
	if k, n, ok := strings.Cut(id, ":"); ok {
		return k, n
	}
	return id, ""
}

// domainOf is the group of a host: its last two labels, or the host itself for IP
// addresses and names of one or two labels.
func domainOf(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h // a host with its port is grouped under the host's domain
	}
	if host == "" || strings.Contains(host, ":") || net.ParseIP(host) != nil {
		return host
	}
	parts := strings.Split(host, ".")
	if len(parts) <= 2 {
		return host
	}
	return strings.Join(parts[len(parts)-2:], ".")
}

func (h *hostList) children(id widget.TreeNodeID) []widget.TreeNodeID {
	switch kind, name := splitNode(id); kind {
	case "":
		ids := make([]string, 0, len(h.groups)+1)
		ids = append(ids, hostAll)
		for _, g := range h.groups {
			ids = append(ids, "g:"+g)
		}
		return ids
	case "g":
		hs := h.hosts[name]
		if len(hs) == 1 && hs[0] == name {
			return nil
		}
		ids := make([]string, len(hs))
		for i, x := range hs {
			ids[i] = "h:" + x
		}
		return ids
	}
	return nil
}

func (h *hostList) isBranch(id widget.TreeNodeID) bool {
	if id == "" {
		return true
	}
	kind, name := splitNode(id)
	return kind == "g" && len(h.children("g:"+name)) > 0
}

func (h *hostList) label(id widget.TreeNodeID) string {
	switch kind, name := splitNode(id); kind {
	case "g":
		return fmt.Sprintf("%s (%d)", name, h.gcount[name])
	case "h":
		return fmt.Sprintf("%s (%d)", name, h.count[name])
	}
	return fmt.Sprintf("All hosts (%d)", h.total)
}

// refresh recounts from the held rows and the last unfiltered stored index.
func (h *hostList) refresh() {
	h.count = h.u.model.Hosts()
	for k, c := range h.u.storedHosts {
		h.count[k] += c
	}
	h.groups = h.groups[:0]
	clear(h.hosts)
	clear(h.gcount)
	h.total = 0
	for host, c := range h.count {
		g := domainOf(host)
		if _, ok := h.hosts[g]; !ok {
			h.groups = append(h.groups, g)
		}
		h.hosts[g] = append(h.hosts[g], host)
		h.gcount[g] += c
		h.total += c
	}
	sort.Strings(h.groups)
	for _, hs := range h.hosts {
		sort.Strings(hs)
	}
	h.tree.Refresh()
}

// Lines returns the host tree's rows as text, depth-first, for tests.
func (h *hostList) Lines() []string {
	var out []string
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		for _, c := range h.children(id) {
			out = append(out, strings.Repeat("  ", depth)+h.label(c))
			walk(c, depth+1)
		}
	}
	walk("", 0)
	return out
}
