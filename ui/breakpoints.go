package ui

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"inspector/content"
	"inspector/engine/hooks/breakpoint"
	"inspector/engine/session"
	"inspector/ui/render"
)

// BreakpointWindow is the non-modal breakpoint panel: the queue of paused sessions
// (oldest first, new arrivals appended), the editor of the chosen one, the breakpoint list
// and the pause timeout. It lives in its own window so the main window stays usable while
// sessions wait. UI goroutine only.
type BreakpointWindow struct {
	dbg Debugger
	// protos returns the instance's protobuf schemas (Deps.Protos): paused protobuf
	// bodies of known methods are edited as JSON. nil: bodies are shown as they are.
	protos func() *content.Protos

	QueueLabel *widget.Label
	Queue      *widget.List
	paused     []breakpoint.Paused
	selected   session.ID
	// Editor edits the chosen paused session; nil when nothing is paused.
	Editor    *PausedEditor
	editorBox *fyne.Container
	empty     fyne.CanvasObject

	List *BreakpointsPanel

	Timeout      *widget.Entry
	OnTimeout    *widget.Select
	ApplyTimeout *widget.Button
	TimeoutInfo  *widget.Label

	Content fyne.CanvasObject
	// onCount runs after the number of paused sessions changed (window title).
	onCount func(n int)
	onError func(error)
}

// NewBreakpointWindow builds the panel's content over dbg; protos (nil: none) gives the
// schemas with which paused protobuf bodies are edited as JSON.
func NewBreakpointWindow(dbg Debugger, protos func() *content.Protos) *BreakpointWindow {
	w := &BreakpointWindow{dbg: dbg, protos: protos}
	w.QueueLabel = heading("Nothing paused")
	w.Queue = lineList(&w.paused, "#000000 response GET https://example.com/", queueLine)
	w.Queue.OnSelected = func(i widget.ListItemID) {
		if i < len(w.paused) && w.paused[i].ID != w.selected {
			w.Select(w.paused[i].ID)
		}
	}
	empty := widget.NewLabel("No session is paused. Sessions that match an enabled breakpoint wait here until you continue, answer or abort them.")
	empty.Wrapping = fyne.TextWrapWord
	w.empty = container.NewVBox(capped(empty, 4))
	w.editorBox = container.NewStack(w.empty)

	w.List = NewBreakpointsPanel(dbg)
	w.List.onError = func(err error) {
		if w.onError != nil {
			w.onError(err)
		}
	}

	w.Timeout = widget.NewEntry()
	w.Timeout.SetPlaceHolder("0 = wait until decided")
	w.OnTimeout = widget.NewSelect([]string{string(breakpoint.TimeoutContinue), string(breakpoint.TimeoutAbort)}, nil)
	w.TimeoutInfo = widget.NewLabel("")
	w.TimeoutInfo.Wrapping = fyne.TextWrapWord
	w.ApplyTimeout = widget.NewButton("Apply", w.applyTimeout)
	w.loadTimeout()

	timeoutRow := container.NewBorder(nil, nil, widget.NewLabel("Timeout"),
		container.NewHBox(widget.NewLabel("then"), w.OnTimeout, w.ApplyTimeout), w.Timeout)
	queue := container.NewBorder(w.QueueLabel, nil, nil, nil, w.Queue)
	bps := container.NewBorder(heading("Breakpoints"),
		container.NewVBox(timeoutRow, capped(w.TimeoutInfo, 3)), nil, nil, w.List.Content)
	left := container.NewVSplit(queue, bps)
	left.SetOffset(0.45)
	split := container.NewHSplit(left, w.editorBox)
	split.SetOffset(0.34)
	w.Content = split
	w.refresh()
	return w
}

func queueLine(p breakpoint.Paused) string {
	s := fmt.Sprintf("#%d  %s  %s %s", p.ID, p.Phase, p.Method, p.URL)
	if p.Phase == breakpoint.PhaseResponse {
		s = fmt.Sprintf("#%d  %s %d  %s %s", p.ID, p.Phase, p.Status, p.Method, p.URL)
	}
	return s
}

// Paused is the queue as shown, oldest first.
func (w *BreakpointWindow) Paused() []breakpoint.Paused { return w.paused }

// Selected is the session in the editor (0: none).
func (w *BreakpointWindow) Selected() session.ID { return w.selected }

