package ui

import (
	"bytes"
	"image"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/session"
)

const sampleSVG = `<?xml version="1.0"?>
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 120 80" width="120" height="80"><rect width="120" height="80" fill="#2a6"/><circle cx="60" cy="40" r="30" fill="#fff"/></svg>`

// richUI shows sessions in a window of the usual size and returns it.
func richUI(t *testing.T, ss ...*session.Session) *UI {
	t.Helper()
	u, w := newTestUI(t, Deps{Store: openStore(t, ss...)})
	w.Resize(fyne.NewSize(1280, 820))
	return u
}

// An SVG body is drawn (the first view), at its viewBox size, with its source one view
// away; one that does not parse, or is too big, shows the source with the reason.
func TestSVGBodyRendered(t *testing.T) {
	good := mkSession(0, "a.example", "/logo.svg", 200, "image/svg+xml", sampleSVG)
	bad := mkSession(0, "a.example", "/broken.svg", 200, "image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg"><path d="M0 0 L`)
	huge := mkSession(0, "a.example", "/huge.svg", 200, "image/svg+xml",
		`<svg xmlns="http://www.w3.org/2000/svg">`+strings.Repeat(`<circle cx="1" cy="1" r="1"/>`, maxSVGRender/28)+`</svg>`)
	sniffed := mkSession(0, "a.example", "/img", 200, "application/xml", sampleSVG)
	u := richUI(t, good, bad, huge, sniffed)
	b := u.detail.resp.body

	u.SelectID(good.ID)
	v, _ := b.View()
	if b.mode.Options[0] != "SVG" || v.Name != "SVG" || !b.image.Visible() || b.image.Resource.Name() != "body.svg" ||
		!bytes.Equal(b.image.Resource.Content(), []byte(sampleSVG)) || b.imageSize.natural != fyne.NewSize(120, 80) {
		t.Fatalf("SVG: views %v, shown %q, image %v, natural %v", b.mode.Options, v.Name, b.image.Visible(), b.imageSize.natural)
	}
	// Fyne draws it: the image in the window is the SVG's green, not an empty box.
	u.detail.tabs.SelectIndex(0)
	u.detail.resp.tabs.SelectIndex(1)
	if !containsColour(u.win.Canvas().Capture(), 0x22, 0xaa, 0x66) {
		t.Error("the window shows no pixel of the SVG's fill")
	}
	b.mode.SetSelected("XML")
	if b.image.Visible() || !strings.Contains(b.text.Text(), "<circle") {
		t.Errorf("XML source view: image %v, text %q", b.image.Visible(), b.text.Text())
	}
	b.mode.SetSelected("SVG")

	for _, s := range []*session.Session{bad, huge} {
		u.SelectID(s.ID)
		v, _ := b.View()
		if v.Name == "SVG" || b.image.Visible() || !strings.Contains(b.info.Text+v.Note, "SVG not drawn") {
			t.Errorf("%s: shown %q, note %q / %q", s.Request.URL, v.Name, v.Note, b.info.Text)
		}
	}
	u.SelectID(sniffed.ID)
	if v, _ := b.View(); v.Name != "SVG" {
		t.Errorf("an SVG sent as application/xml: %q", v.Name)
	}
}

// containsColour reports whether img has a pixel within 8 of r, g, b.
func containsColour(img image.Image, r, g, b uint8) bool {
	near := func(a uint32, b uint8) bool { d := int(a>>8) - int(b); return d >= -8 && d <= 8 }
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr, r) && near(pg, g) && near(pb, b) {
				return true
			}
		}
	}
	return false
}

// An HTML page has its source, indented, and a Preview: title, headings, paragraphs,
// list items and links as text; scripts and styles left out, markup characters kept as
// text.
func TestHTMLPreview(t *testing.T) {
	page := `<!doctype html><html><head><title>Shop *sale*</title><style>body{color:red}</style>
<script>alert("no")</script></head><body><h1>Welcome</h1><p>Prices from <b>10</b> EUR_each
today.</p><ul><li>First [item]</li><li>Second</li></ul><p><a href="https://example.com/more">More</a>
<a href="javascript:void(0)">x</a><img src="a.png" alt="logo"></p><pre>code
  kept</pre></body></html>`
	s := mkSession(0, "a.example", "/", 200, "text/html; charset=utf-8", page)
	u := richUI(t, s)
	b := u.detail.resp.body
	u.SelectID(s.ID)
	if !containsString(b.mode.Options, "Preview") || !containsString(b.mode.Options, "HTML") {
		t.Fatalf("views %v", b.mode.Options)
	}
	b.mode.SetSelected("Preview")
	v, _ := b.View()
	got := previewText(v.Preview)
	for _, want := range []string{"Shop *sale*", "Welcome", "Prices from 10 EUR_each today.", "First [item]", "Second",
		"More (https://example.com/more)", "[image: logo]", "code\n  kept"} {
		if !strings.Contains(got, want) {
			t.Errorf("preview lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"alert", "color:red", "javascript"} {
		if strings.Contains(got, bad) {
			t.Errorf("preview shows %q:\n%s", bad, got)
		}
	}
	if !b.previewBox.Visible() || b.text.box.Visible() {
		t.Error("the preview is not what is shown")
	}
	if !strings.Contains(v.Note, "no CSS, scripts, images or layout") {
		t.Errorf("preview note %q", v.Note)
	}
	b.mode.SetSelected("HTML")
	if b.previewBox.Visible() || !strings.Contains(b.text.Text(), "<h1>") {
		t.Error("back to the source")
	}
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// The request's query string and urlencoded form are tables; tapping a row copies the
// value.
func TestQueryAndFormTables(t *testing.T) {
	s := mkSession(0, "a.example", "/login?next=%2Faccount&lang=en", 200, "application/json", `{"ok":true}`)
	s.Request.Method = "POST"
	s.Request.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	body := "user=sample-user&password=not+a+secret&remember=on"
	s.Request.Body = session.Body{Data: []byte(body), Size: int64(len(body))}
	plain := mkSession(0, "a.example", "/plain", 200, "text/plain", "x")
	u := richUI(t, s, plain)
	u.SelectID(s.ID)
	u.detail.req.tabs.SelectIndex(4)
	qv := u.detail.req.query
	q, f := qv.Rows()
	if len(q) != 2 || q[0] != [2]string{"next", "/account"} || len(f) != 3 || f[1] != [2]string{"password", "not a secret"} ||
		qv.qHead.Text != "Query (2)" || qv.fHead.Text != "Form (3)" || !qv.formBox.Visible() {
		t.Fatalf("query %v, form %v, heads %q %q", q, f, qv.qHead.Text, qv.fHead.Text)
	}
	qv.form.table.Select(widget.TableCellID{Row: 0, Col: 1})
	if got := u.app.Clipboard().Content(); got != "sample-user" {
		t.Errorf("tapping a form row copied %q", got)
	}
	test.Tap(u.detail.req.headers.table) // harmless: a tap elsewhere copies nothing new
	u.SelectID(plain.ID)
	q, f = qv.Rows()
	if len(q) != 0 || f != nil || qv.formBox.Visible() || qv.query.empty.Text != "no query string" {
		t.Errorf("plain GET: query %v form %v", q, f)
	}
}
