package content

import (
	"bytes"
	"fmt"
	"image"
	_ "image/gif"  // image.DecodeConfig
	_ "image/jpeg" // image.DecodeConfig
	_ "image/png"  // image.DecodeConfig
	"strings"
)

// Viewers of the text and image kinds, the form, empty bodies and binary.
func init() {
	Register(KindEmpty, emptyViews)
	Register(KindJSON, jsonViews)
	Register(KindXML, xmlViews)
	for _, k := range []Kind{KindHTML, KindJavaScript, KindCSS, KindText} {
		Register(k, sourceViews)
	}
	Register(KindImage, imageViews)
	Register(KindForm, formViews)
	Register(KindBinary, binaryViews)
}

// emptyViews: a body-less message can still be a GraphQL GET or a gRPC trailers-only
// answer.
func emptyViews(in *Input) []View {
	if in.Options.Request && in.Options.URL != "" {
		if ops, ok := GraphQLRequest("", nil, in.Options.URL); ok {
			return graphQLViews(ops, in.Note)
		}
	}
	if st, ok := GRPCStatus(in.Options.Trailer, in.Header); ok && isGRPCType(MediaType(in.Header.Get("Content-Type"))) {
		return []View{statusView(st)}
	}
	return nil
}

func jsonViews(in *Input) []View {
	s, n := in.Text()
	v := View{Name: "JSON", Kind: KindJSON, Lang: "json", Partial: in.Partial, Note: n}
	if p, ok := IndentJSON(s); ok {
		v.Text = p
	} else {
		v.Text, v.Note = s, joinNote(n, "not valid JSON; shown as sent")
	}
	out := []View{v}
	for _, j := range FindBodyJWTs(in.Body, in.Options.Now) {
		out = append(out, jwtView(j))
	}
	if !in.Options.Request {
		errs := GraphQLErrors(in.Body)
		if len(errs) > 0 && (bytes.Contains(in.Body, []byte(`"data"`)) || strings.Contains(strings.ToLower(in.Options.URL), "graphql")) {
			out = append(out, View{Name: "GraphQL errors", Kind: KindGraphQL, Text: strings.Join(errs, "\n")})
		}
	}
	return out
}

func xmlViews(in *Input) []View {
	s, n := in.Text()
	v := View{Name: "XML", Kind: KindXML, Lang: "xml", Text: s, Partial: in.Partial, Note: n}
	if p, err := IndentXML(s); err == nil {
		v.Text = p
	} else {
		v.Note = joinNote(n, "not well-formed XML ("+err.Error()+"); shown as sent")
	}
	return []View{v}
}

var sourceNames = map[Kind]string{KindHTML: "HTML", KindJavaScript: "JavaScript", KindCSS: "CSS", KindText: "Text"}

// sourceViews: HTML, JavaScript, CSS and plain text as sent (charset converted), with
// the syntax-colour language.
func sourceViews(in *Input) []View {
	s, n := in.Text()
	return []View{{Name: sourceNames[in.Kind], Kind: in.Kind, Lang: in.Kind.Lang(), Text: s, Partial: in.Partial, Note: n}}
}

func imageViews(in *Input) []View {
	n := in.Note
	if cfg, format, err := image.DecodeConfig(bytes.NewReader(in.Body)); err == nil {
		n = in.AddNote(fmt.Sprintf("%s %d×%d", format, cfg.Width, cfg.Height))
	}
	return []View{{Name: "Image", Kind: KindImage, Text: hexDump(in.Body, 4096), Partial: in.Partial, Note: n}}
}

func formViews(in *Input) []View {
	s, n := in.Text()
	rows := FormFields(s)
	var sb strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&sb, "%s = %s\n", r[0], r[1])
	}
	return []View{{Name: "Form", Kind: KindForm, Text: sb.String(), Rows: rows, Partial: in.Partial, Note: n}}
}

// binaryViews: a hex dump and, when the whole body parses as a protobuf message (many
// apps send protobuf as application/octet-stream), the schemaless reading.
func binaryViews(in *Input) []View {
	dec := in.Body
	out := []View{{Name: "Hex", Kind: KindBinary, Text: hexDump(dec, 64<<10), Partial: in.Partial || len(dec) > 64<<10, Note: in.Note}}
	if len(dec) >= 2 && len(dec) <= 4<<20 {
		if fields, err := DecodeProtoRaw(dec); err == nil && len(fields) > 0 {
			out = append(out, View{Name: "Protobuf (guess)", Kind: KindProtobuf, Text: FormatProtoRaw(fields),
				Note: "the body parses as a protobuf message; fields by number"})
		}
	}
	return out
}
