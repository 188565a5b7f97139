package ui

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	_ "image/gif"  // image previews
	_ "image/jpeg" // image previews
	_ "image/png"  // image previews
	"net/http"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/session"
	"inspector/ui/render"
	"inspector/ui/viewmodel"
)

// textView is a read-only, selectable monospace text with a Copy button.
type textView struct {
	label *widget.Label
	box   fyne.CanvasObject
}

func newTextView(u *UI) *textView {
	t := &textView{label: widget.NewLabel("")}
	t.label.TextStyle = fyne.TextStyle{Monospace: true}
	t.label.Selectable = true
	t.label.Wrapping = fyne.TextWrapOff
	copyBtn := widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() {
		u.app.Clipboard().SetContent(t.label.Text)
	})
	t.box = container.NewBorder(container.NewHBox(copyBtn), nil, nil, nil, container.NewScroll(t.label))
	return t
}

func (t *textView) set(s string) { t.label.SetText(s) }

// bodyView shows one message body: pretty text, hex, or an image, decoded from its
// content encoding with the raw bytes one toggle away. Previews are capped.
type bodyView struct {
	u      *UI
	info   *widget.Label
	mode   *widget.RadioGroup // "Pretty", "Text", "Hex"
	raw    *widget.Check      // show the bytes as they travelled (still encoded)
	text   *textView
	image  *canvas.Image
	stack  *fyne.Container
	header http.Header
	body   session.Body
	box    fyne.CanvasObject
}

func newBodyView(u *UI) *bodyView {
	b := &bodyView{u: u, info: widget.NewLabel(""), text: newTextView(u)}
	b.mode = widget.NewRadioGroup([]string{"Pretty", "Text", "Hex"}, func(string) { b.render() })
	b.mode.Horizontal = true
	b.mode.Selected = "Pretty"
	b.raw = widget.NewCheck("Raw bytes", func(bool) { b.render() })
	b.image = canvas.NewImageFromResource(nil)
	b.image.FillMode = canvas.ImageFillContain
	b.image.SetMinSize(fyne.NewSize(64, 64))
	b.stack = container.NewStack(b.text.box, b.image)
	b.box = container.NewBorder(container.NewHBox(b.mode, b.raw, b.info), nil, nil, nil, b.stack)
	return b
}

func (b *bodyView) set(h http.Header, body session.Body) {
	b.header, b.body = h, body
	b.render()
}

// render builds the preview. Decoding is capped (render.DecodedCap) and the text is cut at
// render.PreviewCap, so even a huge body renders in bounded time.
func (b *bodyView) render() {
	data := b.body.Data
	ct := headerValue(b.header, "Content-Type")
	var notes []string
	if len(data) == 0 {
		b.image.Hide()
		b.text.box.Show()
		switch {
		case b.body.Size > 0:
			b.text.set(fmt.Sprintf("%d body bytes were not captured.", b.body.Size))
		default:
			b.text.set("(no body)")
		}
		b.info.SetText("")
		return
	}
	if !b.raw.Checked {
		dec, enc, cut, err := render.Decode(b.header, data)
		switch {
		case err != nil:
			notes = append(notes, "not decoded: "+err.Error())
		case enc != "":
			notes = append(notes, fmt.Sprintf("decoded from %s (%d → %d bytes)", enc, len(data), len(dec)))
			data = dec
		}
		if cut {
			notes = append(notes, "decoded preview capped")
		}
	}
	if b.body.Truncated || b.body.Size > int64(len(b.body.Data)) {
		notes = append(notes, fmt.Sprintf("captured %d of %d bytes", len(b.body.Data), b.body.Size))
	}
	kind := render.Classify(ct, data)
	notes = append([]string{kind.String()}, notes...)
	b.info.SetText(strings.Join(notes, " · "))

	if kind == render.KindImage {
		if cfg, format, err := image.DecodeConfig(bytes.NewReader(data)); err != nil {
			b.info.SetText(b.info.Text + " · image not decodable: " + err.Error())
			kind = render.KindBinary
		} else {
			b.info.SetText(fmt.Sprintf("%s · %s %d×%d", b.info.Text, format, cfg.Width, cfg.Height))
		}
	}
	if kind == render.KindImage && b.mode.Selected == "Pretty" && !b.raw.Checked {
		b.image.Resource = fyne.NewStaticResource("body", bytes.Clone(data))
		b.image.Refresh()
		b.image.Show()
		b.text.box.Hide()
		return
	}
	b.image.Hide()
	b.text.box.Show()
	switch {
	case b.mode.Selected == "Hex" || kind == render.KindBinary || kind == render.KindImage:
		b.text.set(render.Hex(data, render.PreviewCap/4))
	case b.mode.Selected == "Pretty":
		if len(data) > render.PreviewCap {
			data = data[:render.PreviewCap] // formatting a cut document fails; show it as text
			s, _ := render.Pretty(render.KindText, ct, data)
			b.text.set(render.Cap(s, render.PreviewCap) + "\n… preview capped")
			return
		}
		s, _ := render.Pretty(kind, ct, data)
		b.text.set(render.Cap(s, render.PreviewCap))
	default:
		b.text.set(render.Cap(render.Text(ct, data), render.PreviewCap))
	}
}