// refresh reloads the queue; the editor keeps the chosen session (and the user's edits)
// while it is paused, otherwise moves to the oldest one still waiting.
func (w *BreakpointWindow) refresh() {
	w.paused = w.dbg.Paused()
	n := len(w.paused)
	switch n {
	case 0:
		w.QueueLabel.SetText("Nothing paused")
	case 1:
		w.QueueLabel.SetText("1 paused session")
	default:
		w.QueueLabel.SetText(fmt.Sprintf("%d paused sessions", n))
	}
	w.Queue.Refresh()
	if _, ok := w.index(w.selected); !ok {
		if n > 0 {
			w.Select(w.paused[0].ID)
		} else {
			w.selected, w.Editor = 0, nil
			w.Queue.UnselectAll()
			w.editorBox.Objects = []fyne.CanvasObject{w.empty}
			w.editorBox.Refresh()
		}
	}
	w.List.refresh()
	if w.onCount != nil {
		w.onCount(n)
	}
}

func (w *BreakpointWindow) index(id session.ID) (int, bool) {
	for i, p := range w.paused {
		if p.ID == id && id != 0 {
			return i, true
		}
	}
	return 0, false
}

// Select opens the editor on a paused session of the queue; false when it is not paused.
func (w *BreakpointWindow) Select(id session.ID) bool {
	i, ok := w.index(id)
	if !ok {
		return false
	}
	w.selected = id
	set := w.dbg.BreakpointSettings()
	ed := NewPausedEditor(w.dbg, w.paused[i])
	if w.protos != nil {
		ed.useProtos(w.protos())
	}
	ed.setTimeout(time.Duration(set.Timeout), set.OnTimeout)
	ed.done = w.refresh
	ed.onError = w.onError
	w.Editor = ed
	w.editorBox.Objects = []fyne.CanvasObject{ed.Content}
	w.editorBox.Refresh()
	w.Queue.Select(i)
	return true
}

func (w *BreakpointWindow) loadTimeout() {
	set := w.dbg.BreakpointSettings()
	d := time.Duration(set.Timeout)
	if d == 0 {
		w.Timeout.SetText("0")
	} else {
		w.Timeout.SetText(d.String())
	}
	act := set.OnTimeout
	if act == "" {
		act = breakpoint.TimeoutContinue
	}
	w.OnTimeout.SetSelected(string(act))
	w.TimeoutInfo.SetText(timeoutText(d, act))
}

func timeoutText(d time.Duration, act breakpoint.TimeoutAction) string {
	if d == 0 {
		return "A paused session waits until you decide or its client gives up."
	}
	if act == "" {
		act = breakpoint.TimeoutContinue
	}
	done := "continued"
	if act == breakpoint.TimeoutAbort {
		done = "aborted"
	}
	return fmt.Sprintf("A session paused for %s is %s automatically.", d, done)
}

// parseTimeout reads "90s", "5m", "1h30m" or a number of seconds; 0 turns the timeout off.
func parseTimeout(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		s = strconv.Itoa(n) + "s"
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("timeout %q: want a duration such as 90s or 5m (0 for none)", s)
	}
	return d, nil
}

func (w *BreakpointWindow) applyTimeout() {
	d, err := parseTimeout(w.Timeout.Text)
	if err == nil {
		err = w.dbg.SetBreakpointTimeout(d, breakpoint.TimeoutAction(w.OnTimeout.Selected))
	}
	if err != nil {
		w.TimeoutInfo.SetText("⚠ " + err.Error())
		if w.onError != nil {
			w.onError(err)
		}
		return
	}
	w.loadTimeout()
	if w.Editor != nil {
		w.Editor.setTimeout(d, breakpoint.TimeoutAction(w.OnTimeout.Selected))
	}
}

// PausedEditor edits one paused request or response. It shows only the fields of the
// stage: method, URL, headers and body for a request (with a separate "Respond instead"
// section); status, reason, headers and body for a response. UI goroutine only.
type PausedEditor struct {
	dbg Debugger
	p   breakpoint.Paused
	// Request stage only.
	Method *widget.SelectEntry
	URL    *widget.Entry
	// Response stage only.
	Status, Reason *widget.Entry

	Headers *HeaderTable
	Body    *widget.Entry
	// heldBody is a body too large to show in Body (setBody).
	heldBody []byte
	// proto, when set, is the protobuf body shown as JSON (breakpoints_proto.go).
	proto  *protoBody
	Info   *widget.Label
	Expiry *widget.Label
	// Err shows why the last action was refused (empty when none was).
	Err *widget.Label

	// The "Respond instead" section of the request stage: the answer's own fields.
	RespStatus, RespReason, RespType, RespBody *widget.Entry

	Continue, ContinueEdited, Respond, Abort *widget.Button
	Content                                  fyne.CanvasObject

	done    func()
	onError func(error)
}

var methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// NewPausedEditor builds the editor for p; its buttons act on dbg.
func NewPausedEditor(dbg Debugger, p breakpoint.Paused) *PausedEditor {
	e := &PausedEditor{dbg: dbg, p: p}
	e.Headers = NewHeaderTable(p.Header)
	e.Body = widget.NewMultiLineEntry()
	e.heldBody = setBody(e.Body, p.Body)
	e.Body.TextStyle.Monospace = true // wrapped only for long lines (setBody): Fyne rewraps the whole text on every change
	info := fmt.Sprintf("#%d paused at its %s by breakpoint %d.", p.ID, p.Phase, p.Breakpoint)
	if p.Decoded != "" {
		info += " The body is shown decoded (" + p.Decoded + ") and is encoded again when edited."
	}
	if p.BodyTruncated {
		info += " Only the first part of the body is shown; editing it replaces the whole body."
	}
	e.Info = widget.NewLabel(info)
	e.Info.Wrapping = fyne.TextWrapWord
	e.Expiry = widget.NewLabel("")
	e.Err = widget.NewLabel("")
	e.Err.Wrapping = fyne.TextWrapWord
	e.Err.Importance = widget.DangerImportance
	e.Err.Hide()
	e.Continue = widget.NewButton("Continue", func() { e.act(func() error { return dbg.Resume(p.ID, nil) }) })
	e.ContinueEdited = widget.NewButton("Continue edited", func() {
		decide(e, e.Edits, func(ed *breakpoint.Edits) error { return dbg.Resume(p.ID, ed) })
	})
	e.ContinueEdited.Importance = widget.HighImportance
	e.Respond = widget.NewButton("Respond", func() {
		decide(e, e.Answer, func(a breakpoint.Answer) error { return dbg.Respond(p.ID, a) })
	})
	e.Abort = widget.NewButton("Abort", func() { e.act(func() error { return dbg.Abort(p.ID) }) })
	e.Abort.Importance = widget.DangerImportance

	var form *widget.Form
	var bottom fyne.CanvasObject
	if p.Phase == breakpoint.PhaseResponse {
		e.Status = widget.NewEntry()
		e.Status.SetText(strconv.Itoa(p.Status))
		e.Reason = widget.NewEntry()
		e.Reason.SetPlaceHolder(http.StatusText(p.Status))
		e.Status.OnChanged = func(s string) { e.Reason.SetPlaceHolder(reasonHint(s)) }
		form = widget.NewForm(widget.NewFormItem("Status", e.Status), widget.NewFormItem("Reason", e.Reason))
		e.Respond.SetText("Respond with these")
		bottom = container.NewHBox(e.Continue, e.ContinueEdited, e.Respond, e.Abort)
	} else {
		e.Method = widget.NewSelectEntry(methods)
		e.Method.SetText(p.Method)
		e.URL = widget.NewEntry()
		e.URL.SetText(p.URL)
		form = widget.NewForm(widget.NewFormItem("Method", e.Method), widget.NewFormItem("URL", e.URL))
		e.RespStatus = widget.NewEntry()
		e.RespStatus.SetText("200")
		e.RespReason = widget.NewEntry()
		e.RespReason.SetPlaceHolder("OK")
		e.RespStatus.OnChanged = func(s string) { e.RespReason.SetPlaceHolder(reasonHint(s)) }
		e.RespType = widget.NewEntry()
		e.RespType.SetText("text/plain; charset=utf-8")
		if strings.Contains(p.Header.Get("Accept"), "json") {
			e.RespType.SetText("application/json")
		}
		e.RespBody = widget.NewMultiLineEntry()
		e.RespBody.TextStyle.Monospace = true
		e.RespBody.SetMinRowsVisible(3)
		respond := widget.NewAccordion(widget.NewAccordionItem("Respond instead (the origin is not contacted)",
			container.NewBorder(widget.NewForm(
				widget.NewFormItem("Status", e.RespStatus),
				widget.NewFormItem("Reason", e.RespReason),
				widget.NewFormItem("Content-Type", e.RespType)),
				container.NewHBox(e.Respond), nil, nil, mono(e.RespBody))))
		bottom = container.NewVBox(respond, container.NewHBox(e.Continue, e.ContinueEdited, e.Abort))
	}
	fields := container.NewVSplit(
		container.NewBorder(heading("Headers"), nil, nil, nil, e.Headers.Content),
		container.NewBorder(heading("Body"), nil, nil, nil, mono(e.Body)))
	fields.SetOffset(0.6) // requests carry more header lines than body lines
	e.Content = container.NewBorder(container.NewVBox(capped(e.Info, 3), e.Expiry, form), container.NewVBox(capped(e.Err, 3), bottom), nil, nil, fields)
	return e
}

