package ui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLargeJSONShowsPrettyBeforeItsTree: off the tests' inline mode a JSON body's pretty
// text is installed first and its Tree joins the views afterwards, without moving the
// view shown; choosing Tree then shows it, and the next body opens on the Tree.
func TestLargeJSONShowsPrettyBeforeItsTree(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(`{"items":[`)
	for i := range 2000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":%d,"name":"item %d"}`, i, i)
	}
	sb.WriteString(`]}`)
	a := mkSession(0, "a.example", "/items", 200, "application/json", sb.String())
	b := mkSession(0, "b.example", "/items", 200, "application/json", `{"x":[1,2,3]}`)
	st := openStore(t, a, b)
	posts := make(chan func(), 64)
	u, _ := newTestUI(t, Deps{Store: st, Post: func(f func()) { posts <- f }})
	u.detail.inline = false
	body := u.detail.resp.body
	run := func(until func() bool, what string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for !until() {
			select {
			case f := <-posts:
				f()
			case <-deadline:
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	u.SelectID(a.ID)
	run(func() bool { v, ok := body.View(); return ok && v.Name == "JSON" }, "the JSON view")
	if slices.Contains(body.mode.Options, "Tree") {
		t.Fatalf("the tree came with the first install: %v", body.mode.Options)
	}
	if v, _ := body.View(); v.lines == nil || !strings.Contains(body.text.Text(), `"name": "item 1999"`) {
		t.Fatal("the pretty text shown was not indexed off the UI goroutine, or is not the pretty body")
	}
	run(func() bool { return slices.Contains(body.mode.Options, "Tree") }, "the Tree view")
	if v, _ := body.View(); v.Name != "JSON" {
		t.Fatalf("the late tree moved the view to %q", v.Name)
	}
	for _, v := range body.views {
		if v.Text != "" && v.lines == nil {
			t.Fatalf("view %s has no row index after the late pass", v.Name)
		}
	}
	body.mode.SetSelected("Tree")
	if !body.tree.box.Visible() {
		t.Fatal("Tree chosen, the tree is not shown")
	}
	// The next body opens on the Tree: it is made before the first install.
	u.SelectID(b.ID)
	run(func() bool {
		v, ok := body.View()
		return ok && v.Name == "Tree" && len(body.body.Data) == len(b.Response.Body.Data)
	}, "the next body's Tree")
}
