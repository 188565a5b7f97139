package ui

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	_ "image/gif"  // image previews
	_ "image/jpeg" // image previews
	_ "image/png"  // image previews
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/content"
	"inspector/engine/session"
	"inspector/ui/render"
	"inspector/ui/viewmodel"
)

// bodyView shows one message body through its named views (BodyView: Pretty, Text, Hex,
// Image), decoded from its content encoding with the raw bytes one toggle away. The views
// are made off the UI goroutine (bodyViews) and the text is drawn virtualised (textView),
// so a body of any size opens without blocking the window; a newer selection cancels
// the work in progress.
type bodyView struct {
	u    *UI
	info *widget.Label
	// mode picks the view by name; never empty. A drop-down, not a row of radio buttons:
	// a GraphQL or gRPC body has seven views, and their row was wider than the pane, so
	// the window grew past the screen (1280 → 1599 px) and the toolbars overlapped.
	mode  *widget.Select
	raw   *widget.Check // show the bytes as they travelled (still encoded)
	wrap  *widget.Check
	save  *widget.Button
	text  *textView
	image *canvas.Image
	// imageSize draws the image at its own size, smaller only to fit the pane.
	imageSize *naturalLayout
	tree      *jsonTreeView
	// preview draws an HTML page's text preview (richviews.go).
	preview    *widget.RichText
	previewBox fyne.CanvasObject
	stack      *fyne.Container
	box        fyne.CanvasObject
	name       string // file name offered by Save
	header     http.Header
	body       session.Body
	msg        bodyViewOptions // the message the body belongs to
	views      []BodyView
	// last is the view name the user chose last; kept when the next body has it.
	last string

	findBar   *fyne.Container
	findEntry *widget.Entry
	findCount *widget.Label

	gen    int
	cancel context.CancelFunc
	// working is set while a formatting job runs; queued is the one to run after it.
	working bool
	queued  func()
	jobs    int // formatting jobs started (tests)
}

func newBodyView(u *UI, name string) *bodyView {
	b := &bodyView{u: u, info: widget.NewLabel(""), text: newTextView(u), name: name, last: "JSON"}
	b.info.Truncation = fyne.TextTruncateEllipsis
	b.mode = widget.NewSelect([]string{"Text", "Hex"}, func(s string) {
		if s == "" {
			return
		}
		b.last = s
		b.showView()
	})
	b.mode.Selected = "Text"
	b.raw = widget.NewCheck("Raw", func(bool) { b.compute() })
	b.wrap = widget.NewCheck("Wrap", func(on bool) { b.text.setWrap(on) })
	b.wrap.Checked = true
	b.save = widget.NewButtonWithIcon("Save full body…", theme.DocumentSaveIcon(), func() {
		b.u.saveBodyDialog(b.name, b.header, b.body)
	})
	b.save.Importance = widget.LowImportance
	findBtn := widget.NewButtonWithIcon("", theme.SearchIcon(), b.openFind)
	findBtn.Importance = widget.LowImportance
	b.image = canvas.NewImageFromResource(nil)
	b.image.FillMode = canvas.ImageFillContain
	b.image.SetMinSize(fyne.NewSize(64, 64))
	b.image.Hide()
	b.imageSize = &naturalLayout{}
	b.tree = newJSONTreeView()
	b.tree.box.Hide()
	b.preview = widget.NewRichText()
	b.preview.Wrapping = fyne.TextWrapWord
	b.previewBox = container.NewVScroll(b.preview)
	b.previewBox.Hide()
	b.stack = container.NewStack(b.text.box, container.New(b.imageSize, b.image), b.tree.box, b.previewBox)

	b.findEntry = widget.NewEntry()
	b.findEntry.SetPlaceHolder("find in body")
	b.findEntry.OnChanged = func(q string) { b.Find(q) }
	b.findEntry.OnSubmitted = func(string) { b.FindNext(1) }
	b.findCount = widget.NewLabel("")
	prev := widget.NewButtonWithIcon("", theme.NavigateBackIcon(), func() { b.FindNext(-1) })
	next := widget.NewButtonWithIcon("", theme.NavigateNextIcon(), func() { b.FindNext(1) })
	closeFind := widget.NewButtonWithIcon("", theme.CancelIcon(), b.closeFind)
	b.findBar = container.NewBorder(nil, nil, nil, container.NewHBox(b.findCount, prev, next, closeFind), b.findEntry)
	b.findBar.Hide()

	bar := container.NewBorder(nil, nil, container.NewHBox(b.mode, b.wrap, b.raw), container.NewHBox(findBtn, b.save), b.info)
	b.box = container.NewBorder(container.NewVBox(bar, b.findBar), nil, nil, nil, b.stack)
	return b
}

