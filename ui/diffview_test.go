package ui

import (
	"fmt"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/diff"
	"inspector/engine/session"
	"inspector/store"
)

var diffT0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func diffSession(id session.ID, url string, status int, respH http.Header, body string, ms int) *session.Session {
	return &session.Session{ID: id, Started: diffT0,
		Request:  session.Request{Method: "GET", URL: url, Header: http.Header{"Accept": {"application/json"}, "User-Agent": {"app/1." + fmt.Sprint(id)}}},
		Response: &session.Response{Status: status, Header: respH, Body: session.Body{Data: []byte(body), Size: int64(len(body))}},
		Timings:  session.Timings{RequestHeaders: diffT0, ResponseDone: diffT0.Add(time.Duration(ms) * time.Millisecond)}}
}

func exchangePair() (*session.Session, *session.Session) {
	a := diffSession(11, "https://shop.example.com/api/cart?user=42", 200,
		http.Header{"Content-Type": {"application/json"}, "Date": {"Mon, 30 Nov 2026 09:00:00 GMT"}, "X-Request-Id": {"a1b2"}, "Cache-Control": {"no-store"}},
		`{"timestamp":"2026-11-30T09:00:00Z","items":[{"sku":"A-1","qty":1,"price":10.5},{"sku":"B-2","qty":2,"price":4}],"total":18.5,"coupon":null}`, 40)
	b := diffSession(27, "https://shop.example.com/api/cart?user=42", 200,
		http.Header{"Content-Type": {"application/json"}, "Date": {"Tue, 01 Dec 2026 09:00:00 GMT"}, "X-Request-Id": {"c3d4"}, "Cache-Control": {"max-age=30"}, "X-Cache": {"HIT"}},
		`{"items":[{"qty":1,"sku":"A-1","price":12},{"sku":"B-2","qty":2,"price":4},{"sku":"C-3","qty":1,"price":3}],"timestamp":"2026-12-01T09:00:00Z","total":23,"coupon":"WINTER"}`, 55)
	return a, b
}

// cellTexts are the texts of every canvas.Text in the rendered window, with their colour.
func cellTexts(w fyne.Window) map[string]canvas.Text {
	out := map[string]canvas.Text{}
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *canvas.Text:
			if x.Text != "" {
				out[x.Text] = *x
			}
		case *fyne.Container:
			for _, c := range x.Objects {
				walk(c)
			}
		case fyne.Widget:
			for _, c := range test.WidgetRenderer(x).Objects() {
				walk(c)
			}
		}
	}
	walk(w.Content())
	return out
}

func TestExchangeDiffWindow(t *testing.T) {
	app := test.NewTempApp(t)
	app.Settings().SetTheme(theme.LightTheme())
	sa, sb := exchangePair()
	w, v := NewExchangeDiffWindow(app, sa, sb, diff.DefaultIgnore(), "")
	defer w.Close()
	w.Resize(fyne.NewSize(1100, 1000))
	w.Show()
	if !strings.Contains(v.Summary.Text, "#11 vs #27") || !strings.Contains(v.Summary.Text, "ignored") {
		t.Fatalf("summary %q", v.Summary.Text)
	}
	texts := cellTexts(w)
	for s, op := range map[string]diff.Op{
		"Cache-Control: no-store":               diff.OpChanged,
		"Cache-Control: max-age=30":             diff.OpChanged,
		"X-Cache: HIT":                          diff.OpAdded,
		"Date: Mon, 30 Nov 2026 09:00:00 GMT":   diff.OpIgnored,
		"$.items[0].price: 12":                  diff.OpChanged,
		"Accept: application/json":              diff.OpEqual,
		"$.timestamp: \"2026-12-01T09:00:00Z\"": diff.OpIgnored,
	} {
		tx, ok := texts[s]
		if !ok {
			var all []string
			for k := range texts {
				all = append(all, k)
			}
			t.Errorf("%q not drawn; drawn: %q", s, all)
			continue
		}
		if tx.Color != opColor(op) {
			t.Errorf("%q drawn in %v, want the %s colour %v", s, tx.Color, op, opColor(op))
		}
	}
	// an equal pair says so
	w2, v2 := NewExchangeDiffWindow(app, sa, sa, nil, "")
	defer w2.Close()
	if !strings.Contains(v2.Summary.Text, "equal") {
		t.Errorf("equal summary %q", v2.Summary.Text)
	}
}

