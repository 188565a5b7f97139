package ui

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"

	"inspector/content"
	"inspector/engine/session"
	"inspector/ui/render"
)

// BodyView is one named way to show a body: the body pane offers them as its modes.
type BodyView struct {
	Name    string // the content view's name ("JSON", "Messages", "GraphQL", "JWT (Authorization)", …), or "Tree", "Text", "Hex", "Image"
	Text    string // the text to show ("" for Hex and Image, drawn from Data)
	Lang    string // language for syntax colour ("json", "xml", "html"; "" plain)
	Partial bool   // the view covers only part of the body (say so; offer the full body)
	Note    string // why it is partial, or how it was made ("decoded from gzip")
	Data    []byte // Hex and Image: the bytes
	// Tree is the collapsible tree of a JSON body ("Tree" view).
	Tree *render.JSONTree
	// Preview is the text of the "Preview" view of an HTML page (richviews.go).
	Preview []previewBlock
	// Width and Height are an SVG's natural size ("SVG" view; 0: fill the pane).
	Width, Height float32
	// lines is Text's row index, made off the UI goroutine for the pane's width when the
	// views were made (the pane redoes it when the width changed meanwhile).
	lines *render.Lines
	// treeSrc is the JSON a Tree view is parsed from later (bodyViewOptions.LateTree).
	treeSrc []byte
}

// pickView is the view install shows: the one named last (the user's choice), else the
// first.
func pickView(views []BodyView, last string) int {
	for i, v := range views {
		if v.Name == last {
			return i
		}
	}
	return 0
}

// lateViews finishes what bodyViews left for later (off the UI goroutine): the JSON
// trees (LateTree) and the row index of every text view but the one shown first. It
// returns the Tree views to insert after their JSON view (keyed by that view's index)
// and the row indexes by view index.
func lateViews(ctx context.Context, views []BodyView, shown, cols int, wrap bool) (trees map[int]BodyView, lines map[int]*render.Lines) {
	trees, lines = map[int]BodyView{}, map[int]*render.Lines{}
	for i, v := range views {
		if ctx.Err() != nil {
			return nil, nil
		}
		if v.treeSrc != nil {
			if tr, err := render.ParseJSONTree(v.treeSrc); err == nil {
				trees[i] = BodyView{Name: "Tree", Tree: tr, Lang: "json", Partial: v.Partial, Note: v.Note}
			}
		}
		if i != shown && v.Text != "" && v.lines == nil {
			lines[i] = render.NewLines(v.Text, cols, wrap)
		}
	}
	return trees, lines
}

// indexViews makes the row index of every text view for cols columns (off the UI
// goroutine, after bodyViews).
func indexViews(ctx context.Context, views []BodyView, cols int, wrap bool) {
	for i := range views {
		if ctx.Err() != nil {
			return
		}
		if views[i].Text != "" {
			views[i].lines = render.NewLines(views[i].Text, cols, wrap)
		}
	}
}

// maxTreeBytes bounds the JSON bodies offered as a tree.
const maxTreeBytes = 4 << 20

// bodyViewOptions tune bodyViews.
type bodyViewOptions struct {
	Raw bool // show the bytes as they travelled (no content decoding)
	// Request, URL and Trailer say which message the body belongs to (GraphQL request
	// views, gRPC method and status, JWTs in Authorization): content.Options.
	Request bool
	URL     string
	Trailer http.Header
	// Protos names gRPC/protobuf message types; nil decodes without a schema.
	Protos *content.Protos
	// WebSocket: the message belongs to a WebSocket upgrade, whose bytes after it are
	// the messages (the WebSocket tab), not a body.
	WebSocket bool
	// LateTree leaves the JSON tree for lateViews: the pretty text is shown first (the
	// tree of a 3 MB body took as long again to parse).
	LateTree bool
}

