package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/engine"
	"inspector/engine/hooks/breakpoint"
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
	// BreakpointSettings and SetBreakpointTimeout read the breakpoint settings and set the
	// pause timeout (breakpoint.Manager.Settings and SetTimeout).
	BreakpointSettings() breakpoint.Settings
	SetBreakpointTimeout(d time.Duration, a breakpoint.TimeoutAction) error
}

// HistoryFiler is implemented by a Debugger that keeps the composer history in a file
// (DATA_DIR/composer-history.json); without it the history lasts as long as the window.
type HistoryFiler interface {
	ComposerHistoryPath() string
}

// debugViews wires the debugging panes into the main window: the paused-session
// indicator, the breakpoint window (queue, editor, breakpoints, timeout), the composer
// window, the rules window and the replay dialog. The main window's menu and toolbar call
// its methods (listed under "Menu actions"). UI goroutine only, like UI.
type debugViews struct {
	u         *UI
	dbg       Debugger
	indicator *widget.Button
	// seen holds the ids paused at the last refresh; a new one asks for attention.
	seen map[session.ID]bool

	bp       *BreakpointWindow
	bpWin    fyne.Window
	composer *Composer
	compWin  fyne.Window
	rules    *RulesEditor
	rulesWin fyne.Window
	replayer *Replayer
	history  *ComposerHistory
	// historyErr is why the history file could not be read (it is then left alone).
	historyErr error

	// selection returns the sessions replay acts on: UI.SelectedSessions when the window
	// has it, else the one selected session.
	selection func() []*session.Session
	// post runs a function on the UI goroutine: fyne.Do, or a test's queue.
	post func(func())
	// attention counts the times a new pause raised the breakpoint window.
	attention int
}

func newDebugViews(u *UI, d Debugger) *debugViews {
	v := &debugViews{u: u, dbg: d, post: fyne.Do, seen: map[session.ID]bool{}}
	v.selection = func() []*session.Session {
		// The list's multi-selection once the window has one (UI.SelectedSessions).
		if ms, ok := any(u).(interface{ SelectedSessions() []*session.Session }); ok {
			return ms.SelectedSessions()
		}
		if s := u.selectedSession(); s != nil {
			return []*session.Session{s}
		}
		return nil
	}
	v.indicator = widget.NewButtonWithIcon("", theme.MediaPauseIcon(), v.showPanel)
	if d == nil {
		v.indicator.SetText("Breakpoints (no proxy)")
		v.indicator.Disable()
		return v
	}
	path := ""
	if hf, ok := d.(HistoryFiler); ok {
		path = hf.ComposerHistoryPath()
	}
	v.history, v.historyErr = LoadComposerHistory(path)
	d.OnChange(func() { v.post(v.refresh) })
	v.refresh()
	return v
}

// toolbar returns the debugging buttons of the current main toolbar (the menu and icon
// toolbar call the methods below instead).
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

// refresh updates the indicator and the breakpoint window after a change; a session
// that was not paused before opens the breakpoint window and asks for attention.
func (v *debugViews) refresh() {
	if v.dbg == nil {
		return
	}
	ps := v.dbg.Paused()
	now := make(map[session.ID]bool, len(ps))
	arrived := false
	for _, p := range ps {
		now[p.ID] = true
		arrived = arrived || !v.seen[p.ID]
	}
	v.seen = now
	n := len(ps)
	v.indicator.SetText(fmt.Sprintf("%d paused", n))
	if n > 0 {
		v.indicator.Importance = widget.DangerImportance
	} else {
		v.indicator.Importance = widget.MediumImportance
	}
	v.indicator.Refresh()
	if arrived {
		v.attention++
		v.showPanel() // refreshes the window it opens or raises
		return
	}
	if v.bp != nil {
		v.bp.refresh()
	}
}

// newWindow opens a secondary window whose controller is dropped when it closes.
func (v *debugViews) newWindow(title string, size fyne.Size, content fyne.CanvasObject, closed func()) fyne.Window {
	w := v.u.app.NewWindow(title)
	w.SetContent(content)
	w.Resize(size)
	w.SetOnClosed(closed)
	closeKeys(w, true)
	w.Show()
	return w
}

func breakpointTitle(n int) string {
	if n == 0 {
		return "Breakpoints"
	}
	return fmt.Sprintf("Breakpoints — %d paused", n)
}

// Menu actions (Capture and Tools menus, the toolbar and the row context menu).

// indicatorButton is the "N paused" button for the toolbar: it opens the breakpoint
// window and turns red while sessions wait.
func (v *debugViews) indicatorButton() *widget.Button { return v.indicator }

// pausedCount is the number of sessions waiting at breakpoints (for a title or badge).
func (v *debugViews) pausedCount() int { return len(v.seen) }

// showPanel opens (or raises) the breakpoint window.
func (v *debugViews) showPanel() {
	if v.dbg == nil {
		return
	}
	if v.bp == nil {
		v.bp = NewBreakpointWindow(v.dbg, v.u.deps.Protos)
		v.bpWin = v.newWindow("Breakpoints", fyne.NewSize(1100, 720), v.bp.Content, func() { v.bp, v.bpWin = nil, nil })
		win := v.bpWin
		v.bp.onCount = func(n int) { win.SetTitle(breakpointTitle(n)) }
	} else {
		v.bpWin.Show()
	}
	v.bp.refresh()
	v.bpWin.RequestFocus()
}

