package ui

import (
	"image/color"
	"math"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/session"
	"inspector/ui/viewmodel"
)

// Preference keys for the persisted column choices.
const (
	prefColumns  = "list.columns"     // comma list of column keys, in order
	prefColWidth = "list.width."      // + key: preferred width
	prefSortCol  = "list.sort.column" // column key
	prefSortDesc = "list.sort.desc"
)

// defaultListSplit is the list's share of the list/detail split until the user drags it:
// at 1280×820, 21 rows above a detail pane whose tables and bodies get 8 rows (at 0.72
// they got 4, about 90 px, under the pane's own toolbars).
const defaultListSplit = 0.62

// cellPad is the horizontal space kept free on each side of a cell's text.
const cellPad = 4

// sessionList is the list pane's controller: a header and a virtualised list of rows
// (widget.List: only the rows on screen exist). A row draws its highlight from the
// model's selection, which is a set of session ids, so the highlight stays on the same
// session when rows are inserted above it, sorted or filtered. The list's own index-based
// selection is never used.
type sessionList struct {
	u      *UI
	list   *widget.List
	header *listHeader
	box    *listFocus // header + list, focusable: the list's keyboard handling
	cols   []viewmodel.Column
	// created counts row widgets created, for the scroll test and benchmark.
	created int
}

func newSessionList(u *UI) *sessionList {
	l := &sessionList{u: u}
	l.loadPrefs()
	l.list = widget.NewList(
		func() int { return u.model.Len() },
		func() fyne.CanvasObject {
			l.created++
			return newListRow(l)
		},
		func(i widget.ListItemID, o fyne.CanvasObject) { o.(*listRow).update(i) },
	)
	l.header = newListHeader(l)
	// Rows are packed without the theme's padding between them (a hairline separates them).
	packed := container.NewThemeOverride(l.list, &packedTheme{})
	l.box = newListFocus(l, container.NewBorder(l.header, nil, nil, nil, packed))
	return l
}

func (l *sessionList) object() fyne.CanvasObject { return l.box }

// widths lays the visible columns out across w.
func (l *sessionList) widths(w float32) []float32 {
	pref := make([]float32, len(l.cols))
	flex := make([]bool, len(l.cols))
	scale := theme.TextSize() / compactSizes[theme.SizeNameText] // the widths are set for 13 px text
	for i, c := range l.cols {
		pref[i] = l.width(c) * scale
		flex[i] = viewmodel.Columns[c].Flex
	}
	return viewmodel.StretchWidths(pref, flex, w)
}

// refresh redraws the rows on screen and keeps the list from being scrolled past its end
// after it shrank (a filter, a host click, a delete).
func (l *sessionList) refresh() {
	l.list.Refresh()
	l.clampScroll()
}

// clampScroll scrolls back so that the last row ends at the bottom of the view when the
// list is scrolled beyond its content.
func (l *sessionList) clampScroll() {
	rowH := l.rowHeight()
	view := l.list.Size().Height
	if view <= 0 || rowH <= 0 {
		return
	}
	content := float32(l.u.model.Len()) * rowH
	maxOff := max(content-view, 0)
	if l.list.GetScrollOffset() > maxOff+0.5 {
		l.list.ScrollToOffset(maxOff)
	}
}

// rowHeight is the height of one row (and the row pitch: rows are packed) in the current
// theme: the text's height and a pixel above and below (the padding in comfortable).
func (l *sessionList) rowHeight() float32 {
	pad := float32(1)
	if l.u.theme != nil && l.u.theme.density == Comfortable {
		pad = theme.Padding()
	}
	// Whole pixels: the list places rows at float32 offsets, and at a million rows (20
	// million px) float32 steps by 2 px, so a fractional pitch drifts the rows off their
	// slots and the newest row ends below the view.
	return float32(math.Ceil(float64(fyne.MeasureText("Mg", theme.TextSize(), fyne.TextStyle{}).Height + 2*pad)))
}

