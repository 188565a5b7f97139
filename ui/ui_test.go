package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"inspector/engine/session"
	"inspector/store"
	"inspector/ui/viewmodel"
)

// mkSession builds a complete synthetic session.
func mkSession(id session.ID, host, path string, status int, ct, body string) *session.Session {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(id) * time.Second)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	s := &session.Session{
		ID: id, Started: t0,
		Client:   session.Conn{Addr: "127.0.0.1:5555", Proto: session.HTTP2, TLS: &session.TLSInfo{Version: "TLS 1.3", CipherSuite: "TLS_AES_128_GCM_SHA256", ServerName: host, ALPN: "h2"}},
		Upstream: session.Conn{Addr: "10.0.0.1:443", Proto: session.HTTP1},
		Request: session.Request{
			Method: "GET", URL: "https://" + host + path, Proto: "HTTP/2.0",
			Header: http.Header{"Accept": {"*/*"}, "X-Test-Id": {fmt.Sprint("req-", id)}},
		},
		Response: &session.Response{
			Status: status, Proto: "HTTP/1.1",
			Header: http.Header{"Content-Type": {ct}, "X-Served-By": {"origin-" + host}},
			Body:   session.Body{Data: []byte(body), Size: int64(len(body))},
		},
		Timings: session.Timings{ClientConnected: ms(0), RequestHeaders: ms(1), ConnectStart: ms(2), ConnectDone: ms(5),
			RequestSent: ms(6), FirstByte: ms(20), ResponseDone: ms(25)},
	}
	return s
}

// openStore opens a real store in a temporary directory with the given sessions committed.
func openStore(t testing.TB, ss ...*session.Session) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, s := range ss {
		s.ID = st.NextID()
		if !st.Put(s) {
			t.Fatal("store refused a session")
		}
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	return st
}

func newTestUI(t testing.TB, d Deps) (*UI, fyne.Window) {
	t.Helper()
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	u := New(a, w, d)
	u.detail.inline = true // bodies are formatted at once: the tests read them right after
	w.Resize(fyne.NewSize(1200, 800))
	return u, w
}

func sampleSessions() []*session.Session {
	return []*session.Session{
		mkSession(0, "a.example", "/api/users", 200, "application/json", `{"users":[{"id":1,"name":"Sample User"}]}`),
		mkSession(0, "b.example", "/missing", 404, "text/html", "<h1>nope</h1>"),
		mkSession(0, "a.example", "/logo.png", 200, "image/png", "\x89PNG\r\n\x1a\n"),
		mkSession(0, "c.example", "/boom", 503, "text/plain", "down"),
	}
}

func TestStoredSessionsAppearAndSelectingShowsHeaders(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: st})
	if u.model.Len() != 4 {
		t.Fatalf("list has %d rows, want 4", u.model.Len())
	}
	// Select the 404 row through the table, as a click does.
	row := -1
	for i := 0; i < u.model.Len(); i++ {
		if u.model.At(i).Status == 404 {
			row = i
		}
	}
	u.list.click(row, 0)
	if got := u.detail.req.headers.text; !strings.Contains(got, "X-Test-Id: req-") || !strings.Contains(got, "Accept: */*") {
		t.Fatalf("request headers tab = %q", got)
	}
	if got := u.detail.resp.headers.text; !strings.Contains(got, "X-Served-By: origin-b.example") {
		t.Fatalf("response headers tab = %q", got)
	}
	if got := u.detail.resp.raw.Text(); !strings.HasPrefix(got, "HTTP/1.1 404 Not Found\n") {
		t.Fatalf("raw response = %q", got)
	}
	if !strings.Contains(u.detail.title.Text, "404") {
		t.Fatalf("title = %q", u.detail.title.Text)
	}
}

