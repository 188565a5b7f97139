package content

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"inspector/engine/session"
)

// View is one named reading of a message: a decoded, pretty-printed body, a list of
// gRPC messages or SSE events, a GraphQL query, a JWT. The window shows each as a tab
// (text coloured by Lang in ui/render), `inspector show --json` prints them.
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
	if c, ok := LLMCallOf(s); ok && s.Response != nil {
		resp = append(resp, llmView(c))
	}
	return req, resp
}

// Input is what a viewer reads: one message's decoded body with its headers, the
// detected kind, the options, and what is known already (Partial, Note).
type Input struct {
	Header  http.Header
	Body    []byte // decoded (Content-Encoding undone)
	Kind    Kind
	Options Options
	Partial bool
	Note    string // "decoded from br", capture notes
}

// AddNote joins n to the input's note.
func (in *Input) AddNote(n string) string { return joinNote(in.Note, n) }

// Text returns the body as UTF-8 (Text with the Content-Type) and the note with the
// charset added when it is not UTF-8.
func (in *Input) Text() (text, note string) {
	s, cs := Text(in.Header.Get("Content-Type"), in.Body)
	if cs != "utf-8" {
		return s, in.AddNote("charset " + cs)
	}
	return s, in.Note
}

// A Viewer builds the views of one body kind.
type Viewer func(in *Input) []View

var viewers = map[Kind]Viewer{}

// Register makes v the viewer of kind k (each kind's file registers its own in init, so
// adding a kind touches one file). Kinds without a viewer get the binary views.
func Register(k Kind, v Viewer) { viewers[k] = v }

func bodyViews(h http.Header, dec []byte, opts Options, partial bool, note string) []View {
	in := &Input{Header: h, Body: dec, Kind: Detect(h, dec), Options: opts, Partial: partial, Note: note}
	if in.Kind == KindGraphQL && !opts.Request {
		in.Kind = KindJSON // a GraphQL response is JSON; the JSON viewer adds its errors
	}
	if v, ok := viewers[in.Kind]; ok {
		return v(in)
	}
	return binaryViews(in)
}

func isGRPCType(mt string) bool {
	k, _ := KindOfType(mt)
	return k == KindGRPC || k == KindGRPCWeb || k == KindGRPCWebText || k == KindConnect
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
