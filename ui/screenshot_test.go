package ui

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"inspector/engine/session"
	"inspector/store"
)

// TestRenderScreenshots renders the detail tabs of stored sessions to PNG files for the
// README. It is a tool run by docs/screenshots/take.sh (which sets INSPECTOR_SCREENSHOTS
// and INSPECTOR_DATA_DIR after capturing real traffic) and is skipped otherwise.
func TestRenderScreenshots(t *testing.T) {
	out, dir := os.Getenv("INSPECTOR_SCREENSHOTS"), os.Getenv("INSPECTOR_DATA_DIR")
	if out == "" || dir == "" {
		t.Skip("set INSPECTOR_SCREENSHOTS and INSPECTOR_DATA_DIR (docs/screenshots/take.sh does)")
	}
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := test.NewTempApp(t)
	a.Settings().SetTheme(theme.LightTheme())
	w := test.NewTempWindow(t, nil)
	u := New(a, w, Deps{Store: st})
	w.Resize(fyne.NewSize(1400, 900))
	if u.model.Len() < 5 {
		t.Fatalf("only %d stored sessions; did the sample traffic run?", u.model.Len())
	}
	find := func(sub string) session.ID {
		for i := u.model.Len() - 1; i >= 0; i-- {
			if r := u.model.At(i); strings.Contains(r.URL, sub) && r.TLS == strings.HasPrefix(sub, "https") {
				return r.ID
			}
		}
		for i := u.model.Len() - 1; i >= 0; i-- {
			if r := u.model.At(i); strings.Contains(r.URL, sub) {
				return r.ID
			}
		}
		t.Fatalf("no session with %q", sub)
		return 0
	}
	shot := func(name string) {
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
	u.SelectID(find("/api/users?"))
	u.detail.tabs.SelectIndex(1) // Response
	u.detail.resp.tabs.SelectIndex(2)
	shot("json-body.png")

	u.detail.tabs.SelectIndex(0) // Request headers
	u.detail.req.tabs.SelectIndex(0)
	shot("headers.png")

	u.detail.req.tabs.SelectIndex(3) // Request cookies
	shot("cookies.png")

	u.detail.tabs.SelectIndex(1) // Response
	u.detail.resp.tabs.SelectIndex(1)
	shot("raw.png")

	u.SelectID(find("/login"))
	u.detail.tabs.SelectIndex(0)
	u.detail.req.tabs.SelectIndex(4) // Query/Form
	shot("query-form.png")

	u.SelectID(find("/download.bin"))
	u.detail.tabs.SelectIndex(1)
	u.detail.resp.tabs.SelectIndex(2)
	shot("hex-body.png")

	u.SelectID(find("https://localhost"))
	u.detail.tabs.SelectIndex(2) // Timing
	shot("timing.png")
	u.detail.tabs.SelectIndex(3) // TLS
	shot("tls.png")

	u.SelectID(find("/logo.png"))
	u.detail.tabs.SelectIndex(1)
	u.detail.resp.tabs.SelectIndex(2)
	shot("image.png")

	a.Settings().SetTheme(theme.DarkTheme())
	u.SelectID(find("/api/orders"))
	u.detail.tabs.SelectIndex(1)
	u.detail.resp.tabs.SelectIndex(2)
	w.Content().Refresh()
	shot("dark.png")
}
