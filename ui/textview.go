package ui

import (
	"image/color"
	"sort"
	"strings"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/ui/render"
)

// textView is a read-only monospace text drawn virtualised: a widget.List of visual rows
// where only the rows on screen exist, so a multi-megabyte text (or a single 3 MB line)
// costs what a screenful costs. Lines are wrapped at the view width (or, with wrapping
// off, clipped there); the rows come from a render.Lines index or a hex dump drawn on
// demand. Find marks each match itself (a hex dump: its row).
type textView struct {
	u    *UI
	list *widget.List
	box  fyne.CanvasObject
	src  render.LineSource
	text string // the full text ("" for a hex source)
	wrap bool
	cols int // characters per visual row as last laid out
	rows *render.Lines
	hits []int // the visual row of each find match (where it starts), ascending
	cur  int   // index into hits of the current match, -1 none
	// marks are the find matches' column ranges per visual row (text; a hex dump marks
	// whole rows): a match that wraps has a range on each of its rows.
	marks map[int][]findMark
	charW float32
	// charSize is the text size charW was measured at.
	charSize float32
	// lang highlights the rows (render.Tokens); spans caches them per visual row.
	lang  string
	spans map[int]cachedSpans
	// lineSpans are the spans of the last whole line highlighted for its wrapped rows.
	lineSpans cachedSpans
	// created counts row objects made (the virtualisation test reads it).
	created int
}

func newTextView(u *UI) *textView {
	t := &textView{u: u, wrap: true, cur: -1, spans: map[int]cachedSpans{}}
	t.list = widget.NewList(
		func() int {
			if t.src == nil {
				return 0
			}
			return t.src.Len()
		},
		func() fyne.CanvasObject {
			t.created++
			return newTextRow(t)
		},
		t.updateRow,
	)
	t.list.HideSeparators = true
	t.box = &widthWatcher{content: container.NewThemeOverride(t.list, &packedTheme{}), onWidth: t.relayout}
	t.box.(*widthWatcher).ExtendBaseWidget(t.box.(*widthWatcher))
	return t
}

func (t *textView) updateRow(i widget.ListItemID, o fyne.CanvasObject) {
	r := o.(*textRow)
	line := ""
	if t.src != nil && i < t.src.Len() {
		line = strings.ReplaceAll(t.src.Line(i), "\t", "    ")
	}
	var spans []render.Span
	if t.lang != "" {
		if sp, ok := t.spans[i]; ok && sp.line == line {
			spans = sp.spans
		} else {
			spans = t.rowTokens(i, line)
			if len(t.spans) > 2000 {
				clear(t.spans)
			}
			t.spans[i] = cachedSpans{line, spans}
		}
	} else {
		spans = []render.Span{{Text: line}}
	}
	r.bg.FillColor = color.Transparent
	r.marks = r.marks[:0]
	if t.rows != nil {
		r.marks = append(r.marks, t.marks[i]...)
	} else if k := sort.SearchInts(t.hits, i); k < len(t.hits) && t.hits[k] == i {
		r.bg.FillColor = otherMatch // a hex row
		if t.cur >= 0 && t.hits[t.cur] == i {
			r.bg.FillColor = currentMatch
		}
	}
	r.set(spans)
}

// rowTokens highlights visual row i (text line): in the context of its whole line when
// the row is part of a wrapped line, so a string that wraps stays a string (its hex
// digits were coloured as numbers on the next row).
func (t *textView) rowTokens(i int, line string) []render.Span {
	if t.rows == nil || !t.rows.Wrap() {
		return render.Tokens(t.lang, line)
	}
	whole, from, to, ok := t.rows.LineOf(i, render.MaxTokenLine)
	if !ok || len(whole) == len(line) || strings.Contains(whole, "\t") { // tabs are widened per row
		return render.Tokens(t.lang, line)
	}
	if t.lineSpans.line != whole {
		t.lineSpans = cachedSpans{whole, render.Tokens(t.lang, whole)}
	}
	return render.SliceSpans(t.lineSpans.spans, from, to)
}

// Find marks: a marker-pen yellow for the matching rows, orange for the current one; the
// syntax colours stay readable over both, in the light and the dark theme.
var (
	otherMatch   = color.NRGBA{0xf0, 0xc8, 0x20, 0x48}
	currentMatch = color.NRGBA{0xf0, 0x90, 0x20, 0x90}
)

// cachedSpans are the highlighted spans of a row as last drawn.
type cachedSpans struct {
	line  string
	spans []render.Span
}

// tokenColor is the colour of a highlighted span.
func tokenColor(c render.TokenClass) color.Color {
	switch c {
	case render.TokTag:
		return theme.Color(theme.ColorNamePrimary)
	case render.TokAttr:
		return theme.Color(theme.ColorNameHyperlink)
	case render.TokString:
		return theme.Color(theme.ColorNameSuccess)
	case render.TokNumber:
		return theme.Color(theme.ColorNameWarning)
	case render.TokKeyword:
		return theme.Color(theme.ColorNameError)
	case render.TokComment, render.TokPunct:
		return theme.Color(theme.ColorNamePlaceHolder)
	}
	return theme.Color(theme.ColorNameForeground)
}

