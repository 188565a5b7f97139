package content

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif"  // image.DecodeConfig
	_ "image/jpeg" // image.DecodeConfig
	_ "image/png"  // image.DecodeConfig
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"

	"inspector/engine/session"
)

// View is one named reading of a message: a decoded, pretty-printed body, a list of
// gRPC messages or SSE events, a GraphQL query, a JWT. The window shows each as a tab
// (text coloured by Lang with Tokens), `inspector show --json` prints them.
type View struct {
	// Name is the tab title: "JSON", "Messages", "Events", "LLM text", "GraphQL",
	// "Variables", "Status", "Parts", "Form", "JWT (Authorization)", "Hex", …
	Name string `json:"name"`
	// Kind is the body kind the view reads (KindJWT for token views).
	Kind Kind `json:"kind"`
	// Text is the view's content, UTF-8, at most Options.TextCap bytes.
	Text string `json:"text"`
	// Lang is the syntax-colour language of Text: "json", "xml", "html", "javascript",
	// "css", "graphql", or "" for plain text.
	Lang string `json:"lang,omitempty"`
	// Rows is a name/value table for views that are tables (form fields, part headers,
	// gRPC status); Text holds the same as lines.
	Rows [][2]string `json:"rows,omitempty"`
	// Partial says the view shows less than the whole (capture cut, decode cap, text cap,
	// a stream still open); Note says why, and anything else worth knowing ("decoded
	// from br", "charset shift_jis", a decode error).
	Partial bool   `json:"partial,omitempty"`
	Note    string `json:"note,omitempty"`
}

// KindJWT is the kind of a token view (not a body kind).
const KindJWT Kind = "jwt"

// Options tune Views.
type Options struct {
	// Request says the message is a request (GraphQL request views, JWTs in
	// Authorization and Cookie; responses get GraphQL errors, Set-Cookie JWTs).
	Request bool
	// URL is the request URL: its path names a gRPC / Connect method (matched against
	// Protos), its query holds a GraphQL GET.
	URL string
	// Trailer is the message's trailers (gRPC status).
	Trailer http.Header
	// Truncated says the captured body is shorter than what travelled.
	Truncated bool
	// Protos names message types; nil decodes protobuf without a schema.
	Protos *Protos
	// Limit caps decoded bytes (DefaultLimit when 0); TextCap caps each view's Text
	// (DefaultTextCap when 0).
	Limit, TextCap int
	// Now is the time JWT expiry is told against (time.Now when zero).
	Now time.Time
}

// DefaultTextCap bounds one view's text.
const DefaultTextCap = 1 << 20

