package ui

import (
	"fmt"
	"image/color"
	"net/url"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/diff"
	"inspector/engine/session"
)

// The compare windows. Their data comes ready from diff; these files only draw.
// Call the constructors on the UI goroutine.

// opColor is the text colour of a diff op: changed amber, added green, removed red,
// ignored greyed, equal the foreground.
func opColor(op diff.Op) color.Color {
	switch op {
	case diff.OpAdded:
		return theme.Color(theme.ColorNameSuccess)
	case diff.OpRemoved:
		return theme.Color(theme.ColorNameError)
	case diff.OpChanged:
		return theme.Color(theme.ColorNameWarning)
	case diff.OpIgnored:
		return theme.Color(theme.ColorNameDisabled)
	}
	return theme.Color(theme.ColorNameForeground)
}

// opTint is the cell background of a diff op, a light wash of its colour.
func opTint(op diff.Op) color.Color {
	if op == diff.OpEqual || op == diff.OpIgnored {
		return color.Transparent
	}
	r, g, b, _ := opColor(op).RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 0x30}
}

// diffCell is one cell: a tinted background and a monospace line, cut with an ellipsis
// when it is wider than the column.
type diffCell struct {
	bg   *canvas.Rectangle
	text *widget.Label
	box  *fyne.Container
}

func newDiffCell() *diffCell {
	c := &diffCell{bg: canvas.NewRectangle(color.Transparent), text: widget.NewLabel("")}
	c.text.Truncation = fyne.TextTruncateEllipsis
	c.text.TextStyle = fyne.TextStyle{Monospace: true}
	c.box = container.NewStack(c.bg, c.text)
	return c
}

// opImportance is the label importance whose colour is opColor(op).
func opImportance(op diff.Op) widget.Importance {
	switch op {
	case diff.OpAdded:
		return widget.SuccessImportance
	case diff.OpRemoved:
		return widget.DangerImportance
	case diff.OpChanged:
		return widget.WarningImportance
	case diff.OpIgnored:
		return widget.LowImportance
	}
	return widget.MediumImportance
}

func (c *diffCell) set(s string, op diff.Op, bold bool) {
	c.text.Text = s
	c.text.Importance = opImportance(op)
	c.text.TextStyle = fyne.TextStyle{Monospace: !bold, Bold: bold}
	c.bg.FillColor = opTint(op)
	if s == "" {
		c.bg.FillColor = color.Transparent
	}
	c.text.Refresh()
	c.bg.Refresh()
}

// diffRow is one list row: two cells side by side.
type diffRow struct {
	widget.BaseWidget
	l, r *diffCell
	box  *fyne.Container
}

func newDiffRow() *diffRow {
	d := &diffRow{l: newDiffCell(), r: newDiffCell()}
	d.box = container.NewGridWithColumns(2, d.l.box, d.r.box)
	d.ExtendBaseWidget(d)
	return d
}

func (d *diffRow) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(d.box) }

// ExchangeDiffView is the exchange diff drawn side by side: A on the left, B on the
// right, one row per field or line.
type ExchangeDiffView struct {
	Rows    []diff.SideRow
	Summary *widget.Label
	List    *widget.List
	// Ignore puts the selected header or JSON member on the ignore list of A's host
	// (only in windows given a data directory; nil otherwise).
	Ignore *widget.Button
	// Status reports what Ignore did.
	Status  *widget.Label
	Content fyne.CanvasObject
}

func exchangeSummary(e *diff.Exchange) string {
	if e.Equal {
		return fmt.Sprintf("#%d vs #%d: equal (%d ignored differences, greyed)", e.A, e.B, e.Ignored)
	}
	return fmt.Sprintf("#%d vs #%d: %d changes, %d ignored (greyed)", e.A, e.B, e.Changes, e.Ignored)
}

// show replaces the diff shown.
func (v *ExchangeDiffView) show(e *diff.Exchange) {
	v.Rows = e.SideBySide()
	v.Summary.SetText(exchangeSummary(e))
	v.List.UnselectAll()
	v.List.Refresh()
}

