package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"inspector/engine"
	"inspector/engine/hooks/breakpoint"
	"inspector/engine/hooks/replay"
	"inspector/engine/hooks/rules"
	"inspector/engine/session"
	"inspector/ui/render"
)

// Debugger is what the breakpoint, composer and replay views need; the composition root
// adapts breakpoint.Manager and engine.Engine to it. All methods must be safe for
// concurrent use; OnChange callbacks may run on any goroutine (the UI hops to its own with
// fyne.Do) and must not be registered more than once per window.
type Debugger interface {
	Breakpoints() []breakpoint.Breakpoint
	AddBreakpoint(b breakpoint.Breakpoint) (int64, error)
	SetBreakpoint(b breakpoint.Breakpoint) error
	RemoveBreakpoint(id int64) error
	Paused() []breakpoint.Paused
	Resume(id session.ID, e *breakpoint.Edits) error
	Respond(id session.ID, a breakpoint.Answer) error
	Abort(id session.ID) error
	OnChange(f func())
	// Rules and ReplaceRules read and replace the rule list (engine/hooks/rules).
	Rules() []rules.Rule
	ReplaceRules(rs []rules.Rule) ([]rules.Rule, error)
	// Send runs a request through the proxy pipeline as a new session (engine.Engine.Send).
	Send(ctx context.Context, req *http.Request, opts engine.SendOptions) (*session.Session, error)
}

// debugViews owns the breakpoint indicator, the paused-session editor, the breakpoints
// panel, the composer and the replay dialog. UI goroutine only, like UI.
type debugViews struct {
	u         *UI
	dbg       Debugger
	indicator *widget.Button
	editor    *PausedEditor
	editorDlg dialog.Dialog
	panel     *BreakpointsPanel
	composer  *Composer
	replayer  *Replayer
	rules     *RulesEditor
	// post runs a function on the UI goroutine: fyne.Do, or a test's queue.
	post func(func())
}

func newDebugViews(u *UI, d Debugger) *debugViews {
	v := &debugViews{u: u, dbg: d, post: fyne.Do}
	v.indicator = widget.NewButton("", v.openOldestPaused)
	if d == nil {
		v.indicator.SetText("Breakpoints (no proxy)")
		v.indicator.Disable()
		return v
	}
	d.OnChange(func() { v.post(v.refresh) })
	v.refresh()
	return v
}

// toolbar returns the debugging buttons for the main toolbar.
func (v *debugViews) toolbar() []fyne.CanvasObject {
	return []fyne.CanvasObject{
		v.indicator,
		widget.NewButton("Breakpoints…", v.showPanel),
		widget.NewButton("Break on host", v.breakOnSelectedHost),
		widget.NewButton("Compose…", v.composeSelected),
		widget.NewButton("Replay…", v.replaySelected),
		widget.NewButton("Rules…", v.showRules),
		widget.NewButton("Copy raw", v.u.CopyRaw),
	}
}

// CopyRaw copies the selected session as raw HTTP/1.1-style text: the request, a blank
// line, then the response (bodies as text, or a note for binary ones).
func (u *UI) CopyRaw() {
	s := u.selectedSession()
	if s == nil {
		return
	}
	txt := render.RawRequest(&s.Request)
	if s.Response != nil {
		txt += "\n\n" + render.RawResponse(s.Response)
	}
	u.app.Clipboard().SetContent(txt)
}

// refresh updates the indicator and the open editor after a change.
func (v *debugViews) refresh() {
	if v.dbg == nil {
		return
	}
	n := len(v.dbg.Paused())
	v.indicator.SetText(fmt.Sprintf("⏸ %d paused", n))
	if n > 0 {
		v.indicator.Importance = widget.DangerImportance
		v.indicator.Enable()
	} else {
		v.indicator.Importance = widget.MediumImportance
		v.indicator.Disable()
	}
	v.indicator.Refresh()
	if v.panel != nil {
		v.panel.refresh()
	}
	if v.editor != nil && v.editorDlg != nil {
		if _, ok := v.find(v.editor.p.ID); !ok {
			v.editorDlg.Hide() // decided elsewhere (API, timeout, client left)
			v.editor, v.editorDlg = nil, nil
		}
	}
}

