package ui

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	et "inspector/engine/enginetest"
	"inspector/engine/hooks/rules"
	"inspector/engine/session"
	"inspector/store"
	"inspector/ui/viewmodel"
)

// walkDrawn calls f on every visible object under o, through widget renderers.
func walkDrawn(o fyne.CanvasObject, f func(fyne.CanvasObject)) {
	if o == nil || !o.Visible() {
		return
	}
	f(o)
	switch o := o.(type) {
	case *fyne.Container:
		for _, c := range o.Objects {
			walkDrawn(c, f)
		}
	case fyne.Widget:
		for _, c := range test.WidgetRenderer(o).Objects() {
			walkDrawn(c, f)
		}
	}
}

// rowsOnScreen returns the list's row widgets that are drawn, by display index.
func rowsOnScreen(u *UI) map[int]*listRow {
	out := map[int]*listRow{}
	walkDrawn(u.list.list, func(o fyne.CanvasObject) {
		if r, ok := o.(*listRow); ok && r.row >= 0 {
			out[r.row] = r
		}
	})
	return out
}

// storedHAR writes the sample store's sessions to a HAR file and returns the UI and path.
func storedHAR(t *testing.T, name string) (*UI, *store.Store, string) {
	st := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: st, HAR: StoreHAR("test")})
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := u.ExportHAR(f, ScopeAll); err != nil {
		t.Fatal(err)
	}
	return u, st, path
}

// clickRow taps a drawn row with modifiers held, as the desktop driver delivers it
// (MouseDown with the modifiers, then Tapped).
func clickRow(t *testing.T, u *UI, w fyne.Window, i int, mods fyne.KeyModifier) {
	t.Helper()
	w.Canvas().Refresh(w.Content())
	r := rowsOnScreen(u)[i]
	if r == nil {
		t.Fatalf("row %d is not on screen", i)
	}
	r.MouseDown(&desktop.MouseEvent{Modifier: mods})
	test.Tap(r)
}

func menuItem(t *testing.T, m *fyne.Menu, prefix string) *fyne.MenuItem {
	t.Helper()
	for _, it := range m.Items {
		if strings.HasPrefix(it.Label, prefix) {
			return it
		}
	}
	t.Fatalf("no menu item %q in %v", prefix, labels(m))
	return nil
}

func labels(m *fyne.Menu) []string {
	var out []string
	for _, it := range m.Items {
		out = append(out, it.Label)
	}
	return out
}

