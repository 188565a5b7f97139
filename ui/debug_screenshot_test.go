package ui

import (
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	et "inspector/engine/enginetest"
	"inspector/engine/hooks/breakpoint"
	"inspector/engine/session"
)

// TestRenderDebugScreenshots renders the breakpoint, composer and replay flow over a real
// engine to PNG files in $INSPECTOR_SCREENSHOTS (docs/screenshots). Skipped otherwise.
//
//	INSPECTOR_SCREENSHOTS=$PWD/docs/screenshots LANG=C.UTF-8 go test -tags migrated_fynedo -run TestRenderDebugScreenshots ./ui
func TestRenderDebugScreenshots(t *testing.T) {
	out := os.Getenv("INSPECTOR_SCREENSHOTS")
	if out == "" {
		t.Skip("set INSPECTOR_SCREENSHOTS to a folder")
	}
	r := newDebugRig(t)
	r.u.app.Settings().SetTheme(theme.LightTheme())
	w := r.u.win
	w.Resize(fyne.NewSize(1400, 900))
	shot := func(name string) {
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
	c := r.p.Client(t, et.ClientH1)
	for _, p := range []string{"/echo?page=1", "/status?code=404", "/bytes?n=2048"} {
		resp, err := c.Get(r.o.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		s := r.p.Next(t)
		r.u.remember(s)
		r.u.changed(r.u.model.Upsert([]session.Summary{s.Summarize()}))
	}
	v := r.u.debug

	// Breakpoints panel.
	r.m.Add(breakpoint.Breakpoint{Filter: "host:api.example.com method:POST", Phase: breakpoint.PhaseRequest, Enabled: true})
	r.m.Add(breakpoint.Breakpoint{Filter: "status:5xx", Phase: breakpoint.PhaseResponse, Enabled: false})
	v.showPanel()
	test.Type(v.panel.Filter, "path:/echo")
	test.Tap(v.panel.Add)
	shot("breakpoints.png")
	w.Canvas().Overlays().Top().Hide()

	// A paused request in the editor, edited.
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequest("POST", r.o.URL+"/echo?order=42", strings.NewReader(`{"item":"book","qty":1}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := c.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	r.run(func() bool { return v.indicator.Text == "⏸ 1 paused" })
	test.Tap(v.indicator)
	v.editor.Body.SetText(`{"item":"book","qty":3}`)
	v.editor.Headers.SetText(v.editor.Headers.Text + "X-Debug: edited\n")
	shot("breakpoint-editor.png")
	test.Tap(v.editor.ContinueEdited)
	<-done
	s := r.p.Next(t)
	r.u.remember(s)
	r.u.changed(r.u.model.Upsert([]session.Summary{s.Summarize()}))
	r.run(func() bool { return v.indicator.Text == "⏸ 0 paused" })
	for _, b := range r.m.Settings().Breakpoints {
		r.m.Remove(b.ID)
	}

	// The composer on that session.
	r.u.SelectID(s.ID)
	v.composeSelected()
	v.composer.Headers.SetText(v.composer.Headers.Text + "Authorization: Bearer test-token\n")
	test.Tap(v.composer.SendBtn)
	r.run(func() bool { return strings.HasPrefix(v.composer.Result.Text, "#") })
	shot("composer.png")
	w.Canvas().Overlays().Top().Hide()

	// Replay with progress.
	r.u.SelectID(s.ID)
	v.replaySelected()
	v.replayer.Count.SetText("20")
	v.replayer.Parallel.SetText("4")
	test.Tap(v.replayer.Start)
	r.run(func() bool { return strings.Contains(v.replayer.Result.Text, "sent") })
	shot("replay.png")
}