// findMark is one find match's part of a visual row: columns [from, to), tabs expanded
// as drawn; match is its index in textView.hits (the current one is drawn orange).
type findMark struct{ from, to, match int }

// textRow is one visual row: a background (a hex row's find mark), the find marks of
// matches and the row's spans, placed by the monospace character width.
type textRow struct {
	widget.BaseWidget
	t     *textView
	bg    *canvas.Rectangle
	marks []findMark
	rects []*canvas.Rectangle
	segs  []*canvas.Text
	n     int // segments in use
}

func newTextRow(t *textView) *textRow {
	r := &textRow{t: t, bg: canvas.NewRectangle(color.Transparent)}
	r.ExtendBaseWidget(r)
	return r
}

func (r *textRow) set(spans []render.Span) {
	for len(r.rects) < len(r.marks) {
		r.rects = append(r.rects, canvas.NewRectangle(otherMatch))
	}
	for k, m := range r.marks {
		r.rects[k].FillColor = otherMatch
		if m.match == r.t.cur {
			r.rects[k].FillColor = currentMatch
		}
	}
	for len(r.segs) < len(spans) {
		tx := canvas.NewText("", theme.Color(theme.ColorNameForeground))
		tx.TextStyle = fyne.TextStyle{Monospace: true}
		r.segs = append(r.segs, tx)
	}
	r.n = len(spans)
	for k, sp := range spans {
		r.segs[k].Text = sp.Text
		r.segs[k].Color = tokenColor(sp.Class)
	}
	for k := len(spans); k < len(r.segs); k++ {
		r.segs[k].Text = ""
	}
	r.Refresh()
}

// Tapped puts the keyboard in the text (Ctrl+F then finds in it).
func (r *textRow) Tapped(*fyne.PointEvent) {
	r.t.u.inDetail = true
	if c := fyne.CurrentApp().Driver().CanvasForObject(r); c != nil {
		c.Focus(r.t.list)
	}
}

func (r *textRow) MinSize() fyne.Size {
	return fyne.NewSize(10, fyne.MeasureText("Mg", monoSize(), fyne.TextStyle{Monospace: true}).Height)
}

func (r *textRow) CreateRenderer() fyne.WidgetRenderer { return &textRowRenderer{r: r} }

type textRowRenderer struct{ r *textRow }

func (rr *textRowRenderer) Destroy()           {}
func (rr *textRowRenderer) MinSize() fyne.Size { return rr.r.MinSize() }

func (rr *textRowRenderer) Objects() []fyne.CanvasObject {
	objs := []fyne.CanvasObject{rr.r.bg}
	for _, m := range rr.r.rects {
		objs = append(objs, m)
	}
	for _, s := range rr.r.segs {
		objs = append(objs, s)
	}
	return objs
}

func (rr *textRowRenderer) Layout(size fyne.Size) {
	r := rr.r
	r.bg.Resize(size)
	ts := monoSize()
	cw := r.t.charWidth()
	h := fyne.MeasureText("Mg", ts, fyne.TextStyle{Monospace: true}).Height
	x := 2 * theme.Padding()
	for k, m := range r.rects {
		if k >= len(r.marks) {
			m.Hide()
			continue
		}
		mk := r.marks[k]
		m.Move(fyne.NewPos(x+float32(mk.from)*cw, 0))
		m.Resize(fyne.NewSize(float32(mk.to-mk.from)*cw, size.Height))
		m.Show()
	}
	for k, s := range r.segs {
		s.TextSize = ts
		if k >= r.n {
			s.Hide()
			continue
		}
		s.Show()
		w := float32(utf8.RuneCountInString(s.Text)) * cw
		s.Move(fyne.NewPos(x, (size.Height-h)/2))
		s.Resize(fyne.NewSize(w, h))
		x += w
	}
}

func (rr *textRowRenderer) Refresh() {
	rr.Layout(rr.r.Size())
	rr.r.bg.Refresh()
	for _, m := range rr.r.rects[:min(len(rr.r.marks), len(rr.r.rects))] {
		m.Refresh()
	}
	for _, s := range rr.r.segs[:rr.r.n] {
		s.Refresh()
	}
}

// set shows a text (wrapped at the view width).
func (t *textView) set(s string) { t.setIndexed(s, nil) }

// setIndexed shows a text with its row index when one was made for this width and
// wrapping (off the UI goroutine), else indexes it.
func (t *textView) setIndexed(s string, rows *render.Lines) {
	t.text = s
	t.hits, t.cur, t.marks = nil, -1, nil
	clear(t.spans)
	t.lineSpans = cachedSpans{}
	cols := t.colsFor(t.box.Size().Width)
	if rows == nil || rows.Cols() != cols || rows.Wrap() != t.wrap {
		rows = render.NewLines(s, cols, t.wrap)
	}
	t.rows = rows
	t.cols = cols
	t.src = t.rows
	t.list.ScrollToTop()
	t.list.Refresh()
}