func TestJSONBodyIsPrettyAndTimingAndTLSShown(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: st})
	u.SelectID(1)
	body := u.detail.resp.body
	if got := body.text.Text(); !strings.Contains(got, "\"users\": [\n") {
		t.Fatalf("JSON body not pretty: %q", got)
	}
	body.mode.SetSelected("Hex")
	if got := body.text.src.Line(0); !strings.HasPrefix(got, "00000000  7b 22 75 73") {
		t.Fatalf("hex view = %q", got)
	}
	// connect, send, wait, receive
	if len(u.detail.timing.Objects) != 4 || !strings.Contains(u.detail.timeText.Text, "25ms") {
		t.Fatalf("timing: %d rows, %q", len(u.detail.timing.Objects), u.detail.timeText.Text)
	}
	if got := u.detail.tls.Text(); !strings.Contains(got, "TLS 1.3") || !strings.Contains(got, "SNI       a.example") {
		t.Fatalf("TLS tab = %q", got)
	}
	if !strings.Contains(u.detail.frames.status.Text, "No frames recorded") {
		t.Fatalf("frames tab = %q", u.detail.frames.status.Text)
	}
}

func TestTypingAFilterNarrowsTheList(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: st})
	test.Type(u.filter.entry, "host:a.example")
	if u.model.Len() != 2 {
		t.Fatalf("filtered list has %d rows, want 2", u.model.Len())
	}
	for i := 0; i < u.model.Len(); i++ {
		if h := u.model.At(i).Host; h != "a.example" {
			t.Fatalf("row %d host %q", i, h)
		}
	}
	if u.filter.Error() != "" {
		t.Fatalf("valid filter shows error %q", u.filter.Error())
	}
	if !strings.Contains(u.status.Text(), "2 of 4 shown") {
		t.Fatalf("status = %q", u.status.Text())
	}
	// Presets replace the expression.
	u.filter.presets.SetSelected("4xx/5xx")
	if u.filter.entry.Text != "status:400-599" || u.model.Len() != 2 {
		t.Fatalf("preset: %q -> %d rows", u.filter.entry.Text, u.model.Len())
	}
	// The quick field narrows further.
	test.Type(u.filter.quick, "boom")
	if u.model.Len() != 1 || u.model.At(0).Status != 503 {
		t.Fatalf("quick search: %d rows", u.model.Len())
	}
}

func TestBadFilterShowsErrorAtPosition(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: st})
	test.Type(u.filter.entry, "host:a.example")
	if u.model.Len() != 2 {
		t.Fatal("setup filter failed")
	}
	u.filter.entry.SetText("method:GET stauts:200")
	msg := u.filter.Error()
	if !strings.Contains(msg, "column 12") || !strings.Contains(msg, "stauts") {
		t.Fatalf("error = %q, want the position of the unknown field", msg)
	}
	if !u.filter.caret.Visible() || u.filter.caret.Text != strings.Repeat(" ", 11)+"^" {
		t.Fatalf("caret = %q", u.filter.caret.Text)
	}
	// The last valid filter stays in force: never a silent empty list.
	if u.model.Len() != 2 {
		t.Fatalf("bad filter changed the list to %d rows", u.model.Len())
	}
	u.filter.entry.SetText("")
	if u.filter.Error() != "" || u.model.Len() != 4 {
		t.Fatalf("clearing: error %q, %d rows", u.filter.Error(), u.model.Len())
	}
}

func TestExportWritesHAR(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: st, HAR: StoreHAR("test")})
	test.Type(u.filter.entry, "status:200")
	for _, tc := range []struct {
		scope Scope
		want  int
	}{{ScopeAll, 4}, {ScopeFiltered, 2}} {
		var buf bytes.Buffer
		n, err := u.ExportHAR(&buf, tc.scope)
		if err != nil || n != tc.want {
			t.Fatalf("scope %d: n=%d err=%v", tc.scope, n, err)
		}
		var doc struct {
			Log struct {
				Version string `json:"version"`
				Entries []struct {
					Request struct {
						URL string `json:"url"`
					} `json:"request"`
					Response struct {
						Status int `json:"status"`
					} `json:"response"`
				} `json:"entries"`
			} `json:"log"`
		}
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, buf.String())
		}
		if doc.Log.Version != "1.2" || len(doc.Log.Entries) != tc.want {
			t.Fatalf("HAR version %q with %d entries", doc.Log.Version, len(doc.Log.Entries))
		}
		if tc.scope == ScopeFiltered {
			for _, e := range doc.Log.Entries {
				if e.Response.Status != 200 {
					t.Fatalf("filtered export has status %d", e.Response.Status)
				}
			}
		}
	}
	if _, err := u.ExportHAR(&bytes.Buffer{}, ScopeSelected); err == nil {
		t.Fatal("exporting the selection with nothing selected succeeded")
	}
	u2, _ := newTestUI(t, Deps{Store: st})
	if _, err := u2.ExportHAR(&bytes.Buffer{}, ScopeAll); err != ErrNoHAR {
		t.Fatalf("without a codec: %v", err)
	}
}

