package content

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

func init() {
	for _, k := range []Kind{KindGRPC, KindGRPCWeb, KindGRPCWebText, KindConnect} {
		Register(k, func(in *Input) []View {
			return grpcViews(in.Kind, in.Header, in.Body, in.Options, in.Partial, in.Note)
		})
	}
	Register(KindProtobuf, func(in *Input) []View {
		return []View{protoView("Protobuf", in.Body, in.Options, in.Partial, in.Note)}
	})
}

// grpcMethodPath returns the path of a request URL ("/pkg.Svc/Method").
func grpcMethodPath(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Path
	}
	return ""
}

func grpcViews(kind Kind, h http.Header, dec []byte, opts Options, partial bool, note string) []View {
	if kind == KindGRPCWebText {
		b, err := DecodeGRPCWebText(dec)
		if err != nil {
			note = joinNote(note, err.Error())
		}
		dec = b
	}
	frames, ferr := SplitFrames(kind, dec)
	mt := MediaType(h.Get("Content-Type"))
	isJSON := strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "/json")
	msgEnc := h.Get("Grpc-Encoding")
	if kind == KindConnect {
		msgEnc = h.Get("Connect-Content-Encoding")
	}
	var sb strings.Builder
	var trailer http.Header
	var endStream []byte
	n, shown := 0, 0
	for _, f := range frames {
		if sb.Len() > opts.TextCap && !f.Trailer && !f.EndStream {
			continue // the text would be cut anyway: count the rest, decode no more
		}
		shown++
		data := f.Data
		if f.Compressed {
			if msgEnc == "" || msgEnc == "identity" {
				msgEnc = "gzip" // compressed without a declared coding: gzip is what everyone uses
			}
			d, _, err := DecodeCodings([]string{strings.ToLower(msgEnc)}, data, opts.Limit)
			if err != nil {
				fmt.Fprintf(&sb, "#%d (%d bytes, %s-compressed: %v)\n%s\n", n+1, f.Size, msgEnc, err, hexDump(data, 4096))
				n++
				continue
			}
			data = d
		}
		if f.Trailer {
			trailer = ParseTrailerFrame(data)
			continue
		}
		if f.EndStream {
			endStream = data
			continue
		}
		n++
		fmt.Fprintf(&sb, "#%d (%d bytes", n, f.Size)
		if f.Compressed {
			fmt.Fprintf(&sb, ", %s", msgEnc)
		}
		if f.Partial {
			fmt.Fprintf(&sb, ", cut: %d bytes captured", len(f.Data))
		}
		sb.WriteString(")\n")
		if isJSON {
			if p, ok := IndentJSON(string(data)); ok {
				sb.WriteString(p)
			} else {
				sb.WriteString(strings.ToValidUTF8(string(data), "\uFFFD"))
			}
		} else {
			sb.WriteString(protoText(data, opts, f.Partial))
		}
		sb.WriteString("\n")
	}
	method := grpcMethodPath(opts.URL)
	v := View{Name: "Messages", Kind: kind, Text: sb.String(), Partial: partial, Lang: ""}
	total := 0
	for _, f := range frames {
		if !f.Trailer && !f.EndStream {
			total++
		}
	}
	v.Note = joinNote(note, fmt.Sprintf("%d messages", total))
	if rest := len(frames) - shown; rest > 0 {
		v.Partial = true
		v.Note = joinNote(v.Note, fmt.Sprintf("%d more messages not decoded (text cap)", rest))
	}
	if method != "" {
		v.Note = joinNote(v.Note, method)
	}
	if md := schemaFor(opts); md != nil {
		v.Note = joinNote(v.Note, "schema "+string(md.FullName()))
		v.Lang = "json"
	} else if !isJSON {
		v.Note = joinNote(v.Note, "no schema: fields by number")
	} else {
		v.Lang = "json"
	}
	if ferr != nil {
		v.Note = joinNote(v.Note, ferr.Error())
	}
	out := []View{v}
	if endStream != nil {
		out = append(out, connectEndView(endStream))
	}
	if st, ok := GRPCStatus(trailer, opts.Trailer, h); ok {
		out = append(out, statusView(st))
	}
	return out
}

// schemaFor returns the message type of this side of the call named by opts.URL.
func schemaFor(opts Options) protoreflect.MessageDescriptor {
	m, ok := opts.Protos.Method(grpcMethodPath(opts.URL))
	if !ok {
		return nil
	}
	if opts.Request {
		return m.Input()
	}
	return m.Output()
}

// protoText renders one protobuf message: protojson when the schema is known, else the
// schemaless field listing.
func protoText(data []byte, opts Options, partial bool) string {
	if md := schemaFor(opts); md != nil && !partial {
		if s, err := opts.Protos.MessageJSON(md, data); err == nil {
			return s
		} else {
			return "// " + err.Error() + "\n" + rawProtoText(data)
		}
	}
	return rawProtoText(data)
}

func rawProtoText(data []byte) string {
	if len(data) == 0 {
		return "(empty message)\n"
	}
	fields, err := DecodeProtoRaw(data)
	s := FormatProtoRaw(fields)
	if err != nil {
		if len(fields) == 0 {
			return "// " + err.Error() + "\n" + hexDump(data, 4096)
		}
		s += "// " + err.Error() + "\n"
	}
	return s
}

func protoView(name string, dec []byte, opts Options, partial bool, note string) View {
	v := View{Name: name, Kind: KindProtobuf, Text: protoText(dec, opts, partial), Partial: partial}
	if md := schemaFor(opts); md != nil {
		v.Lang, v.Note = "json", joinNote(note, "schema "+string(md.FullName()))
	} else {
		v.Note = joinNote(note, "no schema: fields by number")
	}
	return v
}

func statusView(st Status) View {
	rows := [][2]string{{"grpc-status", fmt.Sprintf("%d %s", st.Code, st.Name)}}
	if st.Message != "" {
		rows = append(rows, [2]string{"grpc-message", st.Message})
	}
	for _, d := range st.Details {
		rows = append(rows, [2]string{"detail " + d.TypeURL, strings.TrimRight(d.Value, "\n")})
	}
	var sb strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&sb, "%s: %s\n", r[0], r[1])
	}
	return View{Name: "Status", Kind: KindGRPC, Text: sb.String(), Rows: rows}
}

func connectEndView(b []byte) View {
	v := View{Name: "End of stream", Kind: KindConnect, Lang: "json", Text: string(b)}
	if p, ok := IndentJSON(string(b)); ok {
		v.Text = p
	}
	var end struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &end) == nil && end.Error != nil {
		v.Note = "error " + end.Error.Code + ": " + end.Error.Message
		v.Rows = [][2]string{{"code", end.Error.Code}, {"message", end.Error.Message}}
	}
	return v
}