// OpenPaused opens the breakpoint window on a paused session.
func (v *debugViews) OpenPaused(p breakpoint.Paused) {
	v.showPanel()
	if v.bp != nil {
		v.bp.Select(p.ID)
	}
}

// breakOnSelectedHost adds a request breakpoint for the selected session's host.
func (v *debugViews) breakOnSelectedHost() { v.breakOnSelected(false) }

// breakOnSelectedURL adds a request breakpoint for the selected session's host and path.
func (v *debugViews) breakOnSelectedURL() { v.breakOnSelected(true) }

func (v *debugViews) breakOnSelected(withPath bool) {
	if v.dbg == nil {
		return
	}
	s := v.u.selectedSession()
	if s == nil {
		return
	}
	f := exchangeFilter(s, withPath)
	if f == "" {
		return
	}
	if _, err := v.dbg.AddBreakpoint(breakpoint.Breakpoint{Filter: f, Phase: breakpoint.PhaseRequest, Enabled: true}); err != nil {
		dialog.ShowError(err, v.u.win)
	}
	if v.bp != nil {
		v.bp.refresh()
	}
}

// exchangeFilter is a filter matching s's host, and its path when withPath is set.
func exchangeFilter(s *session.Session, withPath bool) string {
	pu, err := url.Parse(s.Request.URL)
	if err != nil || pu.Hostname() == "" {
		return ""
	}
	f := "host:" + quoteFilter(pu.Hostname())
	if withPath {
		p := pu.EscapedPath()
		if p == "" {
			p = "/"
		}
		f += " path:" + quoteFilter(p)
	}
	return f
}

// quoteFilter quotes a value for the filter language when it holds blanks or quotes.
func quoteFilter(s string) string {
	if strings.ContainsAny(s, " \t\"()") {
		return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
	}
	return s
}

// showComposer opens the composer window with a blank request (or raises it as it is).
func (v *debugViews) showComposer() {
	if v.composer != nil {
		v.compWin.Show()
		v.compWin.RequestFocus()
		return
	}
	v.composeSession(nil)
}

// composeSelected opens the selected session in the composer ("Edit and resend").
func (v *debugViews) composeSelected() { v.composeSession(v.u.selectedSession()) }

// composeSession opens s (nil: a blank request) in the composer window.
func (v *debugViews) composeSession(s *session.Session) {
	if v.dbg == nil {
		return
	}
	if v.composer != nil {
		v.composer.Load(s)
		v.compWin.Show()
		v.compWin.RequestFocus()
		return
	}
	c := NewComposer(v.dbg, s, v.history)
	if v.historyErr != nil {
		c.Result.SetText("⚠ composer history not loaded (the file is left as it is): " + v.historyErr.Error())
	}
	c.post = v.post
	c.lookup = v.u.session
	c.onSent = func(s *session.Session) {
		v.u.remember(s)
		v.u.changed(v.u.model.Upsert([]session.Summary{s.Summarize()}))
		v.u.SelectID(s.ID)
	}
	v.composer = c
	v.compWin = v.newWindow("Composer", fyne.NewSize(1200, 720), c.Content, func() { v.composer, v.compWin = nil, nil })
}

// replaySelected replays the selected sessions (see selection).
func (v *debugViews) replaySelected() { v.replaySessions(v.selection()) }

// replaySessions opens the replay dialog for ss.
func (v *debugViews) replaySessions(ss []*session.Session) {
	if v.dbg == nil {
		return
	}
	if len(ss) == 0 {
		dialog.ShowInformation("Replay", "Select one or more sessions to replay.", v.u.win)
		return
	}
	r := NewReplayer(v.dbg, ss)
	r.post = v.post
	v.replayer = r
	title := fmt.Sprintf("Replay #%d", ss[0].ID)
	if len(ss) > 1 {
		title = fmt.Sprintf("Replay %d sessions", len(ss))
	}
	dlg := dialog.NewCustom(title, "Close", r.Content, v.u.win)
	dlg.SetOnClosed(r.Cancel)
	dlg.Resize(fyne.NewSize(480, 320))
	dlg.Show()
}

// showRules opens (or raises) the rules window.
func (v *debugViews) showRules() {
	if v.dbg == nil {
		return
	}
	if v.rules != nil {
		v.rulesWin.Show()
		v.rulesWin.RequestFocus()
		return
	}
	v.rules = NewRulesEditor(v.dbg)
	v.rulesWin = v.newWindow("Rules", fyne.NewSize(1100, 720), v.rules.Content, func() { v.rules, v.rulesWin = nil, nil })
	v.rules.win = v.rulesWin
}

// mapLocalFrom opens the rules window on a new map_local rule for s's host and path.
func (v *debugViews) mapLocalFrom(s *session.Session) { v.ruleFrom(rules.MapLocal, s) }

// mapRemoteFrom opens the rules window on a new map_remote rule for s's host and path.
func (v *debugViews) mapRemoteFrom(s *session.Session) { v.ruleFrom(rules.MapRemote, s) }

func (v *debugViews) ruleFrom(k rules.Kind, s *session.Session) {
	if v.dbg == nil || s == nil {
		return
	}
	v.showRules()
	r := rules.Rule{Kind: k, Enabled: true, Filter: exchangeFilter(s, true)}
	if k == rules.MapRemote {
		if pu, err := url.Parse(s.Request.URL); err == nil {
			r.Target = pu.Scheme + "://" + pu.Host
		}
	}
	if k == rules.MapLocal {
		inlineFrom(&r, s)
	}
	v.rules.NewRule(r)
}