func recordingPair() (*diff.Recording, map[session.ID]*session.Session) {
	js := http.Header{"Content-Type": {"application/json"}}
	var a, b []*session.Session
	all := map[session.ID]*session.Session{}
	add := func(list *[]*session.Session, s *session.Session) {
		*list = append(*list, s)
		all[s.ID] = s
	}
	add(&a, diffSession(1, "https://shop.example.com/api/login", 200, js, `{"token":"x","user":{"id":1}}`, 80))
	add(&a, diffSession(2, "https://shop.example.com/api/cart?user=42", 200, js, `{"items":[],"total":0}`, 40))
	add(&a, diffSession(3, "https://shop.example.com/api/recommendations", 200, js, `{"list":[]}`, 60))
	add(&a, diffSession(4, "https://cdn.example.com/app.js", 200, http.Header{"Content-Type": {"text/javascript"}}, "x()", 20))
	add(&a, diffSession(5, "https://shop.example.com/api/orders/981", 200, js, `{"id":981,"state":"open"}`, 50))
	add(&b, diffSession(101, "https://shop.example.com/api/login", 200, js, `{"token":"y","user":{"id":1}}`, 85))
	add(&b, diffSession(102, "https://cdn.example.com/app.js", 200, http.Header{"Content-Type": {"text/javascript"}}, "x()", 22))
	add(&b, diffSession(103, "https://shop.example.com/api/cart?user=42", 500, js, `{"error":"db"}`, 45))
	add(&b, diffSession(104, "https://shop.example.com/api/orders/1207", 200, js, `{"id":1207,"state":"open"}`, 900))
	add(&b, diffSession(105, "https://shop.example.com/api/feature-flags", 200, js, `{}`, 30))
	return diff.Recordings("monday.har", diff.Calls(a), "tuesday.har", diff.Calls(b), diff.Options{Ignore: diff.DefaultIgnore()}), all
}

func TestRecordingDiffWindow(t *testing.T) {
	app := test.NewTempApp(t)
	app.Settings().SetTheme(theme.LightTheme())
	r, all := recordingPair()
	if r.SummaryLine() != "1 call missing, 1 new, 1 changed, 1 slower" {
		t.Fatalf("fixture: %s", r.SummaryLine())
	}
	load := func(id session.ID) (*session.Session, error) {
		if s, ok := all[id]; ok {
			return s, nil
		}
		return nil, fmt.Errorf("no session %d", id)
	}
	w, v := NewRecordingDiffWindow(app, r, load, diff.DefaultIgnore(), "")
	defer w.Close()
	w.Resize(fyne.NewSize(1200, 700))
	w.Show()
	if v.Summary.Text != r.SummaryLine() || v.List.Length() != len(r.Rows) {
		t.Fatalf("summary %q, %d rows", v.Summary.Text, v.List.Length())
	}
	texts := cellTexts(w)
	for prefix, op := range map[string]diff.Op{"A#3  200  60ms  GET https://shop.example.com/api/recommendations": diff.OpRemoved,
		"B#5  200  30ms  GET https://shop.example.com/api/feature-flags": diff.OpAdded, "B#3  500  45ms  GET": diff.OpChanged,
		"slower B#4  200  900ms  GET": diff.OpChanged} {
		found := false
		for s, tx := range texts {
			if strings.HasPrefix(s, prefix) {
				found = true
				if tx.Color != opColor(op) {
					t.Errorf("%q in %v, want %v", s, tx.Color, opColor(op))
				}
			}
		}
		if !found {
			t.Errorf("no row %q", prefix)
		}
	}
	// selecting the changed pair shows its changes and opens the exchange diff
	opened := 0
	inner := v.OnOpen
	v.OnOpen = func(p diff.Pair) { opened++; inner(p) }
	for i, row := range v.Rows {
		if row.Kind == "changed" {
			v.List.Select(i)
		}
	}
	if opened != 1 || !strings.Contains(v.Detail.Text, "status 200 → 500") {
		t.Fatalf("opened %d, detail %q", opened, v.Detail.Text)
	}
	found := false
	for _, win := range app.Driver().AllWindows() {
		if win.Title() == "Compare #2 with #103" {
			found = true
			win.Close()
		}
	}
	if !found {
		t.Error("the exchange diff window did not open")
	}
	// a missing call only describes itself
	for i, row := range v.Rows {
		if row.Kind == "missing" {
			v.List.Select(i)
		}
	}
	if opened != 1 || !strings.HasPrefix(v.Detail.Text, "Only in A") {
		t.Errorf("missing row: opened %d, detail %q", opened, v.Detail.Text)
	}
}