func (v *debugViews) find(id session.ID) (breakpoint.Paused, bool) {
	for _, p := range v.dbg.Paused() {
		if p.ID == id {
			return p, true
		}
	}
	return breakpoint.Paused{}, false
}

func (v *debugViews) openOldestPaused() {
	ps := v.dbg.Paused()
	if len(ps) == 0 {
		return
	}
	v.OpenPaused(ps[0])
}

// OpenPaused shows the editor for a paused session in a dialog.
func (v *debugViews) OpenPaused(p breakpoint.Paused) {
	if v.editorDlg != nil {
		v.editorDlg.Hide()
	}
	ed := NewPausedEditor(v.dbg, p)
	dlg := dialog.NewCustomWithoutButtons(fmt.Sprintf("Paused #%d at its %s", p.ID, p.Phase), ed.Content, v.u.win)
	ed.done = func() {
		dlg.Hide()
		v.editor, v.editorDlg = nil, nil
	}
	ed.onError = func(err error) { dialog.ShowError(err, v.u.win) }
	v.editor, v.editorDlg = ed, dlg
	dlg.Resize(fyne.NewSize(760, 600))
	dlg.Show()
}

func (v *debugViews) showPanel() {
	if v.dbg == nil {
		return
	}
	v.panel = NewBreakpointsPanel(v.dbg)
	v.panel.onError = func(err error) { dialog.ShowError(err, v.u.win) }
	dlg := dialog.NewCustom("Breakpoints", "Close", v.panel.Content, v.u.win)
	dlg.SetOnClosed(func() { v.panel = nil })
	dlg.Resize(fyne.NewSize(640, 420))
	dlg.Show()
}

// breakOnSelectedHost adds a request breakpoint for the selected session's host.
func (v *debugViews) breakOnSelectedHost() {
	if v.dbg == nil {
		return
	}
	id, ok := v.u.model.Selected()
	if !ok {
		return
	}
	r, ok := v.u.model.Get(id)
	if !ok {
		return
	}
	host := r.Host
	if host == "" {
		if pu, err := url.Parse(r.URL); err == nil {
			host = pu.Hostname()
		}
	}
	if host == "" {
		return
	}
	if _, err := v.dbg.AddBreakpoint(breakpoint.Breakpoint{Filter: "host:" + quoteFilter(host), Phase: breakpoint.PhaseRequest, Enabled: true}); err != nil {
		dialog.ShowError(err, v.u.win)
	}
	v.refresh()
}

// quoteFilter quotes a value for the filter language when it holds blanks or quotes.
func quoteFilter(s string) string {
	if strings.ContainsAny(s, " \t\"()") {
		return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
	}
	return s
}

func (v *debugViews) composeSelected() {
	if v.dbg == nil {
		return
	}
	c := NewComposer(v.dbg, v.u.selectedSession())
	c.post = v.post
	c.onSent = func(s *session.Session) {
		v.u.remember(s)
		v.u.changed(v.u.model.Upsert([]session.Summary{s.Summarize()}))
		v.u.SelectID(s.ID)
	}
	v.composer = c
	dlg := dialog.NewCustom("Composer", "Close", c.Content, v.u.win)
	dlg.Resize(fyne.NewSize(760, 600))
	dlg.Show()
}

func (v *debugViews) replaySelected() {
	if v.dbg == nil {
		return
	}
	s := v.u.selectedSession()
	if s == nil {
		dialog.ShowInformation("Replay", "Select a session to replay.", v.u.win)
		return
	}
	r := NewReplayer(v.dbg, []*session.Session{s})
	r.post = v.post
	v.replayer = r
	dlg := dialog.NewCustom(fmt.Sprintf("Replay #%d", s.ID), "Close", r.Content, v.u.win)
	dlg.SetOnClosed(r.Cancel)
	dlg.Resize(fyne.NewSize(480, 320))
	dlg.Show()
}

