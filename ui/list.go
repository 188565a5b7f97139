package ui

import (
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"inspector/ui/viewmodel"
)

// Preference keys for the persisted column choices.
const (
	prefColumns   = "list.columns"     // comma list of column keys, in order
	prefColWidth  = "list.width."      // + key: width
	prefSortCol   = "list.sort.column" // column key
	prefSortDesc  = "list.sort.desc"
	headerSortAsc = " ▲"
	headerSortDsc = " ▼"
)

// sessionList is the session table. Rows come from the view-model; only the cells on
// screen exist (widget.Table recycles them), so the row count does not matter.
type sessionList struct {
	u     *UI
	table *widget.Table
	cols  []viewmodel.Column // visible columns in display order
	// created counts cells created, for the scroll benchmark.
	created int
	// suppress is set while the list itself moves the selection, so OnSelected does not
	// turn "follow newest" off.
	suppress bool
}

func newSessionList(u *UI) *sessionList {
	l := &sessionList{u: u}
	l.loadPrefs()
	t := widget.NewTable(
		func() (int, int) { return u.model.Len(), len(l.cols) },
		func() fyne.CanvasObject {
			l.created++
			lb := widget.NewLabel("")
			lb.Truncation = fyne.TextTruncateClip
			return lb
		},
		l.updateCell,
	)
	t.ShowHeaderRow = true
	t.CreateHeader = func() fyne.CanvasObject { return widget.NewButton("", nil) }
	t.UpdateHeader = l.updateHeader
	t.OnSelected = func(id widget.TableCellID) {
		if id.Row < 0 || id.Row >= u.model.Len() {
			return
		}
		r := u.model.At(id.Row)
		if r == nil {
			return // its page is still loading
		}
		if !l.suppress && id.Row != u.model.Len()-1 {
			u.follow.SetChecked(false)
		}
		if cur, ok := u.model.Selected(); ok && cur == r.ID && u.detail.shown == r.ID {
			return
		}
		u.model.Select(r.ID)
		u.detail.show(r.ID)
	}
	l.table = t
	l.applyWidths()
	return l
}

func (l *sessionList) updateCell(id widget.TableCellID, o fyne.CanvasObject) {
	lb := o.(*widget.Label)
	if id.Row < 0 || id.Row >= l.u.model.Len() || id.Col < 0 || id.Col >= len(l.cols) {
		lb.SetText("")
		return
	}
	r := l.u.model.At(id.Row)
	if r == nil {
		// A stored row whose page is being fetched: a placeholder until it arrives.
		if lb.Text != "…" {
			lb.Importance, lb.TextStyle, lb.Text = widget.LowImportance, fyne.TextStyle{}, "…"
			lb.Refresh()
		}
		return
	}
	c := l.cols[id.Col]
	class := viewmodel.StatusClass(r)
	imp := widget.MediumImportance
	style := fyne.TextStyle{}
	switch {
	case class == viewmodel.ClassError:
		// Failed exchanges stand out across the whole row.
		imp = widget.DangerImportance
		style.Bold = c == viewmodel.ColStatus
	case c == viewmodel.ColStatus:
		style.Bold = true
		switch class {
		case viewmodel.ClassSuccess:
			imp = widget.SuccessImportance
		case viewmodel.ClassRedirect, viewmodel.ClassInfo:
			imp = widget.HighImportance
		case viewmodel.ClassClient:
			imp = widget.WarningImportance
		case viewmodel.ClassServer:
			imp = widget.DangerImportance
		case viewmodel.ClassInFlight:
			imp = widget.LowImportance
		}
	case r.InFlight:
		imp = widget.LowImportance
	}
	text := viewmodel.CellText(r, c)
	if lb.Text == text && lb.Importance == imp && lb.TextStyle == style {
		return // unchanged: skip re-shaping the text
	}
	lb.Importance = imp
	lb.TextStyle = style
	lb.Text = text
	lb.Refresh()
}

func (l *sessionList) updateHeader(id widget.TableCellID, o fyne.CanvasObject) {
	b := o.(*widget.Button)
	if id.Col < 0 || id.Col >= len(l.cols) {
		b.SetText("")
		b.OnTapped = nil
		return
	}
	c := l.cols[id.Col]
	text := viewmodel.Columns[c].Title
	if sc, desc := l.u.model.Sort(); sc == c {
		if desc {
			text += headerSortDsc
		} else {
			text += headerSortAsc
		}
	}
	b.SetText(text)
	b.OnTapped = func() { l.SortBy(c) }
}