func (b *bodyView) set(h http.Header, body session.Body) {
	b.setFor(h, body, bodyViewOptions{})
}

// setFor shows a body with what its message says about it (request or response, URL,
// trailers) for content.Views.
func (b *bodyView) setFor(h http.Header, body session.Body, msg bodyViewOptions) {
	b.header, b.body, b.msg = h, body, msg
	b.compute()
}

// compute makes the views of the body off the UI goroutine (inline in tests that ask for
// it) and installs them unless a newer body replaced this one meanwhile.
func (b *bodyView) compute() {
	if b.cancel != nil {
		b.cancel()
		b.cancel = nil
	}
	b.gen++
	gen := b.gen
	b.views = nil
	if len(b.body.Data) == 0 {
		// A body-less message can still have views: a JWT in Authorization, a GraphQL
		// GET, a gRPC trailers-only status (cheap: made inline).
		if views, sum := bodyViews(context.Background(), b.header, b.body, b.msg); hasViews(views) {
			b.save.Disable()
			b.mode.Enable()
			b.install(views, sum)
			return
		}
		b.image.Hide()
		b.previewBox.Hide()
		b.tree.box.Hide()
		b.text.box.Show()
		b.save.Disable()
		b.mode.Disable()
		b.text.setLang("")
		if b.msg.WebSocket {
			b.text.set("No body: the bytes after the upgrade are WebSocket messages, listed in the WebSocket tab.")
		} else if b.body.Size > 0 {
			b.text.set(fmt.Sprintf("%d body bytes were not captured.", b.body.Size))
		} else {
			b.text.set("(no body)")
		}
		b.info.SetText("")
		return
	}
	b.save.Enable()
	b.mode.Enable()
	h, body, opt := b.header, b.body, b.msg
	opt.Raw = b.raw.Checked
	if b.u.deps.Protos != nil {
		opt.Protos = b.u.deps.Protos()
	}
	if b.u.detail != nil && b.u.detail.inline {
		views, sum := bodyViews(context.Background(), h, body, opt)
		b.install(views, sum)
		return
	}
	b.info.SetText(fmt.Sprintf("formatting %s…", viewmodel.FormatBytes(int64(len(body.Data)))))
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	cols, wrap := b.text.colsFor(b.text.box.Size().Width), b.text.wrap
	// The view shown first is made and indexed first and installed; the JSON tree and the
	// other views' row indexes follow (lateViews), unless the tree is the one shown.
	last := b.last
	opt.LateTree = last != "Tree"
	job := func() {
		var views []BodyView
		var sum string
		shown := 0
		if ctx.Err() == nil {
			views, sum = bodyViews(ctx, h, body, opt)
			shown = pickView(views, last)
			if shown < len(views) && views[shown].Text != "" && ctx.Err() == nil {
				views[shown].lines = render.NewLines(views[shown].Text, cols, wrap)
			}
		}
		installed := make(chan bool, 1)
		b.u.post(func() {
			ok := gen == b.gen && ctx.Err() == nil
			if ok {
				b.install(views, sum)
			}
			installed <- ok
		})
		if <-installed && ctx.Err() == nil {
			trees, lines := lateViews(ctx, views, shown, cols, wrap)
			if len(trees) > 0 || len(lines) > 0 {
				b.u.post(func() {
					if gen == b.gen && ctx.Err() == nil {
						b.installLate(trees, lines)
					}
				})
			}
		}
		b.u.post(func() {
			b.working = false
			if next := b.queued; next != nil {
				b.queued, b.working = nil, true
				b.jobs++
				go next()
			}
		})
	}
	// One formatting job at a time per pane, the newest waiting: clicking through many
	// large bodies holds at most two of their formatted copies, never one per click.
	if b.working {
		b.queued = job
		return
	}
	b.working = true
	b.jobs++
	go job()
}

// hasViews reports whether views has more than the hex dump.
func hasViews(views []BodyView) bool {
	for _, v := range views {
		if v.Name != "Hex" {
			return true
		}
	}
	return false
}

