package ui

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"net/http"

	"inspector/engine/session"
	"inspector/ui/render"
)

// BodyView is one named way to show a body: the body pane offers them as its modes.
type BodyView struct {
	Name    string // "Pretty", "Text", "Hex", "Image"
	Text    string // the text to show ("" for Hex and Image, drawn from Data)
	Lang    string // language for syntax colour ("json", "xml", "html"; "" plain)
	Partial bool   // the view covers only part of the body (say so; offer the full body)
	Note    string // why it is partial, or how it was made ("decoded from gzip")
	Data    []byte // Hex and Image: the bytes
	// Tree is the collapsible tree of a JSON body ("Tree" view).
	Tree *render.JSONTree
	// lines is Text's row index, made off the UI goroutine for the pane's width when the
	// views were made (the pane redoes it when the width changed meanwhile).
	lines *render.Lines
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
}

// bodyViews is the one seam between the body pane and the body formatters: it decodes a
// body and returns its views, best first. It runs off the UI goroutine and stops early
// when ctx is done. It uses ui/render today; engine/content.Views (with content.Tokens
// for colour) replaces this function's body when that package is merged.
func bodyViews(ctx context.Context, h http.Header, b session.Body, opt bodyViewOptions) (views []BodyView, summary string) {
	data := b.Data
	ct := headerValue(h, "Content-Type")
	var notes []string
	partial := b.Truncated || b.Size > int64(len(b.Data))
	if partial {
		notes = append(notes, fmt.Sprintf("captured %d of %d bytes", len(b.Data), b.Size))
	}
	if !opt.Raw {
		dec, enc, cut, err := render.Decode(h, data)
		switch {
		case err != nil:
			notes = append(notes, "not decoded: "+err.Error())
		case enc != "":
			notes = append(notes, fmt.Sprintf("decoded from %s (%d → %d bytes)", enc, len(data), len(dec)))
			data = dec
		}
		if cut {
			partial = true
			notes = append(notes, fmt.Sprintf("decoded only the first %d bytes", render.DecodedCap))
		}
	}
	kind := render.Classify(ct, data)
	note := joinNotes(notes)
	summary = kind.String()
	if note != "" {
		summary += " · " + note
	}
	hex := BodyView{Name: "Hex", Data: data, Partial: partial, Note: note}
	if ctx.Err() != nil {
		return nil, summary
	}
	switch kind {
	case render.KindImage:
		if cfg, format, err := image.DecodeConfig(bytes.NewReader(data)); err == nil && !opt.Raw {
			summary += fmt.Sprintf(" · %s %d×%d", format, cfg.Width, cfg.Height)
			return []BodyView{{Name: "Image", Data: data, Partial: partial, Note: note}, hex}, summary
		}
		return []BodyView{hex}, summary + " · not a decodable image"
	case render.KindBinary:
		return []BodyView{hex}, summary
	}
	text := render.Text(ct, data)
	if ctx.Err() != nil {
		return nil, summary
	}
	lang := map[render.Kind]string{render.KindJSON: "json", render.KindXML: "xml", render.KindHTML: "html"}[kind]
	if lang != "" {
		pretty, ok := render.Pretty(kind, ct, data)
		if ok {
			views = append(views, BodyView{Name: "Pretty", Text: pretty, Lang: lang, Partial: partial, Note: note})
			if kind == render.KindJSON && len(data) <= maxTreeBytes && ctx.Err() == nil {
				if tr, err := render.ParseJSONTree(data); err == nil {
					views = append(views, BodyView{Name: "Tree", Tree: tr, Lang: lang, Partial: partial, Note: note})
				}
			}
		} else {
			views = append(views, BodyView{Name: "Pretty", Text: text, Lang: lang, Partial: partial,
				Note: joinNotes(append(notes, "not well-formed "+kind.String()+": shown as text"))})
		}
	}
	views = append(views, BodyView{Name: "Text", Text: text, Partial: partial, Note: note}, hex)
	return views, summary
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