// reasonHint is the standard phrase for a typed status code (the Reason placeholder).
func reasonHint(s string) string {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return ""
	}
	return http.StatusText(n)
}

func (e *PausedEditor) setTimeout(d time.Duration, act breakpoint.TimeoutAction) {
	if d == 0 {
		e.Expiry.SetText("No timeout: it waits until you decide or its client gives up.")
		return
	}
	if act == "" {
		act = breakpoint.TimeoutContinue
	}
	e.Expiry.SetText(fmt.Sprintf("Paused at %s; %ss automatically at %s.", e.p.Since.Format("15:04:05"),
		act, e.p.Since.Add(d).Format("15:04:05")))
}

// Paused is the session the editor is for.
func (e *PausedEditor) Paused() breakpoint.Paused { return e.p }

// Edits returns what the user changed (only changed fields are set).
func (e *PausedEditor) Edits() (*breakpoint.Edits, error) {
	ed := &breakpoint.Edits{}
	h, err := e.Headers.Header()
	if err != nil {
		return nil, err
	}
	if !sameHeader(h, e.p.Header) {
		ed.Header = h
	}
	b, changed, err := e.editedBody()
	if err != nil {
		return nil, err
	}
	switch {
	case changed && e.proto != nil: // binary messages travel as base64
		s := base64.StdEncoding.EncodeToString(b)
		ed.BodyBase64 = &s
	case changed:
		s := string(b)
		ed.Body = &s
	}
	if e.p.Phase == breakpoint.PhaseRequest {
		if m := strings.TrimSpace(e.Method.Text); m != e.p.Method {
			ed.Method = m
		}
		if u := strings.TrimSpace(e.URL.Text); u != e.p.URL {
			ed.URL = u
		}
	} else {
		n, err := statusCode(e.Status.Text)
		if err != nil {
			return nil, err
		}
		if n != e.p.Status {
			ed.Status = n
		}
		ed.Reason = strings.TrimSpace(e.Reason.Text)
	}
	return ed, ed.Validate(e.p.Phase)
}

// sameHeader compares two header sets as the table shows them (canonical names, values
// in order).
func sameHeader(a, b http.Header) bool {
	return render.Headers(canonHeader(a)) == render.Headers(canonHeader(b))
}

func canonHeader(h http.Header) http.Header {
	c := http.Header{}
	for k, vv := range h {
		c[http.CanonicalHeaderKey(k)] = append(c[http.CanonicalHeaderKey(k)], vv...)
	}
	return c
}

func statusCode(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 100 || n > 999 {
		return 0, fmt.Errorf("status %q: want a number from 100 to 999", s)
	}
	return n, nil
}

// Answer is the response Respond sends: at the request stage the "Respond instead"
// fields, at the response stage the status, reason, headers and body fields.
func (e *PausedEditor) Answer() (breakpoint.Answer, error) {
	if e.p.Phase == breakpoint.PhaseRequest {
		n, err := statusCode(e.RespStatus.Text)
		if err != nil {
			return breakpoint.Answer{}, err
		}
		h := http.Header{}
		if ct := strings.TrimSpace(e.RespType.Text); ct != "" {
			h.Set("Content-Type", ct)
		}
		return breakpoint.Answer{Status: n, Reason: strings.TrimSpace(e.RespReason.Text), Header: h, Body: e.RespBody.Text}, nil
	}
	n, err := statusCode(e.Status.Text)
	if err != nil {
		return breakpoint.Answer{}, err
	}
	h, err := e.Headers.Header()
	if err != nil {
		return breakpoint.Answer{}, err
	}
	h.Del("Content-Encoding") // the answer body is sent as typed
	body := bodyOf(e.Body, e.heldBody)
	if e.proto != nil {
		if body, err = e.proto.encode(e.Body.Text); err != nil {
			return breakpoint.Answer{}, err
		}
	}
	return breakpoint.Answer{Status: n, Reason: strings.TrimSpace(e.Reason.Text), Header: h, Body: string(body)}, nil
}