func TestMultiSelectContextMenuAndReplay(t *testing.T) {
	r := newDebugRig(t)
	u := r.u
	w := u.win
	sub := r.p.Subscribe(64)
	defer sub.Close()
	var orig []*session.Session
	for i := 0; i < 3; i++ {
		resp, err := r.p.Client(t, et.ClientH1).Get(fmt.Sprintf("%s/echo?n=%d", r.o.URL, i))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		s := r.p.Next(t)
		st := u.deps.Store.(*store.Store)
		st.Put(s)
		if err := st.Flush(); err != nil {
			t.Fatal(err)
		}
		orig = append(orig, s)
		u.remember(s)
		u.changed(u.model.Upsert([]session.Summary{s.Summarize()}))
	}
	ids := []session.ID{orig[0].ID, orig[1].ID, orig[2].ID}
	// Click, Shift-click, then Ctrl-click off and on again.
	clickRow(t, u, w, 0, 0)
	clickRow(t, u, w, 2, fyne.KeyModifierShift)
	if got := u.SelectedIDs(); !slices.Equal(got, ids) {
		t.Fatalf("shift-click selected %v, want %v", got, ids)
	}
	clickRow(t, u, w, 1, fyne.KeyModifierControl)
	if got := u.SelectedIDs(); !slices.Equal(got, []session.ID{ids[0], ids[2]}) {
		t.Fatalf("ctrl-click left %v", got)
	}
	clickRow(t, u, w, 1, fyne.KeyModifierControl)
	w.Canvas().Refresh(w.Content())
	for i, row := range rowsOnScreen(u) {
		if i < 3 && !row.Selected() {
			t.Fatalf("row %d is not highlighted", i)
		}
	}
	if !strings.Contains(u.status.Text(), "3 selected") {
		t.Errorf("status = %q", u.status.Text())
	}

	// Right-click opens the context menu for the whole selection.
	row := rowsOnScreen(u)[1]
	row.TappedSecondary(&fyne.PointEvent{AbsolutePosition: fyne.NewPos(100, 100)})
	pop := w.Canvas().Overlays().Top()
	if pop == nil {
		t.Fatal("no context menu")
	}
	pop.Hide()
	m := u.contextMenu()
	for _, l := range []string{"Copy URL", "Copy as curl", "Copy raw", "Replay 3 sessions", "Edit and resend", "Break on this host",
		"Break on this URL", "Map local", "Map remote", "Mark colour", "Compare with", "Delete 3 sessions"} {
		menuItem(t, m, l)
	}
	if it := menuItem(t, m, "Compare with"); !it.Disabled {
		t.Error("Compare with… is enabled before the hook is wired")
	}
	if it := menuItem(t, m, "Edit and resend"); !it.Disabled {
		t.Error("Edit and resend is enabled for three sessions")
	}

	menuItem(t, m, "Copy URL").Action()
	if got := u.app.Clipboard().Content(); strings.Count(got, "\n") != 2 || !strings.Contains(got, "/echo?n=2") {
		t.Errorf("copied URLs = %q", got)
	}
	if u.status.Note() != "Copied 3 URLs" {
		t.Errorf("copy feedback = %q", u.status.Note())
	}

	// Replay the selection: three requests, each linked to its original.
	menuItem(t, m, "Replay 3 sessions").Action()
	rp := u.debug.replayer
	test.Tap(rp.Start)
	r.run(func() bool { return strings.Contains(rp.Result.Text, "sent") })
	if !strings.HasPrefix(rp.Result.Text, "3 sent, 0 failed") {
		t.Errorf("replay: %q", rp.Result.Text)
	}
	got := map[session.ID]bool{}
	for i := 0; i < 3; i++ {
		got[r.p.Next(t).ReplayOf] = true
	}
	if len(got) != 3 || !got[ids[0]] || !got[ids[1]] || !got[ids[2]] {
		t.Errorf("replays link to %v, want %v", got, ids)
	}

	// The compare hook gets the two selected sessions.
	var pair [2]session.ID
	u.SetCompareHook(func(a, b *session.Session) { pair = [2]session.ID{a.ID, b.ID} })
	clickRow(t, u, w, 0, 0)
	clickRow(t, u, w, 1, fyne.KeyModifierShift)
	m = u.contextMenu()
	if it := menuItem(t, m, "Compare with"); it.Disabled {
		t.Fatal("Compare with… stays disabled after SetCompareHook")
	} else {
		it.Action()
	}
	if pair != [2]session.ID{ids[0], ids[1]} {
		t.Errorf("compared %v", pair)
	}

	// Single-session items: break on URL, map remote, map local, mark.
	clickRow(t, u, w, 2, 0)
	menuItem(t, u.contextMenu(), "Break on this URL").Action()
	if bps := r.m.Settings().Breakpoints; len(bps) != 1 || !strings.HasPrefix(bps[0].Filter, "url:") || strings.Contains(bps[0].Filter, "?") {
		t.Errorf("break on URL: %+v", bps)
	}
	if err := u.MapRemoteFromSession(orig[2], "ftp://nope"); err == nil {
		t.Error("a non-http map remote target was accepted")
	}
	if err := u.MapRemoteFromSession(orig[2], "https://staging.example.com"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "local", "echo.txt")
	if err := u.MapLocalFromSession(orig[2], file); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || len(b) == 0 {
		t.Errorf("map local file: %q %v", b, err)
	}
	rs := r.dbg.Rules()
	if len(rs) != 2 || rs[0].Kind != rules.MapRemote || rs[1].Kind != rules.MapLocal || rs[1].File != file {
		t.Errorf("rules = %+v", rs)
	}
	u.MarkSelection("green")
	if s, _ := u.session(ids[2]); s.Mark != "green" {
		t.Errorf("mark = %q", s.Mark)
	}
	w.Canvas().Refresh(w.Content())
}

