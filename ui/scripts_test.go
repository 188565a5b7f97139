package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"inspector/engine/hooks/script"
)

func TestScriptsPanelEditSaveReloadAndErrors(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "scripts")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log.js"), []byte("exports.response = function (flow) { console.log('seen ' + flow.request.url) }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := script.New(script.Options{Dir: dir, PollInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	u, w := newTestUI(t, Deps{Scripts: m, DataDir: data})
	menuItem(t, editMenu(t, w, "Tools"), "Scripts").Action()
	p := u.scripts
	if p == nil || windowTitled(u.app, "Scripts") == nil {
		t.Fatal("no Scripts window")
	}
	if len(p.status) != 1 || scriptLine(p.status[0]) != "log.js — response" {
		t.Fatalf("loaded: %+v", p.status)
	}
	// A new script saved from the editor is written and loaded.
	p.name.SetText("add-header")
	p.editor.SetText("exports.request = function (flow) {\n  flow.request.headers.set('X-Debug', '1')\n}\n")
	if err := p.save(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "add-header.js")); err != nil || !strings.Contains(string(b), "X-Debug") {
		t.Fatalf("saved file: %q %v", b, err)
	}
	if len(p.status) != 2 || scriptLine(p.status[0]) != "add-header.js — request" || p.fileErr.Text != "" {
		t.Fatalf("after save: %+v, error %q", p.status, p.fileErr.Text)
	}
	if !strings.Contains(u.status.Note(), "Saved and loaded add-header.js") {
		t.Fatalf("note = %q", u.status.Note())
	}
	// A broken script: its error with file:line shows next to the editor and in the list.
	p.name.SetText("broken")
	p.editor.SetText("exports.request = function (flow) {\n  this is not javascript\n}\n")
	if err := p.save(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.fileErr.Text, "broken.js") || !strings.Contains(p.fileErr.Text, "Line 2") {
		t.Fatalf("file error = %q", p.fileErr.Text)
	}
	if !strings.Contains(p.log.Text, "broken.js ERROR") {
		t.Fatalf("log = %q", p.log.Text)
	}
	// Bad names and empty scripts are refused; nothing is written.
	for _, bad := range []string{"../escape", "a/b", "", " .hidden"} {
		p.name.SetText(bad)
		p.editor.SetText("exports.request = function () {}")
		if err := p.save(); err == nil {
			t.Errorf("name %q saved", bad)
		}
	}
	p.name.SetText("empty")
	p.editor.SetText("  ")
	if err := p.save(); err == nil {
		t.Error("an empty script was saved")
	}
	if _, err := os.Stat(filepath.Join(data, "escape.js")); !os.IsNotExist(err) {
		t.Fatal("a name with .. wrote outside the scripts folder")
	}
	// Selecting a script loads it into the editor.
	p.list.Select(2) // log.js
	if p.name.Text != "log" || !strings.Contains(p.editor.Text, "console.log") {
		t.Fatalf("opened %q: %q", p.name.Text, p.editor.Text)
	}
}