// install shows freshly made views, keeping the user's choice of view when it exists.
func (b *bodyView) install(views []BodyView, summary string) {
	b.views = views
	names := make([]string, len(views))
	pick := ""
	for i, v := range views {
		names[i] = v.Name
		if v.Name == b.last {
			pick = v.Name
		}
	}
	if pick == "" && len(names) > 0 {
		pick = names[0]
	}
	b.mode.Options = names
	b.mode.Selected = pick
	b.mode.Refresh()
	b.info.SetText(summary)
	b.showView()
}

// installLate adds what lateViews made to the views installed: the Tree after its JSON
// view (the selection and the view shown stay) and the other views' row indexes.
func (b *bodyView) installLate(trees map[int]BodyView, lines map[int]*render.Lines) {
	for i, l := range lines {
		if i < len(b.views) {
			b.views[i].lines = l
		}
	}
	if len(trees) == 0 {
		return
	}
	var views []BodyView
	for i, v := range b.views {
		views = append(views, v)
		if tr, ok := trees[i]; ok {
			views = append(views, tr)
		}
	}
	b.views = views
	names := make([]string, len(views))
	for i, v := range views {
		names[i] = v.Name
	}
	b.mode.Options = names
	b.mode.Refresh()
}

// View returns the view shown now.
func (b *bodyView) View() (BodyView, bool) {
	for _, v := range b.views {
		if v.Name == b.mode.Selected {
			return v, true
		}
	}
	return BodyView{}, false
}

func (b *bodyView) showView() {
	v, ok := b.View()
	if !ok {
		return
	}
	b.tree.box.Hide()
	b.previewBox.Hide()
	if v.Name == "Preview" {
		b.image.Hide()
		b.text.box.Hide()
		b.preview.Segments = previewSegments(v.Preview)
		b.preview.Refresh()
		b.previewBox.Show()
		return
	}
	if v.Name == "Image" || v.Name == "SVG" {
		b.imageSize.natural = fyne.Size{}
		name := b.name
		if v.Name == "SVG" {
			b.imageSize.natural = fyne.NewSize(v.Width, v.Height)
			name = "body.svg" // Fyne draws a resource named .svg as a vector image
		} else if cfg, _, err := image.DecodeConfig(bytes.NewReader(v.Data)); err == nil {
			b.imageSize.natural = fyne.NewSize(float32(cfg.Width), float32(cfg.Height))
		}
		b.image.Resource = fyne.NewStaticResource(name, v.Data)
		b.image.Refresh()
		b.image.Show()
		b.text.box.Hide()
		return
	}
	b.image.Hide()
	if v.Name == "Tree" {
		b.text.box.Hide()
		b.tree.set(v.Tree)
		b.tree.box.Show()
		return
	}
	b.text.box.Show()
	if v.Name == "Hex" {
		b.text.setLang("")
		b.text.setSource(&render.HexLines{Data: v.Data})
	} else {
		b.text.setLang(v.Lang)
		b.text.setIndexed(v.Text, v.lines)
	}
	if b.findBar.Visible() && b.findEntry.Text != "" {
		b.Find(b.findEntry.Text)
	}
}

// openFind shows the find bar and focuses it (Ctrl+F in the body).
func (b *bodyView) openFind() {
	b.findBar.Show()
	// The window's canvas: the driver knows no canvas for an entry never drawn before.
	b.u.win.Canvas().Focus(b.findEntry)
}

func (b *bodyView) closeFind() {
	b.findBar.Hide()
	b.text.find("")
	b.findCount.SetText("")
}

// Find marks the matches of q and reports their count.
func (b *bodyView) Find(q string) int {
	n := b.text.find(q)
	switch {
	case q == "":
		b.findCount.SetText("")
	case n == 0:
		b.findCount.SetText("no match")
	case n == 1:
		b.findCount.SetText("1 match")
	case n >= render.MaxMatches:
		b.findCount.SetText(fmt.Sprintf("%d+ matches", n))
	default:
		b.findCount.SetText(fmt.Sprintf("%d matches", n))
	}
	return n
}

// FindNext moves to the next (+1) or previous (-1) match.
func (b *bodyView) FindNext(d int) {
	if i := b.text.next(d); i > 0 {
		txt := b.findCount.Text
		if k := strings.Index(txt, " · "); k >= 0 {
			txt = txt[k+len(" · "):]
		}
		b.findCount.SetText(fmt.Sprintf("%d/%d · %s", i, len(b.text.hits), txt))
	}
}