func TestKeyboardSelectsInTheList(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, w := newTestUI(t, Deps{Store: st})
	c := w.Canvas()
	c.Focus(u.list.box)
	key := func(k fyne.KeyName) { u.list.box.TypedKey(&fyne.KeyEvent{Name: k}) }
	key(fyne.KeyDown)
	if got := u.SelectedIDs(); !slices.Equal(got, []session.ID{1}) {
		t.Fatalf("Down selected %v", got)
	}
	key(fyne.KeyDown)
	u.list.box.KeyDown(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	key(fyne.KeyDown)
	u.list.box.KeyUp(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	if got := u.SelectedIDs(); !slices.Equal(got, []session.ID{2, 3}) {
		t.Fatalf("Shift+Down selected %v", got)
	}
	key(fyne.KeyUp)
	if got := u.SelectedIDs(); !slices.Equal(got, []session.ID{2}) || u.detail.shown != 2 {
		t.Fatalf("Up selected %v, detail shows %d", got, u.detail.shown)
	}
	u.list.box.TypedShortcut(&fyne.ShortcutSelectAll{})
	if u.model.SelectionLen() != 4 {
		t.Fatalf("Ctrl+A selected %d", u.model.SelectionLen())
	}
	// Delete asks first.
	key(fyne.KeyDelete)
	if c.Overlays().Top() == nil {
		t.Fatal("Delete did not ask for confirmation")
	}
	c.Overlays().Top().Hide()
	if n, _ := st.Count(nil); n != 4 {
		t.Fatalf("Delete deleted before confirmation: %d left", n)
	}
	// Esc clears the filter.
	u.filter.entry.SetText("status:404")
	c.Focus(u.list.box)
	key(fyne.KeyEscape)
	if u.filter.entry.Text != "" || u.model.Len() != 4 {
		t.Fatalf("Esc left %q, %d rows", u.filter.entry.Text, u.model.Len())
	}
	// Esc in the filter entry clears it too.
	test.Type(u.filter.entry, "status:500")
	u.filter.entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEscape})
	if u.filter.entry.Text != "" || u.model.Len() != 4 {
		t.Fatalf("Esc in the entry left %q, %d rows", u.filter.entry.Text, u.model.Len())
	}
	// Enter moves the focus to the response body.
	c.Focus(u.list.box)
	key(fyne.KeyReturn)
	if c.Focused() != u.detail.resp.body.text.list {
		t.Fatalf("Enter focused %T", c.Focused())
	}
	// The menu key opens the context menu.
	c.Focus(u.list.box)
	key(desktop.KeyMenu)
	if c.Overlays().Top() == nil {
		t.Fatal("the menu key opened no menu")
	}
}

func TestHighlightFollowsTheIDAcrossInserts(t *testing.T) {
	u, w := newTestUI(t, Deps{})
	rows := make([]session.Summary, 0, 10)
	for i := 1; i <= 10; i++ {
		rows = append(rows, session.Summary{ID: session.ID(i + 200), Method: "GET", Host: "h", Path: fmt.Sprint("/", i), Status: 200 + i})
	}
	u.changed(u.model.Replace(rows))
	u.list.SortBy(viewmodel.ColStatus)
	u.setFollow(false)
	u.SelectID(202)
	w.Canvas().Refresh(w.Content())
	// A row sorting above the selected one arrives.
	u.ApplyBatch(viewmodel.Batch{Rows: []session.Summary{{ID: 300, Method: "GET", Host: "h", Path: "/new", Status: 100}}})
	w.Canvas().Refresh(w.Content())
	for i, r := range rowsOnScreen(u) {
		if r.Selected() != (r.id == 202) {
			t.Fatalf("row %d (#%d) highlighted=%v; the selection is #202", i, r.id, r.Selected())
		}
	}
	if u.detail.shown != 202 {
		t.Fatalf("detail shows #%d", u.detail.shown)
	}
	if r := rowsOnScreen(u)[u.model.IndexOf(202)]; r == nil || !r.Selected() || r.id != 202 {
		t.Fatalf("the row of #202 is not highlighted")
	}
}

func TestListNeverScrolledPastTheEndAfterAShrink(t *testing.T) {
	u, w := newTestUI(t, Deps{})
	rows := manyRows(500)
	for i := range rows[:5] {
		rows[i].Host, rows[i].URL = "rare.example", "https://rare.example/p"
	}
	u.changed(u.model.Replace(rows))
	w.Canvas().Refresh(w.Content())
	u.list.list.ScrollToBottom()
	if u.list.list.GetScrollOffset() < 1000 {
		t.Fatalf("not scrolled: offset %v", u.list.list.GetScrollOffset())
	}
	u.filter.quick.SetText("://rare.example") // as a host click does
	if u.model.Len() != 5 {
		t.Fatalf("%d rows after the filter", u.model.Len())
	}
	w.Canvas().Refresh(w.Content())
	if off := u.list.list.GetScrollOffset(); off != 0 {
		t.Fatalf("the list stays scrolled to %v past its 5 rows", off)
	}
	if got := len(rowsOnScreen(u)); got < 5 {
		t.Fatalf("%d rows drawn after the shrink, want 5", got)
	}
	if !strings.Contains(u.status.Text(), "5 of 500 shown") {
		t.Fatalf("status = %q", u.status.Text())
	}
}

