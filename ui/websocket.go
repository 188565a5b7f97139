package ui

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/content"
	"inspector/engine/session"
	"inspector/ui/render"
	"inspector/ui/viewmodel"
)

// The WebSocket tab: the session's messages as a list to select, narrowed by direction,
// kind and text, searched with Find (next/previous among the listed ones), and the
// selected message shown whole below: JSON indented and coloured, other text as it is,
// binary as a hex dump, a close frame's code and reason.

const (
	wsDirAll    = "Both ways"
	wsDirClient = "→ From client"
	wsDirServer = "← From server"

	wsKindAll     = "All kinds"
	wsKindData    = "Text and binary"
	wsKindText    = "Text"
	wsKindBinary  = "Binary"
	wsKindControl = "Control"
)

// wsMaxShown bounds a selected message's text (and hex dump) in the viewer.
const wsMaxShown = 4 << 20

type wsView struct {
	u    *UI
	s    *session.Session
	msgs []session.Message
	// shown are the indices in msgs of the listed messages, in order.
	shown []int
	// lower caches each message's searchable text, lower-cased (built on first use).
	lower []string
	sel   int // index into msgs of the selected message, -1 none

	Dir    *widget.Select
	Kind   *widget.Select
	Filter *widget.Entry
	Count  *widget.Label
	List   *widget.List
	// Find searches the listed messages: Enter or Next selects the next one holding the
	// text, Prev the previous one; FindResult says which of how many.
	Find       *widget.Entry
	Next, Prev *widget.Button
	FindResult *widget.Label
	Head       *widget.Label
	Detail     *textView
	box        fyne.CanvasObject
	split      *container.Split
}

func newWSView(u *UI) *wsView {
	v := &wsView{u: u, sel: -1}
	v.Dir = widget.NewSelect([]string{wsDirAll, wsDirClient, wsDirServer}, func(string) { v.apply() })
	v.Dir.SetSelected(wsDirAll)
	v.Kind = widget.NewSelect([]string{wsKindAll, wsKindData, wsKindText, wsKindBinary, wsKindControl}, func(string) { v.apply() })
	v.Kind.SetSelected(wsKindAll)
	v.Filter = widget.NewEntry()
	v.Filter.SetPlaceHolder("filter: text in the message")
	v.Filter.OnChanged = func(string) { v.apply() }
	v.Count = widget.NewLabel("")
	v.List = newMonoList(func() int { return len(v.shown) }, func(i int) string { return v.line(v.shown[i]) }, fyne.TextTruncateEllipsis)
	v.List.OnSelected = func(i widget.ListItemID) {
		if i >= 0 && i < len(v.shown) {
			v.show(v.shown[i])
		}
	}
	v.Find = widget.NewEntry()
	v.Find.SetPlaceHolder("find in messages")
	v.Find.OnSubmitted = func(string) { v.FindNext(1) }
	v.Find.OnChanged = func(string) { v.FindResult.SetText("") }
	v.Next = widget.NewButtonWithIcon("", theme.MoveDownIcon(), func() { v.FindNext(1) })
	v.Prev = widget.NewButtonWithIcon("", theme.MoveUpIcon(), func() { v.FindNext(-1) })
	v.FindResult = widget.NewLabel("")
	v.Head = widget.NewLabel("")
	v.Head.Truncation = fyne.TextTruncateEllipsis
	v.Detail = newTextView(u)

	find := container.NewBorder(nil, nil, nil, container.NewHBox(v.Prev, v.Next, v.FindResult), v.Find)
	bar := container.NewBorder(nil, nil, container.NewHBox(v.Dir, v.Kind), v.Count, container.NewGridWithColumns(2, v.Filter, find))
	top := container.NewBorder(bar, nil, nil, nil, v.List)
	v.split = container.NewVSplit(top, container.NewBorder(v.Head, nil, nil, nil, v.Detail.box))
	v.split.SetOffset(0.55)
	v.box = v.split
	return v
}