// tightTheme is the app's theme with one pixel of inner padding: dense tables.
type tightTheme struct{ packedTheme }

func (tightTheme) Size(n fyne.ThemeSizeName) float32 {
	switch n {
	case theme.SizeNameInnerPadding:
		return 1
	case theme.SizeNamePadding:
		return 1
	}
	return fyne.CurrentApp().Settings().Theme().Size(n)
}

// packedTheme is the app's theme without padding: the list's rows follow each other
// with no gap.
type packedTheme struct{}

func (packedTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	return fyne.CurrentApp().Settings().Theme().Color(n, v)
}
func (packedTheme) Font(s fyne.TextStyle) fyne.Resource {
	return fyne.CurrentApp().Settings().Theme().Font(s)
}
func (packedTheme) Icon(n fyne.ThemeIconName) fyne.Resource {
	return fyne.CurrentApp().Settings().Theme().Icon(n)
}
func (packedTheme) Size(n fyne.ThemeSizeName) float32 {
	if n == theme.SizeNamePadding {
		return 0
	}
	return fyne.CurrentApp().Settings().Theme().Size(n)
}

func (l *sessionList) themeChanged() {
	l.header.Refresh()
	l.list.Refresh()
}

// reselect scrolls to the primary selected session, if it is visible.
func (l *sessionList) reselect() {
	if id, ok := l.u.model.Selected(); ok {
		if i := l.u.model.IndexOf(id); i >= 0 {
			l.list.ScrollTo(i)
		}
	}
	l.list.Refresh()
}

// scrollTo shows row i.
func (l *sessionList) scrollTo(i int) { l.list.ScrollTo(i) }

// click handles a primary click on row i with the modifiers held: plain selects only
// that session, Ctrl toggles it, Shift extends from the anchor.
func (l *sessionList) click(i int, mods fyne.KeyModifier) {
	r := l.u.model.At(i)
	if r == nil {
		return // its page is still loading
	}
	l.u.win.Canvas().Focus(l.box)
	l.u.inDetail = false
	if i != l.u.model.Len()-1 {
		l.u.setFollow(false)
	}
	switch {
	case mods&fyne.KeyModifierShift != 0:
		l.u.model.ExtendTo(r.ID)
	case mods&(fyne.KeyModifierControl|fyne.KeyModifierSuper) != 0:
		l.u.model.Toggle(r.ID)
	default:
		l.u.model.SelectOnly(r.ID)
	}
	l.u.selectionChanged()
}

// SortBy sorts by column c; choosing the current sort column flips the direction.
func (l *sessionList) SortBy(c viewmodel.Column) {
	cur, desc := l.u.model.Sort()
	if cur == c {
		desc = !desc
	} else {
		desc = false
	}
	l.u.changed(l.u.model.SortBy(c, desc))
	l.u.prefs.SetString(prefSortCol, viewmodel.Columns[c].Key)
	l.u.prefs.SetBool(prefSortDesc, desc)
	l.header.Refresh()
	l.reselect()
}

// SetColumns shows the given columns in that order and persists the choice.
func (l *sessionList) SetColumns(cols []viewmodel.Column) {
	if len(cols) == 0 {
		cols = []viewmodel.Column{viewmodel.ColID}
	}
	l.cols = cols
	keys := make([]string, len(cols))
	for i, c := range cols {
		keys[i] = viewmodel.Columns[c].Key
	}
	l.u.prefs.SetString(prefColumns, strings.Join(keys, ","))
	l.header.Refresh()
	l.list.Refresh()
	if l.u.menus != nil {
		l.u.menus.refreshChecks()
	}
}

// SetColumnWidth sets and persists a column's preferred width (its share when stretched).
func (l *sessionList) SetColumnWidth(c viewmodel.Column, w float32) {
	l.u.prefs.SetFloat(prefColWidth+viewmodel.Columns[c].Key, float64(w))
	l.header.Refresh()
	l.list.Refresh()
}