func TestSideBySideDetailStacksWhenNarrow(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, w := newTestUI(t, Deps{Store: st})
	w.Resize(fyne.NewSize(1280, 820))
	u.SelectID(2)
	w.Canvas().Refresh(w.Content())
	if !u.detail.split.Horizontal {
		t.Fatal("request and response are not side by side at 1280 wide")
	}
	if u.detail.split.Leading != u.detail.req.box || u.detail.split.Trailing != u.detail.resp.box {
		t.Fatal("the split does not hold request and response")
	}
	sum := u.detail.title.Text
	for _, want := range []string{"#2", "GET https://b.example/missing", "404 Not Found", "client h2 → upstream h1", "24ms"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary %q lacks %q", sum, want)
		}
	}
	if !strings.Contains(u.detail.req.headers.text, "X-Test-Id: req-") || !strings.Contains(u.detail.resp.headers.text, "X-Served-By") {
		t.Error("headers tables not filled")
	}
	// Copy a header value, then all.
	u.detail.resp.headers.table.Select(widget.TableCellID{Row: 0, Col: 1})
	if got := u.app.Clipboard().Content(); got != u.detail.resp.headers.rows[0][1] || !strings.HasPrefix(u.status.Note(), "Copied ") {
		t.Errorf("copy value: %q, note %q", got, u.status.Note())
	}
	w.Resize(fyne.NewSize(800, 700))
	w.Canvas().Refresh(w.Content())
	if u.detail.split.Horizontal {
		t.Fatal("request and response still side by side at 800 wide")
	}
}

func TestBodyModeRadioCannotBeEmptied(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: st})
	u.SelectID(1)
	mode := u.detail.resp.body.mode
	if mode.Selected != "JSON" {
		t.Fatalf("mode = %q", mode.Selected)
	}
	// Tap the selected option again, as a user does to "unselect" it.
	for _, o := range test.WidgetRenderer(mode).Objects() {
		if tp, ok := o.(fyne.Tappable); ok {
			test.Tap(tp)
			break
		}
	}
	if mode.Selected == "" {
		t.Fatal("the body mode radio was left with nothing chosen")
	}
}

func TestPresetsLabelFollowsHandEdits(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: st})
	u.filter.presets.SetSelected("4xx/5xx")
	test.Type(u.filter.entry, " -host:c.example")
	if u.filter.presets.Selected != "" {
		t.Fatalf("Presets still says %q over a hand-edited %q", u.filter.presets.Selected, u.filter.entry.Text)
	}
	u.filter.entry.SetText("type:json")
	if u.filter.presets.Selected != "JSON" {
		t.Fatalf("Presets = %q for type:json", u.filter.presets.Selected)
	}
}

func TestStatusSaysNOfMUnderABodyFilter(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: st})
	test.Type(u.filter.entry, "body:users")
	if u.model.Len() != 1 {
		t.Fatalf("%d rows", u.model.Len())
	}
	if !strings.Contains(u.status.Text(), "1 of 4 shown") {
		t.Fatalf("status = %q", u.status.Text())
	}
}

func TestSortIndicatorIsAnIcon(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, w := newTestUI(t, Deps{Store: st})
	u.list.SortBy(viewmodel.ColStatus)
	w.Canvas().Refresh(w.Content())
	hr := test.WidgetRenderer(u.list.header).(*headerRenderer)
	for _, tx := range hr.titles {
		if strings.ContainsAny(tx.Text, "▲▼") {
			t.Fatalf("header text %q uses a glyph", tx.Text)
		}
	}
	if !hr.icon.Visible() || hr.icon.Resource != theme.MenuDropUpIcon() {
		t.Fatalf("sort icon %v visible=%v", hr.icon.Resource, hr.icon.Visible())
	}
	u.list.SortBy(viewmodel.ColStatus)
	if hr.icon.Resource != theme.MenuDropDownIcon() {
		t.Fatal("descending sort does not show the down icon")
	}
	// A click on a header sorts by its column; a right-click offers the columns.
	ws := u.list.widths(u.list.header.Size().Width)
	test.TapAt(u.list.header, fyne.NewPos(ws[0]/2, 5))
	if c, desc := u.model.Sort(); c != viewmodel.ColID || desc {
		t.Fatalf("header click sorted by %v desc=%v", c, desc)
	}
	u.list.header.TappedSecondary(&fyne.PointEvent{AbsolutePosition: fyne.NewPos(300, 60)})
	if w.Canvas().Overlays().Top() == nil {
		t.Fatal("no columns popup on a header right-click")
	}
}

