package ui

import (
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"inspector/engine/hooks/rules"
	"inspector/engine/session"
)

// TestRenderExpectedScreenshots renders the pieces Proxyman and Charles users expect (the
// inline map-local editor and the rewrite rules, …) over a real engine to PNG files in
// $INSPECTOR_SCREENSHOTS (docs/screenshots). Skipped otherwise.
//
//	INSPECTOR_SCREENSHOTS=$PWD/docs/screenshots LANG=C.UTF-8 go test -tags migrated_fynedo -run TestRenderExpectedScreenshots ./ui
//
// screenshotDir is $INSPECTOR_SCREENSHOTS; the test is skipped without it.
func screenshotDir(t *testing.T) string {
	out := os.Getenv("INSPECTOR_SCREENSHOTS")
	if out == "" {
		t.Skip("set INSPECTOR_SCREENSHOTS to a folder")
	}
	return out
}

// writeShot refreshes w's content and writes its canvas to file as PNG.
func writeShot(t *testing.T, w fyne.Window, file string) {
	t.Helper()
	w.Content().Refresh()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, w.Canvas().Capture()); err != nil {
		t.Fatal(err)
	}
}

func TestRenderExpectedScreenshots(t *testing.T) {
	out := screenshotDir(t)
	r := newDebugRig(t)
	r.u.app.Settings().SetTheme(theme.LightTheme())
	shot := func(w fyne.Window, size fyne.Size, name string) {
		t.Helper()
		w.Resize(size)
		writeShot(t, w, filepath.Join(out, name))
	}
	v := r.u.debug

	// Rules: the new kinds in the list, an inline map-local body being edited.
	if _, err := r.dbg.ReplaceRules([]rules.Rule{
		{Kind: rules.Block, Enabled: true, List: []string{"*.doubleclick.net", "https://example.com/beacon/"}},
		{Kind: rules.URLRewrite, Enabled: true, Filter: "host:api.example.com", Pattern: `^https://api\.example\.com/v1/`, Replace: "https://api.example.com/v2/"},
		{Kind: rules.BodyRewrite, Enabled: true, Filter: "path:/config", Phase: "response", Pattern: `"beta":\s*false`, Replace: `"beta": true`},
		{Kind: rules.StatusRewrite, Enabled: false, Filter: "path:/flaky status:5xx", Status: 200},
		{Kind: rules.MapLocal, Enabled: true, Filter: "path:/v1/profile", Body: `{"name":"Ada"}`, Header: http.Header{"Content-Type": {"application/json"}}},
	}); err != nil {
		t.Fatal(err)
	}
	v.showRules()
	v.rules.NewRule(rules.Rule{Kind: rules.MapLocal, Enabled: true, Body: "{\n  \"user\": {\"id\": 7, \"plan\": \"pro\"},\n  \"flags\": [\"beta\"]\n}",
		Header: http.Header{"Content-Type": {"application/json"}}})
	test.Type(v.rules.Form.Filter.Entry, "host:api.example.com path:/v1/me")
	shot(v.rulesWin, fyne.NewSize(1200, 820), "rules-inline-map-local.png")
	v.rules.NewRule(rules.Rule{Kind: rules.Block, Enabled: true, List: []string{"*.doubleclick.net", "ads.example.com", "https://example.com/beacon/"}})
	shot(v.rulesWin, fyne.NewSize(1200, 820), "rules-block-list.png")
	v.rulesWin.Close()

	// Repeat in one click: two sessions repeated, the note in the status bar, and the
	// context menu with Repeat beside Replay… (the dialog for counts).
	for _, p := range []string{"/echo?page=1", "/echo?page=2", "/status?code=404"} {
		<-r.get(p)
		r.add(r.p.Next(t))
	}
	u, w := r.u, r.u.win
	w.Resize(fyne.NewSize(1280, 820))
	clickRow(t, u, w, 0, 0)
	clickRow(t, u, w, 1, fyne.KeyModifierShift)
	u.RepeatSelection()
	r.run(func() bool { return u.lastRepeat != nil })
	for range 2 {
		r.add(r.p.Next(t))
	}
	clickRow(t, u, w, 0, 0)
	clickRow(t, u, w, 1, fyne.KeyModifierShift)
	rowsOnScreen(u)[1].TappedSecondary(&fyne.PointEvent{AbsolutePosition: fyne.NewPos(160, 150)})
	shot(w, fyne.NewSize(1280, 820), "repeat-one-click.png")
	if top := w.Canvas().Overlays().Top(); top != nil {
		top.Hide()
	}

	// The WebSocket tab: the message list filtered on text, a JSON message indented.
	ws := wsSession(t,
		[]byte(`{"op":"subscribe","topic":"prices","symbols":["AAPL","MSFT"]}`),
		[]byte(`{"op":"tick","symbol":"AAPL","price":231.4,"ts":1764810000}`),
		[]byte("ping 42"),
		[]byte(`{"op":"tick","symbol":"MSFT","price":512.9,"ts":1764810001}`),
		[]byte{0, 1, 2, 3, 0xff},
		[]byte(`{"op":"unsubscribe","topic":"prices"}`),
	)
	r.add(ws)
	u.SelectID(ws.ID)
	u.detail.tabs.SelectIndex(4)
	u.listSplit.SetOffset(0.22)
	u.detail.ws.Filter.SetText("op")
	u.detail.ws.List.Select(3)
	shot(w, fyne.NewSize(1280, 820), "websocket-messages.png")
}

// TestRenderContentScreenshots renders the SVG, HTML preview and Query/Form tables views
// to $INSPECTOR_SCREENSHOTS. Skipped otherwise.
func TestRenderContentScreenshots(t *testing.T) {
	out := screenshotDir(t)
	svg := mkSession(0, "cdn.example", "/logo.svg", 200, "image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 120">
<rect width="200" height="120" rx="14" fill="#2a6"/><circle cx="60" cy="60" r="36" fill="#fff"/><path d="M110 30 L180 60 L110 90 Z" fill="#135"/></svg>`)
	page := mkSession(0, "shop.example", "/", 200, "text/html; charset=utf-8", `<!doctype html><html><head><title>Example shop</title>
<script>track()</script><style>h1{color:red}</style></head><body><h1>Autumn sale</h1><p>Prices from <b>10 EUR</b> until Sunday.
See the <a href="https://shop.example/terms">terms</a>.</p><h2>Today</h2><ul><li>Boots, 40 EUR</li><li>Coats, 90 EUR</li></ul>
<img src="/banner.png" alt="banner"><pre>order --id 42</pre></body></html>`)
	form := mkSession(0, "a.example", "/login?next=%2Faccount&lang=en", 200, "application/json", `{"ok":true}`)
	form.Request.Method = "POST"
	form.Request.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	fb := "user=sample-user&password=not+a+real+secret&remember=on"
	form.Request.Body = session.Body{Data: []byte(fb), Size: int64(len(fb))}
	u := richUI(t, svg, page, form)
	u.SetThemeMode(ThemeLight)
	u.listSplit.SetOffset(0.3)
	w := u.win
	u.SelectID(svg.ID)
	u.detail.resp.tabs.SelectIndex(1)
	writeShot(t, w, filepath.Join(out, "svg-rendered.png"))
	u.SelectID(page.ID)
	u.detail.resp.tabs.SelectIndex(1)
	u.detail.resp.body.mode.SetSelected("Preview")
	writeShot(t, w, filepath.Join(out, "html-preview.png"))
	u.SelectID(form.ID)
	u.detail.req.tabs.SelectIndex(4)
	writeShot(t, w, filepath.Join(out, "query-form-tables.png"))
}