// set shows s's messages (s nil or not a WebSocket session: a note). The filters stay as
// the user left them.
func (v *wsView) set(s *session.Session) {
	v.s, v.msgs, v.lower, v.sel = s, nil, nil, -1
	if s != nil && s.Flags.Has(session.FlagWebSocket) {
		v.msgs = s.Messages
	}
	v.apply()
}

// apply lists the messages that pass the direction, kind and text filters, keeping the
// selected one selected when it still passes.
func (v *wsView) apply() {
	if v.Count == nil { // a Select's callback while building
		return
	}
	q := strings.ToLower(v.Filter.Text)
	v.shown = v.shown[:0]
	keep := -1
	for i, m := range v.msgs {
		if !v.passes(m) || (q != "" && !strings.Contains(v.text(i), q)) {
			continue
		}
		if i == v.sel {
			keep = len(v.shown)
		}
		v.shown = append(v.shown, i)
	}
	v.Count.SetText(v.countText())
	v.List.UnselectAll()
	v.List.Refresh()
	switch {
	case keep >= 0:
		v.List.Select(keep)
	case len(v.shown) > 0:
		v.List.Select(0)
	default:
		v.sel = -1
		v.Head.SetText("")
		v.Detail.set(v.emptyText())
	}
}

func (v *wsView) passes(m session.Message) bool {
	switch v.Dir.Selected {
	case wsDirClient:
		if !m.FromClient {
			return false
		}
	case wsDirServer:
		if m.FromClient {
			return false
		}
	}
	control := m.Opcode >= 8
	switch v.Kind.Selected {
	case wsKindData:
		return !control
	case wsKindText:
		return m.Opcode == 1 || (m.Opcode == 0 && utf8.Valid(m.Data))
	case wsKindBinary:
		return m.Opcode == 2
	case wsKindControl:
		return control
	}
	return true
}

// text is message i's searchable text, lower-cased: the payload as text (binary as hex
// too, so a byte sequence can be found) and a close frame's code.
func (v *wsView) text(i int) string {
	if v.lower == nil {
		v.lower = make([]string, len(v.msgs))
	}
	if v.lower[i] == "" {
		m := v.msgs[i]
		s := strings.ToLower(string(m.Data))
		if m.Opcode == 2 || !utf8.Valid(m.Data) {
			s += "\x00" + hex.EncodeToString(m.Data)
		}
		if m.Opcode == 8 && len(m.Data) >= 2 {
			s += "\x00code " + strconv.Itoa(int(m.Data[0])<<8|int(m.Data[1]))
		}
		v.lower[i] = s + "\x00" // never "" again
	}
	return v.lower[i]
}

func (v *wsView) countText() string {
	n := len(v.msgs)
	s := fmt.Sprintf("%d of %d messages", len(v.shown), n)
	if len(v.shown) == n {
		s = fmt.Sprintf("%d messages", n)
	}
	if v.s != nil {
		if seen, kept := v.s.MessageCounts(); seen > kept {
			s += fmt.Sprintf(" (%d seen, the first %d kept)", seen, kept)
		}
	}
	return s
}

func (v *wsView) emptyText() string {
	switch {
	case v.s == nil || !v.s.Flags.Has(session.FlagWebSocket):
		return "Not a WebSocket session."
	case len(v.msgs) == 0:
		return "No WebSocket messages were exchanged."
	}
	return "No message passes the filters."
}

// line is message i's row in the list.
func (v *wsView) line(i int) string {
	m := v.msgs[i]
	dir := "←"
	if m.FromClient {
		dir = "→"
	}
	preview := strings.NewReplacer("\n", " ", "\r", " ", "\t", " ").Replace(wsPayload(m))
	return fmt.Sprintf("%5d  %s %s %-6s %7s%s  %s", i+1, m.Time.Format("15:04:05.000"), dir, wsOpName(m.Opcode), viewmodel.FormatBytes(m.Size), wsMarks(m), preview)
}