func TestPreferencesPerDataDirectory(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	pa, err := OpenFilePrefs(filepath.Join(dirA, "window.json"))
	if err != nil {
		t.Fatal(err)
	}
	pb, err := OpenFilePrefs(filepath.Join(dirB, "window.json"))
	if err != nil {
		t.Fatal(err)
	}
	a := test.NewTempApp(t)
	ua := New(a, test.NewTempWindow(t, nil), Deps{Prefs: pa})
	ub := New(a, test.NewTempWindow(t, nil), Deps{Prefs: pb})
	ua.SetDensity(Comfortable)
	ua.list.SetColumns([]viewmodel.Column{viewmodel.ColID, viewmodel.ColPath})
	shown := 0
	for _, c := range viewmodel.Columns {
		if !c.Hidden {
			shown++
		}
	}
	if len(ub.list.cols) != shown || pb.String(prefDensity) != "" { // all but the hidden ones
		t.Fatal("the second instance's preferences changed with the first's")
	}
	// Reopened, A has its choices; the app's shared preferences were not touched.
	pa2, err := OpenFilePrefs(filepath.Join(dirA, "window.json"))
	if err != nil {
		t.Fatal(err)
	}
	if pa2.String(prefDensity) != "comfortable" || pa2.String(prefColumns) != "id,path" || a.Preferences().String(prefColumns) != "" {
		t.Fatalf("reopened: density %q columns %q, app %q", pa2.String(prefDensity), pa2.String(prefColumns), a.Preferences().String(prefColumns))
	}
	// A damaged file is set aside, not lost, and the error says so.
	bad := filepath.Join(dirB, "window.json")
	os.WriteFile(bad, []byte("{trunc"), 0o644)
	p, err := OpenFilePrefs(bad)
	if err == nil || !strings.Contains(err.Error(), "window.json.bad") || p.String(prefDensity) != "" {
		t.Fatalf("bad file: %v", err)
	}
	if b, _ := os.ReadFile(bad + ".bad"); string(b) != "{trunc" {
		t.Fatalf("the bad file was not kept: %q", b)
	}
	u := New(a, test.NewTempWindow(t, nil), Deps{Prefs: p, PrefsErr: err})
	if !strings.Contains(u.status.Text(), "defaults used") {
		t.Fatalf("status = %q", u.status.Text())
	}
}

// testCAPEM makes a self-signed CA certificate.
func testCAPEM(t *testing.T) ([]byte, []byte) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Inspector test CA"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), der
}

func TestStartPageWhenEmpty(t *testing.T) {
	pemBytes, der := testCAPEM(t)
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	u, _ := newTestUI(t, Deps{Store: openStore(t), Engine: p.Engine, CA: func() []byte { return pemBytes }})
	if !u.start.Visible() || u.list.object().Visible() {
		t.Fatal("the start page is not shown over an empty capture")
	}
	if u.start.addr.Text != p.Engine.Addr() {
		t.Fatalf("address %q, want %q", u.start.addr.Text, p.Engine.Addr())
	}
	sum := sha256.Sum256(der)
	var hexs []string
	for _, b := range sum {
		hexs = append(hexs, fmt.Sprintf("%02X", b))
	}
	if want := "SHA-256 " + strings.Join(hexs, ":"); u.start.fp.Text != want {
		t.Fatalf("fingerprint %q, want %q", u.start.fp.Text, want)
	}
	for _, want := range []string{"curl -x http://" + p.Engine.Addr(), "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "keytool", "http://inspector.cert/"} {
		if !strings.Contains(u.start.steps.Text, want) {
			t.Errorf("steps lack %q", want)
		}
	}
	if !u.start.trust.Disabled() || !strings.Contains(u.start.caState.Text, "not available") {
		t.Errorf("without OS integration: trust enabled=%v, %q", !u.start.trust.Disabled(), u.start.caState.Text)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := u.SaveCAFile(path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, pemBytes) {
		t.Fatal("saved CA differs")
	}
	// Copy the address: visible feedback.
	u.copyText("proxy address", u.start.proxyAddr())
	if u.app.Clipboard().Content() != p.Engine.Addr() || u.status.Note() != "Copied proxy address" {
		t.Fatalf("copy: %q %q", u.app.Clipboard().Content(), u.status.Note())
	}
	// The first session replaces the start page by the list.
	u.ApplyBatch(viewmodel.Batch{Rows: []session.Summary{{ID: 1, Method: "GET", Host: "h", InFlight: true}}})
	if u.start.Visible() || !u.list.object().Visible() {
		t.Fatal("the start page stays over a session")
	}
	if _, err := CAFingerprint([]byte("not pem")); err == nil {
		t.Fatal("a non-PEM CA gave a fingerprint")
	}
}

func TestFindInBody(t *testing.T) {
	body := strings.Repeat(`{"user":"x","pad":"`+strings.Repeat("y", 300)+`"},`, 50)
	s := mkSession(1, "a.example", "/big", 200, "application/json", "["+strings.TrimSuffix(body, ",")+"]")
	u, _ := newTestUI(t, Deps{})
	u.ShowSessions([]*session.Session{s})
	u.SelectID(1)
	b := u.detail.resp.body
	b.openFind()
	test.Type(b.findEntry, "USER")
	if b.findCount.Text != "50 matches" {
		t.Fatalf("count = %q", b.findCount.Text)
	}
	b.FindNext(1)
	b.FindNext(-1)
	b.FindNext(-1)
	if !strings.HasPrefix(b.findCount.Text, "50/50 · ") {
		t.Fatalf("after next, prev, prev: %q", b.findCount.Text)
	}
	b.mode.SetSelected("Hex")
	if n := b.Find("7b 22"); n != 50 {
		t.Fatalf("hex find = %d", n)
	}
}

func TestOpenHARInAViewerWindow(t *testing.T) {
	u, st, path := storedHAR(t, "x.har")
	if err := u.OpenHARViewer(path); err != nil {
		t.Fatal(err)
	}
	if len(u.viewers) != 1 {
		t.Fatal("no viewer window")
	}
	v := u.viewers[0]
	if v.model.Len() != 4 || !v.deps.ReadOnly || u.model.Len() != 4 {
		t.Fatalf("viewer %d rows (read-only %v); live %d rows", v.model.Len(), v.deps.ReadOnly, u.model.Len())
	}
	if n, _ := st.Count(nil); n != 4 {
		t.Fatalf("the HAR was merged into the capture: %d stored", n)
	}
	os.WriteFile(path, []byte("{not json"), 0o644)
	if err := u.OpenHARViewer(path); err == nil || !strings.Contains(err.Error(), "not a readable HAR") {
		t.Fatalf("bad HAR: %v", err)
	}
}

// largeBodySession is a session with a response body of n bytes of kind ("json": one
// line of JSON; "bin": binary).
func largeBodySession(id session.ID, kind string, n int) *session.Session {
	var data []byte
	ct := "application/octet-stream"
	if kind == "json" {
		ct = "application/json"
		var b bytes.Buffer
		b.WriteString(`{"items":[`)
		for i := 0; b.Len() < n-40; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":%d,"name":"item_%d","ok":true}`, i, i)
		}
		b.WriteString(`]}`)
		data = b.Bytes()
	} else {
		data = make([]byte, n)
		for i := range data {
			data[i] = byte(i * 7)
		}
	}
	s := mkSession(id, "big.example", "/"+kind, 200, ct, "")
	s.Response.Body = session.Body{Data: data, Size: int64(len(data))}
	s.Response.Header = http.Header{"Content-Type": {ct}}
	return s
}