func (l *sessionList) width(c viewmodel.Column) float32 {
	w := float32(l.u.prefs.FloatWithFallback(prefColWidth+viewmodel.Columns[c].Key, float64(viewmodel.Columns[c].Width)))
	if c == viewmodel.ColID {
		// Wide enough for the newest id (a million sessions have seven digits) and the
		// header's sort arrow, at the 13 px the widths are set for.
		digits := strconv.FormatUint(uint64(l.u.model.NewestID()), 10)
		need := fyne.MeasureText(digits+"▲", compactSizes[theme.SizeNameText], fyne.TextStyle{}).Width + 12
		w = max(w, need)
	}
	return w
}

func (l *sessionList) shown(c viewmodel.Column) bool {
	for _, v := range l.cols {
		if v == c {
			return true
		}
	}
	return false
}

func (l *sessionList) loadPrefs() {
	p := l.u.prefs
	l.cols = nil
	for _, k := range strings.Split(p.String(prefColumns), ",") {
		if c, ok := viewmodel.ColumnByKey(strings.TrimSpace(k)); ok {
			l.cols = append(l.cols, c)
		}
	}
	if len(l.cols) == 0 {
		for c := range viewmodel.NumColumns {
			if !viewmodel.Columns[c].Hidden {
				l.cols = append(l.cols, c)
			}
		}
	}
	if c, ok := viewmodel.ColumnByKey(p.String(prefSortCol)); ok {
		l.u.model.SortBy(c, p.Bool(prefSortDesc))
	}
}

// toggle shows or hides column c, keeping the default order.
func (l *sessionList) toggle(c viewmodel.Column, on bool) {
	var cols []viewmodel.Column
	for k := range viewmodel.NumColumns {
		has := l.shown(k)
		if k == c {
			has = on
		}
		if has {
			cols = append(cols, k)
		}
	}
	l.SetColumns(cols)
}

// columnsDialog lets the user set the preferred widths (the columns still stretch).
func (l *sessionList) columnsPopup(at fyne.Position) {
	box := container.NewVBox()
	for c := range viewmodel.NumColumns {
		chk := widget.NewCheck(viewmodel.Columns[c].Title, func(on bool) { l.toggle(c, on) })
		chk.Checked = l.shown(c)
		wEntry := widget.NewEntry()
		wEntry.SetText(strconv.Itoa(int(l.width(c))))
		wEntry.OnSubmitted = func(s string) {
			if v, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && v >= 20 && v <= 2000 {
				l.SetColumnWidth(c, float32(v))
			} else {
				wEntry.SetText(strconv.Itoa(int(l.width(c))))
			}
		}
		box.Add(container.NewBorder(nil, nil, nil, container.NewGridWrap(fyne.NewSize(60, wEntry.MinSize().Height), wEntry), chk))
	}
	box.Add(widget.NewLabel("Widths are shares: the columns stretch to the window. Enter to apply."))
	widget.ShowPopUpAtPosition(box, l.u.win.Canvas(), at)
}

// listRow is one row: a background drawn from the selection and one text per column.
type listRow struct {
	widget.BaseWidget
	l     *sessionList
	row   int
	id    session.ID
	bg    *canvas.Rectangle
	cells []*canvas.Text
	full  []string
	right []bool
	fit   []fitCache
	mods  fyne.KeyModifier // held at the last MouseDown
}

// fitCache remembers a cell's last fitting, so an unchanged cell costs no measuring.
type fitCache struct {
	full, text string
	avail, ts  float32
	style      fyne.TextStyle
	size       fyne.Size
}

func newListRow(l *sessionList) *listRow {
	r := &listRow{l: l, row: -1, bg: canvas.NewRectangle(color.Transparent)}
	r.ExtendBaseWidget(r)
	return r
}