// messageView is the set of tabs for one side (request or response).
type messageView struct {
	headers *textView
	raw     *textView
	body    *bodyView
	cookies *textView
	query   *textView // request only
	tabs    *container.AppTabs
}

func newMessageView(u *UI, request bool) *messageView {
	m := &messageView{headers: newTextView(u), raw: newTextView(u), body: newBodyView(u), cookies: newTextView(u)}
	items := []*container.TabItem{
		container.NewTabItem("Headers", m.headers.box),
		container.NewTabItem("Raw", m.raw.box),
		container.NewTabItem("Body", m.body.box),
		container.NewTabItem("Cookies", m.cookies.box),
	}
	if request {
		m.query = newTextView(u)
		items = append(items, container.NewTabItem("Query/Form", m.query.box))
	}
	m.tabs = container.NewAppTabs(items...)
	return m
}

// detailPane shows the selected session.
type detailPane struct {
	u        *UI
	title    *widget.Label
	req      *messageView
	resp     *messageView
	timing   *fyne.Container
	timeText *widget.Label
	tls      *textView
	frames   *framesView
	ws       *textView
	tabs     *container.AppTabs
	box      fyne.CanvasObject
	shown    session.ID

	mark    *widget.Select // the user's mark of the shown session
	comment *widget.Entry  // and comment
	saveBtn *widget.Button
}

// marks are the mark values offered; "" is no mark.
var marks = []string{"none", "red", "orange", "green", "blue", "purple"}

func newDetailPane(u *UI) *detailPane {
	d := &detailPane{u: u, title: widget.NewLabel("Select a session to see it here.")}
	d.title.Truncation = fyne.TextTruncateEllipsis
	d.req = newMessageView(u, true)
	d.resp = newMessageView(u, false)
	d.timing = container.NewVBox()
	d.timeText = widget.NewLabel("")
	d.tls = newTextView(u)
	d.frames = newFramesView(u)
	d.ws = newTextView(u)
	d.tabs = container.NewAppTabs(
		container.NewTabItem("Request", d.req.tabs),
		container.NewTabItem("Response", d.resp.tabs),
		container.NewTabItem("Timing", container.NewVScroll(container.NewBorder(d.timeText, nil, nil, nil, d.timing))),
		container.NewTabItem("TLS", d.tls.box),
		container.NewTabItem("Frames", d.frames.box),
		container.NewTabItem("WebSocket", d.ws.box),
	)
	d.mark = widget.NewSelect(marks, nil)
	d.mark.SetSelected("none")
	d.comment = widget.NewEntry()
	d.comment.SetPlaceHolder("comment")
	d.saveBtn = widget.NewButton("Save mark", d.saveMark)
	d.setNotesEnabled(false)
	notes := container.NewBorder(nil, nil, container.NewHBox(widget.NewLabel("Mark"), d.mark), d.saveBtn, d.comment)
	d.box = container.NewBorder(container.NewVBox(d.title, notes), nil, nil, nil, d.tabs)
	return d
}

