package ui

import (
	"image/color"
	"sort"
	"strings"

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
// demand. Find highlights matching rows.
type textView struct {
	u     *UI
	list  *widget.List
	box   fyne.CanvasObject
	src   render.LineSource
	text  string // the full text ("" for a hex source)
	wrap  bool
	cols  int // characters per visual row as last laid out
	rows  *render.Lines
	hits  []int // visual rows holding a find match, ascending
	cur   int   // index into hits of the current match, -1 none
	charW float32
	// created counts row objects made (the virtualisation test reads it).
	created int
}

func newTextView(u *UI) *textView {
	t := &textView{u: u, wrap: true, cur: -1}
	t.list = widget.NewList(
		func() int {
			if t.src == nil {
				return 0
			}
			return t.src.Len()
		},
		func() fyne.CanvasObject {
			t.created++
			bg := canvas.NewRectangle(color.Transparent)
			txt := canvas.NewText("", theme.Color(theme.ColorNameForeground))
			txt.TextStyle = fyne.TextStyle{Monospace: true}
			return container.NewStack(bg, container.NewPadded(txt))
		},
		t.updateRow,
	)
	t.box = &widthWatcher{content: t.list, onWidth: t.relayout}
	t.box.(*widthWatcher).ExtendBaseWidget(t.box.(*widthWatcher))
	return t
}

func (t *textView) updateRow(i widget.ListItemID, o fyne.CanvasObject) {
	st := o.(*fyne.Container)
	bg := st.Objects[0].(*canvas.Rectangle)
	txt := st.Objects[1].(*fyne.Container).Objects[0].(*canvas.Text)
	txt.TextSize = monoSize()
	txt.Color = theme.Color(theme.ColorNameForeground)
	txt.Text = ""
	if t.src != nil && i < t.src.Len() {
		txt.Text = strings.ReplaceAll(t.src.Line(i), "\t", "    ")
	}
	switch k := sort.SearchInts(t.hits, i); {
	case k < len(t.hits) && t.hits[k] == i && t.cur >= 0 && t.hits[t.cur] == i:
		bg.FillColor = theme.Color(theme.ColorNamePrimary)
	case k < len(t.hits) && t.hits[k] == i:
		bg.FillColor = theme.Color(theme.ColorNameSelection)
	default:
		bg.FillColor = color.Transparent
	}
	bg.Refresh()
	txt.Refresh()
}

// set shows a text (wrapped at the view width).
func (t *textView) set(s string) {
	t.text = s
	t.hits, t.cur = nil, -1
	t.rows = render.NewLines(s, t.colsFor(t.box.Size().Width), t.wrap)
	t.src = t.rows
	t.list.ScrollToTop()
	t.list.Refresh()
}

// setSource shows lines that are not one text (a hex dump).
func (t *textView) setSource(src render.LineSource) {
	t.text, t.rows = "", nil
	t.hits, t.cur = nil, -1
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

func (t *textView) colsFor(w float32) int {
	if t.charW == 0 {
		t.charW = fyne.MeasureText("0123456789", monoSize(), fyne.TextStyle{Monospace: true}).Width / 10
	}
	c := int((w - 4*theme.Padding() - theme.ScrollBarSize()) / max(t.charW, 1))
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
	t.hits = nil
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
	t.hits, t.cur = nil, -1
	if q == "" || t.src == nil {
		t.list.Refresh()
		return 0
	}
	var n int
	if t.rows != nil {
		offs := render.FindAll(t.text, q, render.MaxMatches)
		n = len(offs)
		for _, off := range offs {
			r := t.rows.RowOf(off)
			if len(t.hits) == 0 || t.hits[len(t.hits)-1] != r {
				t.hits = append(t.hits, r)
			}
		}
	} else if hs, ok := t.src.(*render.HexLines); ok {
		t.hits = hs.Find(q, render.MaxMatches)
		n = len(t.hits)
	}
	if len(t.hits) > 0 {
		t.cur = 0
		t.list.ScrollTo(t.hits[0])
	}
	t.list.Refresh()
	return n
}

// next moves to the next (+1) or previous (-1) matching row; it returns the 1-based
// position of the current match row, or 0.
func (t *textView) next(d int) int {
	if len(t.hits) == 0 {
		return 0
	}
	t.cur = (t.cur + d + len(t.hits)) % len(t.hits)
	t.list.ScrollTo(t.hits[t.cur])
	t.list.Refresh()
	return t.cur + 1
}
