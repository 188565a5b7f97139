package ui

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	et "inspector/engine/enginetest"
	"inspector/engine/hooks/rules"
)

// Each kind of rule is made in its form, works on the wire through the real engine, and
// reopens in its form with the same fields: form → rule → engine → form.
func TestRulesFormsRoundTrip(t *testing.T) {
	other := et.StartOrigin(t, et.OriginH1Plain, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "other origin saw %s", r.URL.Path)
	}))
	r := newDebugRig(t, other)
	r.u.debug.showRules()
	e := r.u.debug.rules
	if len(e.Rows.Objects) != 0 || r.u.debug.rulesWin == nil {
		t.Fatalf("rules window: %d rows", len(e.Rows.Objects))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "local.json"), []byte(`{"from":"disk"}`), 0o600); err != nil {
		t.Fatal(err)
	}

	add := func(kind rules.Kind, fill func(f *RuleForm)) rules.Rule {
		t.Helper()
		return addRuleInForm(t, e, r.dbg, kind, fill)
	}
	typeFilter := func(f *RuleForm, s string) { test.Type(f.Filter.Entry, s) }

	local := add(rules.MapLocal, func(f *RuleForm) {
		typeFilter(f, "path:/local")
		test.Type(f.File, filepath.Join(dir, "local.json"))
		f.Headers.Add("X-From", "rule")
	})
	if txt := r.u.debug.rules.Result.Text; !strings.Contains(txt, "Map-local files are served only from: "+dir) {
		t.Errorf("after saving a map_local rule: %q, want the allowed folder named", txt)
	}
	remote := add(rules.MapRemote, func(f *RuleForm) {
		typeFilter(f, "path:/remote/")
		test.Type(f.Target, other.URL)
	})
	canned := add(rules.AutoRespond, func(f *RuleForm) {
		test.Type(f.Name, "teapot")
		typeFilter(f, "path:/canned")
		f.Status.SetText("418")
		f.Headers.Add("Content-Type", "text/plain")
		test.Type(f.Body, "from a rule")
	})
	header := add(rules.Header, func(f *RuleForm) {
		typeFilter(f, "path:/echo")
		test.Type(f.HeaderName, "X-Rule")
		test.Type(f.HeaderValue, "yes")
	})
	respHeader := add(rules.Header, func(f *RuleForm) {
		typeFilter(f, "path:/echo")
		f.Phase.SetSelected("response")
		f.Op.SetSelected("add")
		test.Type(f.HeaderName, "X-Stamped")
		test.Type(f.HeaderValue, "1")
	})
	throttle := add(rules.Throttle, func(f *RuleForm) {
		typeFilter(f, "path:/bytes")
		test.Type(f.Latency, "1")
		test.Type(f.Rate, "1048576")
	})
	if len(e.Rows.Objects) != 6 {
		t.Fatalf("%d rows", len(e.Rows.Objects))
	}

	get := func(path string) res {
		t.Helper()
		got := <-r.get(path)
		if got.err != nil {
			t.Fatalf("%s: %v", path, got.err)
		}
		return got
	}
	if g := get("/local"); g.body != `{"from":"disk"}` || g.resp.Header.Get("X-From") != "rule" || !strings.HasPrefix(g.resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("map_local: %q %v", g.body, g.resp.Header)
	}
	if g := get("/remote/x"); g.body != "other origin saw /remote/x" {
		t.Errorf("map_remote: %q", g.body)
	}
	if g := get("/canned"); g.resp.Status != "418 I'm a teapot" || g.body != "from a rule" {
		t.Errorf("auto_respond: %s %q", g.resp.Status, g.body)
	}
	if g := get("/echo"); g.resp.Header.Get("X-Echo-H-X-Rule") != "yes" || g.resp.Header.Get("X-Stamped") != "1" {
		t.Errorf("header rules: %v", g.resp.Header)
	}
	if g := get("/bytes?n=4096"); len(g.body) != 4096 {
		t.Errorf("throttled body: %d bytes", len(g.body))
	}
	for range 5 {
		r.p.Next(t)
	}

	// Back into the form: the same rule comes out.
	for _, want := range []rules.Rule{local, remote, canned, header, respHeader, throttle} {
		if !e.Edit(want.ID) {
			t.Fatalf("no rule %d", want.ID)
		}
		got, err := e.Form.Rule()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("form round trip of #%d:\n got %+v %v\nwant %+v", want.ID, got, err, want)
		}
	}

	// Edit one: the change applies on the wire.
	e.Edit(canned.ID)
	e.Form.Status.SetText("503")
	test.Tap(e.Form.Save)
	if g := get("/canned"); g.resp.StatusCode != 503 {
		t.Errorf("edited rule: %s", g.resp.Status)
	}
	r.p.Next(t)

	// Disable through the row's check, move up, remove.
	e.Edit(header.ID)
	e.Form.Enabled.SetChecked(false)
	test.Tap(e.Form.Save)
	if g := get("/echo"); g.resp.Header.Get("X-Echo-H-X-Rule") != "" {
		t.Error("disabled rule still applies")
	}
	r.p.Next(t)
	// The row's check enables it again; its up button moves it before the one above.
	chk, _, up, _ := ruleRow(t, e, 3)
	test.Tap(chk)
	if rs := r.dbg.Rules(); !rs[3].Enabled {
		t.Error("row check did not enable the rule")
	}
	test.Tap(up)
	if rs := r.dbg.Rules(); rs[2].ID != header.ID || rs[3].ID != canned.ID {
		t.Errorf("move up: %+v", rs)
	}
	_, _, _, rm := ruleRow(t, e, 5)
	test.Tap(rm)
	if rs := r.dbg.Rules(); len(rs) != 5 || rs[4].ID != respHeader.ID {
		t.Errorf("after remove: %+v", rs)
	}
}