func (d *detailPane) setNotesEnabled(on bool) {
	for _, w := range []fyne.Disableable{d.mark, d.comment, d.saveBtn} {
		if on {
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
	if st := d.u.deps.Store; st != nil {
		if err := st.SetMark(id, mark, d.comment.Text); err != nil {
			dialog.ShowError(fmt.Errorf("saving the mark failed: %w", err), d.u.win)
			return
		}
	}
	c := s.Clone() // cached sessions are immutable: replace, never modify
	c.Mark, c.Comment = mark, d.comment.Text
	d.u.remember(c)
	sum := c.Summarize()
	if r, ok := d.u.model.Get(id); ok {
		sum.InFlight = r.InFlight
	}
	d.u.changed(d.u.model.Upsert([]session.Summary{sum}))
}

func (d *detailPane) object() fyne.CanvasObject { return d.box }

// show displays session id. An in-flight session shows its summary until it completes.
func (d *detailPane) show(id session.ID) {
	d.shown = id
	s, err := d.u.session(id)
	if err != nil {
		if r, ok := d.u.model.Get(id); ok && r.InFlight {
			d.title.SetText(fmt.Sprintf("#%d %s %s — in flight", r.ID, r.Method, r.URL))
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
	d.setNotesEnabled(false)
	for _, m := range []*messageView{d.req, d.resp} {
		m.headers.set("")
		m.raw.set("")
		m.cookies.set("")
		m.body.set(nil, session.Body{})
	}
	d.req.query.set("")
	d.tls.set("")
	d.timing.RemoveAll()
	d.timeText.SetText("")
	d.ws.set("")
	d.frames.set(nil)
}

func (d *detailPane) render(s *session.Session) {
	sum := s.Summarize()
	title := fmt.Sprintf("#%d  %s %s  →  %s  (%s, %s)", s.ID, s.Request.Method, s.Request.URL,
		viewmodel.CellText(&sum, viewmodel.ColStatus), viewmodel.CellText(&sum, viewmodel.ColProto),
		viewmodel.CellText(&sum, viewmodel.ColDuration))
	if s.Error != nil {
		title += "  ✗ " + s.Error.Error()
	}
	d.title.SetText(title)

	r := &s.Request
	d.req.headers.set(render.Headers(r.Header))
	d.req.raw.set(render.RawRequest(r))
	d.req.body.set(r.Header, r.Body)
	d.req.cookies.set(pairsText(render.RequestCookies(r.Header), "no cookies sent"))
	q, f := render.QueryAndForm(r)
	qt := "Query\n" + pairsText(q, "  (none)")
	if f != nil {
		qt += "\nForm\n" + pairsText(f, "  (none)")
	}
	d.req.query.set(qt)

	if s.Response != nil {
		d.resp.headers.set(render.Headers(s.Response.Header))
		d.resp.raw.set(render.RawResponse(s.Response))
		d.resp.body.set(s.Response.Header, s.Response.Body)
		d.resp.cookies.set(pairsText(render.ResponseCookies(s.Response.Header), "no cookies set"))
	} else {
		msg := "No response."
		if s.Error != nil {
			msg = "No response: " + s.Error.Error()
		}
		d.resp.headers.set(msg)
		d.resp.raw.set(msg)
		d.resp.body.set(nil, session.Body{})
		d.resp.cookies.set("")
	}
	d.renderTiming(s)
	d.tls.set(render.TLS(s))
	d.frames.load(s.ID)
	if s.Flags.Has(session.FlagWebSocket) {
		var sb strings.Builder
		for _, m := range s.Messages {
			dir := "←"
			if m.FromClient {
				dir = "→"
			}
			fmt.Fprintf(&sb, "%s %s %s %dB %s\n", m.Time.Format("15:04:05.000"), dir, wsOpName(m.Opcode), m.Size, wsPayload(m))
		}
		if len(s.Messages) == 0 {
			sb.WriteString("WebSocket messages are not captured yet.")
		}
		d.ws.set(sb.String())
	} else {
		d.ws.set("Not a WebSocket session. (WebSocket messages are not captured yet.)")
	}
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
}

func fmtDur(d time.Duration) string {
	return viewmodel.FormatMillis(float64(d.Microseconds()) / 1000)
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
