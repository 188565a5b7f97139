package ui

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

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
	rules *rules.Manager
}

func (d testDebugger) Rules() []rules.Rule { return d.rules.Rules() }
func (d testDebugger) ReplaceRules(rs []rules.Rule) ([]rules.Rule, error) {
	return d.rules.Replace(rs)
}

func (d testDebugger) Breakpoints() []breakpoint.Breakpoint { return d.Settings().Breakpoints }
func (d testDebugger) AddBreakpoint(b breakpoint.Breakpoint) (int64, error) {
	return d.Manager.Add(b)
}
func (d testDebugger) SetBreakpoint(b breakpoint.Breakpoint) error { return d.Manager.Set(b) }
func (d testDebugger) RemoveBreakpoint(id int64) error             { return d.Manager.Remove(id) }
func (d testDebugger) Paused() []breakpoint.Paused                 { return d.List() }

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

func newDebugRig(t *testing.T) *debugRig {
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	m, err := breakpoint.New("")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rules.New(filepath.Join(t.TempDir(), "rules.json"))
	if err != nil {
		t.Fatal(err)
	}
	rs.Install(p.Engine)
	m.Install(p.Engine)
	t.Cleanup(m.Close)
	dbg := testDebugger{m, p, rs}
	u, _ := newTestUI(t, Deps{Store: openStore(t), Engine: p.Engine, Debug: dbg})
	r := &debugRig{t: t, u: u, o: o, p: p, m: m, dbg: dbg, posted: make(chan func(), 256)}
	// Set before any breakpoint exists: the manager's lock orders this write before the
	// hook goroutines' reads.
	u.debug.post = func(f func()) { r.posted <- f }
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

func TestBreakpointPanelEditorContinueEdited(t *testing.T) {
	r := newDebugRig(t)
	v := r.u.debug
	if v.indicator.Text != "⏸ 0 paused" || !v.indicator.Disabled() {
		t.Fatalf("indicator %q", v.indicator.Text)
	}
	v.showPanel()
	panel := v.panel
	test.Type(panel.Filter, "(oops")
	test.Tap(panel.Add)
	if !strings.Contains(panel.Err.Text, "filter") || len(r.m.Settings().Breakpoints) != 0 {
		t.Fatalf("bad filter: err %q, %d breakpoints", panel.Err.Text, len(r.m.Settings().Breakpoints))
	}
	panel.Filter.SetText("")
	test.Type(panel.Filter, "path:/echo")
	test.Tap(panel.Add)
	if bps := r.m.Settings().Breakpoints; len(bps) != 1 || bps[0].Filter != "path:/echo" || bps[0].Phase != breakpoint.PhaseRequest || !bps[0].Enabled {
		t.Fatalf("breakpoints %+v", bps)
	}
	if len(panel.Rows.Objects) != 1 {
		t.Fatalf("panel shows %d rows", len(panel.Rows.Objects))
	}

	type res struct {
		resp *http.Response
		err  error
	}
	done := make(chan res, 1)
	go func() {
		req, _ := http.NewRequest("POST", r.o.URL+"/echo", strings.NewReader("from client"))
		req.Header.Set("X-Before", "1")
		resp, err := r.p.Client(t, et.ClientH1).Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		done <- res{resp, err}
	}()
	r.run(func() bool { return v.indicator.Text == "⏸ 1 paused" })
	if v.indicator.Disabled() {
		t.Error("indicator disabled with a paused session")
	}
	test.Tap(v.indicator)
	ed := v.editor
	if ed == nil || ed.Body.Text != "from client" || !strings.Contains(ed.Headers.Text, "X-Before: 1") || ed.Method.Text != "POST" {
		t.Fatalf("editor %+v", ed)
	}
	// A bad header line is an error and the session stays paused.
	ed.Headers.SetText("no colon here")
	test.Tap(ed.ContinueEdited)
	if !strings.Contains(ed.Info.Text, "line 1") || len(r.m.List()) != 1 {
		t.Fatalf("bad header accepted: %q", ed.Info.Text)
	}
	ed.Headers.SetText("X-After: 2\nContent-Type: text/plain\n")
	ed.Body.SetText("")
	test.Type(ed.Body, "from editor")
	test.Tap(ed.ContinueEdited)
	got := <-done
	if got.err != nil || got.resp.Header.Get("X-Echo-H-X-After") != "2" || got.resp.Header.Get("X-Echo-H-X-Before") != "" || got.resp.Header.Get("X-Echo-Body-Size") != "11" {
		t.Fatalf("origin saw %+v", got)
	}
	r.run(func() bool { return v.indicator.Text == "⏸ 0 paused" })
	if v.editor != nil {
		t.Error("editor still open")
	}

	// Disable through the panel's check: requests flow again.
	v.showPanel()
	var chk *widget.Check
	for _, o := range v.panel.Rows.Objects[0].(*fyne.Container).Objects {
		if c, ok := o.(*widget.Check); ok {
			chk = c
		}
	}
	test.Tap(chk)
	if r.m.Settings().Breakpoints[0].Enabled {
		t.Fatal("unchecking did not disable the breakpoint")
	}
	resp, err := r.p.Client(t, et.ClientH1).Get(r.o.URL + "/echo")
	if err != nil || resp.StatusCode != 200 {
		t.Fatal(resp, err)
	}
	resp.Body.Close()
}

func TestEditorRespondAndAbortAtResponse(t *testing.T) {
	r := newDebugRig(t)
	v := r.u.debug
	if _, err := r.m.Add(breakpoint.Breakpoint{Filter: "path:/status", Phase: breakpoint.PhaseResponse, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	get := func(path string) <-chan *http.Response {
		ch := make(chan *http.Response, 1)
		go func() {
			resp, err := r.p.Client(t, et.ClientH1).Get(r.o.URL + path)
			if err != nil {
				ch <- nil
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			ch <- resp
		}()
		return ch
	}
	ch := get("/status?code=200")
	r.run(func() bool { return v.indicator.Text == "⏸ 1 paused" })
	test.Tap(v.indicator)
	ed := v.editor
	if ed.Status.Text != "200" || !ed.Method.Disabled() {
		t.Fatalf("response editor: status %q", ed.Status.Text)
	}
	ed.Status.SetText("")
	test.Type(ed.Status, "299")
	ed.Body.SetText("answered in the editor")
	test.Tap(ed.Respond)
	if resp := <-ch; resp == nil || resp.StatusCode != 299 || resp.ContentLength != int64(len("answered in the editor")) {
		t.Fatalf("respond: %+v", resp)
	}
	r.run(func() bool { return v.indicator.Text == "⏸ 0 paused" })

	ch = get("/status?code=201")
	r.run(func() bool { return v.indicator.Text == "⏸ 1 paused" })
	test.Tap(v.indicator)
	test.Tap(v.editor.Abort)
	if resp := <-ch; resp != nil && resp.StatusCode/100 == 2 {
		t.Fatalf("abort gave %s", resp.Status)
	}
	r.run(func() bool { return v.indicator.Text == "⏸ 0 paused" })
}

func TestBreakOnHostComposerAndReplay(t *testing.T) {
	r := newDebugRig(t)
	v := r.u.debug
	sub := r.p.Subscribe(64)
	defer sub.Close()
	req, _ := http.NewRequest("PUT", r.o.URL+"/echo?orig", strings.NewReader("orig body"))
	resp, err := r.p.Client(t, et.ClientH1).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	orig := r.p.Next(t)
	r.u.remember(orig)
	r.u.changed(r.u.model.Upsert([]session.Summary{orig.Summarize()}))
	r.u.SelectID(orig.ID)

	r.u.CopyRaw()
	if raw := r.u.app.Clipboard().Content(); !strings.HasPrefix(raw, "PUT /echo?orig HTTP/1.1\n") || !strings.Contains(raw, "orig body") || !strings.Contains(raw, "HTTP/1.1 200 OK") {
		t.Errorf("copy raw: %q", raw)
	}

	// Compose from the selected session, edit, send: a new linked session.
	v.composeSelected()
	c := v.composer
	if c.Method.Text != "PUT" || c.Body.Text != "orig body" || !strings.HasSuffix(c.URL.Text, "/echo?orig") {
		t.Fatalf("composer opened with %q %q %q", c.Method.Text, c.URL.Text, c.Body.Text)
	}
	c.Body.SetText("composed")
	c.Headers.SetText("X-Composed: yes\n")
	test.Tap(c.SendBtn)
	r.run(func() bool { return strings.HasPrefix(c.Result.Text, "#") })
	sent := r.p.Next(t)
	if sent.ReplayOf != orig.ID || string(sent.Request.Body.Data) != "composed" || sent.Request.Header.Get("X-Composed") != "yes" {
		t.Errorf("composed session: replay_of %d body %q", sent.ReplayOf, sent.Request.Body.Data)
	}
	if id, _ := r.u.model.Selected(); id != sent.ID {
		t.Errorf("selection %d, want the new session %d", id, sent.ID)
	}
	// A blank composer with a bad URL says so.
	blank := NewComposer(r.dbg, nil)
	blank.URL.SetText("not a url")
	test.Tap(blank.SendBtn)
	if !strings.HasPrefix(blank.Result.Text, "⚠") {
		t.Errorf("blank composer: %q", blank.Result.Text)
	}

	// Replay the original three times, two at once, with progress.
	r.u.SelectID(orig.ID)
	v.replaySelected()
	rp := v.replayer
	rp.Count.SetText("3")
	rp.Parallel.SetText("2")
	test.Tap(rp.Start)
	r.run(func() bool { return strings.Contains(rp.Result.Text, "sent") })
	if rp.Progress.Value != 1 || !strings.HasPrefix(rp.Result.Text, "3 sent, 0 failed") {
		t.Errorf("replay: progress %v, %q", rp.Progress.Value, rp.Result.Text)
	}
	for i := 0; i < 3; i++ {
		if s := r.p.Next(t); s.ReplayOf != orig.ID {
			t.Errorf("replayed session links to %d", s.ReplayOf)
		}
	}
	rp.Count.SetText("zero")
	test.Tap(rp.Start)
	if !strings.HasPrefix(rp.Result.Text, "⚠") {
		t.Errorf("bad count: %q", rp.Result.Text)
	}

	// Break on this host.
	v.breakOnSelectedHost()
	if bps := r.m.Settings().Breakpoints; len(bps) != 1 || bps[0].Filter != "host:127.0.0.1" {
		t.Errorf("break on host: %+v", bps)
	}
}

// The Send method of the adapter comes from the engine.
var _ Debugger = testDebugger{}
var _ = engine.SendOptions{}

func TestRulesEditor(t *testing.T) {
	r := newDebugRig(t)
	r.u.debug.showRules()
	e := r.u.debug.rules
	if e.JSON.Text != "" {
		t.Fatalf("editor starts with %q", e.JSON.Text)
	}
	e.JSON.SetText(`[{"kind": "auto_respond", "enabled": true, "filter": "path:/canned", "status": 418, "body": "from a rule"}]`)
	test.Tap(e.Save)
	if !strings.HasPrefix(e.Result.Text, "Saved 1") || !strings.Contains(e.JSON.Text, `"id": 1`) {
		t.Fatalf("save: %q\n%s", e.Result.Text, e.JSON.Text)
	}
	resp, err := r.p.Client(t, et.ClientH1).Get(r.o.URL + "/canned")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 418 || string(b) != "from a rule" {
		t.Errorf("rule not applied: %s %q", resp.Status, b)
	}
	for _, bad := range []string{`[{"kind": "teleport", "filter": "host:a"}]`, `[{"kind": "header", "filter": "host:a", "nope": 1}]`, `{`} {
		e.JSON.SetText(bad)
		test.Tap(e.Save)
		if !strings.HasPrefix(e.Result.Text, "⚠") || len(r.dbg.Rules()) != 1 {
			t.Errorf("%s: %q, %d rules", bad, e.Result.Text, len(r.dbg.Rules()))
		}
	}
}
