package ui

import (
	"reflect"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"inspector/engine/hooks/rules"
)

// The inline map_local body and the rewrite kinds are made in their forms by tapping and
// typing, work on the wire through the real engine, and reopen with the same fields.
func TestRewriteRuleFormsOnTheWire(t *testing.T) {
	r := newDebugRig(t)
	r.u.debug.showRules()
	e := r.u.debug.rules
	add := func(kind rules.Kind, fill func(f *RuleForm)) rules.Rule {
		t.Helper()
		return addRuleInForm(t, e, r.dbg, kind, fill)
	}
	inline := add(rules.MapLocal, func(f *RuleForm) {
		test.Type(f.Filter.Entry, "path:/mock")
		if !f.Body.Disabled() || f.File.Disabled() {
			t.Error("a new map_local form should start on the file")
		}
		f.Source.SetSelected(sourceInline)
		if f.Body.Disabled() || !f.File.Disabled() {
			t.Error("choosing the inline body did not show its editor")
		}
		f.Headers.Add("Content-Type", "application/json")
		test.Type(f.Body, `{"mocked":true}`)
	})
	block := add(rules.Block, func(f *RuleForm) {
		if f.Save.Disabled() {
			t.Error("block: Save disabled with an empty filter")
		}
		test.Type(f.List, "*.ads.test\n"+r.o.URL+"/blocked/")
	})
	urlRW := add(rules.URLRewrite, func(f *RuleForm) {
		test.Type(f.Filter.Entry, "path:/old/")
		test.Type(f.Pattern, `/old/(\w+)`)
		test.Type(f.Replace, `/echo?was=$1`)
	})
	bodyRW := add(rules.BodyRewrite, func(f *RuleForm) {
		test.Type(f.Filter.Entry, "path:/echo")
		f.Phase.SetSelected("response")
		test.Type(f.Pattern, `"ok":true`)
		test.Type(f.Replace, `"ok":"rewritten"`)
	})
	statusRW := add(rules.StatusRewrite, func(f *RuleForm) {
		test.Type(f.Filter.Entry, "path:/status status:500")
		test.Type(f.Status, "299")
	})
	if len(e.Rows.Objects) != 5 || !strings.Contains(ruleLine(inline), "inline body (15 bytes)") || !strings.Contains(ruleLine(block), "*.ads.test") {
		t.Fatalf("%d rows; %q; %q", len(e.Rows.Objects), ruleLine(inline), ruleLine(block))
	}

	get := func(path string) res {
		t.Helper()
		got := <-r.get(path)
		if got.err != nil {
			t.Fatalf("%s: %v", path, got.err)
		}
		r.p.Next(t)
		return got
	}
	if g := get("/mock/a"); g.body != `{"mocked":true}` || g.resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("inline map_local: %q %v", g.body, g.resp.Header)
	}
	if g := get("/blocked/pixel"); g.resp.StatusCode != 403 || !strings.Contains(g.body, "block list") {
		t.Errorf("block: %s %q", g.resp.Status, g.body)
	}
	if g := get("/old/thing"); !strings.Contains(g.body, `"path":"/echo?was=thing"`) || !strings.Contains(g.body, `"ok":"rewritten"`) {
		t.Errorf("url + body rewrite: %q", g.body)
	}
	if g := get("/status?code=500"); g.resp.StatusCode != 299 {
		t.Errorf("status rewrite: %s", g.resp.Status)
	}

	for _, want := range []rules.Rule{inline, block, urlRW, bodyRW, statusRW} {
		if !e.Edit(want.ID) {
			t.Fatalf("no rule %d", want.ID)
		}
		got, err := e.Form.Rule()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("form round trip of #%d:\n got %+v %v\nwant %+v", want.ID, got, err, want)
		}
	}
	// A saved inline rule reopens on its body; switching it to a file drops the body.
	e.Edit(inline.ID)
	if e.Form.Source.Selected != sourceInline || e.Form.Body.Text != `{"mocked":true}` {
		t.Errorf("inline rule reopened on %q", e.Form.Source.Selected)
	}

	// Bad fields are errors that change nothing.
	before := r.dbg.Rules()
	for _, c := range []struct {
		kind rules.Kind
		fill func(f *RuleForm)
		want string
	}{
		{rules.URLRewrite, func(f *RuleForm) { test.Type(f.Filter.Entry, "host:a"); test.Type(f.Pattern, "(") }, "pattern"},
		{rules.BodyRewrite, func(f *RuleForm) { test.Type(f.Filter.Entry, "host:a") }, "empty pattern"},
		{rules.StatusRewrite, func(f *RuleForm) { test.Type(f.Filter.Entry, "host:a"); test.Type(f.Status, "204") }, "allow no body"},
		{rules.Block, func(f *RuleForm) {}, "needs a filter"},
		{rules.Block, func(f *RuleForm) { test.Type(f.List, "example.com/ads") }, "want a host"},
		{rules.MapLocal, func(f *RuleForm) {
			test.Type(f.Filter.Entry, "host:a")
			f.Source.SetSelected(sourceInline)
			test.Type(f.Status, "7")
		}, "out of range"},
	} {
		e.NewRule(rules.Rule{Kind: c.kind, Enabled: true})
		c.fill(e.Form)
		test.Tap(e.Form.Save)
		if !strings.Contains(e.Form.Err.Text, c.want) || !reflect.DeepEqual(r.dbg.Rules(), before) {
			t.Errorf("%s: %q, want %q", c.kind, e.Form.Err.Text, c.want)
		}
	}
}

// "Map local from this exchange" opens an inline rule holding the response body, ready to
// edit: saved, it answers with the edited body without any file.
func TestMapLocalFromExchangeInline(t *testing.T) {
	r := newDebugRig(t)
	<-r.get("/echo?q=1")
	s := r.p.Next(t)
	r.u.debug.mapLocalFrom(s)
	f := r.u.debug.rules.Form
	if f.Source.Selected != sourceInline || f.Body.Text != `{"ok":true,"path":"/echo?q=1"}` {
		t.Fatalf("map local from exchange: %q %q", f.Source.Selected, f.Body.Text)
	}
	f.Body.SetText(`{"ok":false}`)
	test.Tap(f.Save)
	if rs := r.dbg.Rules(); len(rs) != 1 || rs[0].File != "" || rs[0].Header.Get("Content-Type") != "application/json" {
		t.Fatalf("saved %+v (%q)", rs, f.Err.Text)
	}
	g := <-r.get("/echo?q=1")
	if g.err != nil || g.body != `{"ok":false}` {
		t.Errorf("served %q %v", g.body, g.err)
	}
}
