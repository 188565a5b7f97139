//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	fynetest "fyne.io/fyne/v2/test"

	"inspector/ui"
)

// The real window under Xvfb, driven by xdotool and read from screenshots and window
// geometry: what unit tests through fyne/test did not catch (issue 28). One instance
// serves every check, in this order:
//   - the mouse wheel over the list scrolls it, once its rows are laid out;
//   - selecting each kind of content (JSON, GraphQL, XML, HTML, image, text), and then
//     every one of the 200 sessions, keeps the window 1280×820;
//   - every secondary window (Breakpoints, Composer, Rules, Scripts, Search everything,
//     Compare) opens no larger than the screen and closes on Esc and on Ctrl+W;
//   - Enter in the Delete confirmation deletes;
//   - File ▸ Open HAR shows the file's sessions (its title counts them), within the
//     screen, and closes on Ctrl+W.
//
// Xvfb picks a free display number itself (-displayfd). Every wait polls for the state
// (a window appears or goes, the screen changes or settles, the store's count), bounded
// by a deadline; nothing sleeps for a state. `make test` runs it as a step of its own
// (test-window), after test-ui, so it never shares the machine with other packages' tests.

// xwin drives one X display.
type xwin struct {
	t       *testing.T
	display string
}

func (x *xwin) run(args ...string) (string, error) {
	cmd := exec.Command("xdotool", args...)
	cmd.Env = append(os.Environ(), "DISPLAY="+x.display)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (x *xwin) must(args ...string) string {
	x.t.Helper()
	out, err := x.run(args...)
	if err != nil {
		x.t.Fatalf("xdotool %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return out
}

// poll calls f until it reports true, every 50 ms for up to d; what names the state.
func poll(t *testing.T, d time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond) // the poll interval, not a wait for a state
	}
}

// window waits for a visible window whose title matches the regular expression and
// returns its id.
func (x *xwin) window(title string) string {
	x.t.Helper()
	var id string
	poll(x.t, 60*time.Second, "a window titled "+title, func() bool {
		out, err := x.run("search", "--onlyvisible", "--name", title)
		if err != nil || out == "" {
			return false
		}
		id = strings.Fields(out)[0]
		return true
	})
	return id
}

// gone waits until no visible window matches title.
func (x *xwin) gone(title string) {
	x.t.Helper()
	poll(x.t, 20*time.Second, "the window "+title+" to close", func() bool {
		out, err := x.run("search", "--onlyvisible", "--name", title)
		return err != nil || out == ""
	})
}

var geomRe = regexp.MustCompile(`Geometry: (\d+)x(\d+)`)

// size is a window's size from xdotool getwindowgeometry.
func (x *xwin) size(id string) (int, int) {
	x.t.Helper()
	m := geomRe.FindStringSubmatch(x.must("getwindowgeometry", id))
	if m == nil {
		x.t.Fatalf("no geometry for window %s", id)
	}
	w, _ := strconv.Atoi(m[1])
	h, _ := strconv.Atoi(m[2])
	return w, h
}

// shot is a screenshot of the whole 1280×820 screen (ImageMagick's import, raw RGB: no
// PNG to encode and decode on each poll).
func (x *xwin) shot() *image.RGBA {
	x.t.Helper()
	cmd := exec.Command("import", "-window", "root", "-depth", "8", "rgb:-")
	cmd.Env = append(os.Environ(), "DISPLAY="+x.display)
	out, err := cmd.Output()
	if err != nil {
		x.t.Fatalf("import: %v", err)
	}
	const w, h = 1280, 820
	if len(out) != w*h*3 {
		x.t.Fatalf("screenshot: %d bytes, want %d (a 1280×820 RGB screen)", len(out), w*h*3)
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i, j := 0, 0; i < len(out); i, j = i+3, j+4 {
		img.Pix[j], img.Pix[j+1], img.Pix[j+2], img.Pix[j+3] = out[i], out[i+1], out[i+2], 0xff
	}
	return img
}

// region is the pixels of r in img, for comparing two screenshots.
func region(img *image.RGBA, r image.Rectangle) []byte {
	r = r.Intersect(img.Rect)
	var b []byte
	for y := r.Min.Y; y < r.Max.Y; y++ {
		b = append(b, img.Pix[img.PixOffset(r.Min.X, y):img.PixOffset(r.Max.X, y)]...)
	}
	return b
}

// settle waits until two screenshots in a row are the same (the window has drawn what it
// was asked to and nothing moves).
func (x *xwin) settle() *image.RGBA {
	x.t.Helper()
	var last []byte
	var img *image.RGBA
	poll(x.t, 60*time.Second, "the screen to settle", func() bool {
		img = x.shot()
		same := last != nil && bytes.Equal(img.Pix, last)
		last = img.Pix
		return same
	})
	return img
}

// save writes img to $INSPECTOR_SCREENSHOTS/name when that folder is set (docs/screenshots).
func save(t *testing.T, img image.Image, name string) {
	t.Helper()
	out := os.Getenv("INSPECTOR_SCREENSHOTS")
	if out == "" {
		return
	}
	f, err := os.Create(filepath.Join(out, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

// key focuses window id and types the keys (XTEST, as a user would).
func (x *xwin) key(id string, keys ...string) {
	x.t.Helper()
	x.must("windowfocus", "--sync", id)
	x.must(append([]string{"key", "--clearmodifiers"}, keys...)...)
}

func TestRealWindow(t *testing.T) {
	if _, err := exec.LookPath("xdotool"); err != nil {
		t.Skip("xdotool is not installed (Debian package xdotool; make test installs it)")
	}
	if _, err := exec.LookPath("import"); err != nil {
		t.Skip("ImageMagick's import is not installed (make test installs imagemagick)")
	}
	display := startXvfb(t)
	x := &xwin{t: t, display: display}
	bin := binary(t)

	origin := httptest.NewServer(http.HandlerFunc(contentKinds))
	t.Cleanup(origin.Close)

	dir := t.TempDir()
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--data-dir", dir)
	cmd.Env = append(os.Environ(), "DISPLAY="+display, "LANG=C.UTF-8", "HOME="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("window stderr:\n%s", stderr.String())
		}
	})
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "listening on ") {
		t.Fatalf("no address announced; stderr: %s", stderr.String())
	}
	addr := strings.TrimPrefix(sc.Text(), "listening on ")
	go io.Copy(io.Discard, stdout)

	start := time.Now()
	phase := func(what string) { t.Logf("%6.1fs  %s", time.Since(start).Seconds(), what) }
	main := x.window("^Inspector$")
	phase("the window is shown")
	if w, h := x.size(main); w != 1280 || h != 820 {
		t.Fatalf("the window opened %d×%d, want 1280×820", w, h)
	}

	// The list area before any session: the start page.
	listArea := image.Rect(300, 140, 1000, 420)
	empty := region(x.settle(), listArea)

	// 200 sessions of six kinds through the proxy.
	proxyURL, _ := url.Parse("http://" + addr)
	hc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 30 * time.Second}
	const n = 200
	for i := range n {
		kind := kinds[i%len(kinds)]
		var resp *http.Response
		var err error
		if kind == "graphql" {
			resp, err = hc.Post(origin.URL+"/graphql", "application/json",
				strings.NewReader(`{"query":"query GetUser($id: ID!) { user(id: $id) { name email } }","operationName":"GetUser","variables":{"id":"7"}}`))
		} else {
			resp, err = hc.Get(fmt.Sprintf("%s/%s/%d", origin.URL, kind, i))
		}
		if err != nil {
			t.Fatalf("request %d through the proxy: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cc, err := newControlClient(dir)
	if err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "200 stored sessions", func() bool {
		st, err := cc.stats()
		return err == nil && st.Sessions >= n
	})
	phase("200 sessions stored")

	// The wheel over the list scrolls it: the rows' pixels change and stay changed. The
	// wheel turns only once the rows are laid out (the list area no longer shows the start
	// page and the screen has settled with the pointer over the list), so only the wheel
	// moves anything.
	x.must("mousemove", "--window", main, "640", "280")
	var before []byte
	poll(t, 60*time.Second, "the list's rows to be laid out", func() bool {
		before = region(x.settle(), listArea)
		return !bytes.Equal(before, empty)
	})
	x.must("click", "--repeat", "15", "--delay", "20", "4") // wheel up
	// A row arriving late (the window's event pump lags the store on a loaded machine)
	// scrolls a following list back to the newest; then the wheel is turned again. A list
	// that was not following sits at its top, where the wheel up has nothing to move: the
	// turns alternate down and up, so the list moves whichever end it started at.
	turn := 0
	poll(t, 60*time.Second, "the list to scroll on the wheel", func() bool {
		if !bytes.Equal(region(x.settle(), listArea), before) {
			return true
		}
		button := "4"
		if turn%2 == 0 {
			button = "5" // wheel down
		}
		turn++
		x.must("click", "--repeat", "5", "--delay", "20", button)
		return false
	})

	phase("the wheel scrolled the list")

	// Selecting each kind of content keeps the window's size.
	x.must("click", "1") // selects the row under the pointer, and the list takes the keyboard
	x.key(main, "Home")
	for i := range 2 * len(kinds) {
		if i > 0 {
			x.key(main, "Down")
		}
		img := x.settle()
		if kinds[i%len(kinds)] == "graphql" && i < len(kinds) {
			save(t, img, "graphql-live.png")
		}
		if w, h := x.size(main); w != 1280 || h != 820 {
			t.Fatalf("after selecting session %d (%s) the window is %d×%d, want 1280×820", i+1, kinds[i%len(kinds)], w, h)
		}
	}

	phase("12 selections kept the window 1280×820")
	// The rest of the 200, without waiting between them: a window that grew stays grown.
	x.must("key", "--repeat", strconv.Itoa(n-2*len(kinds)), "--delay", "10", "Down")
	x.settle()
	if w, h := x.size(main); w != 1280 || h != 820 {
		t.Fatalf("after 200 selections the window is %d×%d, want 1280×820", w, h)
	}
	phase("200 selections kept the window 1280×820")

	// Secondary windows open within the screen and close on Esc and Ctrl+W. The ones
	// without a shortcut are opened from the menu bar with the keyboard: a click on File,
	// Right to the menu, Down to the item, Return.
	menu := func(name, label string) func() {
		rights, downs := menuPath(t, name, label)
		return func() {
			x.must("windowfocus", "--sync", main)
			shown := region(x.settle(), image.Rect(0, 0, 400, 300))
			x.must("mousemove", "--window", main, "18", "11")
			x.must("click", "1")
			poll(t, 20*time.Second, "the File menu to open", func() bool {
				return !bytes.Equal(region(x.shot(), image.Rect(0, 0, 400, 300)), shown)
			})
			var keys []string
			for range rights {
				keys = append(keys, "Right")
			}
			for range downs {
				keys = append(keys, "Down")
			}
			x.must(append([]string{"key", "--delay", "30"}, append(keys, "Return")...)...)
		}
	}
	keys := func(k string) func() { return func() { x.key(main, k) } }
	for _, sw := range []struct {
		name, title string
		open        func()
		closeKeys   []string
	}{
		{"Breakpoints", "^Breakpoints", keys("ctrl+shift+b"), []string{"Escape", "ctrl+w"}},
		{"Composer", "^Composer$", keys("ctrl+shift+n"), []string{"Escape", "ctrl+w"}},
		{"Rules", "^Rules$", menu("Capture", "Rules…"), []string{"Escape", "ctrl+w"}},
		{"Scripts", "^Scripts$", menu("Tools", "Scripts…"), []string{"Escape", "ctrl+w"}},
		{"Search", "^Search everything$", keys("ctrl+shift+f"), []string{"Escape", "ctrl+w"}}, // from its field
		// Two sessions selected (End: the last; Shift+Up adds the one above), then Edit ▸
		// Compare selected.
		{"Compare", "^Compare #", func() { x.key(main, "End"); x.key(main, "shift+Up"); x.key(main, "ctrl+d") }, []string{"Escape", "ctrl+w"}},
	} {
		for _, closeKey := range sw.closeKeys {
			sw.open()
			id := x.window(sw.title)
			img := x.settle()
			if closeKey == sw.closeKeys[0] {
				save(t, img, strings.ToLower(sw.name)+"-live.png")
			}
			w, h := x.size(id)
			if w > 1280 || h > 820 {
				t.Fatalf("the %s window opened %d×%d, larger than the 1280×820 screen", sw.name, w, h)
			}
			t.Logf("%s opened %d×%d, closing on %s", sw.name, w, h, closeKey)
			x.key(id, closeKey)
			x.gone(sw.title)
		}
	}

	phase("Breakpoints, Composer, Rules, Scripts, Search and Compare opened within the screen and closed on their keys")

	// Enter in the Delete confirmation deletes the selected session (one again: Up
	// selects the row above the two compared).
	x.key(main, "Up")
	x.key(main, "Delete")
	x.settle()
	x.key(main, "Return")
	poll(t, 20*time.Second, "the session deleted by Enter in the confirmation", func() bool {
		st, err := cc.stats()
		return err == nil && st.Sessions == n-1
	})

	phase("Enter in the confirmation deleted")

	// File ▸ Open HAR: the viewer shows the file's sessions.
	harPath := filepath.Join(dir, "six.har")
	writeHAR(t, cc, harPath, 6)
	shown := region(x.settle(), image.Rect(0, 0, 1280, 820))
	x.key(main, "ctrl+o")
	poll(t, 20*time.Second, "the Open HAR dialog", func() bool { // its caret blinks: the screen never settles
		return !bytes.Equal(region(x.shot(), image.Rect(0, 0, 1280, 820)), shown)
	})
	x.must("key", "--clearmodifiers", "ctrl+a")
	x.must("type", "--delay", "5", harPath)
	x.must("key", "Return")
	viewer := x.window(`six\.har \(read-only, 6 sessions\)`)
	save(t, x.settle(), "har-viewer-live.png")
	if w, h := x.size(viewer); w > 1280 || h > 820 {
		t.Fatalf("the HAR viewer opened %d×%d", w, h)
	}
	phase("the HAR viewer shows 6 sessions")
	// A read-only viewer closes on Ctrl+W (its Esc clears its filter, as in the main window).
	x.key(viewer, "ctrl+w")
	x.gone(`six\.har \(read-only`)
	if w, h := x.size(main); w != 1280 || h != 820 {
		t.Fatalf("after the secondary windows the main window is %d×%d, want 1280×820", w, h)
	}
	phase("the HAR viewer closed on Ctrl+W")
}

// menuPath is where label is in the window's menu bar: how many menus right of File its
// menu is, and how many Down presses select it (separators are skipped). It reads the
// menu the ui package builds (on Fyne's test driver), so a new item moves no key press.
func menuPath(t *testing.T, menu, label string) (rights, downs int) {
	t.Helper()
	a := fynetest.NewTempApp(t)
	w := a.NewWindow("menu")
	ui.New(a, w, ui.Deps{Intercept: menuInterceptor{}}) // the real window has the Intercept menu
	for i, m := range w.MainMenu().Items {
		if m.Label != menu {
			continue
		}
		for _, it := range m.Items {
			if it.IsSeparator {
				continue
			}
			downs++
			if it.Label == label {
				return i, downs
			}
		}
	}
	t.Fatalf("no %s ▸ %s in the menu bar", menu, label)
	return 0, 0
}

// menuInterceptor only makes ui.New show the Intercept menu, as the real window does.
type menuInterceptor struct{}

func (menuInterceptor) Clients() []ui.InterceptClient  { return nil }
func (menuInterceptor) Launch(string) (string, error)  { return "", nil }
func (menuInterceptor) RunSupport() error              { return nil }
func (menuInterceptor) Run(string) (string, error)     { return "", nil }
func (menuInterceptor) Phone(string) (ui.Phone, error) { return ui.Phone{}, nil }
func (menuInterceptor) EnablePhone(int) error          { return nil }

// kinds are the content kinds the origin serves, one per session in turn.
var kinds = []string{"json", "graphql", "xml", "html", "png", "text"}

// contentKinds is an origin answering each kind of content.
func contentKinds(w http.ResponseWriter, r *http.Request) {
	kind := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")[0]
	switch kind {
	case "json":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q,"items":[{"id":1,"name":"one"},{"id":2,"name":"two"}],"ok":true}`, r.URL.Path)
	case "graphql":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":{"user":{"name":"Sample User","email":"user@example.com"}}}`)
	case "xml":
		w.Header().Set("Content-Type", "image/svg+xml")
		io.WriteString(w, `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><circle cx="5" cy="5" r="4"/></svg>`)
	case "html":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><html><head><title>t</title></head><body><h1>Hello</h1><p>text</p></body></html>`)
	case "png":
		w.Header().Set("Content-Type", "image/png")
		png.Encode(w, image.NewRGBA(image.Rect(0, 0, 8, 8)))
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "plain text body_with_underscores\n")
	}
}

// writeHAR writes the first n stored sessions to a HAR file.
func writeHAR(t *testing.T, cc *controlClient, path string, n int) {
	t.Helper()
	sums, err := cc.sessions("", 0, n)
	if err != nil || len(sums) < n {
		t.Fatalf("sessions: %d, %v", len(sums), err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hw, err := ui.StoreHAR("test").NewWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sums[:n] {
		full, err := cc.session(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := hw.Add(full); err != nil {
			t.Fatal(err)
		}
	}
	if err := hw.Close(); err != nil {
		t.Fatal(err)
	}
}