// TestExportAllIncludesUncommitted: a session the window shows as complete but the store's
// writer has not committed yet is in an "All" export (the engine hands it to both at once).
func TestExportAllIncludesUncommitted(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: st, HAR: StoreHAR("test")})
	s := mkSession(99, "late.example", "/just-now", 201, "text/plain", "fresh")
	u.ApplyBatch(viewmodel.Batch{Rows: []session.Summary{s.Summarize()}, Completed: []*session.Session{s}})
	var buf bytes.Buffer
	if n, err := u.ExportHAR(&buf, ScopeAll); err != nil || n != 5 {
		t.Fatalf("export all: %d, %v", n, err)
	}
	if !strings.Contains(buf.String(), "late.example/just-now") {
		t.Fatal("the uncommitted session is missing from the export")
	}
	// Deleted from the window: no longer exported.
	u.SelectID(99)
	u.DeleteSelected()
	if n, err := u.ExportHAR(&bytes.Buffer{}, ScopeAll); err != nil || n != 4 {
		t.Fatalf("after delete: %d, %v", n, err)
	}
}

func TestLiveBatchesAddAndUpdateRows(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: st})
	live := mkSession(100, "live.example", "/stream", 0, "", "")
	live.Response = nil
	sum := live.Summarize()
	sum.InFlight = true
	u.ApplyBatch(viewmodel.Batch{Rows: []session.Summary{sum}})
	if u.model.Len() != 5 {
		t.Fatalf("rows = %d", u.model.Len())
	}
	u.SelectID(100)
	if !strings.Contains(u.detail.title.Text, "in flight") {
		t.Fatalf("in-flight title = %q", u.detail.title.Text)
	}
	done := mkSession(100, "live.example", "/stream", 201, "text/plain", "ok")
	u.ApplyBatch(viewmodel.Batch{Rows: []session.Summary{done.Summarize()}, Completed: []*session.Session{done}})
	if r, _ := u.model.Get(100); r.Status != 201 || r.InFlight {
		t.Fatalf("row not completed: %+v", r)
	}
	// The completed session is shown from memory although the store does not have it yet.
	u.SelectID(100)
	if !strings.Contains(u.detail.resp.raw.Text(), "201 Created") {
		t.Fatalf("detail = %q", u.detail.resp.raw.Text())
	}
	// A resync rebuilds from the store: the unsaved live row goes, stored ones stay.
	u.ApplyBatch(viewmodel.Batch{Resync: true})
	if u.model.Len() != 4 {
		t.Fatalf("after resync %d rows", u.model.Len())
	}
}

func TestSortByHeaderAndColumnsPersist(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	u := New(a, w, Deps{Store: st})
	u.list.SortBy(viewmodel.ColStatus)
	if u.model.At(0).Status != 200 || u.model.At(3).Status != 503 {
		t.Fatal("not sorted by status ascending")
	}
	u.list.SortBy(viewmodel.ColStatus)
	if u.model.At(0).Status != 503 {
		t.Fatal("second tap did not flip the order")
	}
	u.list.SetColumns([]viewmodel.Column{viewmodel.ColID, viewmodel.ColHost, viewmodel.ColStatus})
	u.list.SetColumnWidth(viewmodel.ColHost, 321)

	// A new window on the same app (same preferences) restores the choices.
	u2 := New(a, test.NewTempWindow(t, nil), Deps{Store: st})
	if len(u2.list.cols) != 3 || u2.list.cols[1] != viewmodel.ColHost {
		t.Fatalf("columns = %v", u2.list.cols)
	}
	if w := u2.list.width(viewmodel.ColHost); w != 321 {
		t.Fatalf("host width = %v", w)
	}
	if c, desc := u2.model.Sort(); c != viewmodel.ColStatus || !desc {
		t.Fatalf("sort = %v %v", c, desc)
	}
}