func TestLargeBodiesOpenOffTheUIGoroutine(t *testing.T) {
	posts := make(chan func(), 64)
	u, w := newTestUI(t, Deps{Post: func(f func()) { posts <- f }})
	u.detail.inline = false
	big := largeBodySession(1, "json", 3_000_000)
	bin := largeBodySession(2, "bin", 50_000_000)
	u.ShowSessions([]*session.Session{big, bin})
	w.Canvas().Refresh(w.Content())
	b := u.detail.resp.body
	u.SelectID(1)
	if !strings.HasPrefix(b.info.Text, "formatting") {
		t.Fatalf("info while formatting = %q", b.info.Text)
	}
	// A newer selection replaces the work in progress; only its result is installed.
	u.SelectID(2)
	for {
		(<-posts)()
		if v, ok := b.View(); ok && v.Name == "Hex" {
			break
		}
	}
	if got := b.text.src.Len(); got != 50_000_000/16 {
		t.Fatalf("hex rows = %d", got)
	}
	w.Canvas().Refresh(w.Content())
	if b.text.created > 400 {
		t.Fatalf("%d row objects for a 50 MB hex view", b.text.created)
	}
	u.SelectID(1)
	for {
		(<-posts)()
		if v, ok := b.View(); ok && v.Name == "JSON" {
			break
		}
	}
	if b.text.rows.Len() < 100_000 || !strings.Contains(b.text.Text(), `"name": "item_1"`) {
		t.Fatalf("pretty JSON: %d rows", b.text.rows.Len())
	}
	// Clicking through ten large bodies quickly formats at most the first, the one
	// running when the others came, and the last: never one job per click.
	var many []*session.Session
	for i := 0; i < 10; i++ {
		many = append(many, largeBodySession(session.ID(10+i), "json", 1_000_000))
	}
	u.ShowSessions(append([]*session.Session{big, bin}, many...)) // numbered 1…12
	start := b.jobs
	for i := range many {
		u.SelectID(session.ID(3 + i))
	}
	for b.working {
		(<-posts)()
	}
	if n := b.jobs - start; n > 2 {
		t.Fatalf("%d formatting jobs for 10 quick selections", n)
	}
	if !strings.Contains(b.text.Text(), `"id": 0`) || u.detail.shown != 12 {
		t.Fatalf("the last selection's body is not shown: shown %d, info %q, mode %q, text %.80q", u.detail.shown, b.info.Text, b.mode.Selected, b.text.Text())
	}
	u.SelectID(1)
	for {
		(<-posts)()
		if v, ok := b.View(); ok && v.Name == "JSON" && !b.working {
			break
		}
	}
	b.mode.SetSelected("Text") // the single 3 MB line, wrapped into bounded rows
	if n := b.text.rows.Len(); n < 3_000_000/400 {
		t.Fatalf("single line wrapped into %d rows", n)
	}
	for i := 0; i < b.text.rows.Len(); i += 997 {
		if len(b.text.rows.Line(i)) > 400 {
			t.Fatalf("row %d is %d bytes", i, len(b.text.rows.Line(i)))
		}
	}
}