// parseHeaders reads "Name: value" lines; blank lines are skipped, anything else is an
// error naming the line.
func parseHeaders(s string) (http.Header, error) {
	h := http.Header{}
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("headers, line %d: want \"Name: value\", got %q", i+1, line)
		}
		h[http.CanonicalHeaderKey(k)] = append(h[http.CanonicalHeaderKey(k)], strings.TrimSpace(v))
	}
	return h, nil
}

// PausedEditor edits a paused request or response. Its widgets are exported to tests
// through the struct; UI goroutine only.
type PausedEditor struct {
	dbg     Debugger
	p       breakpoint.Paused
	Method  *widget.Entry
	URL     *widget.Entry
	Status  *widget.Entry
	Headers *widget.Entry
	Body    *widget.Entry
	Info    *widget.Label

	Continue, ContinueEdited, Respond, Abort *widget.Button
	Content                                  fyne.CanvasObject

	done    func()
	onError func(error)
}

// NewPausedEditor builds the editor for p. Buttons act on dbg.
func NewPausedEditor(dbg Debugger, p breakpoint.Paused) *PausedEditor {
	e := &PausedEditor{dbg: dbg, p: p}
	e.Method = widget.NewEntry()
	e.Method.SetText(p.Method)
	e.URL = widget.NewEntry()
	e.URL.SetText(p.URL)
	e.Status = widget.NewEntry()
	if p.Phase == breakpoint.PhaseResponse {
		e.Status.SetText(strconv.Itoa(p.Status))
		e.Method.Disable()
		e.URL.Disable()
	} else {
		e.Status.SetText("200")
		e.Status.SetPlaceHolder("status for Respond")
	}
	e.Headers = widget.NewMultiLineEntry()
	e.Headers.SetText(render.Headers(p.Header))
	e.Headers.TextStyle.Monospace = true
	e.Body = widget.NewMultiLineEntry()
	e.Body.SetText(string(p.Body))
	e.Body.TextStyle.Monospace = true
	info := fmt.Sprintf("Session #%d paused at its %s by breakpoint %d.", p.ID, p.Phase, p.Breakpoint)
	if p.Decoded != "" {
		info += " The body is shown decoded (" + p.Decoded + ") and is encoded again when edited."
	}
	if p.BodyTruncated {
		info += " Only the first part of the body is shown; editing it replaces the whole body."
	}
	e.Info = widget.NewLabel(info)
	e.Info.Wrapping = fyne.TextWrapWord
	e.Continue = widget.NewButton("Continue", func() { e.act(func() error { return dbg.Resume(p.ID, nil) }) })
	e.ContinueEdited = widget.NewButton("Continue edited", func() {
		ed, err := e.Edits()
		if err != nil {
			e.fail(err)
			return
		}
		e.act(func() error { return dbg.Resume(p.ID, ed) })
	})
	e.ContinueEdited.Importance = widget.HighImportance
	e.Respond = widget.NewButton("Respond", func() {
		a, err := e.Answer()
		if err != nil {
			e.fail(err)
			return
		}
		e.act(func() error { return dbg.Respond(p.ID, a) })
	})
	e.Abort = widget.NewButton("Abort", func() { e.act(func() error { return dbg.Abort(p.ID) }) })
	e.Abort.Importance = widget.DangerImportance
	statusLabel := "Status"
	if p.Phase == breakpoint.PhaseRequest {
		statusLabel = "Status (Respond)"
	}
	form := widget.NewForm(
		widget.NewFormItem("Method", e.Method),
		widget.NewFormItem("URL", e.URL),
		widget.NewFormItem(statusLabel, e.Status),
	)
	buttons := container.NewHBox(e.Continue, e.ContinueEdited, e.Respond, e.Abort)
	tabs := container.NewAppTabs(
		container.NewTabItem("Headers", e.Headers),
		container.NewTabItem("Body", e.Body),
	)
	e.Content = container.NewBorder(container.NewVBox(e.Info, form), buttons, nil, nil, tabs)
	return e
}

