package ui

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
	"github.com/fyne-io/oksvg"
	"golang.org/x/net/html"

	"inspector/content"
)

// Views only the window draws, beside the content views: a rendered SVG and a text
// preview of an HTML page (bodyViews adds them; bodyView.showView draws them).

// maxSVGRender bounds the SVG bodies drawn: a bigger or hostile one (deep nesting,
// millions of path points) shows its source only.
const maxSVGRender = 1 << 20

// maxSVGSide caps an SVG's natural size (from its viewBox) in the pane.
const maxSVGSide = 4096

// maxHTMLPreview bounds the HTML read for the preview, and the preview's text.
const (
	maxHTMLPreview     = 2 << 20
	maxHTMLPreviewText = 256 << 10
)

// isSVG says whether the body is an SVG image: by its media type, or XML whose root
// element is <svg>.
func isSVG(h http.Header, data []byte) bool {
	if content.MediaType(h.Get("Content-Type")) == "image/svg+xml" {
		return true
	}
	z := html.NewTokenizer(bytes.NewReader(data[:min(len(data), 4096)]))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return false
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			return string(name) == "svg"
		}
	}
}

// svgView is the rendered view of an SVG body; ok false, with the reason, when it is too
// big or does not parse (the source views stay, and say why).
func svgView(data []byte, partial bool, note string) (v BodyView, why string, ok bool) {
	if partial {
		return v, "SVG not drawn: only part of it was captured", false
	}
	if len(data) > maxSVGRender {
		return v, fmt.Sprintf("SVG not drawn: %d bytes, over the %d KiB drawn", len(data), maxSVGRender>>10), false
	}
	icon, err := oksvg.ReadIconStream(bytes.NewReader(data), oksvg.IgnoreErrorMode)
	if err != nil {
		return v, "SVG not drawn: " + err.Error(), false
	}
	w, h := icon.ViewBox.W, icon.ViewBox.H
	if w <= 0 || h <= 0 || w > 1e6 || h > 1e6 {
		w, h = 0, 0 // unknown: fill the pane
	} else if s := maxSVGSide / max(w, h); s < 1 {
		w, h = w*s, h*s
	}
	return BodyView{Name: "SVG", Data: data, Note: joinSummary("drawn by Fyne's SVG renderer (no scripts, animation or external images)", note),
		Width: float32(w), Height: float32(h)}, "", true
}

// htmlSkip are the elements whose content the preview leaves out.
var htmlSkip = map[string]bool{"script": true, "style": true, "noscript": true, "template": true, "svg": true,
	"iframe": true, "object": true, "head": true, "select": true}

// htmlBlock are the elements that start a new paragraph in the preview.
var htmlBlock = map[string]bool{"p": true, "div": true, "section": true, "article": true, "header": true, "footer": true,
	"main": true, "nav": true, "aside": true, "table": true, "tr": true, "form": true, "blockquote": true,
	"ul": true, "ol": true, "dl": true, "dt": true, "dd": true, "figure": true, "hr": true, "address": true, "body": true}

// previewBlock is one block of an HTML preview: Style "title", "h1" … "h6", "p", "li" or
// "pre", and its text.
type previewBlock struct{ Style, Text string }

// HTMLPreview reads an HTML page as blocks of text for Fyne's RichText: the title,
// headings, paragraphs, list items, preformatted blocks, links as "text (URL)" and images
// as "[image: alt]". It is a reading of the text, not a browser: no CSS, scripts, images,
// forms or layout; links are not clickable. The text is never parsed as markup again.
func HTMLPreview(data []byte) []previewBlock {
	if len(data) > maxHTMLPreview {
		data = data[:maxHTMLPreview]
	}
	z := html.NewTokenizer(bytes.NewReader(data))
	var out []previewBlock
	var para, title strings.Builder
	size := 0
	skip, pre := 0, 0
	inTitle := false
	href, style := "", "p"
	flush := func() {
		t := strings.Join(strings.Fields(para.String()), " ")
		para.Reset()
		if t != "" {
			out = append(out, previewBlock{style, t})
			size += len(t)
		}
		style = "p"
	}
	for size < maxHTMLPreviewText {
		tt := z.Next()
		if tt == html.ErrorToken {
			break // io.EOF, or markup the tokenizer gave up on: what was read is shown
		}
		name, hasAttr := z.TagName()
		tag := string(name)
		heading := len(tag) == 2 && tag[0] == 'h' && tag[1] >= '1' && tag[1] <= '6'
		switch tt {
		case html.TextToken:
			switch {
			case inTitle:
				title.Write(z.Text())
			case skip > 0:
			default:
				para.Write(z.Text())
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			attrs := map[string]string{}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				attrs[string(k)] = string(v)
			}
			switch {
			case tag == "title":
				inTitle = tt == html.StartTagToken
			case htmlSkip[tag]:
				if tt == html.StartTagToken {
					skip++
				}
			case skip > 0:
			case tag == "pre":
				flush()
				pre++
			case heading:
				flush()
				style = tag
			case tag == "li":
				flush()
				style = "li"
			case tag == "br":
				para.WriteString("\n")
			case tag == "a":
				href = attrs["href"]
			case tag == "img":
				if alt := strings.TrimSpace(attrs["alt"]); alt != "" {
					para.WriteString(" [image: " + alt + "] ")
				} else {
					para.WriteString(" [image] ")
				}
			case htmlBlock[tag]:
				flush()
			}
		case html.EndTagToken:
			switch {
			case tag == "title":
				inTitle = false
			case htmlSkip[tag]:
				skip = max(skip-1, 0)
			case skip > 0:
			case tag == "pre" && pre > 0:
				pre--
				code := strings.Trim(para.String(), "\n")
				para.Reset()
				if code != "" {
					out = append(out, previewBlock{"pre", code})
					size += len(code)
				}
			case tag == "a":
				if u := strings.TrimSpace(href); u != "" && !strings.HasPrefix(u, "#") && !strings.HasPrefix(strings.ToLower(u), "javascript:") {
					para.WriteString(" (" + u + ")")
				}
				href = ""
			case heading, tag == "li", htmlBlock[tag]:
				flush()
			}
		}
	}
	flush()
	if t := strings.Join(strings.Fields(title.String()), " "); t != "" {
		out = append([]previewBlock{{"title", t}}, out...)
	}
	if size >= maxHTMLPreviewText {
		out = append(out, previewBlock{"p", fmt.Sprintf("(preview cut at %d KiB)", maxHTMLPreviewText>>10)})
	}
	if len(out) == 0 {
		out = append(out, previewBlock{"p", "(the page has no text to preview)"})
	}
	return out
}