func TestMainMenuToolbarTooltipsAndView(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, w := newTestUI(t, Deps{Store: st})
	var tops []string
	for _, m := range u.menus.main.Items {
		tops = append(tops, m.Label)
	}
	if strings.Join(tops, " ") != "File Edit View Capture Tools Help" {
		t.Fatalf("menus = %v", tops)
	}
	want := map[string][]string{
		"File":    {"Open HAR…", "Open store…", "Import HAR into this capture…", "Export HAR…", "Quit"},
		"Edit":    {"Copy URL", "Copy as curl", "Copy raw", "Select all sessions", "Delete", "Clear all…"},
		"View":    {"Columns", "Density", "Theme", "Host tree", "Follow newest"},
		"Capture": {"Capture", "Breakpoints…", "Rules…", "System proxy…", "Root CA…"},
		"Tools":   {"Composer…", "Repeat selected", "Replay selected… (times, parallel)"},
		"Help":    {"Keyboard shortcuts", "Set up a client…"},
	}
	for _, m := range u.menus.main.Items {
		for _, l := range want[m.Label] {
			menuItem(t, m, l)
		}
	}
	// View ▸ Density and Theme switch the theme and persist.
	if theme.TextSize() != 13 {
		t.Fatalf("compact text size = %v", theme.TextSize())
	}
	u.SetDensity(Comfortable)
	if theme.TextSize() != 14 || u.prefs.String(prefDensity) != "comfortable" || !u.menus.density[1].Checked {
		t.Fatalf("comfortable: text %v", theme.TextSize())
	}
	u.SetDensity(Compact)
	u.SetThemeMode(ThemeLight)
	if fyne.CurrentApp().Settings().Theme().Color(theme.ColorNameBackground, theme.VariantDark) != theme.DefaultTheme().Color(theme.ColorNameBackground, theme.VariantLight) {
		t.Fatal("the light theme does not force the light colours")
	}
	// View ▸ Host tree hides and shows it.
	u.SetHostsShown(false)
	if u.listSplit.Leading != u.listStack {
		t.Fatal("host tree still shown")
	}
	u.SetHostsShown(true)
	// View ▸ Columns toggles a column.
	menuItem(t, menuItem(t, u.menus.main.Items[2], "Columns").ChildMenu, "Start").Action()
	if u.list.shown(viewmodel.ColStarted) {
		t.Fatal("Start column still shown")
	}
	// One toolbar, every action with a tooltip shown on hover.
	var tips int
	for _, it := range u.tools.bar.Items {
		if a, ok := it.(*tipAction); ok {
			if a.Tip() == "" {
				t.Error("a toolbar action without a tooltip")
			}
			tips++
		}
	}
	if tips < 10 {
		t.Fatalf("%d toolbar actions", tips)
	}
	b := u.tools.capture.button
	test.MoveMouse(w.Canvas(), fyne.NewPos(-1, -1))
	b.MouseIn(&desktop.MouseEvent{})
	if b.pop == nil || !b.pop.Visible() {
		t.Fatal("no tooltip on hover")
	}
	b.MouseOut()
	if b.pop != nil {
		t.Fatal("the tooltip stays after the mouse left")
	}
}

func TestDroppedHAROpensAViewer(t *testing.T) {
	u, _, path := storedHAR(t, "drop.har")
	u.dropped(fyne.NewPos(10, 10), []fyne.URI{storage.NewFileURI(path)})
	if len(u.viewers) != 1 || u.viewers[0].model.Len() != 4 {
		t.Fatalf("dropping a HAR opened %d viewers", len(u.viewers))
	}
	if !strings.HasPrefix(u.viewers[0].status.Text(), "Read-only viewer") {
		t.Fatalf("viewer status = %q", u.viewers[0].status.Text())
	}
}