// Edits returns what the user changed (only changed fields are set).
func (e *PausedEditor) Edits() (*breakpoint.Edits, error) {
	ed := &breakpoint.Edits{}
	h, err := parseHeaders(e.Headers.Text)
	if err != nil {
		return nil, err
	}
	if render.Headers(h) != render.Headers(e.p.Header) {
		ed.Header = h
	}
	if e.Body.Text != string(e.p.Body) {
		b := e.Body.Text
		ed.Body = &b
	}
	if e.p.Phase == breakpoint.PhaseRequest {
		if m := strings.TrimSpace(e.Method.Text); m != e.p.Method {
			ed.Method = m
		}
		if u := strings.TrimSpace(e.URL.Text); u != e.p.URL {
			ed.URL = u
		}
	} else if st := strings.TrimSpace(e.Status.Text); st != strconv.Itoa(e.p.Status) {
		n, err := strconv.Atoi(st)
		if err != nil {
			return nil, fmt.Errorf("status %q is not a number", st)
		}
		ed.Status = n
	}
	return ed, ed.Validate(e.p.Phase)
}

// Answer is the custom response made of the status, headers and body fields.
func (e *PausedEditor) Answer() (breakpoint.Answer, error) {
	n, err := strconv.Atoi(strings.TrimSpace(e.Status.Text))
	if err != nil {
		return breakpoint.Answer{}, fmt.Errorf("status %q is not a number", e.Status.Text)
	}
	h, err := parseHeaders(e.Headers.Text)
	if err != nil {
		return breakpoint.Answer{}, err
	}
	if e.p.Phase == breakpoint.PhaseRequest {
		h = http.Header{"Content-Type": {"text/plain; charset=utf-8"}} // request headers make no response
		if ct := e.p.Header.Get("Accept"); strings.Contains(ct, "json") {
			h.Set("Content-Type", "application/json")
		}
	}
	h.Del("Content-Encoding") // the answer body is sent as typed
	return breakpoint.Answer{Status: n, Header: h, Body: e.Body.Text}, nil
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
	e.Info.SetText("⚠ " + err.Error())
	if e.onError != nil {
		e.onError(err)
	}
}

