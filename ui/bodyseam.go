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
}

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
