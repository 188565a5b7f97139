package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"inspector/contract"
	"inspector/filter"
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

func TestContractWindowChecksAgainstAFile(t *testing.T) {
	in := contract.NewInferrer()
	for _, s := range sampleSessions() {
		in.Add(s)
	}
	u, w := newTestUI(t, Deps{Store: openStore(t, sampleSessions()...), Contract: func() *contract.Inferrer { return in }})
	menuItem(t, editMenu(t, w, "Tools"), "API contract").Action()
	p := u.contract
	defer filter.SetContract(nil)
	dir := t.TempDir()
	bad := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(bad, []byte("openapi: 3.1.0\ninfo: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.loadFile(bad); err == nil || !strings.Contains(err.Error(), "broken.yaml") {
		t.Fatalf("a broken file: %v", err)
	}
	if p.checkOn.Checked {
		t.Fatal("a broken file turned the check on")
	}
	// A contract that knows only /api/users, with users an array.
	spec := filepath.Join(dir, "api.yaml")
	doc := `openapi: 3.1.0
info: {title: t, version: "1"}
servers: [{url: "https://a.example"}]
paths:
  /api/users:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                properties:
                  users: {type: array}
                required: [users]
`
	if err := os.WriteFile(spec, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.loadFile(spec); err != nil {
		t.Fatal(err)
	}
	if !p.checkOn.Checked || !strings.Contains(p.checkOn.Text, "api.yaml") {
		t.Errorf("check box after loading: %v %q", p.checkOn.Checked, p.checkOn.Text)
	}
	if !strings.Contains(p.detail.Text, "departs from it") || !strings.Contains(p.detail.Text, "operation added") {
		t.Errorf("drift shown:\n%s", p.detail.Text)
	}
	if !filter.MustParse("contract:violation").Match(mkSession(11, "a.example", "/api/users", 200, "application/json", `{"users":"none"}`)) {
		t.Error("a session departing from the file does not match contract:violation")
	}
	if filter.MustParse("contract:violation").Match(mkSession(12, "a.example", "/api/users", 200, "application/json", `{"users":[]}`)) {
		t.Error("a session conforming to the file matches contract:violation")
	}
	p.checkOn.SetChecked(false)
	if filter.MustParse("contract:violation").Match(mkSession(13, "a.example", "/api/users", 200, "application/json", `{"users":"none"}`)) {
		t.Error("the file's check stays on after turning it off")
	}
}