// headerTable shows headers as a name/value table; tapping a row copies its value.
type headerTable struct {
	u     *UI
	rows  [][2]string
	text  string // "Name: value" lines, for Copy all and tests
	table *widget.Table
	box   fyne.CanvasObject
	empty *widget.Label
}

func newHeaderTable(u *UI) *headerTable {
	h := &headerTable{u: u, empty: widget.NewLabel("")}
	h.table = widget.NewTable(
		func() (int, int) { return len(h.rows), 2 },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateClip
			return l
		},
		func(id widget.TableCellID, o fyne.CanvasObject) {
			l := o.(*widget.Label)
			if id.Row >= len(h.rows) {
				l.SetText("")
				return
			}
			l.TextStyle = fyne.TextStyle{Bold: id.Col == 0}
			l.SetText(h.rows[id.Row][id.Col])
		},
	)
	h.table.SetColumnWidth(0, 170)
	h.table.SetColumnWidth(1, 1400)
	h.table.OnSelected = func(id widget.TableCellID) {
		if id.Row < len(h.rows) {
			u.copyText(h.rows[id.Row][0]+" value", h.rows[id.Row][1])
		}
		h.table.UnselectAll()
	}
	copyAll := widget.NewButtonWithIcon("Copy all", theme.ContentCopyIcon(), func() { u.copyText("headers", h.text) })
	copyAll.Importance = widget.LowImportance
	hint := widget.NewLabel("click a row to copy its value")
	hint.Importance = widget.LowImportance
	h.empty.Truncation = fyne.TextTruncateEllipsis
	h.box = container.NewBorder(container.NewBorder(nil, nil, container.NewHBox(copyAll, hint), nil, h.empty), nil, nil, nil,
		container.NewThemeOverride(h.table, &tightTheme{}))
	return h
}

func (h *headerTable) set(hd http.Header, empty string) {
	h.setRows(render.HeaderRows(hd), render.Headers(hd), empty)
}

// setRows shows name/value rows (text: what Copy all copies); empty when there are none.
func (h *headerTable) setRows(rows [][2]string, text, empty string) {
	h.rows, h.text = rows, text
	h.empty.SetText("")
	if len(h.rows) == 0 {
		h.empty.SetText(empty)
	}
	h.table.Refresh()
	h.table.ScrollToTop()
}

// messageView is one side of the exchange (request or response): its tabs.
type messageView struct {
	headers *headerTable
	raw     *textView
	body    *bodyView
	cookies *textView
	query   *queryFormView // request only
	tabs    *container.AppTabs
	box     fyne.CanvasObject
}

func newMessageView(u *UI, request bool) *messageView {
	name := "response-body"
	if request {
		name = "request-body"
	}
	m := &messageView{headers: newHeaderTable(u), raw: newTextView(u), body: newBodyView(u, name), cookies: newTextView(u)}
	items := []*container.TabItem{
		container.NewTabItem("Headers", m.headers.box),
		container.NewTabItem("Body", m.body.box),
		container.NewTabItem("Raw", m.raw.box),
		container.NewTabItem("Cookies", m.cookies.box),
	}
	if request {
		m.query = newQueryFormView(u)
		items = append(items, container.NewTabItem("Query/Form", m.query.box))
	}
	m.tabs = container.NewAppTabs(items...)
	m.tabs.OnSelected = func(*container.TabItem) { u.inDetail = true }
	m.box = m.tabs // the summary line above both sides names the exchange
	return m
}

// stackBelow is the detail width under which request and response are stacked rather
// than side by side.
const stackBelow = 900

// detailPane is the detail controller: a one-line summary above the request and the
// response side by side (stacked when narrow), and the Timing, TLS, Frames, WebSocket
// and Notes tabs.
type detailPane struct {
	u        *UI
	title    *widget.Label
	req      *messageView
	resp     *messageView
	split    *container.Split
	timing   *fyne.Container
	timeText *widget.Label
	tls      *textView
	frames   *framesView
	ws       *wsView
	tabs     *container.AppTabs
	box      fyne.CanvasObject
	shown    session.ID
	// inline formats bodies on the calling goroutine (tests that read the result at once).
	inline bool
	// loadGen drops a store load that a newer selection replaced.
	loadGen int
	// cur is the session shown; extrasFor the one the secondary tabs were filled for.
	cur       *session.Session
	extrasFor session.ID
	// liveCancel stops the live refresh of an open event stream (live.go).
	liveCancel context.CancelFunc

	mark    *widget.Select // the user's mark of the shown session
	comment *widget.Entry  // and comment
	saveBtn *widget.Button
}