// bodyViews is the one seam between the body pane and the body formatters: it reads a
// body with content (content.Views: JSON, XML, gRPC messages, protobuf, GraphQL,
// SSE events and LLM text, JWTs, multipart parts, forms, charset-converted text) and adds
// what only the window draws: the JSON tree, the image and a virtualised hex view of the
// decoded bytes. It runs off the UI goroutine and stops early when ctx is done.
func bodyViews(ctx context.Context, h http.Header, b session.Body, opt bodyViewOptions) (views []BodyView, summary string) {
	if h == nil {
		h = http.Header{}
	}
	partial := b.Truncated || b.Size > int64(len(b.Data))
	if opt.Raw {
		return rawBodyViews(h, b, partial)
	}
	data := b.Data
	var notes []string
	if partial {
		notes = append(notes, fmt.Sprintf("captured %d of %d bytes", len(b.Data), b.Size))
	}
	dec, encs, cut, err := content.Decode(h, data, content.DefaultLimit)
	switch {
	case err != nil:
		notes = append(notes, "not decoded: "+err.Error())
	case len(encs) > 0:
		notes = append(notes, fmt.Sprintf("decoded from %s (%d → %d bytes)", strings.Join(encs, ", "), len(data), len(dec)))
		data = dec
	}
	if cut {
		partial = true
		notes = append(notes, fmt.Sprintf("decoded only the first %d bytes", content.DefaultLimit))
	}
	if ctx.Err() != nil {
		return nil, ""
	}
	kind := bodyKind(h, data, opt.Request)
	note := joinNotes(notes)
	summary = kindName(kind)
	if note != "" {
		summary += " · " + note
	}
	cv := content.Views(h, b.Data, content.Options{Request: opt.Request, URL: opt.URL, Trailer: opt.Trailer,
		Truncated: b.Truncated || b.Size > int64(len(b.Data)), Protos: opt.Protos, TextCap: content.DefaultLimit})
	if ctx.Err() != nil {
		return nil, summary
	}
	hasText := false
	for _, v := range cv {
		switch v.Name {
		case "Hex":
			continue // the window's own hex view below pages the whole decoded body
		case "Image":
			summary = joinSummary(summary, v.Note)
			views = append(views, BodyView{Name: "Image", Data: data, Partial: partial, Note: note})
			continue
		case "Text":
			hasText = true
		}
		bv := BodyView{Name: v.Name, Text: v.Text, Lang: v.Lang, Partial: v.Partial || partial, Note: v.Note}
		views = append(views, bv)
		if v.Kind == content.KindJSON && v.Name == "JSON" && len(data) <= maxTreeBytes && opt.LateTree {
			views[len(views)-1].treeSrc = data
		} else if v.Kind == content.KindJSON && v.Name == "JSON" && len(data) <= maxTreeBytes && ctx.Err() == nil {
			if tr, err := render.ParseJSONTree(data); err == nil {
				views = append(views, BodyView{Name: "Tree", Tree: tr, Lang: "json", Partial: partial, Note: note})
			}
		}
	}
	views = addRichViews(views, h, data, kind, partial, note)
	if !hasText && kind.Textual() && ctx.Err() == nil {
		text, _ := content.Text(headerValue(h, "Content-Type"), data)
		views = append(views, BodyView{Name: "Text", Text: text, Partial: partial, Note: note})
	}
	views = append(views, BodyView{Name: "Hex", Data: data, Partial: partial, Note: note})
	return views, summary
}

// bodyKind is content.Detect, except that a response with a JSON Content-Type is JSON
// without reading it: Detect would parse the whole body to tell a GraphQL request (tens of
// milliseconds for 3 MB), and a response is never one (content.Views says JSON too).
func bodyKind(h http.Header, data []byte, request bool) content.Kind {
	if k, ok := content.KindOfType(content.MediaType(h.Get("Content-Type"))); ok && k == content.KindJSON && !request && len(data) > 0 {
		return content.KindJSON
	}
	return content.Detect(h, data)
}

// rawBodyViews shows the bytes as they travelled: as text when they look like text, and
// in hex.
func rawBodyViews(h http.Header, b session.Body, partial bool) ([]BodyView, string) {
	note := ""
	if partial {
		note = fmt.Sprintf("captured %d of %d bytes", len(b.Data), b.Size)
	}
	summary := joinSummary("as sent", note)
	hex := BodyView{Name: "Hex", Data: b.Data, Partial: partial, Note: note}
	if !content.LooksText(b.Data) {
		return []BodyView{hex}, summary
	}
	text, _ := content.Text(headerValue(h, "Content-Type"), b.Data)
	return []BodyView{{Name: "Text", Text: text, Partial: partial, Note: note}, hex}, summary
}

// kindName is a body kind as the pane's summary says it.
func kindName(k content.Kind) string {
	switch k {
	case content.KindJSON, content.KindXML, content.KindHTML, content.KindCSS, content.KindSSE:
		return strings.ToUpper(string(k))
	case content.KindGRPC:
		return "gRPC"
	case content.KindGRPCWeb:
		return "gRPC-Web"
	case content.KindGRPCWebText:
		return "gRPC-Web (text)"
	case content.KindGraphQL:
		return "GraphQL"
	case content.KindJavaScript:
		return "JavaScript"
	case content.KindConnect:
		return "Connect"
	case content.KindProtobuf:
		return "protobuf"
	case content.KindEmpty:
		return "empty"
	}
	return string(k)
}

func joinSummary(a, b string) string {
	if b == "" {
		return a
	}
	if a == "" {
		return b
	}
	return a + " · " + b
}

func joinNotes(n []string) string {
	var b bytes.Buffer
	for i, s := range n {
		if i > 0 {
			b.WriteString(" · ")
		}
		b.WriteString(s)
	}
	return b.String()
}
