package ui

import (
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"inspector/engine/hooks/breakpoint"
	"inspector/engine/hooks/rules"
	"inspector/engine/session"
)

// TestRenderDebugScreenshots renders the breakpoint window, the rules form, the composer
// with a response and the replay dialog over a real engine (software painter) to PNG
// files in $INSPECTOR_SCREENSHOTS (docs/screenshots). Skipped otherwise.
//
//	INSPECTOR_SCREENSHOTS=$PWD/docs/screenshots LANG=C.UTF-8 go test -tags migrated_fynedo -run TestRenderDebugScreenshots ./ui
func TestRenderDebugScreenshots(t *testing.T) {
	out := os.Getenv("INSPECTOR_SCREENSHOTS")
	if out == "" {
		t.Skip("set INSPECTOR_SCREENSHOTS to a folder")
	}
	r := newDebugRig(t)
	r.u.app.Settings().SetTheme(theme.LightTheme())
	shot := func(w fyne.Window, size fyne.Size, name string) {
		t.Helper()
		w.Resize(size)
		w.Content().Refresh()
		img := w.Canvas().Capture()
		f, err := os.Create(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := png.Encode(f, img); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/echo?page=1", "/status?code=404", "/bytes?n=2048"} {
		<-r.get(p)
		r.add(r.p.Next(t))
	}
	v := r.u.debug

	// The breakpoint window with two paused requests, the second being edited.
	r.m.Add(breakpoint.Breakpoint{Filter: "path:/echo method:POST", Phase: breakpoint.PhaseRequest, Enabled: true})
	r.m.Add(breakpoint.Breakpoint{Filter: "status:5xx", Phase: breakpoint.PhaseResponse, Enabled: false})
	r.m.SetTimeout(5*60e9, breakpoint.TimeoutContinue)
	var done []<-chan res
	for _, body := range []string{`{"item":"pen","qty":1}`, `{"item":"book","qty":1}`} {
		req, _ := http.NewRequest("POST", r.o.URL+"/echo?order=42", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		done = append(done, r.do(req))
		r.paused(len(done))
	}
	w := v.bp
	w.Queue.Select(1)
	w.Editor.Body.SetText(`{"item":"book","qty":3}`)
	w.Editor.Headers.Add("X-Debug", "edited")
	shot(v.bpWin, fyne.NewSize(1200, 900), "breakpoints.png")
	test.Tap(w.Editor.ContinueEdited)
	r.paused(1)
	test.Tap(w.Editor.Continue)
	for _, ch := range done {
		<-ch
	}
	r.paused(0)
	var last = r.p.Next(t)
	r.add(last)
	r.add(r.p.Next(t))

	// A paused response: status, reason, headers and body only.
	r.m.Add(breakpoint.Breakpoint{Filter: "path:/status", Phase: breakpoint.PhaseResponse, Enabled: true})
	ch := r.get("/status?code=200")
	r.paused(1)
	w.Editor.Status.SetText("418")
	shot(v.bpWin, fyne.NewSize(1200, 760), "breakpoint-response.png")
	test.Tap(w.Editor.ContinueEdited)
	<-ch
	r.paused(0)
	r.add(r.p.Next(t))
	for _, b := range r.m.Settings().Breakpoints {
		r.m.Remove(b.ID)
	}
	v.bpWin.Close()

	// Rules: a list and an auto-respond form with a filter error under it.
	r.dbg.ReplaceRules([]rules.Rule{
		{Kind: rules.MapRemote, Enabled: true, Filter: "host:api.example.com", Target: "https://staging.example.com"},
		{Kind: rules.Header, Enabled: true, Filter: "host:*.example.com", HeaderName: "X-Debug", HeaderValue: "1"},
		{Kind: rules.Throttle, Enabled: false, Filter: "type:image", LatencyMS: 200, BytesPerSec: 65536},
	})
	v.showRules()
	v.rules.NewRule(rules.Rule{Kind: rules.AutoRespond, Enabled: true, Status: 503, Body: `{"error":"maintenance"}`,
		Header: http.Header{"Content-Type": {"application/json"}}})
	test.Type(v.rules.Form.Filter.Entry, "path:/v1/* stauts:5xx")
	shot(v.rulesWin, fyne.NewSize(1200, 860), "rules-form.png")
	v.rulesWin.Close()

	// The composer on that session, with the response beside the request and a history.
	r.u.SelectID(last.ID)
	v.composeSelected()
	c := v.composer
	test.Tap(c.SendBtn)
	r.run(func() bool { return strings.HasPrefix(c.Result.Text, "#") })
	r.add(r.p.Next(t))
	c.Headers.Add("Authorization", "Bearer test-token")
	test.Tap(c.SendBtn)
	r.run(func() bool { return strings.HasPrefix(c.Result.Text, "#") && len(c.historyEntries) == 2 })
	r.add(r.p.Next(t))
	shot(v.compWin, fyne.NewSize(1300, 900), "composer.png")

	// Replay of two sessions with progress.
	v.replaySessions([]*session.Session{last, r.u.selectedSession()})
	v.replayer.Count.SetText("20")
	v.replayer.Parallel.SetText("4")
	test.Tap(v.replayer.Start)
	r.run(func() bool { return strings.Contains(v.replayer.Result.Text, "sent") })
	shot(r.u.win, fyne.NewSize(1400, 900), "replay.png")
}