// marks are the mark values offered; "" is no mark.
var marks = markNames

const noSelection = "Select a session to see it here (Up/Down in the list, Enter to come here)."

func newDetailPane(u *UI) *detailPane {
	d := &detailPane{u: u, title: widget.NewLabel(noSelection)}
	d.title.Truncation = fyne.TextTruncateEllipsis
	d.title.TextStyle = fyne.TextStyle{Bold: true}
	d.req = newMessageView(u, true)
	d.resp = newMessageView(u, false)
	d.split = container.NewHSplit(d.req.box, d.resp.box)
	d.split.SetOffset(u.prefs.FloatWithFallback(prefSplitDetail, 0.5))
	adaptive := &widthWatcher{content: d.split}
	adaptive.onWidth = func(w float32) {
		if h := w >= stackBelow; h != d.split.Horizontal {
			d.split.Horizontal = h
			d.split.Refresh()
		}
	}
	adaptive.ExtendBaseWidget(adaptive)
	d.timing = container.NewVBox()
	d.timeText = widget.NewLabel("")
	d.tls = newTextView(u)
	d.frames = newFramesView(u)
	d.ws = newWSView(u)
	d.mark = widget.NewSelect(marks, nil)
	d.mark.SetSelected("none")
	d.comment = widget.NewEntry()
	d.comment.SetPlaceHolder("comment")
	d.saveBtn = widget.NewButton("Save mark", d.saveMark)
	d.setNotesEnabled(false)
	notes := container.NewVBox(container.NewBorder(nil, nil, container.NewHBox(widget.NewLabel("Mark"), d.mark), d.saveBtn, d.comment))
	d.tabs = container.NewAppTabs(
		container.NewTabItem("Exchange", adaptive),
		container.NewTabItem("Timing", container.NewVScroll(container.NewBorder(d.timeText, nil, nil, nil, d.timing))),
		container.NewTabItem("TLS", container.NewBorder(u.tlsKeysBar(), nil, nil, nil, d.tls.box)),
		container.NewTabItem("Frames", d.frames.box),
		container.NewTabItem("WebSocket", d.ws.box),
		container.NewTabItem("Notes", notes),
	)
	d.tabs.OnSelected = func(*container.TabItem) { d.renderExtras() }
	d.box = container.NewBorder(d.title, nil, nil, nil, d.tabs)
	return d
}

// focus moves the keyboard into the detail (Enter in the list): the response body.
func (d *detailPane) focus() {
	d.tabs.SelectIndex(0)
	d.resp.tabs.SelectIndex(1)
	d.u.win.Canvas().Focus(d.resp.body.text.list)
}

// bodyShown reports whether a Body tab is open on the Exchange tab.
func (d *detailPane) bodyShown() bool {
	return d.tabs.SelectedIndex() == 0 && (d.req.tabs.SelectedIndex() == 1 || d.resp.tabs.SelectedIndex() == 1)
}

// openFind opens find in the body that has the focus, else the open Body tab (the
// response's when both are open).
func (d *detailPane) openFind() {
	d.tabs.SelectIndex(0)
	b := d.resp.body
	f := d.u.win.Canvas().Focused()
	switch {
	case f == d.req.body.text.list || f == d.req.body.findEntry:
		b = d.req.body
	case f == d.resp.body.text.list || f == d.resp.body.findEntry:
	case d.req.tabs.SelectedIndex() == 1 && d.resp.tabs.SelectedIndex() != 1:
		b = d.req.body
	}
	if b == d.resp.body {
		d.resp.tabs.SelectIndex(1)
	} else {
		d.req.tabs.SelectIndex(1)
	}
	b.openFind()
}

// hasFocus reports whether the keyboard is in the detail's bodies (Ctrl+F finds there).
func (d *detailPane) hasFocus() bool {
	f := d.u.win.Canvas().Focused()
	for _, b := range []*bodyView{d.req.body, d.resp.body} {
		if f != nil && (f == b.text.list || f == b.findEntry) {
			return true
		}
	}
	return false
}