// SortBy sorts by column c; tapping the current sort column flips the direction.
func (l *sessionList) SortBy(c viewmodel.Column) {
	cur, desc := l.u.model.Sort()
	if cur == c {
		desc = !desc
	} else {
		desc = false
	}
	l.u.changed(l.u.model.SortBy(c, desc))
	p := l.u.app.Preferences()
	p.SetString(prefSortCol, viewmodel.Columns[c].Key)
	p.SetBool(prefSortDesc, desc)
	l.reselect()
}

func (l *sessionList) refresh() {
	l.table.Refresh()
}

// reselect moves the table's selection to where the selected session now is.
func (l *sessionList) reselect() {
	if id, ok := l.u.model.Selected(); ok {
		if i := l.u.model.IndexOf(id); i >= 0 {
			l.selectRow(i)
			return
		}
	}
	l.table.UnselectAll()
}

func (l *sessionList) selectRow(i int) {
	l.suppress = true
	defer func() { l.suppress = false }()
	l.table.Select(widget.TableCellID{Row: i, Col: 0})
	l.table.ScrollTo(widget.TableCellID{Row: i, Col: 0})
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
	l.u.app.Preferences().SetString(prefColumns, strings.Join(keys, ","))
	l.applyWidths()
	l.table.Refresh()
}

// SetColumnWidth sets and persists a column's width.
func (l *sessionList) SetColumnWidth(c viewmodel.Column, w float32) {
	l.u.app.Preferences().SetFloat(prefColWidth+viewmodel.Columns[c].Key, float64(w))
	l.applyWidths()
}

func (l *sessionList) width(c viewmodel.Column) float32 {
	w := l.u.app.Preferences().FloatWithFallback(prefColWidth+viewmodel.Columns[c].Key, float64(viewmodel.Columns[c].Width))
	return float32(w)
}

func (l *sessionList) applyWidths() {
	if l.table == nil {
		return
	}
	for i, c := range l.cols {
		l.table.SetColumnWidth(i, l.width(c))
	}
}

func (l *sessionList) loadPrefs() {
	p := l.u.app.Preferences()
	l.cols = nil
	for _, k := range strings.Split(p.String(prefColumns), ",") {
		if c, ok := viewmodel.ColumnByKey(strings.TrimSpace(k)); ok {
			l.cols = append(l.cols, c)
		}
	}
	if len(l.cols) == 0 {
		for c := range viewmodel.NumColumns {
			l.cols = append(l.cols, c)
		}
	}
	if c, ok := viewmodel.ColumnByKey(p.String(prefSortCol)); ok {
		l.u.model.SortBy(c, p.Bool(prefSortDesc))
	}
}

// columnsButton opens a popup to show/hide columns and set their widths.
func (l *sessionList) columnsButton() fyne.CanvasObject {
	var b *widget.Button
	b = widget.NewButton("Columns…", func() {
		box := container.NewVBox()
		for c := range viewmodel.NumColumns {
			shown := false
			for _, v := range l.cols {
				shown = shown || v == c
			}
			chk := widget.NewCheck(viewmodel.Columns[c].Title, func(on bool) { l.toggle(c, on) })
			chk.Checked = shown
			wEntry := widget.NewEntry()
			wEntry.SetText(strconv.Itoa(int(l.width(c))))
			wEntry.OnSubmitted = func(s string) {
				if v, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && v >= 20 && v <= 2000 {
					l.SetColumnWidth(c, float32(v))
				} else {
					wEntry.SetText(strconv.Itoa(int(l.width(c))))
				}
			}
			box.Add(container.NewBorder(nil, nil, nil, container.NewGridWrap(fyne.NewSize(70, wEntry.MinSize().Height), wEntry), chk))
		}
		pop := widget.NewPopUp(box, l.u.win.Canvas())
		pop.ShowAtRelativePosition(fyne.NewPos(0, b.Size().Height), b)
	})
	return b
}

func (l *sessionList) toggle(c viewmodel.Column, on bool) {
	var cols []viewmodel.Column
	for k := range viewmodel.NumColumns {
		has := false
		for _, v := range l.cols {
			has = has || v == k
		}
		if k == c {
			has = on
		}
		if has {
			cols = append(cols, k)
		}
	}
	l.SetColumns(cols)
}