// NewExchangeDiffView lays out e.
func NewExchangeDiffView(e *diff.Exchange) *ExchangeDiffView {
	v := &ExchangeDiffView{Rows: e.SideBySide(), Status: widget.NewLabel("")}
	v.Summary = widget.NewLabelWithStyle(exchangeSummary(e), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.List = widget.NewList(func() int { return len(v.Rows) },
		func() fyne.CanvasObject { return newDiffRow() },
		func(i widget.ListItemID, o fyne.CanvasObject) {
			c := o.(*diffRow)
			sr := v.Rows[i]
			if sr.Section != "" {
				c.l.set(sr.Section, diff.OpEqual, true)
				c.r.set("", diff.OpEqual, true)
				return
			}
			c.l.set(sr.Left, sr.Op, false)
			c.r.set(sr.Right, sr.Op, false)
		})
	head := container.NewGridWithColumns(2,
		widget.NewLabelWithStyle(fmt.Sprintf("A  #%d", e.A), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		widget.NewLabelWithStyle(fmt.Sprintf("B  #%d", e.B), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	v.Content = container.NewBorder(container.NewVBox(v.Summary, head, widget.NewSeparator()), v.Status, nil, nil, v.List)
	return v
}

// NewExchangeDiffWindow opens a window comparing two sessions (the context menu's
// "Compare with…"). ig is the ignore list (diff.LoadIgnore of the data directory; nil
// ignores nothing). With a data directory, an "Ignore" button puts the selected header
// or JSON member (element indexes as [*]) on the list for A's host and saves it to
// DATA_DIR/diff-ignore.json.
func NewExchangeDiffWindow(a fyne.App, sa, sb *session.Session, ig *diff.IgnoreConfig, dataDir string) (fyne.Window, *ExchangeDiffView) {
	v := NewExchangeDiffView(diff.Exchanges(sa, sb, ig))
	w := a.NewWindow(fmt.Sprintf("Compare #%d with #%d", sa.ID, sb.ID))
	if dataDir != "" && ig != nil {
		host := ""
		if u, err := url.Parse(sa.Request.URL); err == nil {
			host = u.Hostname()
		}
		var sel *diff.SideRow
		v.Ignore = widget.NewButton("Ignore for "+host, func() {
			if sel == nil {
				return
			}
			changed, err := ig.Add(host, sel.Kind, sel.Field)
			if err == nil && changed {
				err = ig.Save(dataDir)
			}
			switch {
			case err != nil:
				v.Status.SetText("Not saved: " + err.Error())
			case changed:
				v.Status.SetText(fmt.Sprintf("%s is ignored for %s (saved to %s).", sel.Field, host, diff.IgnoreFile))
			default:
				v.Status.SetText(sel.Field + " was ignored already.")
			}
			v.show(diff.Exchanges(sa, sb, ig))
		})
		v.Ignore.Disable()
		v.List.OnSelected = func(i widget.ListItemID) {
			defer func() { v.Content.Refresh() }() // the button's width follows its text
			if r := v.Rows[i]; r.Kind != "" {
				sel = &r
				v.Ignore.SetText(fmt.Sprintf("Ignore %s for %s", r.Field, host))
				v.Ignore.Enable()
				return
			}
			sel = nil
			v.Ignore.Disable()
		}
		v.Content = container.NewBorder(nil, container.NewHBox(v.Ignore), nil, nil, v.Content)
	}
	w.SetContent(v.Content)
	w.Resize(fyne.NewSize(1100, 700))
	closeKeys(w, true)
	return w, v
}

// RecordingDiffView is the recording diff: the summary line, the calls of A and B in two
// columns (missing red on the left, new green on the right, changed amber, slower
// amber), and the changes of the selected row. Selecting a matched pair calls OnOpen.
type RecordingDiffView struct {
	Result  *diff.Recording
	Rows    []diff.Row
	Summary *widget.Label
	List    *widget.List
	Detail  *widget.Label
	// OnOpen opens a matched pair in the exchange diff; nil does nothing.
	OnOpen  func(p diff.Pair)
	Content fyne.CanvasObject
}

func callText(c *diff.Call, side string) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf("%s#%d  %d  %.0fms  %s %s", side, c.Index+1, c.Status, c.Duration, c.Method, c.URL)
}

func rowOp(kind string) (left, right diff.Op) {
	switch kind {
	case "missing":
		return diff.OpRemoved, diff.OpEqual
	case "new":
		return diff.OpEqual, diff.OpAdded
	case "changed", "slower":
		return diff.OpChanged, diff.OpChanged
	}
	return diff.OpEqual, diff.OpEqual
}

// NewRecordingDiffView lays out r.
func NewRecordingDiffView(r *diff.Recording) *RecordingDiffView {
	v := &RecordingDiffView{Result: r, Rows: r.LayoutRows()}
	v.Summary = widget.NewLabelWithStyle(r.SummaryLine(), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.Detail = widget.NewLabel("Select a row; a matched pair opens in the exchange diff.")
	v.List = widget.NewList(func() int { return len(v.Rows) },
		func() fyne.CanvasObject { return newDiffRow() },
		func(i widget.ListItemID, o fyne.CanvasObject) {
			c := o.(*diffRow)
			row := v.Rows[i]
			lo, ro := rowOp(row.Kind)
			right := callText(row.B, "B")
			if row.Pair != nil && row.Pair.Slower {
				right = "slower " + right
			}
			c.l.set(callText(row.A, "A"), lo, false)
			c.r.set(right, ro, false)
		})
	v.List.OnSelected = func(i widget.ListItemID) {
		defer func() { v.Content.Refresh() }() // the detail's height changes with its text
		row := v.Rows[i]
		switch {
		case row.Pair == nil && row.A != nil:
			v.Detail.SetText(fmt.Sprintf("Only in A: %s %s (%d)", row.A.Method, row.A.URL, row.A.Status))
		case row.Pair == nil:
			v.Detail.SetText(fmt.Sprintf("Only in B: %s %s (%d)", row.B.Method, row.B.URL, row.B.Status))
		default:
			p := row.Pair
			msg := "Matched, no difference."
			if len(p.Changes) > 0 || p.Slower {
				msg = ""
				for _, c := range p.Changes {
					msg += c + "\n"
				}
				if p.Slower {
					msg += fmt.Sprintf("slower: %.0fms → %.0fms\n", p.A.Duration, p.B.Duration)
				}
			}
			v.Detail.SetText(msg)
			if v.OnOpen != nil {
				v.OnOpen(*p)
			}
		}
	}
	head := container.NewGridWithColumns(2,
		widget.NewLabelWithStyle(fmt.Sprintf("A  %s  (%d calls)", r.A, r.Summary.CallsA), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		widget.NewLabelWithStyle(fmt.Sprintf("B  %s  (%d calls)", r.B, r.Summary.CallsB), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	v.Content = container.NewBorder(container.NewVBox(v.Summary, head, widget.NewSeparator()), v.Detail, nil, nil, v.List)
	return v
}

// NewRecordingDiffWindow opens a window with the recording diff r. load fetches a
// session by id for the exchange diff of a selected pair (the store's Get; nil: pairs do
// not open, as for HAR files, whose calls are not in the store); ig and dataDir are passed
// to that exchange diff.
func NewRecordingDiffWindow(a fyne.App, r *diff.Recording, load func(session.ID) (*session.Session, error), ig *diff.IgnoreConfig, dataDir string) (fyne.Window, *RecordingDiffView) {
	v := NewRecordingDiffView(r)
	w := a.NewWindow("Compare recordings: " + r.A + " vs " + r.B)
	if load != nil {
		v.OnOpen = func(p diff.Pair) {
			sa, errA := load(p.A.ID)
			sb, errB := load(p.B.ID)
			if errA != nil || errB != nil {
				v.Detail.SetText(fmt.Sprintf("cannot open the pair: %v %v", errA, errB))
				return
			}
			ew, _ := NewExchangeDiffWindow(a, sa, sb, ig, dataDir)
			ew.Show()
		}
	}
	w.SetContent(v.Content)
	w.Resize(fyne.NewSize(1200, 700))
	closeKeys(w, true)
	return w, v
}

// OpenExchangeDiff loads two sessions with get (the store's Get) and opens their exchange
// diff; the context menu's "Compare with…" and the compare shortcut call it.
func OpenExchangeDiff(a fyne.App, get func(session.ID) (*session.Session, error), ida, idb session.ID, ig *diff.IgnoreConfig, dataDir string) (fyne.Window, error) {
	sa, err := get(ida)
	if err != nil {
		return nil, err
	}
	sb, err := get(idb)
	if err != nil {
		return nil, err
	}
	w, _ := NewExchangeDiffWindow(a, sa, sb, ig, dataDir)
	w.Show()
	return w, nil
}

// OpenRecordingDiff loads two recordings (HAR files, data directories, or filter:EXPR /
// ids:N-M of cur, the open store) and opens their diff; pairs open in the exchange diff
// when both recordings come from cur. It loads on the calling goroutine (two recordings of
// 10,000 calls take about half a second); for larger ones, run diff.LoadRecording and
// diff.Recordings in the background and call NewRecordingDiffWindow through fyne.Do.
func OpenRecordingDiff(a fyne.App, specA, specB string, cur diff.Eacher, get func(session.ID) (*session.Session, error), ig *diff.IgnoreConfig, dataDir string) (fyne.Window, error) {
	ca, err := diff.LoadRecording(specA, cur)
	if err != nil {
		return nil, err
	}
	cb, err := diff.LoadRecording(specB, cur)
	if err != nil {
		return nil, err
	}
	if !diff.IsCurrentStore(specA) || !diff.IsCurrentStore(specB) {
		get = nil
	}
	w, _ := NewRecordingDiffWindow(a, diff.Recordings(specA, ca, specB, cb, diff.Options{Ignore: ig}), get, ig, dataDir)
	w.Show()
	return w, nil
}
