package ui

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"inspector/content"
	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/hooks/breakpoint"
	"inspector/engine/hooks/rules"
	"inspector/engine/session"
)

// testDebugger adapts a real breakpoint.Manager and a real engine to Debugger, the way
// the composition root does.
type testDebugger struct {
	*breakpoint.Manager
	*et.Proxy
	rules   *rules.Manager
	history string
}

func (d testDebugger) Rules() []rules.Rule { return d.rules.Rules() }
func (d testDebugger) ReplaceRules(rs []rules.Rule) ([]rules.Rule, error) {
	return d.rules.ReplaceAllowingFolders(rs)
}

func (d testDebugger) MapLocalFolders() []string { return d.rules.Folders() }

func (d testDebugger) Breakpoints() []breakpoint.Breakpoint { return d.Settings().Breakpoints }
func (d testDebugger) AddBreakpoint(b breakpoint.Breakpoint) (int64, error) {
	return d.Manager.Add(b)
}
func (d testDebugger) SetBreakpoint(b breakpoint.Breakpoint) error { return d.Manager.Set(b) }
func (d testDebugger) RemoveBreakpoint(id int64) error             { return d.Manager.Remove(id) }
func (d testDebugger) Paused() []breakpoint.Paused                 { return d.List() }
func (d testDebugger) BreakpointSettings() breakpoint.Settings     { return d.Settings() }
func (d testDebugger) ComposerHistoryPath() string                 { return d.history }
func (d testDebugger) SetBreakpointTimeout(t time.Duration, a breakpoint.TimeoutAction) error {
	return d.SetTimeout(t, a)
}

// The Send method of the adapter comes from the engine.
var (
	_ Debugger     = testDebugger{}
	_ HistoryFiler = testDebugger{}
	_              = engine.SendOptions{}
)

// debugRig is a UI over a real engine and origin with a queue standing in for fyne.Do:
// background work posts functions, the test goroutine runs them (run).
type debugRig struct {
	t      *testing.T
	u      *UI
	o      *et.Origin
	p      *et.Proxy
	m      *breakpoint.Manager
	dbg    testDebugger
	posted chan func()
}

// newDebugRig starts an origin, a proxy (trusting extra origins too), the breakpoint and
// rule managers and the window.
func newDebugRig(t *testing.T, extra ...*et.Origin) *debugRig {
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, append([]*et.Origin{o}, extra...)...)
	r := newDebugRigOn(t, p, nil)
	r.o = o
	return r
}

// newDebugRigOn is newDebugRig over proxy p, with the instance's protobuf schemas protos
// (nil: none).
func newDebugRigOn(t *testing.T, p *et.Proxy, protos func() *content.Protos) *debugRig {
	m, err := breakpoint.New("")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rs, err := rules.New(filepath.Join(dir, "rules.json"))
	if err != nil {
		t.Fatal(err)
	}
	rs.Install(p.Engine)
	m.Install(p.Engine)
	t.Cleanup(m.Close)
	dbg := testDebugger{m, p, rs, filepath.Join(dir, "composer-history.json")}
	r := &debugRig{t: t, p: p, m: m, dbg: dbg, posted: make(chan func(), 256)}
	r.u, _ = newTestUI(t, Deps{Store: openStore(t), Engine: p.Engine, Debug: dbg, Protos: protos})
	// Set before any breakpoint exists: the manager's lock orders this write before the
	// hook goroutines' reads.
	r.u.debug.post = func(f func()) { r.posted <- f }
	return r
}

// run runs posted UI functions until cond holds.
func (r *debugRig) run(cond func() bool) {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case f := <-r.posted:
			f()
		case <-deadline:
			r.t.Fatal("condition not reached")
		}
	}
}

type res struct {
	resp *http.Response
	body string
	err  error
}

