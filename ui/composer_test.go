package ui

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"inspector/engine/session"
)

// The composer shows the response it got beside the request, keeps a history that
// reopens, and saves it in the data directory.
func TestComposerShowsResponseAndHistory(t *testing.T) {
	r := newDebugRig(t)
	v := r.u.debug
	req, _ := http.NewRequest("PUT", r.o.URL+"/echo?orig", strings.NewReader("orig body"))
	<-r.do(req)
	orig := r.p.Next(t)
	r.add(orig)
	r.u.SelectID(orig.ID)

	v.composeSelected()
	c := v.composer
	if v.compWin == nil || c.Method.Text != "PUT" || c.Body.Text != "orig body" || !strings.HasSuffix(c.URL.Text, "/echo?orig") || c.RespStatus.Text != "No response yet" {
		t.Fatalf("composer opened with %q %q %q, response %q", c.Method.Text, c.URL.Text, c.Body.Text, c.RespStatus.Text)
	}
	c.Body.SetText("composed")
	c.Headers.Add("X-Composed", "yes")
	test.Tap(c.SendBtn)
	r.run(func() bool { return strings.HasPrefix(c.Result.Text, "#") })
	sent := r.p.Next(t)
	if sent.ReplayOf != orig.ID || string(sent.Request.Body.Data) != "composed" || sent.Request.Header.Get("X-Composed") != "yes" {
		t.Errorf("composed session: replay_of %d body %q", sent.ReplayOf, sent.Request.Body.Data)
	}
	if id, _ := r.u.model.Selected(); id != sent.ID {
		t.Errorf("selection %d, want the new session %d", id, sent.ID)
	}
	// The response beside the request: status line, headers, body.
	if !strings.Contains(c.RespStatus.Text, "200 OK") || !strings.Contains(c.RespHeaders.Text, "X-Echo-H-X-Composed: yes") ||
		!strings.Contains(c.RespHeaders.Text, "X-Echo-Method: PUT") || c.RespBodyText() != "{\n  \"ok\": true,\n  \"path\": \"/echo?orig\"\n}" {
		t.Errorf("response shown: %q\n%s\n%q", c.RespStatus.Text, c.RespHeaders.Text, c.RespBodyText())
	}

	// A second send, to /status: the history lists both, newest first.
	c.URL.SetText(r.o.URL + "/status?code=404")
	c.Method.SetText("GET")
	c.Body.SetText("")
	test.Tap(c.SendBtn)
	r.run(func() bool { return len(c.historyEntries) == 2 })
	r.p.Next(t)
	if !strings.Contains(c.RespStatus.Text, "404 Not Found") || c.RespBodyText() != "(no body)" {
		t.Errorf("second response: %q", c.RespStatus.Text)
	}
	hist := c.historyEntries
	if hist[0].Status != 404 || hist[1].Method != "PUT" || hist[1].Body != "composed" || hist[1].Header.Get("X-Composed") != "yes" {
		t.Fatalf("history %+v", hist)
	}
	// Reopen the first: its request and its response come back.
	c.History.Select(1)
	if c.Method.Text != "PUT" || c.Body.Text != "composed" || !strings.HasSuffix(c.URL.Text, "/echo?orig") {
		t.Errorf("reopened %q %q %q", c.Method.Text, c.URL.Text, c.Body.Text)
	}
	if !strings.Contains(c.RespStatus.Text, "200 OK") || !strings.Contains(c.RespHeaders.Text, "X-Echo-Method: PUT") {
		t.Errorf("reopened response %q", c.RespStatus.Text)
	}
	// Saved in the data directory: a new window's composer has it.
	h, err := LoadComposerHistory(r.dbg.history)
	if err != nil || len(h.Entries()) != 2 || h.Entries()[0].Status != 404 {
		t.Fatalf("history file: %v %+v", err, h.Entries())
	}
	if fi, err := os.Stat(r.dbg.history); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("history file mode: %v %v", fi, err)
	}

	// A bad URL says so and sends nothing.
	v.compWin.Close()
	v.showComposer()
	blank := v.composer
	if blank == c || blank.URL.Text != "" || len(blank.historyEntries) != 2 {
		t.Fatalf("blank composer: %q, %d in history", blank.URL.Text, len(blank.historyEntries))
	}
	blank.URL.SetText("not a url")
	test.Tap(blank.SendBtn)
	if !strings.HasPrefix(blank.Result.Text, "⚠") {
		t.Errorf("blank composer: %q", blank.Result.Text)
	}
}

// The history is bounded and a corrupt file is reported and never overwritten.
func TestComposerHistoryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "composer-history.json")
	h, err := LoadComposerHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", HistoryBodyMax+10)
	for i := range HistoryMax + 5 {
		body := "small"
		if i == HistoryMax+4 {
			body = big
		}
		if err := h.Add(ComposerEntry{Method: "GET", URL: "http://a.example/", Body: body, ID: session.ID(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	h2, err := LoadComposerHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	es := h2.Entries()
	if len(es) != HistoryMax || es[0].ID != HistoryMax+5 || len(es[0].Body) != HistoryBodyMax || !es[0].BodyCut {
		t.Fatalf("%d entries, newest %d, body %d cut %v", len(es), es[0].ID, len(es[0].Body), es[0].BodyCut)
	}

	bad := filepath.Join(t.TempDir(), "composer-history.json")
	os.WriteFile(bad, []byte("{not json"), 0o600)
	h3, err := LoadComposerHistory(bad)
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("corrupt file: %v", err)
	}
	if err := h3.Add(ComposerEntry{Method: "GET", URL: "http://a.example/"}); err != nil || len(h3.Entries()) != 1 {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(bad); string(b) != "{not json" {
		t.Errorf("corrupt file overwritten: %q", b)
	}
}

func TestTextRows(t *testing.T) {
	long := strings.Repeat("é", wrapColumn*2+3)
	rows := textRows("a\r\nb\n" + long)
	if len(rows) != 5 || rows[0] != "a" || rows[1] != "b" || rows[2] != strings.Repeat("é", wrapColumn) || rows[4] != "ééé" {
		t.Errorf("rows %q", rows)
	}
	if r := textRows(""); len(r) != 1 || r[0] != "" {
		t.Errorf("empty: %q", r)
	}
}

// A large single-line response is shown as a bounded number of short rows of a
// virtualised list, with a note for what is left out.
func TestComposerLargeResponse(t *testing.T) {
	r := newDebugRig(t)
	c := NewComposer(r.dbg, nil, nil)
	c.post = func(f func()) { r.posted <- f }
	big := `{"k":"` + strings.Repeat("x", 3<<20) + `"}`
	resp := &session.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: session.Body{Data: []byte(big), Size: int64(len(big))}}
	c.showResponse(&session.Session{ID: 9, Response: resp}, "")
	if n := len(c.respRows); n < composerBodyMax/wrapColumn || n > composerBodyMax/wrapColumn+2 {
		t.Errorf("%d rows for a 3 MB line", n)
	}
	if !strings.Contains(c.respRows[len(c.respRows)-1], "more bytes not shown") {
		t.Errorf("no note: %q", c.respRows[len(c.respRows)-1])
	}
}