// addRuleInForm picks kind in the Add menu, taps Add, lets fill type into the form, taps
// Save and returns the rule saved.
func addRuleInForm(t *testing.T, e *RulesEditor, dbg Debugger, kind rules.Kind, fill func(f *RuleForm)) rules.Rule {
	t.Helper()
	for i, k := range ruleKinds {
		if k.kind == kind {
			e.AddKind.SetSelectedIndex(i)
		}
	}
	test.Tap(e.Add)
	f := e.Form
	if f == nil || f.Kind != kind {
		t.Fatalf("add %s opened %+v", kind, f)
	}
	fill(f)
	test.Tap(f.Save)
	if e.Form != nil {
		t.Fatalf("%s not saved: %q", kind, f.Err.Text)
	}
	saved := dbg.Rules()
	return saved[len(saved)-1]
}

// ruleRow finds the check and the edit, up and remove buttons of row i.
func ruleRow(t *testing.T, e *RulesEditor, i int) (*widget.Check, *widget.Button, *widget.Button, *widget.Button) {
	t.Helper()
	row := e.Rows.Objects[i].(*fyne.Container)
	var chk *widget.Check
	var btns []*widget.Button
	for _, o := range row.Objects {
		switch x := o.(type) {
		case *widget.Check:
			chk = x
		case *fyne.Container:
			for _, b := range x.Objects {
				btns = append(btns, b.(*widget.Button))
			}
		}
	}
	if chk == nil || len(btns) != 3 {
		t.Fatalf("row %d: check %v, %d buttons", i, chk, len(btns))
	}
	return chk, btns[0], btns[1], btns[2]
}

// The filter is checked as it is typed (the parser's position under it; Save disabled),
// and a bad field is an error that changes nothing.
func TestRuleFormValidation(t *testing.T) {
	r := newDebugRig(t)
	r.u.debug.showRules()
	e := r.u.debug.rules
	e.NewRule(rules.Rule{Kind: rules.AutoRespond, Enabled: true})
	f := e.Form
	if !f.Save.Disabled() {
		t.Error("Save enabled with an empty filter")
	}
	test.Type(f.Filter.Entry, "path:/x stauts:5xx")
	if !f.Filter.Error.Visible() || !strings.Contains(f.Filter.Error.Text, "        ^ column 9: unknown field") || !f.Save.Disabled() {
		t.Fatalf("as you type: %q, save disabled %v", f.Filter.Error.Text, f.Save.Disabled())
	}
	f.Filter.SetText("path:/x")
	if f.Filter.Error.Visible() || f.Save.Disabled() {
		t.Fatal("valid filter still flagged")
	}
	for _, bad := range []struct{ status, want string }{{"abc", "want a whole number"}, {"42", "out of range"}} {
		f.Status.SetText(bad.status)
		test.Tap(f.Save)
		if !strings.Contains(f.Err.Text, bad.want) || len(r.dbg.Rules()) != 0 || e.Form != f {
			t.Errorf("status %q: %q, %d rules", bad.status, f.Err.Text, len(r.dbg.Rules()))
		}
	}
	f.Status.SetText("200")
	f.Headers.Add("bad name", "v")
	test.Tap(f.Save)
	if !strings.Contains(f.Err.Text, "header row 1") || len(r.dbg.Rules()) != 0 {
		t.Errorf("bad header: %q", f.Err.Text)
	}

	e.NewRule(rules.Rule{Kind: rules.MapLocal, Enabled: true, Filter: "path:/x"})
	test.Tap(e.Form.PickFolder)
	if r.u.debug.rulesWin.Canvas().Overlays().Top() == nil {
		t.Error("Folder… opened no dialog")
	} else {
		r.u.debug.rulesWin.Canvas().Overlays().Top().Hide()
	}
	test.Type(e.Form.File, "relative/path")
	test.Tap(e.Form.Save)
	if !strings.Contains(e.Form.Err.Text, "absolute path") || len(r.dbg.Rules()) != 0 {
		t.Errorf("relative map_local file: %q", e.Form.Err.Text)
	}
	e.NewRule(rules.Rule{Kind: rules.Throttle, Enabled: true, Filter: "path:/x"})
	test.Tap(e.Form.Save)
	if !strings.Contains(e.Form.Err.Text, "latency_ms") || len(r.dbg.Rules()) != 0 {
		t.Errorf("empty throttle: %q", e.Form.Err.Text)
	}
}