func (r *listRow) ensureCells(n int) {
	for len(r.cells) < n {
		t := canvas.NewText("", theme.Color(theme.ColorNameForeground))
		t.TextSize = theme.TextSize()
		r.cells = append(r.cells, t)
		r.full = append(r.full, "")
		r.right = append(r.right, false)
		r.fit = append(r.fit, fitCache{})
	}
}

// Selected reports whether the row's session is in the selection (for tests).
func (r *listRow) Selected() bool { return r.row >= 0 && r.l.u.model.IsSelected(r.id) }

func (r *listRow) update(i int) {
	l := r.l
	r.row = i
	r.ensureCells(len(l.cols))
	s := l.u.model.At(i)
	if s == nil {
		r.id = 0
		for k := range r.cells {
			r.full[k] = ""
		}
		if len(r.full) > 0 {
			r.full[0] = "…" // a stored row whose page is being fetched
		}
		r.Refresh()
		return
	}
	r.id = s.ID
	class := viewmodel.StatusClass(s)
	fail := l.u.failure(s)
	for k, c := range l.cols {
		t := r.cells[k]
		t.TextStyle = fyne.TextStyle{Bold: c == viewmodel.ColStatus}
		t.Color = cellColor(class, c, s.InFlight)
		r.full[k] = viewmodel.CellText(s, c)
		switch {
		case c == viewmodel.ColOperation:
			r.full[k] = l.u.operation(s)
		case c == viewmodel.ColModel || c == viewmodel.ColTokens:
			r.full[k] = l.u.llmCell(s, c)
		case c == viewmodel.ColStatus && fail != "":
			// The call failed although HTTP says 200: its own outcome, in the error colour.
			r.full[k] = fail
			t.Color = theme.Color(theme.ColorNameError)
		}
		r.right[k] = viewmodel.Columns[c].Right
	}
	r.bg.FillColor = r.background(s)
	r.Refresh()
}

var markColors = map[string]color.NRGBA{
	"red":    {0xe0, 0x40, 0x40, 0x38},
	"orange": {0xe8, 0x90, 0x20, 0x38},
	"green":  {0x30, 0xb0, 0x50, 0x38},
	"blue":   {0x40, 0x80, 0xe0, 0x38},
	"purple": {0x90, 0x50, 0xd0, 0x38},
}

func (r *listRow) background(s *session.Summary) color.Color {
	if r.l.u.model.IsSelected(s.ID) {
		return theme.Color(theme.ColorNameSelection)
	}
	if c, ok := markColors[s.Mark]; ok {
		return c
	}
	return color.Transparent
}

// cellColor colours the status column by class, a failed exchange across the row, and
// in-flight rows dimmed.
func cellColor(class viewmodel.Class, c viewmodel.Column, inFlight bool) color.Color {
	switch {
	case class == viewmodel.ClassError:
		return theme.Color(theme.ColorNameError)
	case c == viewmodel.ColStatus:
		switch class {
		case viewmodel.ClassSuccess:
			return theme.Color(theme.ColorNameSuccess)
		case viewmodel.ClassRedirect, viewmodel.ClassInfo:
			return theme.Color(theme.ColorNamePrimary)
		case viewmodel.ClassClient:
			return theme.Color(theme.ColorNameWarning)
		case viewmodel.ClassServer:
			return theme.Color(theme.ColorNameError)
		case viewmodel.ClassInFlight:
			return theme.Color(theme.ColorNameDisabled)
		}
	case inFlight:
		return theme.Color(theme.ColorNameDisabled)
	}
	return theme.Color(theme.ColorNameForeground)
}

func (r *listRow) MouseDown(e *desktop.MouseEvent) { r.mods = e.Modifier }
func (r *listRow) MouseUp(*desktop.MouseEvent)     {}