// show puts message i whole in the viewer.
func (v *wsView) show(i int) {
	v.sel = i
	m := v.msgs[i]
	dir := "sent by the client"
	if !m.FromClient {
		dir = "sent by the server"
	}
	head := fmt.Sprintf("Message %d of %d · %s · %s · %d bytes · %s%s", i+1, len(v.msgs), wsOpName(m.Opcode), dir, m.Size,
		m.Time.Format("15:04:05.000"), wsMarks(m))
	if int64(len(m.Data)) < m.Size {
		head += fmt.Sprintf(" · %d bytes kept", len(m.Data))
	}
	text, isText := wsMessageText(m)
	lang := ""
	if pretty, ok := content.IndentJSON(text); ok && isText {
		text, lang = pretty, "json"
		head += " · JSON"
	}
	v.Head.SetText(head)
	v.Detail.setLang(lang)
	v.Detail.set(render.Cap(text, wsMaxShown))
	if q := v.Find.Text; q != "" {
		v.Detail.find(q)
	}
}

// wsMessageText is a message's payload as the viewer shows it; isText is false for a hex
// dump or a close frame.
func wsMessageText(m session.Message) (text string, isText bool) {
	d := m.Data
	switch {
	case m.Opcode == 8:
		if len(d) < 2 {
			return "Close, no status code.", false
		}
		s := fmt.Sprintf("Close, code %d", int(d[0])<<8|int(d[1]))
		if len(d) > 2 {
			s += ", reason " + strconv.Quote(string(d[2:]))
		}
		return s, false
	case m.Opcode == 2 || !utf8.Valid(d):
		return render.Hex(d, wsMaxShown/4), false
	}
	return string(d), true
}

// FindNext selects the next (d=1) or previous (d=-1) listed message, after the selected
// one, whose text holds the Find text, wrapping around; FindResult says which match of
// how many it is, or that there is none.
func (v *wsView) FindNext(d int) {
	q := strings.ToLower(v.Find.Text)
	if q == "" || len(v.shown) == 0 {
		v.FindResult.SetText("")
		return
	}
	var hits []int // positions in shown
	for p, i := range v.shown {
		if strings.Contains(v.text(i), q) {
			hits = append(hits, p)
		}
	}
	if len(hits) == 0 {
		v.FindResult.SetText("not found")
		return
	}
	cur := -1
	for p, i := range v.shown {
		if i == v.sel {
			cur = p
		}
	}
	pick := -1
	if d > 0 {
		pick = hits[0]
		for _, h := range hits {
			if h > cur {
				pick = h
				break
			}
		}
	} else {
		pick = hits[len(hits)-1]
		for k := len(hits) - 1; k >= 0; k-- {
			if hits[k] < cur || cur < 0 {
				pick = hits[k]
				break
			}
		}
	}
	n := 0
	for k, h := range hits {
		if h == pick {
			n = k + 1
		}
	}
	v.List.Select(pick)
	v.List.ScrollTo(pick)
	v.FindResult.SetText(fmt.Sprintf("%d of %d", n, len(hits)))
}

// Text is the list as shown, one line per message (tests, Copy).
func (v *wsView) Text() string {
	if len(v.shown) == 0 {
		return v.emptyText()
	}
	var sb strings.Builder
	if v.s != nil {
		if note := v.s.MessagesNote(); note != "" {
			sb.WriteString(note + " (the rest were counted, not recorded).\n")
		}
	}
	for _, i := range v.shown {
		sb.WriteString(v.line(i))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// newMonoList is a list of one monospace label a row: text(i) for row i < length().
func newMonoList(length func() int, text func(int) string, trunc fyne.TextTruncation) *widget.List {
	return widget.NewList(length,
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.TextStyle.Monospace = true
			l.Truncation = trunc
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < length() {
				o.(*widget.Label).SetText(text(i))
			}
		})
}