func TestCopyAsMenu(t *testing.T) {
	app := test.NewTempApp(t)
	req := &session.Request{Method: "POST", URL: "https://example.com/x", Header: http.Header{"A": {"b"}}, Body: session.Body{Data: []byte("it's")}}
	it := CopyAsMenuItem(app, func() []*session.Request { return []*session.Request{req} })
	if len(it.ChildMenu.Items) != 13 {
		t.Fatalf("%d languages", len(it.ChildMenu.Items))
	}
	for _, c := range it.ChildMenu.Items {
		if c.Label == "Python (requests)" {
			c.Action()
		}
	}
	if got := app.Clipboard().Content(); !strings.Contains(got, "requests.Request('POST', 'https://example.com/x'") || !strings.Contains(got, `'it\'s'`) {
		t.Errorf("clipboard %q", got)
	}
}

// TestRenderDiffScreenshots renders both compare windows for the README (run with
// INSPECTOR_SCREENSHOTS=DIR; docs/screenshots/take.sh does).
func TestRenderDiffScreenshots(t *testing.T) {
	out := os.Getenv("INSPECTOR_SCREENSHOTS")
	if out == "" {
		t.Skip("set INSPECTOR_SCREENSHOTS to the output directory")
	}
	app := test.NewTempApp(t)
	app.Settings().SetTheme(theme.LightTheme())
	shot := func(w fyne.Window, name string) {
		f, err := os.Create(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := png.Encode(f, w.Canvas().Capture()); err != nil {
			t.Fatal(err)
		}
	}
	sa, sb := exchangePair()
	w, ev := NewExchangeDiffWindow(app, sa, sb, diff.DefaultIgnore(), t.TempDir())
	w.Resize(fyne.NewSize(1100, 960))
	w.Show()
	for i, r := range ev.Rows {
		if r.Field == "$.total" {
			ev.List.Select(i)
		}
	}
	shot(w, "diff-exchange.png")
	r, _ := recordingPair()
	w2, v := NewRecordingDiffWindow(app, r, nil, nil, "")
	w2.Resize(fyne.NewSize(1200, 520))
	w2.Show()
	for i, row := range v.Rows {
		if row.Kind == "changed" {
			v.List.Select(i)
		}
	}
	shot(w2, "diff-recording.png")
}

// TestOpenDiffsFromStore opens both compare windows from a real store file.
func TestOpenDiffsFromStore(t *testing.T) {
	app := test.NewTempApp(t)
	st, err := store.Open(filepath.Join(t.TempDir(), "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sa, sb := exchangePair()
	sa2, sb2 := exchangePair()
	ids, err := st.Import([]*session.Session{sa, sb, sa2, sb2})
	if err != nil {
		t.Fatal(err)
	}
	w, err := OpenExchangeDiff(app, st.Get, ids[0], ids[1], diff.DefaultIgnore(), "")
	if err != nil || w.Title() != fmt.Sprintf("Compare #%d with #%d", ids[0], ids[1]) {
		t.Fatalf("exchange diff: %v %v", w, err)
	}
	w.Close()
	if _, err := OpenExchangeDiff(app, st.Get, ids[0], 999, nil, ""); err == nil {
		t.Error("a missing session opens")
	}
	rw, err := OpenRecordingDiff(app, "ids:1-2", "ids:3-4", st, st.Get, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, err := OpenRecordingDiff(app, "ids:2-1", "ids:3-4", st, st.Get, nil, ""); err == nil {
		t.Error("a bad spec opens")
	}
	before := len(app.Driver().AllWindows())
	// the pair of the two identical calls opens its exchange diff from the store
	var list *widget.List
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *widget.List:
			list = x
		case *fyne.Container:
			for _, c := range x.Objects {
				walk(c)
			}
		}
	}
	walk(rw.Content())
	if list == nil || list.Length() != 2 {
		t.Fatalf("recording rows: %v", list)
	}
	list.Select(0)
	if len(app.Driver().AllWindows()) != before+1 {
		t.Errorf("selecting a pair opened %d windows", len(app.Driver().AllWindows())-before)
	}
}

// TestExchangeDiffIgnoreButton: selecting a changed field and pressing Ignore greys it,
// and the list is saved to the data directory.
func TestExchangeDiffIgnoreButton(t *testing.T) {
	app := test.NewTempApp(t)
	dir := t.TempDir()
	ig, err := diff.LoadIgnore(dir)
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := exchangePair()
	w, v := NewExchangeDiffWindow(app, sa, sb, ig, dir)
	defer w.Close()
	w.Show()
	if v.Ignore == nil || !v.Ignore.Disabled() {
		t.Fatal("no disabled Ignore button")
	}
	before := v.Summary.Text
	for i, r := range v.Rows {
		if r.Kind == "json" && r.Field == "$.items[0].price" {
			v.List.Select(i)
		}
	}
	if v.Ignore.Disabled() {
		t.Fatal("Ignore stays disabled on a JSON member")
	}
	test.Tap(v.Ignore)
	if v.Summary.Text == before || !strings.Contains(v.Status.Text, "$.items[0].price is ignored for shop.example.com") {
		t.Fatalf("summary %q → %q, status %q", before, v.Summary.Text, v.Status.Text)
	}
	saved, err := diff.LoadIgnore(dir)
	if err != nil || len(saved.Hosts["shop.example.com"].JSON) != 1 || saved.Hosts["shop.example.com"].JSON[0] != "$.items[*].price" {
		t.Fatalf("saved %+v %v", saved.Hosts, err)
	}
	for _, r := range v.Rows {
		if r.Field == "$.items[0].price" && r.Op != diff.OpIgnored {
			t.Errorf("%s still %s", r.Field, r.Op)
		}
	}
	// a section row disables the button again
	v.List.Select(0)
	if !v.Ignore.Disabled() {
		t.Error("Ignore enabled on a section row")
	}
	// a data directory that cannot be written: the error is shown, nothing is lost
	ro := filepath.Join(t.TempDir(), "missing", "dir")
	w2, v2 := NewExchangeDiffWindow(app, sa, sb, ig, ro)
	defer w2.Close()
	for i, r := range v2.Rows {
		if r.Kind == "header" && r.Field == "Cache-Control" {
			v2.List.Select(i)
		}
	}
	test.Tap(v2.Ignore)
	if !strings.HasPrefix(v2.Status.Text, "Not saved:") {
		t.Errorf("status %q", v2.Status.Text)
	}
}
