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