// decide reads the fields with read and, when they are valid, acts with apply.
func decide[T any](e *PausedEditor, read func() (T, error), apply func(T) error) {
	v, err := read()
	if err != nil {
		e.fail(err)
		return
	}
	e.act(func() error { return apply(v) })
}

func (e *PausedEditor) act(f func() error) {
	if err := f(); err != nil {
		e.fail(err)
		return
	}
	if e.done != nil {
		e.done()
	}
}

func (e *PausedEditor) fail(err error) {
	if errors.Is(err, breakpoint.ErrNotPaused) {
		err = errors.New("this session is no longer paused (decided elsewhere, timed out, or its client left)")
	}
	e.Err.SetText("⚠ " + err.Error())
	e.Err.Show()
	if e.onError != nil {
		e.onError(err)
	}
}

// BreakpointsPanel lists, adds, enables and removes breakpoints; the filter is checked as
// it is typed. UI goroutine only.
type BreakpointsPanel struct {
	dbg     Debugger
	Filter  *FilterEntry
	Phase   *widget.Select
	Add     *widget.Button
	Rows    *fyne.Container
	Content fyne.CanvasObject
	onError func(error)
	// Err shows the last error (also passed to onError).
	Err *widget.Label
}

// NewBreakpointsPanel builds the panel.
func NewBreakpointsPanel(dbg Debugger) *BreakpointsPanel {
	p := &BreakpointsPanel{dbg: dbg}
	p.Filter = NewFilterEntry("filter, e.g. host:api.example.com method:POST")
	p.Phase = widget.NewSelect([]string{string(breakpoint.PhaseRequest), string(breakpoint.PhaseResponse), string(breakpoint.PhaseBoth)}, nil)
	p.Phase.SetSelected(string(breakpoint.PhaseRequest))
	p.Err = widget.NewLabel("")
	p.Err.Wrapping = fyne.TextWrapWord
	p.Add = widget.NewButton("Add", func() {
		_, err := dbg.AddBreakpoint(breakpoint.Breakpoint{Filter: strings.TrimSpace(p.Filter.Text), Phase: breakpoint.Phase(p.Phase.Selected), Enabled: true})
		if p.report(err) {
			p.Filter.SetText("")
		}
		p.refresh()
	})
	p.Rows = container.NewVBox()
	p.Content = container.NewBorder(
		container.NewVBox(container.NewBorder(nil, nil, nil, container.NewHBox(p.Phase, p.Add), p.Filter.Entry), capped(p.Filter.Error, 3), capped(p.Err, 3)),
		nil, nil, nil, container.NewVScroll(p.Rows))
	p.refresh()
	return p
}

func (p *BreakpointsPanel) report(err error) bool {
	if err != nil {
		p.Err.SetText("⚠ " + err.Error())
		if p.onError != nil {
			p.onError(err)
		}
		return false
	}
	p.Err.SetText("")
	return true
}

// refresh rebuilds the rows from the debugger.
func (p *BreakpointsPanel) refresh() {
	p.Rows.RemoveAll()
	for _, b := range p.dbg.Breakpoints() {
		on := widget.NewCheck("", func(v bool) {
			if v != b.Enabled {
				b.Enabled = v
				p.report(p.dbg.SetBreakpoint(b))
			}
		})
		on.SetChecked(b.Enabled)
		rm := widget.NewButton("Remove", func() {
			p.report(p.dbg.RemoveBreakpoint(b.ID))
			p.refresh()
		})
		label := widget.NewLabel(fmt.Sprintf("#%d  %s  (%s)", b.ID, b.Filter, b.Phase))
		p.Rows.Add(container.NewBorder(nil, nil, on, rm, label))
	}
	p.Rows.Refresh()
}