func (d *detailPane) setNotesEnabled(on bool) {
	for _, w := range []fyne.Disableable{d.mark, d.comment, d.saveBtn} {
		if on && !d.u.deps.ReadOnly {
			w.Enable()
		} else {
			w.Disable()
		}
	}
}

// saveMark stores the mark and comment of the shown session.
func (d *detailPane) saveMark() {
	id := d.shown
	s, err := d.u.session(id)
	if err != nil {
		dialog.ShowError(fmt.Errorf("cannot mark session %d: %w", id, err), d.u.win)
		return
	}
	mark := d.mark.Selected
	if mark == "none" {
		mark = ""
	}
	if err := d.u.setMark(s, mark, d.comment.Text); err != nil {
		dialog.ShowError(err, d.u.win)
	}
}

func (d *detailPane) object() fyne.CanvasObject { return d.box }

// reset shows no session.
func (d *detailPane) reset() {
	d.stopLive()
	d.shown = 0
	d.loadGen++
	d.title.SetText(noSelection)
	d.clear()
}

// show displays session id: from the recent cache at once, else loaded from the store
// off the UI goroutine. An in-flight session shows its summary until it completes.
func (d *detailPane) show(id session.ID) {
	d.stopLive()
	d.shown = id
	d.loadGen++
	gen := d.loadGen
	recent, ok := d.u.recent[id]
	if ok && spilled(recent) && d.u.deps.Store != nil {
		d.loadWhole(id, gen, recent, 0)
		return
	}
	if s := recent; ok || d.u.deps.Store == nil || d.inline {
		var err error
		if !ok {
			s, err = d.u.session(id)
		}
		d.loaded(id, s, err)
		return
	}
	if r, ok := d.u.model.Get(id); ok {
		d.title.SetText(fmt.Sprintf("#%d  %s %s  — loading…", r.ID, r.Method, r.URL))
	}
	st := d.u.deps.Store
	go func() {
		s, err := st.Get(id)
		d.u.post(func() {
			if gen == d.loadGen {
				d.loaded(id, s, err)
			}
		})
	}()
}

// spilled reports whether a live session's body went past the engine's in-memory cap:
// its event carries the first part only, and the store holds the whole body.
func spilled(s *session.Session) bool {
	return s.Request.Body.Spilled != "" || (s.Response != nil && s.Response.Body.Spilled != "")
}

// wholeTries bounds how long (tries × wholeRetry) the pane waits for the store to commit
// a spilled session before it keeps showing the first part.
const (
	wholeTries = 20
	wholeRetry = 250 * time.Millisecond
)

// loadWhole shows a spilled live session as the store has it (the whole body, not the
// event's first megabyte). Until the store's writer has committed it, the event's copy
// is shown, and the store is asked again.
func (d *detailPane) loadWhole(id session.ID, gen int, recent *session.Session, try int) {
	st := d.u.deps.Store
	done := func(s *session.Session, err error) {
		if gen != d.loadGen {
			return
		}
		if err == nil && s != nil {
			d.loaded(id, s, nil)
			return
		}
		if try == 0 {
			d.loaded(id, recent, nil)
		}
		if try+1 < wholeTries && !d.inline {
			time.AfterFunc(wholeRetry, func() {
				d.u.post(func() {
					if gen == d.loadGen {
						d.loadWhole(id, gen, recent, try+1)
					}
				})
			})
		}
	}
	if d.inline {
		done(st.Get(id))
		return
	}
	go func() {
		s, err := st.Get(id)
		d.u.post(func() { done(s, err) })
	}()
}

func (d *detailPane) loaded(id session.ID, s *session.Session, err error) {
	if err != nil || s == nil {
		if r, ok := d.u.model.Get(id); ok && r.InFlight {
			d.title.SetText(fmt.Sprintf("#%d  %s %s  — in flight", r.ID, r.Method, r.URL))
			defer d.startLive(id) // an open event stream is shown as it arrives
		} else {
			d.title.SetText(fmt.Sprintf("#%d could not be loaded: %v", id, err))
		}
		d.clear()
		d.setNotesEnabled(false)
		return
	}
	d.render(s)
	if s.Mark == "" {
		d.mark.SetSelected("none")
	} else {
		d.mark.SetSelected(s.Mark)
	}
	d.comment.SetText(s.Comment)
	d.setNotesEnabled(true)
}