func TestDeleteClearAndShortcutsNavigate(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, w := newTestUI(t, Deps{Store: st})
	u.Step(1)
	if id, _ := u.model.Selected(); id != 1 {
		t.Fatalf("first step selected %d", id)
	}
	u.Step(1)
	u.DeleteSelected()
	if _, err := st.Get(2); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted session still stored: %v", err)
	}
	if u.model.Len() != 3 {
		t.Fatalf("rows after delete = %d", u.model.Len())
	}
	if id, _ := u.model.Selected(); id != 3 {
		t.Fatalf("selection after delete = %d, want the next row", id)
	}
	u.CopyURL()
	if got := fyne.CurrentApp().Clipboard().Content(); got != "https://a.example/logo.png" {
		t.Fatalf("clipboard = %q", got)
	}
	// Ctrl+F focuses the filter.
	w.Canvas().(interface {
		TypedShortcut(fyne.Shortcut)
	}).TypedShortcut(shortcut(fyne.KeyF, fyne.KeyModifierShortcutDefault))
	if w.Canvas().Focused() != u.filter.entry {
		t.Fatal("Ctrl+F did not focus the filter")
	}
	u.Clear()
	if u.model.Len() != 0 {
		t.Fatal("clear left rows")
	}
	if n, _ := st.Count(nil); n != 0 {
		t.Fatalf("store still has %d sessions", n)
	}
}

func TestStoreErrorIsShown(t *testing.T) {
	st := openStore(t)
	st.Close()
	u, _ := newTestUI(t, Deps{Store: st})
	if !strings.Contains(u.status.Text(), "store error") {
		t.Fatalf("status = %q", u.status.Text())
	}
}

func TestImportHARRoundTripAndBadFile(t *testing.T) {
	src := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: src, HAR: StoreHAR("test")})
	var buf bytes.Buffer
	if _, err := u.ExportHAR(&buf, ScopeAll); err != nil {
		t.Fatal(err)
	}
	dst := openStore(t)
	v, _ := newTestUI(t, Deps{Store: dst, HAR: StoreHAR("test")})
	n, err := v.ImportHAR(bytes.NewReader(buf.Bytes()))
	if err != nil || n != 4 {
		t.Fatalf("import: n=%d err=%v", n, err)
	}
	if v.model.Len() != 4 {
		t.Fatalf("list after import: %d rows", v.model.Len())
	}
	if c, _ := dst.Count(nil); c != 4 {
		t.Fatalf("store after import: %d", c)
	}
	for i := 0; i < v.model.Len(); i++ {
		if !v.model.At(i).Flags.Has(session.FlagImported) {
			t.Fatalf("row %d not marked imported", i)
		}
	}
	// A damaged file is a clear error and changes nothing.
	_, err = v.ImportHAR(strings.NewReader(`{"log": {"entries": [{"request": 5}]}}`))
	if err == nil || !strings.Contains(err.Error(), "import failed") {
		t.Fatalf("bad HAR: %v", err)
	}
	if c, _ := dst.Count(nil); c != 4 || v.model.Len() != 4 {
		t.Fatal("a failed import changed the sessions")
	}
}

func TestMarkAndComment(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: st})
	if !u.detail.saveBtn.Disabled() {
		t.Fatal("mark controls enabled with nothing shown")
	}
	u.SelectID(2)
	u.detail.mark.SetSelected("red")
	test.Type(u.detail.comment, "check this 404")
	test.Tap(u.detail.saveBtn)
	s, err := st.Get(2)
	if err != nil || s.Mark != "red" || s.Comment != "check this 404" {
		t.Fatalf("stored mark %q comment %q err %v", s.Mark, s.Comment, err)
	}
	if r, _ := u.model.Get(2); r.Mark != "red" || !strings.HasPrefix(viewmodel.CellText(r, viewmodel.ColID), "★") {
		t.Fatalf("row not marked: %+v", r)
	}
	u.SelectID(1)
	u.SelectID(2)
	if u.detail.mark.Selected != "red" || u.detail.comment.Text != "check this 404" {
		t.Fatal("mark not shown again")
	}
}