// Views reads a message body (as travelled, still content-encoded) with its headers and
// returns its views, the best first. Bad input is never an error: a view says what went
// wrong in Note and shows what could be read (at worst a hex dump).
func Views(h http.Header, body []byte, opts Options) []View {
	if opts.Limit <= 0 {
		opts.Limit = DefaultLimit
	}
	if opts.TextCap <= 0 {
		opts.TextCap = DefaultTextCap
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	if h == nil {
		h = http.Header{}
	}
	var out []View
	dec, encs, cut, err := Decode(h, body, opts.Limit)
	var notes []string
	if len(encs) > 0 && err == nil {
		notes = append(notes, "decoded from "+strings.Join(encs, ", "))
	}
	partial := opts.Truncated || cut
	if cut {
		notes = append(notes, fmt.Sprintf("decoded body cut at %d bytes", len(dec)))
	}
	if opts.Truncated {
		notes = append(notes, "capture cut short")
	}
	if err != nil {
		out = append(out, View{Name: "Hex", Kind: KindBinary, Text: hexDump(body, opts.TextCap),
			Partial: partial, Note: "cannot decode: " + err.Error()})
	} else {
		out = append(out, bodyViews(h, dec, opts, partial, strings.Join(notes, "; "))...)
	}
	for _, j := range FindJWTs(h, opts.Now) {
		if !opts.Request && !strings.HasPrefix(j.Where, "Set-Cookie") {
			continue
		}
		out = append(out, jwtView(j))
	}
	for i := range out {
		capView(&out[i], opts.TextCap)
	}
	return out
}

// SessionViews returns the request's and the response's views of a session.
func SessionViews(s *session.Session, opts Options) (req, resp []View) {
	o := opts
	o.Request, o.URL, o.Trailer = true, s.Request.URL, s.Request.Trailer
	o.Truncated = s.Request.Body.Truncated || s.Request.Body.Size > int64(len(s.Request.Body.Data))
	req = Views(s.Request.Header, s.Request.Body.Data, o)
	if s.Response != nil {
		o.Request, o.Trailer = false, s.Response.Trailer
		o.Truncated = s.Response.Body.Truncated || s.Response.Body.Size > int64(len(s.Response.Body.Data))
		resp = Views(s.Response.Header, s.Response.Body.Data, o)
	}
	return req, resp
}

func bodyViews(h http.Header, dec []byte, opts Options, partial bool, note string) []View {
	ct := h.Get("Content-Type")
	kind := Detect(h, dec)
	if kind == KindGraphQL && !opts.Request {
		kind = KindJSON // a GraphQL response is JSON; its errors get a view below
	}
	addNote := func(n string) string {
		if note == "" {
			return n
		}
		if n == "" {
			return note
		}
		return note + "; " + n
	}
	text := func() (string, string) {
		s, cs := Text(ct, dec)
		if cs != "utf-8" {
			return s, addNote("charset " + cs)
		}
		return s, note
	}
	switch kind {
	case KindEmpty:
		if opts.Request && opts.URL != "" {
			if ops, ok := GraphQLRequest("", nil, opts.URL); ok {
				return graphQLViews(ops, note)
			}
		}
		if st, ok := GRPCStatus(opts.Trailer, h); ok && isGRPCType(MediaType(ct)) {
			return []View{statusView(st)}
		}
		return nil
	case KindJSON:
		s, n := text()
		v := View{Name: "JSON", Kind: kind, Lang: "json", Partial: partial, Note: n}
		if p, ok := IndentJSON(s); ok {
			v.Text = p
		} else {
			v.Text, v.Note = s, addNote("not valid JSON; shown as sent")
		}
		out := []View{v}
		if !opts.Request {
			if errs := GraphQLErrors(dec); len(errs) > 0 && bytes.Contains(dec, []byte(`"data"`)) || len(errs) > 0 && strings.Contains(strings.ToLower(opts.URL), "graphql") {
				out = append(out, View{Name: "GraphQL errors", Kind: KindGraphQL, Text: strings.Join(errs, "\n")})
			}
		}
		return out
	case KindGraphQL:
		ops, ok := GraphQLRequest(MediaType(ct), dec, opts.URL)
		s, n := text()
		raw := View{Name: "JSON", Kind: KindJSON, Lang: "json", Text: s, Partial: partial, Note: n}
		if p, ok := IndentJSON(s); ok {
			raw.Text = p
		}
		if !ok {
			return []View{raw}
		}
		return append(graphQLViews(ops, n), raw)
	case KindXML:
		s, n := text()
		v := View{Name: "XML", Kind: kind, Lang: "xml", Text: s, Partial: partial, Note: n}
		if p, err := IndentXML(s); err == nil {
			v.Text = p
		} else {
			v.Note = addNote("not well-formed XML (" + err.Error() + "); shown as sent")
		}
		return []View{v}
	case KindHTML, KindJavaScript, KindCSS:
		s, n := text()
		name := map[Kind]string{KindHTML: "HTML", KindJavaScript: "JavaScript", KindCSS: "CSS"}[kind]
		return []View{{Name: name, Kind: kind, Lang: kind.Lang(), Text: s, Partial: partial, Note: n}}
	case KindText:
		s, n := text()
		return []View{{Name: "Text", Kind: kind, Text: s, Partial: partial, Note: n}}
	case KindImage:
		n := note
		if cfg, format, err := image.DecodeConfig(bytes.NewReader(dec)); err == nil {
			n = addNote(fmt.Sprintf("%s %d×%d", format, cfg.Width, cfg.Height))
		}
		return []View{{Name: "Image", Kind: kind, Text: hexDump(dec, 4096), Partial: partial, Note: n}}
	case KindSSE:
		return sseViews(dec, partial, note)
	case KindGRPC, KindGRPCWeb, KindGRPCWebText, KindConnect:
		return grpcViews(kind, h, dec, opts, partial, note)
	case KindProtobuf:
		return []View{protoView("Protobuf", dec, opts, partial, note)}
	case KindMultipart:
		return []View{multipartView(ct, dec, opts, partial, note)}
	case KindForm:
		s, n := text()
		rows := FormFields(s)
		var sb strings.Builder
		for _, r := range rows {
			fmt.Fprintf(&sb, "%s = %s\n", r[0], r[1])
		}
		return []View{{Name: "Form", Kind: kind, Text: sb.String(), Rows: rows, Partial: partial, Note: n}}
	}
	out := []View{{Name: "Hex", Kind: KindBinary, Text: hexDump(dec, 64<<10), Partial: partial || len(dec) > 64<<10, Note: note}}
	// Many apps send protobuf as application/octet-stream: offer the schemaless reading
	// when the whole body parses as a message.
	if len(dec) >= 2 && len(dec) <= 4<<20 {
		if fields, err := DecodeProtoRaw(dec); err == nil && len(fields) > 0 {
			out = append(out, View{Name: "Protobuf (guess)", Kind: KindProtobuf, Text: FormatProtoRaw(fields),
				Note: "the body parses as a protobuf message; fields by number"})
		}
	}
	return out
}

func isGRPCType(mt string) bool {
	k, _ := KindOfType(mt)
	return k == KindGRPC || k == KindGRPCWeb || k == KindGRPCWebText || k == KindConnect
}

func graphQLViews(ops []GraphQLOp, note string) []View {
	var out []View
	for i, op := range ops {
		name := "GraphQL"
		if len(ops) > 1 {
			name = fmt.Sprintf("GraphQL %d", i+1)
		}
		title := op.Type
		if op.Name != "" {
			title += " " + op.Name
		}
		v := View{Name: name, Kind: KindGraphQL, Lang: "graphql", Text: "# " + title + "\n" + op.Query + "\n", Note: note}
		if op.Persisted != "" {
			v.Text = "# " + title + "\n# persisted query sha256 " + op.Persisted + "\n" + op.Query
		}
		if op.Error != "" {
			v.Note = joinNote(note, "query does not parse: "+op.Error)
		}
		out = append(out, v)
		if op.Variables != "" {
			out = append(out, View{Name: strings.Replace(name, "GraphQL", "Variables", 1), Kind: KindGraphQL, Lang: "json", Text: op.Variables})
		}
	}
	return out
}

func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

func sseViews(dec []byte, partial bool, note string) []View {
	evs := ParseSSE(dec)
	var sb strings.Builder
	open := false
	for i, e := range evs {
		fmt.Fprintf(&sb, "#%d", i+1)
		if e.Event != "" {
			fmt.Fprintf(&sb, " event: %s", e.Event)
		}
		if e.ID != "" {
			fmt.Fprintf(&sb, " id: %s", e.ID)
		}
		if e.Retry >= 0 {
			fmt.Fprintf(&sb, " retry: %d", e.Retry)
		}
		if e.Partial {
			sb.WriteString(" (incomplete)")
			open = true
		}
		sb.WriteByte('\n')
		for _, c := range e.Comments {
			fmt.Fprintf(&sb, ": %s\n", c)
		}
		if p, ok := IndentJSON(e.Data); ok && strings.HasPrefix(strings.TrimSpace(e.Data), "{") || ok && strings.HasPrefix(strings.TrimSpace(e.Data), "[") {
			sb.WriteString(p)
		} else {
			sb.WriteString(e.Data)
		}
		sb.WriteString("\n\n")
	}
	v := View{Name: "Events", Kind: KindSSE, Text: sb.String(), Partial: partial || open,
		Note: joinNote(note, fmt.Sprintf("%d events", len(evs)))}
	out := []View{v}
	if t, done, ok := LLMText(evs); ok {
		n := "streamed text joined"
		if !done {
			n += "; no end marker (stream open or cut)"
		}
		out = append(out, View{Name: "LLM text", Kind: KindSSE, Text: t, Partial: !done, Note: n})
	}
	return out
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

func multipartView(ct string, dec []byte, opts Options, partial bool, note string) View {
	parts, err := SplitMultipart(ct, dec, opts.Limit)
	var sb strings.Builder
	var rows [][2]string
	for i, p := range parts {
		title := fmt.Sprintf("part %d", i+1)
		if p.Name != "" {
			title += " name=" + p.Name
		}
		if p.FileName != "" {
			title += " filename=" + p.FileName
		}
		fmt.Fprintf(&sb, "── %s (%d bytes%s)\n", title, p.Size, map[bool]string{true: ", cut", false: ""}[p.Partial])
		for k, vs := range p.Header {
			for _, v := range vs {
				fmt.Fprintf(&sb, "%s: %s\n", k, v)
			}
		}
		sb.WriteByte('\n')
		ph := p.PartHeader()
		body, _, _, derr := Decode(ph, p.Body, opts.Limit)
		if derr != nil {
			body = p.Body
		}
		switch k := Detect(ph, body); {
		case k == KindImage:
			sb.WriteString("[image]\n")
			if cfg, format, err := image.DecodeConfig(bytes.NewReader(body)); err == nil {
				fmt.Fprintf(&sb, "[%s %d×%d]\n", format, cfg.Width, cfg.Height)
			}
		case k.Textual() || looksText(body):
			s, _ := Text(ph.Get("Content-Type"), body)
			sb.WriteString(s)
			sb.WriteByte('\n')
		default:
			sb.WriteString(hexDump(body, 4096))
		}
		sb.WriteByte('\n')
		val := fmt.Sprintf("%d bytes", p.Size)
		if looksText(p.Body) && len(p.Body) <= 256 && utf8.Valid(p.Body) {
			val = string(p.Body)
		}
		rows = append(rows, [2]string{title, val})
	}
	v := View{Name: "Parts", Kind: KindMultipart, Text: sb.String(), Rows: rows, Partial: partial,
		Note: joinNote(note, fmt.Sprintf("%d parts", len(parts)))}
	if err != nil {
		v.Note = joinNote(v.Note, err.Error())
		if len(parts) == 0 {
			v.Text = hexDump(dec, 64<<10)
		}
	}
	return v
}

func jwtView(j JWT) View {
	doc := struct {
		Where     string          `json:"where"`
		Times     []string        `json:"times,omitempty"`
		Header    json.RawMessage `json:"header"`
		Claims    json.RawMessage `json:"claims"`
		Signature string          `json:"signature"`
	}{j.Where, j.Times, json.RawMessage(j.Header), json.RawMessage(j.Claims),
		fmt.Sprintf("%d bytes, not verified", j.Signature)}
	b, _ := json.MarshalIndent(doc, "", "  ")
	note := j.Alg
	if j.Expired {
		note += "; expired"
	}
	for _, t := range j.Times {
		if strings.HasPrefix(t, "exp:") {
			note += "; " + strings.TrimPrefix(t, "exp: ")
		}
	}
	return View{Name: "JWT (" + j.Where + ")", Kind: KindJWT, Lang: "json", Text: string(b), Note: note}
}

func capView(v *View, max int) {
	if len(v.Text) <= max {
		return
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(v.Text[cut]) {
		cut--
	}
	more := len(v.Text) - cut
	v.Text = v.Text[:cut]
	v.Partial = true
	v.Note = joinNote(v.Note, fmt.Sprintf("%d more bytes not shown", more))
}

func hexDump(b []byte, max int) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) <= max {
		return hexDumpAll(b)
	}
	return hexDumpAll(b[:max]) + fmt.Sprintf("… %d more bytes not shown\n", len(b)-max)
}