// BreakpointsPanel lists, adds, enables and removes breakpoints. UI goroutine only.
type BreakpointsPanel struct {
	dbg     Debugger
	Filter  *widget.Entry
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
	p.Filter = widget.NewEntry()
	p.Filter.SetPlaceHolder("filter, e.g. host:api.example.com method:POST")
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
		container.NewVBox(container.NewBorder(nil, nil, nil, container.NewHBox(p.Phase, p.Add), p.Filter), p.Err),
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
		b := b
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

// Composer builds a request (from a session or blank), sends it through the proxy and
// reports the new session. UI goroutine only; the send runs on a background goroutine.
type Composer struct {
	dbg     Debugger
	from    session.ID
	Method  *widget.SelectEntry
	URL     *widget.Entry
	Headers *widget.Entry
	Body    *widget.Entry
	SendBtn *widget.Button
	Result  *widget.Label
	Content fyne.CanvasObject
	onSent  func(*session.Session)
	post    func(func()) // fyne.Do unless a test queues
}

// NewComposer opens s in the composer (nil: a blank GET request).
func NewComposer(dbg Debugger, s *session.Session) *Composer {
	c := &Composer{dbg: dbg, post: fyne.Do}
	c.Method = widget.NewSelectEntry([]string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
	c.URL = widget.NewEntry()
	c.URL.SetPlaceHolder("https://example.com/path")
	c.Headers = widget.NewMultiLineEntry()
	c.Headers.TextStyle.Monospace = true
	c.Body = widget.NewMultiLineEntry()
	c.Body.TextStyle.Monospace = true
	c.Result = widget.NewLabel("")
	c.Result.Wrapping = fyne.TextWrapWord
	c.Method.SetText("GET")
	if s != nil {
		c.from = s.ID
		c.Method.SetText(s.Request.Method)
		c.URL.SetText(s.Request.URL)
		h := s.Request.Header.Clone()
		h.Del("Content-Length")
		c.Headers.SetText(render.Headers(h))
		c.Body.SetText(string(s.Request.Body.Data))
		c.Result.SetText(fmt.Sprintf("Editing a copy of #%d; the result is a new session linked to it.", s.ID))
	}
	c.SendBtn = widget.NewButton("Send", c.Send)
	c.SendBtn.Importance = widget.HighImportance
	form := widget.NewForm(widget.NewFormItem("Method", c.Method), widget.NewFormItem("URL", c.URL))
	tabs := container.NewAppTabs(container.NewTabItem("Headers", c.Headers), container.NewTabItem("Body", c.Body))
	c.Content = container.NewBorder(form, container.NewVBox(c.Result, c.SendBtn), nil, nil, tabs)
	return c
}

// Request builds the request from the fields.
func (c *Composer) Request(ctx context.Context) (*http.Request, error) {
	h, err := parseHeaders(c.Headers.Text)
	if err != nil {
		return nil, err
	}
	b := c.Body.Text
	s := &session.Session{ID: c.from, Request: session.Request{Method: strings.TrimSpace(c.Method.Text),
		URL: strings.TrimSpace(c.URL.Text), Header: h, Body: session.Body{Data: []byte(b), Size: int64(len(b))}}}
	return replay.Request(ctx, s, nil)
}

// Send sends the request on a background goroutine; the result lands in Result (and
// onSent) on the UI goroutine.
func (c *Composer) Send() {
	req, err := c.Request(context.Background())
	if err != nil {
		c.Result.SetText("⚠ " + err.Error())
		return
	}
	c.SendBtn.Disable()
	c.Result.SetText("Sending…")
	go func() {
		s, err := c.dbg.Send(context.Background(), req, engine.SendOptions{ReplayOf: c.from})
		c.post(func() {
			c.SendBtn.Enable()
			switch {
			case s == nil && err != nil:
				c.Result.SetText("⚠ " + err.Error())
			case s.Error != nil:
				c.Result.SetText(fmt.Sprintf("#%d failed: %s", s.ID, s.Error.Message))
			default:
				c.Result.SetText(fmt.Sprintf("#%d → %d", s.ID, s.Status()))
			}
			if s != nil && c.onSent != nil {
				c.onSent(s)
			}
		})
	}()
}

// Replayer replays sessions N times, P at once, with progress and cancel. UI goroutine
// only; the job runs on background goroutines.
type Replayer struct {
	dbg      Debugger
	sessions []*session.Session
	Count    *widget.Entry
	Parallel *widget.Entry
	Start    *widget.Button
	CancelB  *widget.Button
	Progress *widget.ProgressBar
	Result   *widget.Label
	Content  fyne.CanvasObject
	cancel   context.CancelFunc
	post     func(func()) // fyne.Do unless a test queues
}

// NewReplayer builds the replay controls for sessions.
func NewReplayer(dbg Debugger, sessions []*session.Session) *Replayer {
	r := &Replayer{dbg: dbg, sessions: sessions, post: fyne.Do}
	r.Count = widget.NewEntry()
	r.Count.SetText("1")
	r.Parallel = widget.NewEntry()
	r.Parallel.SetText("1")
	r.Progress = widget.NewProgressBar()
	r.Result = widget.NewLabel("")
	r.Result.Wrapping = fyne.TextWrapWord
	r.Start = widget.NewButton("Start", r.Run)
	r.Start.Importance = widget.HighImportance
	r.CancelB = widget.NewButton("Cancel", r.Cancel)
	r.CancelB.Disable()
	r.Content = container.NewVBox(
		widget.NewForm(widget.NewFormItem("Times", r.Count), widget.NewFormItem("In parallel", r.Parallel)),
		r.Progress, r.Result, container.NewHBox(r.Start, r.CancelB))
	return r
}

// Run starts the job.
func (r *Replayer) Run() {
	count, err1 := strconv.Atoi(strings.TrimSpace(r.Count.Text))
	par, err2 := strconv.Atoi(strings.TrimSpace(r.Parallel.Text))
	if err1 != nil || err2 != nil || count < 1 || par < 1 {
		r.Result.SetText("⚠ times and in parallel must be positive numbers")
		return
	}
	job := replay.Job{Sessions: r.sessions, Count: count, Parallel: par}
	if err := job.Validate(); err != nil {
		r.Result.SetText("⚠ " + err.Error())
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.Start.Disable()
	r.CancelB.Enable()
	r.Progress.SetValue(0)
	job.Progress = func(n, total int) {
		r.post(func() { r.Progress.SetValue(float64(n) / float64(total)) })
	}
	go func() {
		res, err := replay.Run(ctx, r.dbg, job)
		r.post(func() {
			cancel()
			r.Start.Enable()
			r.CancelB.Disable()
			failed := 0
			for _, x := range res {
				if x.Error != "" {
					failed++
				}
			}
			msg := fmt.Sprintf("%d sent, %d failed", len(res), failed)
			if len(res) > 0 && res[len(res)-1].ID != 0 {
				msg += fmt.Sprintf("; last new session #%d", res[len(res)-1].ID)
			}
			if err != nil {
				msg += " — " + err.Error()
			}
			r.Result.SetText(msg)
		})
	}()
}

// Cancel stops a running job (no-op when none runs).
func (r *Replayer) Cancel() {
	if r.cancel != nil {
		r.cancel()
	}
}

func (v *debugViews) showRules() {
	if v.dbg == nil {
		return
	}
	v.rules = NewRulesEditor(v.dbg)
	dlg := dialog.NewCustom("Rules", "Close", v.rules.Content, v.u.win)
	dlg.Resize(fyne.NewSize(820, 620))
	dlg.Show()
}

// RulesEditor edits the rule list as JSON (the format of DATA_DIR/rules.json): map remote,
// map local, auto-responder, header rewrite and throttling; docs/debugging.md lists the
// fields. Save replaces the whole list, or changes nothing and shows why. UI goroutine only.
type RulesEditor struct {
	dbg     Debugger
	JSON    *widget.Entry
	Save    *widget.Button
	Result  *widget.Label
	Content fyne.CanvasObject
}

// rulesExample is shown in an empty editor.
const rulesExample = `[
  {"kind": "map_remote", "enabled": false, "filter": "host:api.example.com", "target": "https://staging.example.com"},
  {"kind": "auto_respond", "enabled": false, "filter": "path:/health", "status": 200, "body": "ok"},
  {"kind": "header", "enabled": false, "filter": "host:*.example.com", "header_name": "X-Debug", "header_value": "1"},
  {"kind": "throttle", "enabled": false, "filter": "type:image", "latency_ms": 200, "bytes_per_sec": 65536}
]`

// NewRulesEditor loads the current rules into the editor.
func NewRulesEditor(dbg Debugger) *RulesEditor {
	e := &RulesEditor{dbg: dbg}
	e.JSON = widget.NewMultiLineEntry()
	e.JSON.TextStyle.Monospace = true
	e.JSON.SetPlaceHolder(rulesExample)
	e.Result = widget.NewLabel("")
	e.Result.Wrapping = fyne.TextWrapWord
	e.load(dbg.Rules())
	e.Save = widget.NewButton("Save", func() {
		var rs []rules.Rule
		dec := json.NewDecoder(strings.NewReader(e.JSON.Text))
		dec.DisallowUnknownFields()
		if strings.TrimSpace(e.JSON.Text) != "" {
			if err := dec.Decode(&rs); err != nil {
				e.Result.SetText("⚠ " + err.Error())
				return
			}
		}
		saved, err := dbg.ReplaceRules(rs)
		if err != nil {
			e.Result.SetText("⚠ " + err.Error())
			return
		}
		e.load(saved)
		e.Result.SetText(fmt.Sprintf("Saved %d rules.", len(saved)))
	})
	e.Save.Importance = widget.HighImportance
	e.Content = container.NewBorder(
		widget.NewLabel("Kinds: map_remote, map_local, auto_respond, header, throttle (see docs/debugging.md)."),
		container.NewVBox(e.Result, e.Save), nil, nil, e.JSON)
	return e
}

func (e *RulesEditor) load(rs []rules.Rule) {
	if len(rs) == 0 {
		e.JSON.SetText("")
		return
	}
	b, _ := json.MarshalIndent(rs, "", "  ")
	e.JSON.SetText(string(b))
}