// do sends req through the proxy on its own goroutine.
func (r *debugRig) do(req *http.Request) <-chan res {
	ch := make(chan res, 1)
	c := r.p.Client(r.t, et.ClientH1)
	go func() {
		resp, err := c.Do(req)
		var b []byte
		if err == nil {
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		ch <- res{resp, string(b), err}
	}()
	return ch
}

func (r *debugRig) get(path string) <-chan res {
	req, _ := http.NewRequest("GET", r.o.URL+path, nil)
	return r.do(req)
}

// add records a completed session in the window, as the event pump does.
func (r *debugRig) add(s *session.Session) {
	r.u.remember(s)
	r.u.changed(r.u.model.Upsert([]session.Summary{s.Summarize()}))
}

func (r *debugRig) paused(n int) {
	r.t.Helper()
	r.run(func() bool { return len(r.m.List()) == n && r.u.debug.pausedCount() == n })
}

// Two paused sessions queue up in the breakpoint window (which opens by itself and asks
// for attention); continuing one leaves the other paused and in the editor.
func TestBreakpointQueueContinueOneOtherStays(t *testing.T) {
	r := newDebugRig(t)
	v := r.u.debug
	if v.indicator.Text != "0 paused" || v.bpWin != nil {
		t.Fatalf("indicator %q, window %v", v.indicator.Text, v.bpWin)
	}
	if _, err := r.m.Add(breakpoint.Breakpoint{Filter: "path:/echo", Phase: breakpoint.PhaseRequest, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	first := r.get("/echo?n=1")
	r.paused(1)
	if v.bpWin == nil || v.attention != 1 || v.bpWin.Title() != "Breakpoints — 1 paused" {
		t.Fatalf("a pause did not open the window: %v, attention %d", v.bpWin, v.attention)
	}
	second := r.get("/echo?n=2")
	r.paused(2)
	w := v.bp
	if v.attention != 2 || v.bpWin.Title() != "Breakpoints — 2 paused" || w.QueueLabel.Text != "2 paused sessions" || v.indicator.Text != "2 paused" {
		t.Fatalf("attention %d, title %q, label %q", v.attention, v.bpWin.Title(), w.QueueLabel.Text)
	}
	q := w.Paused()
	if len(q) != 2 || !strings.HasSuffix(q[0].URL, "n=1") || !strings.HasSuffix(q[1].URL, "n=2") {
		t.Fatalf("queue %+v: want the newest appended", q)
	}
	// The editor stays on the oldest until another is chosen.
	if w.Selected() != q[0].ID || w.Editor == nil || w.Editor.Paused().ID != q[0].ID {
		t.Fatalf("editor on %d, want %d", w.Selected(), q[0].ID)
	}
	w.Queue.Select(1) // as a click on the second row does
	if w.Editor.Paused().ID != q[1].ID {
		t.Fatalf("editor on %d after choosing %d", w.Editor.Paused().ID, q[1].ID)
	}
	test.Tap(w.Editor.Continue)
	if got := <-second; got.err != nil || got.resp.StatusCode != 200 {
		t.Fatalf("continued request: %+v", got)
	}
	r.paused(1)
	if len(w.Paused()) != 1 || w.Paused()[0].ID != q[0].ID || w.Editor.Paused().ID != q[0].ID || v.bpWin.Title() != "Breakpoints — 1 paused" {
		t.Fatalf("after continuing one: queue %+v, title %q", w.Paused(), v.bpWin.Title())
	}
	select {
	case got := <-first:
		t.Fatalf("the other session was released: %+v", got)
	default:
	}
	test.Tap(w.Editor.Abort)
	if got := <-first; got.err == nil && got.resp.StatusCode/100 == 2 {
		t.Fatalf("abort gave %s", got.resp.Status)
	}
	r.paused(0)
	if w.Editor != nil || w.QueueLabel.Text != "Nothing paused" || v.bpWin.Title() != "Breakpoints" {
		t.Fatalf("empty queue: editor %v, %q", w.Editor, w.QueueLabel.Text)
	}
	// Closing the window drops it; the next pause opens a new one.
	v.bpWin.Close()
	if v.bp != nil {
		t.Fatal("closed window still held")
	}
}

// The request stage shows method, URL, headers (a table) and body, no status; headers are
// edited in the table and the origin receives the edit.
func TestBreakpointHeaderTableContinueEdited(t *testing.T) {
	r := newDebugRig(t)
	v := r.u.debug
	r.m.Add(breakpoint.Breakpoint{Filter: "path:/echo", Phase: breakpoint.PhaseRequest, Enabled: true})
	req, _ := http.NewRequest("POST", r.o.URL+"/echo", strings.NewReader("from client"))
	req.Header.Set("X-Before", "1")
	req.Header.Set("X-Keep", "k")
	done := r.do(req)
	r.paused(1)
	ed := v.bp.Editor
	if ed.Status != nil || ed.Reason != nil || ed.Method.Text != "POST" || ed.Body.Text != "from client" {
		t.Fatalf("request editor: status field %v, method %q, body %q", ed.Status, ed.Method.Text, ed.Body.Text)
	}
	if ed.RespStatus == nil {
		t.Fatal("no Respond section at the request stage")
	}
	var before *HeaderRow
	for _, row := range ed.Headers.Rows {
		if row.Name.Text == "X-Before" {
			before = row
		}
	}
	if before == nil || before.Value.Text != "1" {
		t.Fatalf("header table %q", ed.Headers.Lines())
	}
	// A bad header name is an error naming the row; the session stays paused.
	bad := ed.Headers.Add("bad name", "x")
	test.Tap(ed.ContinueEdited)
	if !strings.Contains(ed.Err.Text, "not a valid header name") || len(r.m.List()) != 1 {
		t.Fatalf("bad header accepted: %q", ed.Err.Text)
	}
	test.Tap(bad.Remove)
	test.Tap(before.Remove)
	test.Tap(ed.Headers.AddRow)
	row := ed.Headers.Rows[len(ed.Headers.Rows)-1]
	test.Type(row.Name, "X-After")
	test.Type(row.Value, "2")
	ed.Body.SetText("")
	test.Type(ed.Body, "from editor")
	test.Tap(ed.ContinueEdited)
	got := <-done
	if got.err != nil || got.resp.Header.Get("X-Echo-H-X-After") != "2" || got.resp.Header.Get("X-Echo-H-X-Before") != "" ||
		got.resp.Header.Get("X-Echo-H-X-Keep") != "k" || got.resp.Header.Get("X-Echo-Body-Size") != "11" {
		t.Fatalf("origin saw %+v", got.resp.Header)
	}
	r.paused(0)
}

// Respond and an edited status give the client and the session the code's own reason
// phrase ("418 I'm a teapot", never "418 OK") unless one is typed.
func TestBreakpointStatusReasonPhrase(t *testing.T) {
	r := newDebugRig(t)
	v := r.u.debug
	r.m.Add(breakpoint.Breakpoint{Filter: "path:/answer", Phase: breakpoint.PhaseRequest, Enabled: true})
	r.m.Add(breakpoint.Breakpoint{Filter: "path:/status", Phase: breakpoint.PhaseResponse, Enabled: true})

	// Request stage: Respond instead.
	ch := r.get("/answer")
	r.paused(1)
	ed := v.bp.Editor
	ed.RespStatus.SetText("")
	test.Type(ed.RespStatus, "418")
	if ed.RespReason.PlaceHolder != "I'm a teapot" {
		t.Errorf("reason hint %q", ed.RespReason.PlaceHolder)
	}
	test.Type(ed.RespBody, "short and stout")
	test.Tap(ed.Respond)
	got := <-ch
	if got.err != nil || got.resp.Status != "418 I'm a teapot" || got.body != "short and stout" {
		t.Fatalf("respond: %+v", got)
	}
	if s := r.p.Next(t); s.Response.Reason != "I'm a teapot" {
		t.Errorf("session records %d %q", s.Status(), s.Response.Reason)
	}
	r.paused(0)

	// Response stage: only status, reason, headers and body; an edited status.
	ch = r.get("/status?code=200")
	r.paused(1)
	ed = v.bp.Editor
	if ed.Method != nil || ed.URL != nil || ed.RespStatus != nil || ed.Status.Text != "200" {
		t.Fatalf("response editor shows request fields or no status")
	}
	ed.Status.SetText("")
	test.Type(ed.Status, "418")
	test.Tap(ed.ContinueEdited)
	got = <-ch
	if got.err != nil || got.resp.Status != "418 I'm a teapot" {
		t.Fatalf("continue edited: %+v", got)
	}
	if s := r.p.Next(t); s.Status() != 418 || s.Response.Reason != "I'm a teapot" {
		t.Errorf("session records %d %q, want 418 I'm a teapot", s.Status(), s.Response.Reason)
	}
	r.paused(0)

	// A typed reason is kept.
	ch = r.get("/status?code=200")
	r.paused(1)
	ed = v.bp.Editor
	ed.Status.SetText("299")
	test.Type(ed.Reason, "Brewing")
	test.Tap(ed.ContinueEdited)
	if got = <-ch; got.err != nil || got.resp.StatusCode != 299 {
		t.Fatalf("typed reason: %+v", got)
	}
	if s := r.p.Next(t); s.Response.Reason != "Brewing" {
		t.Errorf("session records %q, want the typed reason", s.Response.Reason)
	}
	r.paused(0)

	// A bad status is an error and the session stays paused.
	ch = r.get("/status?code=200")
	r.paused(1)
	ed = v.bp.Editor
	ed.Status.SetText("teapot")
	test.Tap(ed.ContinueEdited)
	if !strings.Contains(ed.Err.Text, "want a number") || len(r.m.List()) != 1 {
		t.Fatalf("bad status accepted: %q", ed.Err.Text)
	}
	test.Tap(ed.Continue)
	if got = <-ch; got.err != nil || got.resp.StatusCode != 200 {
		t.Fatalf("continue: %+v", got)
	}
}

// The timeout is visible and settable; a bad one changes nothing.
func TestBreakpointTimeoutSetting(t *testing.T) {
	r := newDebugRig(t)
	v := r.u.debug
	v.showPanel()
	w := v.bp
	if w.Timeout.Text != "0" || w.OnTimeout.Selected != "continue" || !strings.Contains(w.TimeoutInfo.Text, "waits until you decide") {
		t.Fatalf("timeout shown as %q %q %q", w.Timeout.Text, w.OnTimeout.Selected, w.TimeoutInfo.Text)
	}
	w.Timeout.SetText("soon")
	test.Tap(w.ApplyTimeout)
	if !strings.HasPrefix(w.TimeoutInfo.Text, "⚠") || r.m.Settings().Timeout != 0 {
		t.Fatalf("bad timeout: %q, %v", w.TimeoutInfo.Text, r.m.Settings().Timeout)
	}
	w.Timeout.SetText("90")
	w.OnTimeout.SetSelected("abort")
	test.Tap(w.ApplyTimeout)
	if s := r.m.Settings(); time.Duration(s.Timeout) != 90*time.Second || s.OnTimeout != breakpoint.TimeoutAbort {
		t.Fatalf("settings %+v", s)
	}
	if w.Timeout.Text != "1m30s" || !strings.Contains(w.TimeoutInfo.Text, "1m30s is aborted") {
		t.Errorf("shown as %q %q", w.Timeout.Text, w.TimeoutInfo.Text)
	}
	r.m.Add(breakpoint.Breakpoint{Filter: "path:/echo", Phase: breakpoint.PhaseRequest, Enabled: true})
	ch := r.get("/echo")
	r.paused(1)
	if !strings.Contains(w.Editor.Expiry.Text, "aborts automatically at") {
		t.Errorf("editor expiry %q", w.Editor.Expiry.Text)
	}
	test.Tap(w.Editor.Continue)
	<-ch
}

// The breakpoint list checks filters as they are typed and adds, disables and removes.
func TestBreakpointList(t *testing.T) {
	r := newDebugRig(t)
	v := r.u.debug
	v.showPanel()
	panel := v.bp.List
	test.Type(panel.Filter.Entry, "host:a stauts:200")
	if !panel.Filter.Error.Visible() || !strings.HasPrefix(panel.Filter.Error.Text, "host:a stauts:200\n       ^ column 8: unknown field \"stauts:\"") {
		t.Fatalf("as-you-type error %q", panel.Filter.Error.Text)
	}
	panel.Filter.SetText("(oops")
	if panel.Filter.Error.Text != "(oops\n^ column 1: unclosed '('" {
		t.Fatalf("as-you-type error %q", panel.Filter.Error.Text)
	}
	test.Tap(panel.Add)
	if !strings.Contains(panel.Err.Text, "filter") || len(r.m.Settings().Breakpoints) != 0 {
		t.Fatalf("bad filter: err %q, %d breakpoints", panel.Err.Text, len(r.m.Settings().Breakpoints))
	}
	panel.Filter.SetText("")
	test.Type(panel.Filter.Entry, "path:/echo")
	if panel.Filter.Error.Visible() {
		t.Error("valid filter shows an error")
	}
	test.Tap(panel.Add)
	if bps := r.m.Settings().Breakpoints; len(bps) != 1 || bps[0].Filter != "path:/echo" || !bps[0].Enabled {
		t.Fatalf("breakpoints %+v", bps)
	}
	var chk *widget.Check
	var rm *widget.Button
	for _, o := range panel.Rows.Objects[0].(*fyne.Container).Objects {
		switch x := o.(type) {
		case *widget.Check:
			chk = x
		case *widget.Button:
			rm = x
		}
	}
	test.Tap(chk)
	if r.m.Settings().Breakpoints[0].Enabled {
		t.Fatal("unchecking did not disable the breakpoint")
	}
	if got := <-r.get("/echo"); got.err != nil || got.resp.StatusCode != 200 {
		t.Fatal(got)
	}
	test.Tap(rm)
	if len(r.m.Settings().Breakpoints) != 0 || len(panel.Rows.Objects) != 0 {
		t.Fatal("remove did not remove")
	}
}

func TestBreakOnHostAndURL(t *testing.T) {
	r := newDebugRig(t)
	<-r.get("/echo?x=1")
	s := r.p.Next(t)
	r.add(s)
	r.u.SelectID(s.ID)
	r.u.debug.breakOnSelectedHost()
	r.u.debug.breakOnSelectedURL()
	bps := r.m.Settings().Breakpoints
	if len(bps) != 2 || bps[0].Filter != "host:127.0.0.1" || bps[1].Filter != "host:127.0.0.1 path:/echo" {
		t.Fatalf("breakpoints %+v", bps)
	}
}

func TestCopyRaw(t *testing.T) {
	r := newDebugRig(t)
	req, _ := http.NewRequest("PUT", r.o.URL+"/echo?orig", strings.NewReader("orig body"))
	<-r.do(req)
	s := r.p.Next(t)
	r.add(s)
	r.u.SelectID(s.ID)
	r.u.CopyRaw()
	if raw := r.u.app.Clipboard().Content(); !strings.HasPrefix(raw, "PUT /echo?orig HTTP/1.1\n") || !strings.Contains(raw, "orig body") || !strings.Contains(raw, "HTTP/1.1 200 OK") {
		t.Errorf("copy raw: %q", raw)
	}
}

// Replay acts on a list of sessions: each is sent Count times, linked to its original.
func TestReplaySessions(t *testing.T) {
	r := newDebugRig(t)
	v := r.u.debug
	var orig []*session.Session
	for _, p := range []string{"/echo?a", "/echo?b"} {
		<-r.get(p)
		s := r.p.Next(t)
		r.add(s)
		orig = append(orig, s)
	}
	v.replaySessions(orig)
	rp := v.replayer
	rp.Count.SetText("2")
	rp.Parallel.SetText("2")
	test.Tap(rp.Start)
	r.run(func() bool { return strings.Contains(rp.Result.Text, "sent") })
	if rp.Progress.Value != 1 || !strings.HasPrefix(rp.Result.Text, "4 sent, 0 failed") {
		t.Errorf("replay: progress %v, %q", rp.Progress.Value, rp.Result.Text)
	}
	links := map[session.ID]int{}
	for range 4 {
		links[r.p.Next(t).ReplayOf]++
	}
	if links[orig[0].ID] != 2 || links[orig[1].ID] != 2 {
		t.Errorf("replays link to %v", links)
	}
	rp.Count.SetText("zero")
	test.Tap(rp.Start)
	if !strings.HasPrefix(rp.Result.Text, "⚠") {
		t.Errorf("bad count: %q", rp.Result.Text)
	}
	// The selection default: the one selected session.
	r.u.SelectID(orig[1].ID)
	if ss := v.selection(); len(ss) != 1 || ss[0].ID != orig[1].ID {
		t.Errorf("selection %v", ss)
	}
}

// At the response stage Respond sends the status, reason, headers and body fields in place
// of the origin's response; Abort fails it; OpenPaused brings a chosen pause into the editor.
func TestBreakpointRespondAndAbortAtResponse(t *testing.T) {
	r := newDebugRig(t)
	v := r.u.debug
	r.m.Add(breakpoint.Breakpoint{Filter: "path:/echo", Phase: breakpoint.PhaseResponse, Enabled: true})
	a, b := r.get("/echo?a"), r.get("/echo?b")
	r.paused(2)
	ps := r.m.List()
	if strings.HasSuffix(ps[1].URL, "?a") { // either may pause first
		a, b = b, a
	}
	v.OpenPaused(ps[1])
	ed := v.bp.Editor
	if ed.Paused().ID != ps[1].ID || !strings.Contains(ed.Body.Text, `"ok":true`) {
		t.Fatalf("editor on %d, body %q", ed.Paused().ID, ed.Body.Text)
	}
	ed.Status.SetText("201")
	test.Type(ed.Reason, "Made Here")
	for _, row := range ed.Headers.Rows {
		if row.Name.Text == "Content-Type" {
			row.Value.SetText("text/plain")
		}
	}
	ed.Headers.Add("X-Answer", "ui")
	ed.Body.SetText("replaced")
	test.Tap(ed.Respond)
	got := <-b
	if got.err != nil || got.resp.StatusCode != 201 || got.body != "replaced" || got.resp.Header.Get("X-Answer") != "ui" ||
		got.resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("respond at the response: %+v %q", got.resp, got.body)
	}
	if s := r.p.Next(t); s.Response.Reason != "Made Here" {
		t.Errorf("session reason %q", s.Response.Reason)
	}
	r.paused(1)
	test.Tap(v.bp.Editor.Abort)
	if got := <-a; got.err == nil && got.resp.StatusCode/100 == 2 {
		t.Fatalf("abort gave %s", got.resp.Status)
	}
	r.paused(0)
}

// A body too large to edit in the window is held aside: the editor and the composer say
// so and send it whole unless a replacement is typed.
func TestLargeBodyHeldAside(t *testing.T) {
	r := newDebugRig(t)
	v := r.u.debug
	r.m.Add(breakpoint.Breakpoint{Filter: "path:/echo", Phase: breakpoint.PhaseRequest, Enabled: true})
	big := et.Pattern(300 << 10)
	req, _ := http.NewRequest("POST", r.o.URL+"/echo", bytes.NewReader(big))
	done := r.do(req)
	r.paused(1)
	ed := v.bp.Editor
	if ed.Body.Text != "" || !strings.Contains(ed.Body.PlaceHolder, "307200 bytes") {
		t.Fatalf("large body shown: %d bytes, placeholder %q", len(ed.Body.Text), ed.Body.PlaceHolder)
	}
	ed.Headers.Add("X-Edited", "1")
	test.Tap(ed.ContinueEdited)
	got := <-done
	if got.err != nil || got.resp.Header.Get("X-Echo-Body-Size") != "307200" || got.resp.Header.Get("X-Echo-H-X-Edited") != "1" {
		t.Fatalf("origin saw %v", got.resp.Header)
	}
	s := r.p.Next(t)
	r.paused(0)

	c := NewComposer(r.dbg, s, nil)
	if c.Body.Text != "" || !strings.Contains(c.Body.PlaceHolder, "too large") {
		t.Fatalf("composer shows %d bytes", len(c.Body.Text))
	}
	creq, err := c.Request(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(creq.Body); !bytes.Equal(b, big) {
		t.Errorf("composer would send %d bytes, want the whole held body", len(b))
	}
	c.Body.SetText("small")
	creq, _ = c.Request(t.Context())
	if b, _ := io.ReadAll(creq.Body); string(b) != "small" {
		t.Errorf("typed replacement: %q", b)
	}
}

// A session decided elsewhere (control API, timeout) while its editor is open: acting on
// it says so in words, and the refresh that follows empties the editor.
func TestBreakpointDecidedElsewhere(t *testing.T) {
	r := newDebugRig(t)
	v := r.u.debug
	r.m.Add(breakpoint.Breakpoint{Filter: "path:/echo", Phase: breakpoint.PhaseRequest, Enabled: true})
	ch := r.get("/echo")
	r.paused(1)
	ed := v.bp.Editor
	if err := r.m.Resume(ed.Paused().ID, nil); err != nil {
		t.Fatal(err)
	}
	<-ch
	test.Tap(ed.Abort) // before the posted refresh ran
	if !strings.Contains(ed.Err.Text, "no longer paused") {
		t.Errorf("stale editor: %q", ed.Err.Text)
	}
	r.paused(0)
	if v.bp.Editor != nil {
		t.Error("editor kept a session that is gone")
	}
}