func (r *listRow) Tapped(*fyne.PointEvent) {
	mods := r.mods
	r.mods = 0
	if d, ok := fyne.CurrentApp().Driver().(desktop.Driver); ok && mods == 0 {
		mods = d.CurrentKeyModifiers()
	}
	if r.row >= 0 {
		r.l.click(r.row, mods)
	}
}

// TappedSecondary opens the context menu; a row outside the selection is selected first.
func (r *listRow) TappedSecondary(e *fyne.PointEvent) {
	if r.row < 0 || r.l.u.model.At(r.row) == nil {
		return
	}
	if !r.l.u.model.IsSelected(r.id) {
		r.l.click(r.row, 0)
	}
	r.l.u.showContextMenu(e.AbsolutePosition)
}

func (r *listRow) MinSize() fyne.Size {
	return fyne.NewSize(40, r.l.rowHeight())
}

func (r *listRow) CreateRenderer() fyne.WidgetRenderer {
	r.ensureCells(len(r.l.cols))
	return &rowRenderer{r: r}
}

type rowRenderer struct{ r *listRow }

func (rr *rowRenderer) Destroy() {}

func (rr *rowRenderer) Objects() []fyne.CanvasObject {
	objs := make([]fyne.CanvasObject, 0, len(rr.r.cells)+1)
	objs = append(objs, rr.r.bg)
	for _, c := range rr.r.cells {
		objs = append(objs, c)
	}
	return objs
}

func (rr *rowRenderer) MinSize() fyne.Size { return rr.r.MinSize() }

func (rr *rowRenderer) Layout(size fyne.Size) {
	r := rr.r
	r.bg.Resize(size)
	r.bg.Move(fyne.NewPos(0, 0))
	ws := r.l.widths(size.Width)
	ts := theme.TextSize()
	x := float32(0)
	for k, t := range r.cells {
		if k >= len(ws) {
			t.Hide()
			continue
		}
		t.Show()
		t.TextSize = ts
		avail := ws[k] - 2*cellPad
		fc := &r.fit[k]
		if fc.full != r.full[k] || fc.avail != avail || fc.ts != ts || fc.style != t.TextStyle {
			fc.full, fc.avail, fc.ts, fc.style = r.full[k], avail, ts, t.TextStyle
			fc.text = fitText(r.full[k], avail, ts, t.TextStyle)
			fc.size = measure(fc.text, ts, t.TextStyle)
		}
		t.Text = fc.text
		tw := fc.size
		px := x + cellPad
		if r.right[k] {
			px = x + ws[k] - cellPad - tw.Width
		}
		t.Move(fyne.NewPos(px, (size.Height-tw.Height)/2))
		t.Resize(tw)
		x += ws[k]
	}
}

func (rr *rowRenderer) Refresh() {
	r := rr.r
	r.ensureCells(len(r.l.cols))
	if r.row >= 0 && r.id != 0 {
		if s := r.l.u.model.At(r.row); s != nil && s.ID == r.id {
			r.bg.FillColor = r.background(s)
		}
	}
	rr.Layout(r.Size())
	r.bg.Refresh()
	for _, t := range r.cells {
		t.Refresh()
	}
}

// measureKey and measured cache text sizes: the list measures the same few strings
// (statuses, methods, hosts, times) over and over. UI goroutine only; bounded.
type measureKey struct {
	s     string
	size  float32
	style fyne.TextStyle
}

var measured = map[measureKey]fyne.Size{}

func measure(s string, size float32, style fyne.TextStyle) fyne.Size {
	k := measureKey{s, size, style}
	if m, ok := measured[k]; ok {
		return m
	}
	if len(measured) > 50_000 {
		clear(measured)
	}
	m := fyne.MeasureText(s, size, style)
	measured[k] = m
	return m
}