func (d *detailPane) clear() {
	d.cur, d.extrasFor = nil, 0
	d.setNotesEnabled(false)
	for _, m := range []*messageView{d.req, d.resp} {
		m.headers.set(nil, "")
		m.raw.set("")
		m.cookies.set("")
		m.body.set(nil, session.Body{})
	}
	d.req.query.set(nil, nil)
	d.tls.set("")
	d.timing.RemoveAll()
	d.timeText.SetText("")
	d.ws.set(nil)
	d.frames.set(nil)
}

// Summary is the one-line summary of a session: method, URL, status, protocol legs,
// duration and sizes.
func Summary(s *session.Session) string {
	sum := s.Summarize()
	status := viewmodel.CellText(&sum, viewmodel.ColStatus)
	if s.Response != nil {
		reason := s.Response.Reason
		if reason == "" {
			reason = http.StatusText(s.Response.Status)
		}
		status = strings.TrimSpace(fmt.Sprintf("%d %s", s.Response.Status, reason))
	}
	legs := viewmodel.ShortProto(sum.ClientProto)
	if up := viewmodel.ShortProto(sum.UpstreamProto); sum.UpstreamProto != "" {
		legs = "client " + legs + " → upstream " + up
	}
	if f := appFailure(s); f != "" {
		status += "  ✗ " + f
		if st, ok := content.GRPCStatus(s.Response.Trailer, s.Response.Header); ok && st.Message != "" {
			status += ": " + st.Message
		}
	}
	t := fmt.Sprintf("#%d  %s %s  →  %s  ·  %s  ·  %s  ·  ↑%s ↓%s", s.ID, s.Request.Method, s.Request.URL, status, legs,
		viewmodel.CellText(&sum, viewmodel.ColDuration), viewmodel.FormatBytes(sum.ReqBytes), viewmodel.FormatBytes(sum.RespBytes))
	if s.Error != nil {
		t += "  ✗ " + s.Error.Error()
	}
	return t
}

func (d *detailPane) render(s *session.Session) {
	d.u.ops.note(s)
	d.title.SetText(Summary(s))
	r := &s.Request
	d.req.headers.set(r.Header, "no headers")
	d.req.raw.set(render.RawRequest(r))
	ws := s.Flags.Has(session.FlagWebSocket)
	d.req.body.setFor(r.Header, r.Body, bodyViewOptions{Request: true, URL: r.URL, Trailer: r.Trailer, WebSocket: ws})
	d.req.cookies.set(pairsText(render.RequestCookies(r.Header), "no cookies sent"))
	d.req.query.set(render.QueryAndForm(r))

	if s.Response != nil {
		d.resp.headers.set(s.Response.Header, "no headers")
		d.resp.raw.set(render.RawResponse(s.Response))
		d.resp.body.setFor(s.Response.Header, s.Response.Body, bodyViewOptions{URL: r.URL, Trailer: s.Response.Trailer, WebSocket: ws})
		d.resp.cookies.set(pairsText(render.ResponseCookies(s.Response.Header), "no cookies set"))
	} else {
		msg := "No response."
		if s.Error != nil {
			msg = "No response: " + s.Error.Error()
		}
		d.resp.headers.set(nil, msg)
		d.resp.raw.set(msg)
		d.resp.body.set(nil, session.Body{})
		d.resp.cookies.set("")
	}
	d.cur = s
	d.extrasFor = 0
	if d.inline || d.tabs.SelectedIndex() != 0 {
		d.renderExtras()
	}
}

// renderExtras fills the Timing, TLS, Frames and WebSocket tabs of the shown session:
// when one of them is open, so a click in the list pays only for the exchange.
func (d *detailPane) renderExtras() {
	s := d.cur
	if s == nil || d.extrasFor == s.ID {
		return
	}
	d.extrasFor = s.ID
	d.renderTiming(s)
	d.tls.set(render.TLS(s))
	d.frames.load(s.ID)
	d.ws.set(s)
}

// wsMarks says what the message hooks (scripts) did to a message: "" when nothing.
func wsMarks(m session.Message) string {
	var marks []string
	switch {
	case m.Dropped:
		marks = append(marks, "dropped by a hook")
	case m.Modified:
		marks = append(marks, "modified by a hook")
	}
	if m.HookError != "" {
		marks = append(marks, "hook failed, sent unmodified: "+m.HookError)
	}
	if m.Unhooked != "" {
		marks = append(marks, "not shown to hooks: "+m.Unhooked)
	}
	if len(marks) == 0 {
		return ""
	}
	return " [" + strings.Join(marks, "; ") + "]"
}