// The rule set goes out and comes back as JSON (the rules.json format, or a bare array);
// bad JSON is an error and changes nothing.
func TestRulesJSONImportExport(t *testing.T) {
	r := newDebugRig(t)
	r.u.debug.showRules()
	e := r.u.debug.rules
	in := `{"rules": [
	  {"kind": "auto_respond", "enabled": true, "filter": "path:/canned", "status": 418, "body": "from a rule"},
	  {"kind": "header", "enabled": false, "filter": "host:a.example", "header_name": "X-A", "header_value": "1"}]}`
	if err := e.ImportJSON(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if len(e.Rows.Objects) != 2 || !strings.Contains(e.JSON.Text, `"id": 2`) || e.Result.Text != "Imported 2 rules." {
		t.Fatalf("import: %d rows, %q", len(e.Rows.Objects), e.Result.Text)
	}
	if g := <-r.get("/canned"); g.err != nil || g.resp.StatusCode != 418 {
		t.Errorf("imported rule not applied: %+v", g)
	}
	var out bytes.Buffer
	if err := e.ExportJSON(&out); err != nil {
		t.Fatal(err)
	}
	before := r.dbg.Rules()
	for _, bad := range []string{`[{"kind": "teleport", "filter": "host:a"}]`, `[{"kind": "header", "filter": "host:a", "nope": 1}]`, `{`, `[] []`,
		`{"rules": [{"kind": "header", "filter": "stauts:1", "header_name": "X"}]}`} {
		if err := e.ImportJSON(strings.NewReader(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
		if !reflect.DeepEqual(r.dbg.Rules(), before) || len(e.Rows.Objects) != 2 {
			t.Errorf("%s changed the rules", bad)
		}
	}
	// The JSON tab applies an edit; clearing it removes every rule; the export restores them.
	e.JSON.SetText("[]")
	test.Tap(e.ApplyJSON)
	if len(r.dbg.Rules()) != 0 {
		t.Fatalf("apply [] left %d rules", len(r.dbg.Rules()))
	}
	if err := e.ImportJSON(bytes.NewReader(out.Bytes())); err != nil {
		t.Fatal(err)
	}
	if got := r.dbg.Rules(); !reflect.DeepEqual(got, before) {
		t.Errorf("export → import:\n got %+v\nwant %+v", got, before)
	}
	e.JSON.SetText("{")
	test.Tap(e.ApplyJSON)
	if !strings.HasPrefix(e.Result.Text, "⚠") || len(r.dbg.Rules()) != 2 {
		t.Errorf("bad JSON tab: %q", e.Result.Text)
	}
}

// "Map local / remote from this exchange" opens the form prefilled from the session.
func TestRuleFromExchange(t *testing.T) {
	r := newDebugRig(t)
	<-r.get("/echo?q=1")
	s := r.p.Next(t)
	r.u.debug.mapRemoteFrom(s)
	f := r.u.debug.rules.Form
	if f.Kind != rules.MapRemote || f.Filter.Text != "host:127.0.0.1 path:/echo" || f.Target.Text != "http://"+strings.TrimPrefix(r.o.URL, "http://") {
		t.Errorf("map remote form: %q %q", f.Filter.Text, f.Target.Text)
	}
	r.u.debug.mapLocalFrom(s)
	if f := r.u.debug.rules.Form; f.Kind != rules.MapLocal || f.Filter.Text != "host:127.0.0.1 path:/echo" || f.Save.Disabled() {
		t.Errorf("map local form: %q", f.Filter.Text)
	}
}