// fitText cuts s with an ellipsis so that it fits in w.
func fitText(s string, w, size float32, style fyne.TextStyle) string {
	if s == "" || w <= 0 {
		return ""
	}
	if measure(s, size, style).Width <= w {
		return s
	}
	rs := []rune(s)
	lo, hi := 0, len(rs) // the longest prefix that fits with "…" is rs[:lo]
	for lo < hi {
		m := (lo + hi + 1) / 2
		if fyne.MeasureText(string(rs[:m])+"…", size, style).Width <= w {
			lo = m
		} else {
			hi = m - 1
		}
	}
	if lo == 0 {
		return ""
	}
	return string(rs[:lo]) + "…"
}

// listHeader is the column header: titles laid out like the rows, the sort column with an
// arrow icon (an icon, not a glyph some fonts lack). A click sorts; a right-click offers
// the columns.
type listHeader struct {
	widget.BaseWidget
	l *sessionList
}

func newListHeader(l *sessionList) *listHeader {
	h := &listHeader{l: l}
	h.ExtendBaseWidget(h)
	return h
}

// columnAt returns the visible column under x.
func (h *listHeader) columnAt(x float32) (viewmodel.Column, bool) {
	ws := h.l.widths(h.Size().Width)
	at := float32(0)
	for i, w := range ws {
		if x >= at && x < at+w {
			return h.l.cols[i], true
		}
		at += w
	}
	return 0, false
}

func (h *listHeader) Tapped(e *fyne.PointEvent) {
	if c, ok := h.columnAt(e.Position.X); ok {
		h.l.SortBy(c)
	}
}

func (h *listHeader) TappedSecondary(e *fyne.PointEvent) { h.l.columnsPopup(e.AbsolutePosition) }

// SortIcon is the icon drawn in the sort column's header (for tests).
func (h *listHeader) SortIcon() fyne.Resource {
	if _, desc := h.l.u.model.Sort(); desc {
		return theme.MenuDropDownIcon()
	}
	return theme.MenuDropUpIcon()
}

func (h *listHeader) CreateRenderer() fyne.WidgetRenderer {
	hr := &headerRenderer{h: h, bg: canvas.NewRectangle(theme.Color(theme.ColorNameHeaderBackground)),
		line: canvas.NewRectangle(theme.Color(theme.ColorNameSeparator)), icon: widget.NewIcon(nil)}
	hr.rebuild()
	return hr
}

type headerRenderer struct {
	h      *listHeader
	bg     *canvas.Rectangle
	line   *canvas.Rectangle
	titles []*canvas.Text
	icon   *widget.Icon
}

func (hr *headerRenderer) rebuild() {
	for len(hr.titles) < int(viewmodel.NumColumns) {
		t := canvas.NewText("", theme.Color(theme.ColorNameForeground))
		t.TextStyle = fyne.TextStyle{Bold: true}
		hr.titles = append(hr.titles, t)
	}
}

func (hr *headerRenderer) Destroy() {}

func (hr *headerRenderer) Objects() []fyne.CanvasObject {
	objs := []fyne.CanvasObject{hr.bg, hr.line}
	for _, t := range hr.titles {
		objs = append(objs, t)
	}
	return append(objs, hr.icon)
}

func (hr *headerRenderer) MinSize() fyne.Size {
	return fyne.NewSize(40, hr.h.l.rowHeight()+1)
}

