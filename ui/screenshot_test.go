package ui

import (
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

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
	w := test.NewTempWindow(t, nil)
	u := New(a, w, Deps{Store: st, HAR: StoreHAR("screenshots")})
	u.detail.inline = true
	u.SetThemeMode(ThemeLight)
	w.Resize(fyne.NewSize(1280, 820))
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
	exchange := func(req, resp int) {
		u.detail.tabs.SelectIndex(0)
		u.detail.req.tabs.SelectIndex(req)
		u.detail.resp.tabs.SelectIndex(resp)
	}
	// The detail pane dragged taller than its default (which leaves the list 21 rows).
	u.listSplit.SetOffset(0.42)
	// Request headers beside the pretty JSON response body.
	u.SelectID(find("/api/users?"))
	exchange(0, 1)
	shot("detail.png")
	shot("json-body.png")
	exchange(0, 0)
	shot("headers.png")
	exchange(3, 2) // request cookies, raw response
	shot("cookies.png")
	shot("raw.png")

	u.SelectID(find("/login"))
	exchange(4, 1) // query and form
	shot("query-form.png")

	u.SelectID(find("/download.bin"))
	exchange(0, 1)
	shot("hex-body.png")

	u.SelectID(find("https://localhost"))
	u.detail.tabs.SelectIndex(1) // Timing
	shot("timing.png")
	u.detail.tabs.SelectIndex(2) // TLS
	shot("tls.png")

	u.SelectID(find("/logo.png"))
	exchange(0, 1)
	shot("image.png")

	// The collapsible JSON tree.
	u.SelectID(find("/api/orders"))
	exchange(0, 1)
	u.detail.resp.body.mode.SetSelected("Tree")
	u.detail.resp.body.tree.tree.OpenAllBranches()
	shot("tree.png")
	u.detail.resp.body.mode.SetSelected("JSON")

	// Find in a body.
	u.SelectID(find("/api/users?"))
	exchange(0, 1)
	u.detail.resp.body.openFind()
	u.detail.resp.body.findEntry.SetText("name")
	u.detail.resp.body.FindNext(1)
	shot("find.png")
	u.detail.resp.body.closeFind()

	// A multi-selection and its context menu, at the default split.
	u.listSplit.SetOffset(defaultListSplit)
	u.setFollow(false)
	u.model.SelectOnly(u.model.At(1).ID)
	u.model.ExtendTo(u.model.At(3).ID)
	u.selectionChanged()
	u.showContextMenu(fyne.NewPos(520, 150))
	shot("context-menu.png")
	u.win.Canvas().Overlays().Top().Hide()

	// The dark theme over a gzip-encoded JSON body, decoded.
	u.listSplit.SetOffset(0.42)
	u.SetThemeMode(ThemeDark)
	u.SelectID(find("/api/orders"))
	exchange(0, 1)
	shot("dark.png")

	// Request and response stacked in a narrow window.
	u.listSplit.SetOffset(0.3)
	w.Resize(fyne.NewSize(860, 820))
	shot("stacked.png")
}

// TestRenderPagedScreenshot renders the list over a store of 1,000,000 sessions scrolled
// to the middle (paged.png): rows older than the 200,000 held in memory come from the
// store a page at a time. A tool like TestRenderScreenshots (needs INSPECTOR_SCREENSHOTS).
func TestRenderPagedScreenshot(t *testing.T) {
	out := os.Getenv("INSPECTOR_SCREENSHOTS")
	if out == "" {
		t.Skip("set INSPECTOR_SCREENSHOTS to the output folder")
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 1_000_000
	hosts := []string{"api.shop.example", "cdn.shop.example", "auth.example.net", "10.0.0.7", "api.shop.example", "api.shop.example"}
	paths := []string{"/v1/cart", "/img/banner.webp", "/oauth/token", "/health", "/v1/items?page=2", "/v1/checkout"}
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for done := 0; done < n; done += 20_000 {
		ss := make([]*session.Session, 20_000)
		for i := range ss {
			k := done + i
			h, p := hosts[k%len(hosts)], paths[k%len(paths)]
			status := []int{200, 200, 201, 200, 304, 200, 404, 200, 500, 200}[k%10]
			at := t0.Add(time.Duration(k) * 7 * time.Millisecond)
			ss[i] = &session.Session{
				Started: at, Client: session.Conn{Proto: session.HTTP2}, Upstream: session.Conn{Proto: session.HTTP1},
				Request:  session.Request{Method: "GET", URL: "https://" + h + p, Proto: "HTTP/2.0", Header: http.Header{}},
				Response: &session.Response{Status: status, Proto: "HTTP/1.1", Header: http.Header{"Content-Type": {"application/json"}}},
				Timings:  session.Timings{RequestHeaders: at, ResponseDone: at.Add(time.Duration(5+k%40) * time.Millisecond)},
			}
		}
		if _, err := st.Import(ss); err != nil {
			t.Fatal(err)
		}
	}
	posts := make(chan func(), 64)
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	u := New(a, w, Deps{Store: st, Post: func(f func()) { posts <- f }})
	u.detail.inline = true
	u.SetThemeMode(ThemeLight)
	w.Resize(fyne.NewSize(1280, 820))
	for u.model.Stored() == nil {
		(<-posts)()
	}
	u.setFollow(false)
	const row = 400_000
	u.list.scrollTo(row)
	for !u.model.Stored().Cached(row) || !u.model.Stored().Cached(row+12) {
		u.model.At(row + 12)
		(<-posts)()
	}
	u.SelectID(u.model.At(row).ID)
	u.hosts.tree.OpenAllBranches()
	u.status.update()
	img := w.Canvas().Capture()
	f, err := os.Create(filepath.Join(out, "paged.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}