// setSource shows lines that are not one text (a hex dump).
func (t *textView) setSource(src render.LineSource) {
	t.text, t.rows = "", nil
	t.hits, t.cur, t.marks = nil, -1, nil
	t.src = src
	t.list.ScrollToTop()
	t.list.Refresh()
}

// Text is the whole text shown ("" for a hex dump), for tests and Copy.
func (t *textView) Text() string { return t.text }

// setWrap turns wrapping at the view width on or off (off: long lines are clipped).
func (t *textView) setWrap(on bool) {
	t.wrap = on
	t.cols = 0
	t.relayout(t.box.Size().Width)
}

// charWidth is the width of one monospace character at the current size.
func (t *textView) charWidth() float32 {
	if sz := monoSize(); t.charW == 0 || t.charSize != sz {
		t.charW = fyne.MeasureText("0123456789", sz, fyne.TextStyle{Monospace: true}).Width / 10
		t.charSize = sz
	}
	return t.charW
}

// setLang sets the language the rows are highlighted in ("" plain).
func (t *textView) setLang(lang string) {
	t.lang = lang
	clear(t.spans)
	t.lineSpans = cachedSpans{}
}

func (t *textView) colsFor(w float32) int {
	c := int((w - 4*theme.Padding() - theme.ScrollBarSize()) / max(t.charWidth(), 1))
	return max(c, 20)
}

// relayout rewraps the text after the view's width changed.
func (t *textView) relayout(w float32) {
	if t.rows == nil || w <= 0 {
		return
	}
	c := t.colsFor(w)
	if c == t.cols && t.rows.Wrap() == t.wrap {
		return
	}
	t.cols = c
	t.rows = render.NewLines(t.text, c, t.wrap)
	t.src = t.rows
	t.hits, t.cur, t.marks = nil, -1, nil
	t.list.Refresh()
}

// widthWatcher lays out one object and reports width changes.
type widthWatcher struct {
	widget.BaseWidget
	content fyne.CanvasObject
	onWidth func(float32)
	last    float32
}

func (w *widthWatcher) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(w.content)
}

func (w *widthWatcher) Resize(s fyne.Size) {
	w.BaseWidget.Resize(s)
	if s.Width != w.last {
		w.last = s.Width
		if w.onWidth != nil {
			w.onWidth(s.Width)
		}
	}
}

// find marks the rows matching q (case-insensitive) and returns how many matches there
// are (bounded by render.MaxMatches).
func (t *textView) find(q string) int {
	t.hits, t.cur, t.marks = nil, -1, nil
	if q == "" || t.src == nil {
		t.list.Refresh()
		return 0
	}
	var n int
	if t.rows != nil {
		offs := render.FindAll(t.text, q, render.MaxMatches)
		n = len(offs)
		t.marks = make(map[int][]findMark, n)
		for k, off := range offs {
			r := t.rows.RowOf(off)
			t.hits = append(t.hits, r)
			t.markMatch(k, r, off, off+len(q))
		}
	} else if hs, ok := t.src.(*render.HexLines); ok {
		t.hits = hs.Find(q, render.MaxMatches)
		n = len(t.hits)
	}
	if len(t.hits) > 0 {
		t.cur = 0
		t.showRow(t.hits[0])
	}
	t.list.Refresh()
	return n
}

// markMatch records match k, bytes [from, to) of the text starting on visual row r, as
// column ranges of each row it covers.
func (t *textView) markMatch(k, r, from, to int) {
	for ; r < t.rows.Len(); r++ {
		start, end := t.rows.Span(r)
		if start >= to {
			return
		}
		a, b := max(from, start), min(to, end)
		if b > a {
			t.marks[r] = append(t.marks[r], findMark{from: drawnCols(t.text[start:a]), to: drawnCols(t.text[start:b]), match: k})
		}
		if end >= to {
			return
		}
	}
}

// drawnCols is the number of columns s takes as a row draws it (a tab is four).
func drawnCols(s string) int {
	return utf8.RuneCountInString(s) + 3*strings.Count(s, "\t")
}

// next moves to the next (+1) or previous (-1) match; it returns the 1-based position of
// the current match, or 0.
func (t *textView) next(d int) int {
	if len(t.hits) == 0 {
		return 0
	}
	t.cur = (t.cur + d + len(t.hits)) % len(t.hits)
	t.showRow(t.hits[t.cur])
	t.list.Refresh()
	return t.cur + 1
}

// showRow scrolls a find match into view a third of the way down, not at the edge where
// ScrollTo leaves it; a row already well inside the view stays where it is.
func (t *textView) showRow(i int) {
	h := t.list.Size().Height
	pitch := fyne.MeasureText("Mg", monoSize(), fyne.TextStyle{Monospace: true}).Height // textRow.MinSize: rows are packed
	if h <= 0 || pitch <= 0 {
		t.list.ScrollTo(i)
		return
	}
	y := float32(i) * pitch
	off := t.list.GetScrollOffset()
	if y >= off+pitch && y+2*pitch <= off+h {
		return
	}
	t.list.ScrollToOffset(max(y-h/3, 0))
}
