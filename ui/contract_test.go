package ui

import (
	"path/filepath"
	"strings"
	"testing"

	"inspector/contract"
	"inspector/engine/filter"
)

func TestContractWindowTreeExportAndCheck(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	in := contract.NewInferrer()
	var ready *contract.Inferrer // nil first: the stored sessions are still being read
	u, w := newTestUI(t, Deps{Store: st, Contract: func() *contract.Inferrer { return ready }})
	menuItem(t, editMenu(t, w, "Tools"), "API contract").Action()
	p := u.contract
	if p == nil || windowTitled(u.app, "API contract") == nil {
		t.Fatal("no API contract window")
	}
	if !strings.Contains(p.status.Text, "Reading") {
		t.Errorf("status while seeding: %q", p.status.Text)
	}
	for _, s := range sampleSessions() {
		in.Add(s)
	}
	ready = in
	p.refresh()
	if got := p.kids[""]; len(got) != 3 {
		t.Fatalf("hosts %v", got)
	}
	if lbl := p.byID["o:a.example GET /api/users"]; !strings.Contains(lbl, "(1)") {
		t.Errorf("operation row %q (rows %v)", lbl, p.byID)
	}
	p.showOperation("o:a.example GET /api/users")
	if !strings.Contains(p.detail.Text, "GET /api/users") || !strings.Contains(p.detail.Text, "users:") {
		t.Errorf("operation detail:\n%s", p.detail.Text)
	}
	// Live: another session updates the tree at the next refresh.
	in.Add(mkSession(9, "a.example", "/api/users", 200, "application/json", `{"users":[]}`))
	p.refresh()
	if lbl := p.byID["o:a.example GET /api/users"]; !strings.Contains(lbl, "(2)") {
		t.Errorf("after a live session %q", lbl)
	}
	path := filepath.Join(t.TempDir(), "api.yaml")
	if err := p.write(in, path, false); err != nil {
		t.Fatal(err)
	}
	if _, err := contract.LoadDocument(path); err != nil {
		t.Fatalf("exported document: %v", err)
	}
	// Checking traffic against it: contract:violation then finds what departs from it.
	p.checkOn.SetChecked(true)
	defer filter.SetContract(nil)
	bad := mkSession(10, "a.example", "/api/users", 200, "application/json", `{"users":"none"}`)
	if !filter.MustParse("contract:violation").Match(bad) {
		t.Error("a departing session does not match contract:violation")
	}
	if filter.MustParse("contract:violation").Match(sampleSessions()[0]) {
		t.Error("a conforming session matches contract:violation")
	}
	p.checkOn.SetChecked(false)
	if filter.MustParse("contract:violation").Match(bad) {
		t.Error("the check stays on after turning it off")
	}
}