func (hr *headerRenderer) Layout(size fyne.Size) {
	l := hr.h.l
	hr.bg.Resize(size)
	hr.line.Move(fyne.NewPos(0, size.Height-1))
	hr.line.Resize(fyne.NewSize(size.Width, 1))
	ws := l.widths(size.Width)
	ts := theme.TextSize()
	sortCol, _ := l.u.model.Sort()
	iconSz := ts
	hr.icon.Hide()
	x := float32(0)
	for k, t := range hr.titles {
		if k >= len(ws) {
			t.Hide()
			continue
		}
		c := l.cols[k]
		t.Show()
		t.TextSize = ts
		t.Color = theme.Color(theme.ColorNameForeground)
		avail := ws[k] - 2*cellPad
		if c == sortCol {
			avail -= iconSz
		}
		t.Text = fitText(viewmodel.Columns[c].Title, avail, ts, t.TextStyle)
		tw := fyne.MeasureText(t.Text, ts, t.TextStyle)
		px := x + cellPad
		if viewmodel.Columns[c].Right {
			px = x + ws[k] - cellPad - tw.Width
			if c == sortCol {
				px -= iconSz
			}
		}
		t.Move(fyne.NewPos(px, (size.Height-tw.Height)/2))
		t.Resize(tw)
		if c == sortCol {
			hr.icon.SetResource(hr.h.SortIcon())
			hr.icon.Resize(fyne.NewSize(iconSz, iconSz))
			hr.icon.Move(fyne.NewPos(px+tw.Width, (size.Height-iconSz)/2))
			hr.icon.Show()
		}
		x += ws[k]
	}
}

func (hr *headerRenderer) Refresh() {
	hr.bg.FillColor = theme.Color(theme.ColorNameHeaderBackground)
	hr.line.FillColor = theme.Color(theme.ColorNameSeparator)
	hr.Layout(hr.h.Size())
	hr.bg.Refresh()
	for _, t := range hr.titles {
		t.Refresh()
	}
	hr.icon.Refresh()
}

// listFocus wraps the list pane and takes the keyboard: Up/Down select (Shift extends),
// Page Up/Down, Home/End, Enter focuses the detail, Delete deletes the selection, Esc
// clears the filter, the menu key opens the context menu, Ctrl+A selects all.
type listFocus struct {
	widget.BaseWidget
	l       *sessionList
	content fyne.CanvasObject
	shift   bool
	focused bool
}

func newListFocus(l *sessionList, content fyne.CanvasObject) *listFocus {
	f := &listFocus{l: l, content: content}
	f.ExtendBaseWidget(f)
	return f
}

func (f *listFocus) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(f.content) }

func (f *listFocus) FocusGained()   { f.focused = true }
func (f *listFocus) FocusLost()     { f.focused, f.shift = false, false }
func (f *listFocus) TypedRune(rune) {}

func (f *listFocus) KeyDown(e *fyne.KeyEvent) {
	if e.Name == desktop.KeyShiftLeft || e.Name == desktop.KeyShiftRight {
		f.shift = true
	}
}

func (f *listFocus) KeyUp(e *fyne.KeyEvent) {
	if e.Name == desktop.KeyShiftLeft || e.Name == desktop.KeyShiftRight {
		f.shift = false
	}
}

// pageRows is how many rows one page key moves.
func (f *listFocus) pageRows() int {
	return max(int(f.l.list.Size().Height/f.l.rowHeight())-1, 1)
}

func (f *listFocus) TypedKey(e *fyne.KeyEvent) {
	u := f.l.u
	switch e.Name {
	case fyne.KeyUp:
		u.step(-1, f.shift)
	case fyne.KeyDown:
		u.step(1, f.shift)
	case fyne.KeyPageUp:
		u.step(-f.pageRows(), f.shift)
	case fyne.KeyPageDown:
		u.step(f.pageRows(), f.shift)
	case fyne.KeyHome:
		u.step(-u.model.Len(), f.shift)
	case fyne.KeyEnd:
		u.step(u.model.Len(), f.shift)
	case fyne.KeyReturn, fyne.KeyEnter:
		u.detail.focus()
	case fyne.KeyDelete:
		u.DeleteSelection()
	case fyne.KeyEscape:
		u.filter.clear()
	case desktop.KeyMenu:
		u.showContextMenu(u.contextMenuPos())
	}
}

func (f *listFocus) TypedShortcut(s fyne.Shortcut) {
	switch s.(type) {
	case *fyne.ShortcutSelectAll:
		f.l.u.SelectAll()
	case *fyne.ShortcutCopy:
		f.l.u.CopyURL()
	default:
		f.l.u.shortcut(s)
	}
}