// previewSegments are the RichText segments of a preview.
func previewSegments(blocks []previewBlock) []widget.RichTextSegment {
	segs := make([]widget.RichTextSegment, 0, len(blocks))
	for _, b := range blocks {
		st := widget.RichTextStyleParagraph
		text := b.Text
		switch b.Style {
		case "title", "h1":
			st = widget.RichTextStyleHeading
		case "h2":
			st = widget.RichTextStyleSubHeading
		case "h3", "h4", "h5", "h6":
			st = widget.RichTextStyleStrong
			st.Inline = false
		case "li":
			text = "• " + text
		case "pre":
			st = widget.RichTextStyleCodeBlock
		}
		segs = append(segs, &widget.TextSegment{Style: st, Text: text})
	}
	return segs
}

// previewText is a preview as plain lines (tests, Copy).
func previewText(blocks []previewBlock) string {
	var sb strings.Builder
	for _, b := range blocks {
		sb.WriteString(b.Text)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// addRichViews puts the rendered SVG first (or notes on the source views why it is not
// drawn) and adds the HTML preview after the source.
func addRichViews(views []BodyView, h http.Header, data []byte, kind content.Kind, partial bool, note string) []BodyView {
	switch {
	case (kind == content.KindXML || kind == content.KindImage) && isSVG(h, data):
		v, why, ok := svgView(data, partial, note)
		if ok {
			return append([]BodyView{v}, views...)
		}
		for i := range views {
			views[i].Note = joinSummary(views[i].Note, why)
		}
	case kind == content.KindHTML:
		for i, v := range views {
			if v.Name == "HTML" {
				p := BodyView{Name: "Preview", Preview: HTMLPreview(data), Partial: partial,
					Note: joinSummary("a reading of the page's text: no CSS, scripts, images or layout", note)}
				return append(views[:i+1], append([]BodyView{p}, views[i+1:]...)...)
			}
		}
	}
	return views
}

// queryFormView is the request's Query/Form tab: the query string's parameters and an
// urlencoded form body's fields, each as a name/value table (tap a row to copy its value).
type queryFormView struct {
	query, form *headerTable
	qHead       *widget.Label
	fHead       *widget.Label
	formBox     *fyne.Container
	box         fyne.CanvasObject
}

func newQueryFormView(u *UI) *queryFormView {
	v := &queryFormView{query: newHeaderTable(u), form: newHeaderTable(u), qHead: heading("Query"), fHead: heading("Form")}
	v.formBox = container.NewBorder(v.fHead, nil, nil, nil, v.form.box)
	v.box = container.NewVSplit(container.NewBorder(v.qHead, nil, nil, nil, v.query.box), v.formBox)
	return v
}

// set shows the query parameters and the form fields (form nil: the body is no form,
// and the form table is hidden).
func (v *queryFormView) set(query, form [][2]string) {
	v.qHead.SetText(fmt.Sprintf("Query (%d)", len(query)))
	v.query.setRows(query, pairsText(query, ""), "no query string")
	if form == nil {
		v.formBox.Hide()
		v.form.setRows(nil, "", "")
		return
	}
	v.fHead.SetText(fmt.Sprintf("Form (%d)", len(form)))
	v.form.setRows(form, pairsText(form, ""), "no fields")
	v.formBox.Show()
}

// Rows returns the query and form rows shown (tests).
func (v *queryFormView) Rows() (query, form [][2]string) { return v.query.rows, v.form.rows }