func pairsText(p [][2]string, empty string) string {
	if len(p) == 0 {
		return empty
	}
	var sb strings.Builder
	for _, kv := range p {
		fmt.Fprintf(&sb, "%s = %s\n", kv[0], kv[1])
	}
	return sb.String()
}

// phaseColors gives each waterfall phase a colour.
var phaseColors = map[string]color.NRGBA{
	"client TLS":   {0x8e, 0x6c, 0xd8, 0xff},
	"request":      {0x4c, 0x9a, 0xd8, 0xff},
	"DNS":          {0x2f, 0xb3, 0x9a, 0xff},
	"connect":      {0xe0, 0x9a, 0x2a, 0xff},
	"upstream TLS": {0xb0, 0x5c, 0xd0, 0xff},
	"send":         {0x3d, 0x7e, 0xe0, 0xff},
	"wait":         {0x9a, 0x9a, 0x9a, 0xff},
	"receive":      {0x3c, 0xb0, 0x4c, 0xff},
}

// Timing renders the waterfall rows; exported to tests through the timing container.
func (d *detailPane) renderTiming(s *session.Session) {
	d.timing.RemoveAll()
	phases, total := render.Waterfall(s.Timings)
	if len(phases) == 0 {
		d.timeText.SetText("No timings recorded.")
		d.renderInterim(s)
		return
	}
	d.timeText.SetText(fmt.Sprintf("Total %s", fmtDur(total)))
	for _, p := range phases {
		bar := canvas.NewRectangle(phaseColors[p.Name])
		bar.SetMinSize(fyne.NewSize(2, 14))
		var from, to float32
		if total > 0 {
			from, to = float32(p.Start)/float32(total), float32(p.End)/float32(total)
		}
		track := container.New(&spanLayout{from: from, to: to}, bar)
		name := widget.NewLabel(p.Name)
		dur := widget.NewLabel(fmtDur(p.End - p.Start))
		d.timing.Add(container.NewBorder(nil, nil,
			container.NewGridWrap(fyne.NewSize(110, name.MinSize().Height), name),
			container.NewGridWrap(fyne.NewSize(90, dur.MinSize().Height), dur),
			track))
	}
	d.renderInterim(s)
}

// renderInterim adds a row per 1xx response the origin sent before its final one (100
// Continue, 103 Early Hints): status, when it came after the request's headers, and its
// header fields.
func (d *detailPane) renderInterim(s *session.Session) {
	from := s.Timings.RequestHeaders
	if from.IsZero() {
		from = s.Started
	}
	for _, in := range s.Interim {
		line := fmt.Sprintf("%d %s at +%s", in.Status, http.StatusText(in.Status), fmtDur(in.At.Sub(from)))
		for _, k := range slices.Sorted(maps.Keys(in.Header)) {
			for _, v := range in.Header[k] {
				line += "\n    " + k + ": " + v
			}
		}
		l := widget.NewLabel(line)
		l.Wrapping = fyne.TextWrapBreak
		d.timing.Add(l)
	}
}

func fmtDur(d time.Duration) string {
	return viewmodel.FormatMillis(float64(d.Microseconds()) / 1000)
}

// naturalLayout draws its one object (an image) at its natural size, centred, scaled
// down (never up) to fit: a 16 px icon is not blown up to the pane's size. An unknown
// natural size fills the space.
type naturalLayout struct{ natural fyne.Size }

func (l *naturalLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	w, h := size.Width, size.Height
	if n := l.natural; n.Width > 0 && n.Height > 0 {
		scale := min(size.Width/n.Width, size.Height/n.Height, 1)
		w, h = n.Width*scale, n.Height*scale
	}
	for _, o := range objs {
		o.Resize(fyne.NewSize(w, h))
		o.Move(fyne.NewPos((size.Width-w)/2, (size.Height-h)/2))
	}
}

func (l *naturalLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	return fyne.NewSize(64, 64)
}

// spanLayout places its single object from fraction `from` to `to` of the width.
type spanLayout struct{ from, to float32 }

func (l *spanLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objs {
		x := size.Width * l.from
		w := max(size.Width*(l.to-l.from), 2)
		h := o.MinSize().Height
		o.Move(fyne.NewPos(x, (size.Height-h)/2))
		o.Resize(fyne.NewSize(w, h))
	}
}

func (l *spanLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	return fyne.NewSize(100, 20)
}