func TestJSONTreeViewOpensAndCollapses(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: st})
	u.SelectID(1)
	b := u.detail.resp.body
	if !slices.Contains(b.mode.Options, "Tree") {
		t.Fatalf("views = %v", b.mode.Options)
	}
	b.mode.SetSelected("Tree")
	tv := b.tree
	if !tv.box.Visible() || b.text.box.Visible() {
		t.Fatal("the tree is not shown")
	}
	if !tv.tree.IsBranchOpen("0") {
		t.Fatal("the root is not open")
	}
	users := tv.children("0")[0]
	if n := tv.node(users); n.Key != "users" || n.Value != "[1]" || !tv.isBranch(users) {
		t.Fatalf("users node = %+v", n)
	}
	tv.tree.OpenAllBranches()
	if !tv.tree.IsBranchOpen(users) {
		t.Fatal("expand all left users closed")
	}
	b.mode.SetSelected("Text")
	if tv.box.Visible() || !b.text.box.Visible() {
		t.Fatal("leaving the tree did not show the text")
	}
	// A body over maxTreeBytes gets Pretty but no tree.
	big := largeBodySession(99, "json", maxTreeBytes+1000)
	views, _ := bodyViews(t.Context(), big.Response.Header, big.Response.Body, bodyViewOptions{})
	for _, v := range views {
		if v.Name == "Tree" {
			t.Fatal("a tree for a body over the cap")
		}
	}
	if len(views) == 0 || views[0].Name != "JSON" {
		t.Fatalf("views of a large JSON body: %d", len(views))
	}
}

func TestPhonesGetAQRCodeOnlyWhenReachable(t *testing.T) {
	if got := lanProxyAddrs("127.0.0.1:8080"); got != nil {
		t.Fatalf("loopback listener: %v", got)
	}
	if got := lanProxyAddrs("192.168.1.20:8080"); !slices.Equal(got, []string{"192.168.1.20:8080"}) {
		t.Fatalf("LAN listener: %v", got)
	}
	for _, a := range lanProxyAddrs("0.0.0.0:8080") {
		if !strings.HasSuffix(a, ":8080") || strings.HasPrefix(a, "127.") {
			t.Fatalf("unspecified listener gives %q", a)
		}
	}
	img, err := qrImage(certPageURL, 132)
	if err != nil || img.Bounds().Dx() != 132 {
		t.Fatalf("qr: %v %v", img, err)
	}
	if s := phoneSteps(nil); !strings.Contains(s, "--allow-remote") {
		t.Fatalf("steps without LAN: %q", s)
	}
	// The start page over a loopback engine shows no code.
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	u, _ := newTestUI(t, Deps{Engine: p.Engine})
	if u.start.qr.Visible() || !strings.Contains(u.start.phones.Text, "--allow-remote") {
		t.Fatalf("loopback start page: qr %v, %q", u.start.qr.Visible(), u.start.phones.Text)
	}
}

func TestExportAndDeleteTheMultiSelection(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: st, HAR: StoreHAR("test")})
	u.model.SelectOnly(2)
	u.model.Toggle(4)
	var buf bytes.Buffer
	if n, err := u.ExportHAR(&buf, ScopeSelected); err != nil || n != 2 {
		t.Fatalf("export selected: %d, %v", n, err)
	}
	if s := buf.String(); !strings.Contains(s, "b.example/missing") || !strings.Contains(s, "c.example/boom") || strings.Contains(s, "a.example") {
		t.Fatal("the export is not the two selected sessions")
	}
	u.DeleteSelected()
	if n, _ := st.Count(nil); n != 2 || u.model.Len() != 2 {
		t.Fatalf("after deleting the selection: %d stored, %d rows", n, u.model.Len())
	}
	if _, err := u.ExportHAR(&buf, ScopeSelected); err != nil {
		t.Fatalf("selection after delete: %v", err) // the next row is selected
	}
}

func TestCtrlFFindsInTheBodyWhenInTheDetail(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, w := newTestUI(t, Deps{Store: st})
	c := w.Canvas()
	ctrlF := func() {
		c.(interface{ TypedShortcut(fyne.Shortcut) }).TypedShortcut(shortcut(fyne.KeyF, fyne.KeyModifierShortcutDefault))
	}
	clickRow(t, u, w, 0, 0)
	ctrlF()
	if c.Focused() != u.filter.entry {
		t.Fatalf("Ctrl+F after a list click focused %T", c.Focused())
	}
	u.detail.resp.tabs.SelectIndex(1) // the user opens the response body
	ctrlF()
	b := u.detail.resp.body
	if !b.findBar.Visible() || c.Focused() != b.findEntry {
		t.Fatalf("Ctrl+F in the detail: find bar %v, focus %T", b.findBar.Visible(), c.Focused())
	}
	test.Type(b.findEntry, "sample")
	if b.findCount.Text != "1 match" {
		t.Fatalf("count = %q", b.findCount.Text)
	}
}
