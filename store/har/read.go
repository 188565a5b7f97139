package har

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	bodyc "inspector/content"
	"inspector/engine/session"
)

// Error is an invalid HAR document. Entry is the 0-based index into log.entries, or -1
// for problems with the document itself; Field is the JSON path inside the entry (or the
// document), e.g. "response.status".
type Error struct {
	Entry int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("har: ")
	if e.Entry >= 0 {
		fmt.Fprintf(&b, "entry %d: ", e.Entry)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Limits bound what Read accepts, so a hostile file cannot exhaust memory.
type Limits struct {
	MaxDocument int64 // bytes of the whole document
	MaxBody     int64 // decoded bytes of one body or WebSocket message
	MaxEntries  int
	// SpillDir, when set, receives the bytes of bodies longer than SpillAbove: the
	// body's first SpillAbove bytes are in Body.Data and the rest in a file there
	// (Body.Spilled), so memory stays bounded whatever a body's size (bigtext.go). The
	// files belong to Decode's fn once it is called (store.ImportStream stores and
	// removes them). Empty: every body is held in memory.
	SpillDir string
	// SpillAbove is the body bytes kept in memory with SpillDir; 0 means 1 MiB.
	SpillAbove int64
}

// DefaultLimits are used by Read.
var DefaultLimits = Limits{MaxDocument: 2 << 30, MaxBody: 256 << 20, MaxEntries: 10_000_000}

// Result is what ReadAll returns.
type Result struct {
	// Sessions in document order, with FlagImported set and ID 0 (the store assigns ids).
	Sessions []*session.Session
	// SourceIDs[i] is the `_id` the exporting Inspector gave Sessions[i], 0 when absent.
	// ReplayOf values refer to these ids; an importer that assigns new ids can remap them.
	SourceIDs []session.ID
	// Creator is log.creator.name + " " + log.creator.version, when present.
	Creator string
}

// Read parses a whole HAR document and returns its sessions (Flags has FlagImported, ID 0:
// the store assigns ids). It validates everything before returning: on any error it returns
// no sessions and an error that says where (entry index, field) and what is wrong.
// The error is an *Error.
func Read(r io.Reader) ([]*session.Session, error) {
	res, err := ReadAll(r, DefaultLimits)
	if err != nil {
		return nil, err
	}
	return res.Sessions, nil
}

// ReadAll is Read with explicit limits and the source ids. On error it returns nil and
// an *Error. It holds every session in memory (lim.SpillDir is not used); Decode streams.
func ReadAll(r io.Reader, lim Limits) (*Result, error) {
	lim.SpillDir = ""
	res := &Result{}
	creator, err := Decode(r, lim, func(s *session.Session, src session.ID) error {
		res.Sessions = append(res.Sessions, s)
		res.SourceIDs = append(res.SourceIDs, src)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if res.Sessions == nil {
		res.Sessions, res.SourceIDs = []*session.Session{}, []session.ID{}
	}
	res.Creator = creator
	return res, nil
}

// Decode reads a HAR document entry by entry and calls fn with each entry's session (Flags
// has FlagImported, ID 0) and the `_id` the exporting Inspector gave it (0 when absent), in
// document order. It holds one entry at a time: memory is bounded by the largest entry
// (Limits.MaxBody), whatever the document's size. It returns log.creator ("name version").
//
// It validates the whole document, but streams: when it returns an error (an *Error, or
// fn's own error as it is), fn may already have been called for the entries before the bad
// one, so a caller that must be all-or-nothing undoes what fn did (store.ImportStream
// does). Inspector's own exports (log.creator before log.entries, as Writer writes them)
// skip the guess whether a body without "_raw" is still content-encoded; a creator placed
// after the entries is not used for that guess.
func Decode(r io.Reader, lim Limits, fn func(s *session.Session, sourceID session.ID) error) (string, error) {
	d := &docReader{lim: lim, fn: fn}
	d.cr = &countReader{r: io.LimitReader(r, lim.MaxDocument+1)}
	if lim.SpillDir != "" {
		d.div = newDiverter(d.cr, lim)
		defer d.div.discard()
		d.dec = json.NewDecoder(d.div)
	} else {
		d.dec = json.NewDecoder(d.cr)
	}
	err := d.document()
	if d.cr.n > lim.MaxDocument {
		return "", &Error{Entry: -1, Msg: fmt.Sprintf("document larger than %d bytes", lim.MaxDocument)}
	}
	if d.cr.err != nil && !errors.Is(d.cr.err, io.EOF) {
		return "", &Error{Entry: -1, Msg: "reading: " + d.cr.err.Error()}
	}
	if ef, ok := err.(errFn); ok {
		return "", ef.err
	}
	if err != nil {
		return "", err
	}
	return d.creator, nil
}

// countReader counts the bytes and newlines read through it, and keeps the first read
// error (json.Decoder turns some into syntax errors).
type countReader struct {
	r        io.Reader
	n, lines int64
	err      error
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.lines += int64(bytes.Count(p[:n], []byte{'\n'}))
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// docReader walks a HAR document's structure token by token (see Decode).
type docReader struct {
	lim     Limits
	fn      func(*session.Session, session.ID) error
	cr      *countReader
	div     *diverter // nil without Limits.SpillDir
	dec     *json.Decoder
	creator string
	ours    bool
	entries int
}

// errFn marks an error returned by Decode's fn, passed through as it is.
type errFn struct{ err error }

func (e errFn) Error() string { return e.err.Error() }

func (d *docReader) document() error {
	tok, err := d.dec.Token()
	if err != nil {
		return d.jsonError(err)
	}
	if tok != json.Delim('{') {
		return &Error{Entry: -1, Msg: "not a HAR document: the top level is " + tokenKind(tok) + ", want an object with \"log\""}
	}
	seenLog := false
	for d.dec.More() {
		key, err := d.key()
		if err != nil {
			return err
		}
		if key != "log" || seenLog {
			if err := d.skip(); err != nil {
				return err
			}
			continue
		}
		seenLog = true
		if err := d.log(); err != nil {
			return err
		}
	}
	if _, err := d.dec.Token(); err != nil { // the closing '}'
		return d.jsonError(err)
	}
	if _, err := d.dec.Token(); err != io.EOF {
		if err != nil {
			return d.jsonError(err)
		}
		return d.syntaxError("invalid data after the top-level object")
	}
	if !seenLog {
		return &Error{Entry: -1, Msg: `not a HAR document: no "log" object at the top level`}
	}
	return nil
}

// open reads the token that starts the value of field, which must be delim; a null is
// the error missing.
func (d *docReader) open(delim json.Delim, field string, missing *Error) error {
	tok, err := d.dec.Token()
	if err != nil {
		return d.jsonError(err)
	}
	if tok == nil {
		return missing
	}
	if tok != delim {
		want := "an object"
		if delim == '[' {
			want = "an array"
		}
		return &Error{Entry: -1, Field: field, Msg: "want " + want + ", got " + tokenKind(tok)}
	}
	return nil
}

func (d *docReader) log() error {
	if err := d.open('{', "log", &Error{Entry: -1, Msg: `not a HAR document: no "log" object at the top level`}); err != nil {
		return err
	}
	seenEntries := false
	for d.dec.More() {
		key, err := d.key()
		if err != nil {
			return err
		}
		switch key {
		case "version":
			var v any
			if err := d.dec.Decode(&v); err != nil {
				return d.jsonError(err)
			}
			if s, ok := v.(string); v != nil && (!ok || s != "" && !strings.HasPrefix(s, "1.")) {
				return &Error{Entry: -1, Field: "log.version", Msg: fmt.Sprintf("unsupported HAR version %v (want 1.x)", v)}
			}
		case "creator":
			var c *harCreator
			if err := d.dec.Decode(&c); err != nil {
				return d.fieldError("log.creator", err)
			}
			if c != nil {
				d.creator = strings.TrimSpace(c.Name + " " + c.Version)
				d.ours = c.Name == Creator
			}
		case "entries":
			if seenEntries {
				return &Error{Entry: -1, Field: "log.entries", Msg: "appears twice"}
			}
			if err := d.entryList(); err != nil {
				return err
			}
			seenEntries = true
		default:
			if err := d.skip(); err != nil {
				return err
			}
		}
	}
	if _, err := d.dec.Token(); err != nil {
		return d.jsonError(err)
	}
	if !seenEntries {
		return &Error{Entry: -1, Field: "log.entries", Msg: `not a HAR document: no "entries" array`}
	}
	return nil
}

func (d *docReader) entryList() error {
	if err := d.open('[', "log.entries", &Error{Entry: -1, Field: "log.entries", Msg: `not a HAR document: no "entries" array`}); err != nil {
		return err
	}
	for d.dec.More() {
		if d.entries == d.lim.MaxEntries {
			return &Error{Entry: -1, Field: "log.entries", Msg: fmt.Sprintf("entries: more than the limit %d", d.lim.MaxEntries)}
		}
		i := d.entries
		d.entries++
		var re rEntry
		if err := d.dec.Decode(&re); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
				return d.jsonError(err)
			}
			return entryJSONError(i, err)
		}
		s, e := re.session(d.lim, d.ours, d.div)
		d.div.discard() // diverted "text" values of other fields
		if e != nil {
			e.Entry = i
			return e
		}
		if err := d.fn(s, session.ID(re.ID)); err != nil {
			return errFn{err}
		}
	}
	if _, err := d.dec.Token(); err != nil {
		return d.jsonError(err)
	}
	return nil
}

// key reads an object key.
func (d *docReader) key() (string, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return "", d.jsonError(err)
	}
	k, _ := tok.(string)
	return k, nil
}

// skip reads past one value without keeping it (beyond one token at a time).
func (d *docReader) skip() error {
	depth := 0
	for {
		tok, err := d.dec.Token()
		if err != nil {
			return d.jsonError(err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// position is the line and byte offset the decoder has reached.
func (d *docReader) position() (line, offset int64) {
	buffered, _ := io.ReadAll(d.dec.Buffered())
	off := d.dec.InputOffset()
	if d.div != nil {
		off = d.div.inputOffset(off)
	}
	return 1 + d.cr.lines - int64(bytes.Count(buffered, []byte{'\n'})), off
}

func (d *docReader) syntaxError(msg string) *Error {
	line, off := d.position()
	return &Error{Entry: -1, Msg: fmt.Sprintf("not valid JSON at line %d (byte %d): %s", line, off, msg)}
}

// jsonError describes a decoder error: a syntax error or a document cut short.
func (d *docReader) jsonError(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return d.syntaxError(se.Error())
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return d.syntaxError("unexpected end of JSON input (the file is truncated)")
	}
	return &Error{Entry: -1, Msg: "not valid JSON: " + err.Error()}
}

// fieldError describes an error decoding the document-level field.
func (d *docReader) fieldError(field string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			field += "." + te.Field
		}
		return &Error{Entry: -1, Field: field, Msg: "want " + jsonType(te.Type.String()) + ", got " + article(te.Value)}
	}
	return d.jsonError(err)
}

// tokenKind names what a token starts, with its article.
func tokenKind(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		if tok == json.Delim('[') {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "true or false"
	case nil:
		return "null"
	}
	return "something else"
}

func jsonType(t string) string {
	switch t {
	case "float64", "int", "int64", "uint64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	}
	if strings.HasPrefix(t, "[]") {
		return "an array"
	}
	return "an object"
}

func article(v string) string {
	switch v {
	case "array", "object":
		return "an " + v
	case "":
		return "something else"
	}
	if strings.HasPrefix(v, "number") {
		return "a number"
	}
	return "a " + v
}

func entryJSONError(i int, err error) *Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return &Error{Entry: i, Msg: "want an object, got " + article(te.Value)}
		}
		return &Error{Entry: i, Field: te.Field, Msg: "want " + jsonType(te.Type.String()) + ", got " + article(te.Value)}
	}
	return &Error{Entry: i, Msg: err.Error()}
}

// Read-side types: lenient about what browsers leave out, pointers where absence matters.
type rEntry struct {
	StartedDateTime *string         `json:"startedDateTime"`
	Request         *rRequest       `json:"request"`
	Response        *rResponse      `json:"response"`
	Timings         *rTimings       `json:"timings"`
	ServerIPAddress string          `json:"serverIPAddress"`
	Connection      json.RawMessage `json:"connection"`
	Comment         string          `json:"comment"`
	ID              uint64          `json:"_id"`
	ClientProto     *string         `json:"_clientProto"`
	UpstreamProto   *string         `json:"_upstreamProto"`
	ClientAddress   string          `json:"_clientAddress"`
	ClientConn      string          `json:"_clientConnection"`
	ClientReused    bool            `json:"_clientReused"`
	UpstreamReused  bool            `json:"_upstreamReused"`
	Error           json.RawMessage `json:"_error"`
	TLS             *harTLSPair     `json:"_tls"`
	Flags           []string        `json:"_flags"`
	ReplayOf        uint64          `json:"_replayOf"`
	Truncated       *truncated      `json:"_truncated"`
	Mark            string          `json:"_mark"`
	WSMessages      []wsMessage     `json:"_webSocketMessages"`
	Interim         []rInterim      `json:"_interim"`
	fingerprints
}

type rInterim struct {
	Status  int          `json:"status"`
	Headers []rNameValue `json:"headers"`
	Time    string       `json:"time"`
}

type rNameValue struct {
	Name  *string `json:"name"`
	Value *string `json:"value"`
}

type rRequest struct {
	Method      *string      `json:"method"`
	URL         *string      `json:"url"`
	HTTPVersion string       `json:"httpVersion"`
	Headers     []rNameValue `json:"headers"`
	PostData    *struct {
		MimeType  string       `json:"mimeType"`
		Params    []rNameValue `json:"params"`
		Text      *string      `json:"text"`
		Encoding  string       `json:"encoding"`
		XEncoding string       `json:"_encoding"`
	} `json:"postData"`
	HeadersSize *float64 `json:"headersSize"`
	BodySize    *float64 `json:"bodySize"`
}

type rResponse struct {
	Status      *float64     `json:"status"`
	StatusText  string       `json:"statusText"`
	HTTPVersion string       `json:"httpVersion"`
	Headers     []rNameValue `json:"headers"`
	Content     *struct {
		Size        *float64 `json:"size"`
		Compression *float64 `json:"compression"`
		Text        *string  `json:"text"`
		Encoding    string   `json:"encoding"`
		Raw         bool     `json:"_raw"`
	} `json:"content"`
	HeadersSize *float64        `json:"headersSize"`
	BodySize    *float64        `json:"bodySize"`
	Error       json.RawMessage `json:"_error"` // Chrome: a string or null
}

type rTimings struct {
	Blocked, DNS, Connect, SSL, Send, Wait, Receive *float64
}

func errf(field, format string, args ...any) *Error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// num returns *f or def; it rejects NaN/Inf-free non-integers where integer is set.
func intField(f *float64, field string, def int64, minV int64) (int64, *Error) {
	if f == nil {
		return def, nil
	}
	v := *f
	if v != math.Trunc(v) || v < float64(minV) || v > 1<<53 {
		return 0, errf(field, "want a whole number >= %d, got %v", minV, v)
	}
	return int64(v), nil
}

func msField(f *float64, field string) (float64, *Error) {
	if f == nil {
		return -1, nil
	}
	if *f < -1 || *f > 1e12 || math.IsNaN(*f) {
		return 0, errf(field, "want milliseconds >= -1, got %v", *f)
	}
	return *f, nil
}

func protoFromHAR(v string) string {
	switch l := strings.ToLower(strings.TrimSpace(v)); {
	case l == "http/1.1":
		return session.HTTP1
	case l == "http/1.0":
		return "http/1.0"
	case l == "http/2" || l == "http/2.0" || l == "h2" || l == "h2c":
		return session.HTTP2
	case l == "http/3" || l == "http/3.0" || strings.HasPrefix(l, "h3"):
		return session.HTTP3
	}
	return v
}

func readHeaders(list []rNameValue, field string) (http.Header, *Error) {
	h := http.Header{}
	for i, nv := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		if nv.Name == nil || *nv.Name == "" {
			return nil, errf(f+".name", "missing or empty header name")
		}
		if strings.HasPrefix(*nv.Name, ":") { // HTTP/2 pseudo-headers: the URL and status carry them
			continue
		}
		// A CR or LF here would forge header lines wherever the headers are printed.
		if !httpguts.ValidHeaderFieldName(*nv.Name) {
			return nil, errf(f+".name", "%q is not a valid header name (RFC 9110 token)", *nv.Name)
		}
		v := ""
		if nv.Value != nil {
			v = *nv.Value
		}
		if !httpguts.ValidHeaderFieldValue(v) {
			return nil, errf(f+".value", "%q has control characters not allowed in a header value (RFC 9110)", v)
		}
		h.Add(*nv.Name, v)
	}
	if len(h) == 0 {
		return nil, nil
	}
	return h, nil
}

// lineText rejects control characters (CR, LF, …) in a field printed in a request or
// status line.
func lineText(field, v string) *Error {
	if !httpguts.ValidHeaderFieldValue(v) {
		return errf(field, "%q has control characters", v)
	}
	return nil
}

func decodeText(text *string, enc, field string, lim Limits) ([]byte, *Error) {
	if text == nil {
		return nil, nil
	}
	switch strings.ToLower(enc) {
	case "":
		if int64(len(*text)) > lim.MaxBody {
			return nil, errf(field, "body of %d bytes exceeds the limit of %d", len(*text), lim.MaxBody)
		}
		return []byte(*text), nil
	case "base64":
		if n := int64(base64.StdEncoding.DecodedLen(len(*text))); n > lim.MaxBody+3 {
			return nil, errf(field, "base64 body of about %d bytes exceeds the limit of %d", n, lim.MaxBody)
		}
		b, err := base64.StdEncoding.DecodeString(*text)
		if err != nil {
			return nil, errf(field, "bad base64: %v", err)
		}
		if int64(len(b)) > lim.MaxBody {
			return nil, errf(field, "body of %d bytes exceeds the limit of %d", len(b), lim.MaxBody)
		}
		return b, nil
	}
	return nil, errf(field, "unsupported encoding %q (want base64 or none)", enc)
}

// encode applies encs (gzip/deflate) in order: the inverse of decodeAll.
func encode(data []byte, encs []string) []byte {
	out, _ := bodyc.Encode(encs, data) // encs are supportedCodings; data untouched otherwise
	return out
}

// bodyText decodes a body's text into b's Data, or Data and a spill file for a
// diverted one, and returns the body's length.
func bodyText(b *session.Body, text *string, enc, field string, lim Limits, div *diverter) (int64, *Error) {
	if text != nil {
		if t := div.take(*text); t != nil {
			data, path, size, e := decodeBig(t, enc, field, lim)
			b.Data, b.Spilled = data, path
			return size, e
		}
	}
	data, e := decodeText(text, enc, field, lim)
	b.Data = data
	return int64(len(data)), e
}

// removeSpilled deletes the spill files of an entry that failed.
func removeSpilled(s *session.Session) {
	for _, b := range []*session.Body{&s.Request.Body, responseBody(s)} {
		if b != nil && b.Spilled != "" {
			os.Remove(b.Spilled)
			b.Spilled = ""
		}
	}
}

func responseBody(s *session.Session) *session.Body {
	if s.Response == nil {
		return nil
	}
	return &s.Response.Body
}

func (re *rEntry) session(lim Limits, ours bool, div *diverter) (*session.Session, *Error) {
	s := &session.Session{Flags: flagsFromNames(re.Flags) | session.FlagImported}
	if e := re.fill(s, lim, ours, div); e != nil {
		removeSpilled(s)
		return nil, e
	}
	return s, nil
}

func (re *rEntry) fill(s *session.Session, lim Limits, ours bool, div *diverter) *Error {
	if re.StartedDateTime == nil {
		return errf("startedDateTime", "missing")
	}
	started, err := time.Parse(time.RFC3339Nano, *re.StartedDateTime)
	if err != nil {
		return errf("startedDateTime", "want an ISO 8601 date-time, got %q", *re.StartedDateTime)
	}
	s.Started = started.UTC()
	if y := s.Started.Year(); y < 1 || y > 9999 {
		// HAR (and our own export) writes four-digit UTC years only.
		return errf("startedDateTime", "%q is outside the years 0001–9999 in UTC", *re.StartedDateTime)
	}

	// Request.
	rq := re.Request
	if rq == nil {
		return errf("request", "missing")
	}
	if rq.Method == nil || *rq.Method == "" {
		return errf("request.method", "missing or empty")
	}
	if !httpguts.ValidHeaderFieldName(*rq.Method) { // a method is a token
		return errf("request.method", "%q is not an HTTP method", *rq.Method)
	}
	if rq.URL == nil {
		return errf("request.url", "missing")
	}
	u, perr := url.Parse(*rq.URL)
	if perr != nil || u.Scheme == "" || u.Host == "" && u.Opaque == "" {
		return errf("request.url", "%q is not an absolute URL", *rq.URL)
	}
	s.Request.Method = *rq.Method
	s.Request.URL = *rq.URL
	if e := lineText("request.httpVersion", rq.HTTPVersion); e != nil {
		return e
	}
	s.Request.Proto = protoFromHAR(rq.HTTPVersion)
	var e *Error
	if s.Request.Header, e = readHeaders(rq.Headers, "request.headers"); e != nil {
		return e
	}
	if s.Request.HeadSize, e = intField(rq.HeadersSize, "request.headersSize", -1, -1); e != nil {
		return e
	}
	s.Request.HeadSize = max(s.Request.HeadSize, 0)
	reqSize, e := intField(rq.BodySize, "request.bodySize", -1, -1)
	if e != nil {
		return e
	}
	if pd := rq.PostData; pd != nil {
		enc := pd.Encoding
		if enc == "" {
			enc = pd.XEncoding
		}
		reqLen, e := bodyText(&s.Request.Body, pd.Text, enc, "request.postData.text", lim, div)
		if e != nil {
			return e
		}
		if reqSize < 0 {
			reqSize = reqLen
		}
		if pd.Text == nil && len(pd.Params) > 0 {
			var parts []string
			for _, p := range pd.Params {
				var n, v string
				if p.Name != nil {
					n = *p.Name
				}
				if p.Value != nil {
					v = *p.Value
				}
				parts = append(parts, url.QueryEscape(n)+"="+url.QueryEscape(v))
			}
			s.Request.Body.Data = []byte(strings.Join(parts, "&"))
		}
		if s.Request.Header.Get("Content-Type") == "" && pd.MimeType != "" {
			if s.Request.Header == nil {
				s.Request.Header = http.Header{}
			}
			s.Request.Header.Set("Content-Type", pd.MimeType)
		}
	}
	s.Request.Body.Size = reqSize
	if reqSize < 0 {
		s.Request.Body.Size = int64(len(s.Request.Body.Data))
	}

	// Response; status 0 (a failed request, as Chrome writes it) means none.
	hasResp := false
	if rp := re.Response; rp != nil {
		if rp.Status == nil {
			return errf("response.status", "missing")
		}
		st, e := intField(rp.Status, "response.status", 0, 0)
		if e != nil {
			return e
		}
		if st > 999 {
			return errf("response.status", "%d is not an HTTP status", st)
		}
		if st > 0 {
			hasResp = true
			if e := lineText("response.statusText", rp.StatusText); e != nil {
				return e
			}
			if e := lineText("response.httpVersion", rp.HTTPVersion); e != nil {
				return e
			}
			resp := &session.Response{Status: int(st), Reason: rp.StatusText, Proto: protoFromHAR(rp.HTTPVersion)}
			if resp.Header, e = readHeaders(rp.Headers, "response.headers"); e != nil {
				return e
			}
			if resp.HeadSize, e = intField(rp.HeadersSize, "response.headersSize", -1, -1); e != nil {
				return e
			}
			resp.HeadSize = max(resp.HeadSize, 0)
			bodySize, e := intField(rp.BodySize, "response.bodySize", -1, -1)
			if e != nil {
				return e
			}
			size, compression := int64(-1), int64(-1)
			bodyLen := int64(0) // the stored body's length
			encs := encodings(resp.Header)
			if c := rp.Content; c != nil {
				if size, e = intField(c.Size, "response.content.size", -1, -1); e != nil {
					return e
				}
				if compression, e = intField(c.Compression, "response.content.compression", -1, math.MinInt32); e != nil {
					return e
				}
				full, e := bodyText(&resp.Body, c.Text, c.Encoding, "response.content.text", lim, div)
				s.Response = resp // its spill file is removed if the entry fails
				if e != nil {
					return e
				}
				data := resp.Body.Data
				switch {
				case resp.Body.Spilled != "":
					if c.Raw || len(encs) == 0 || !supportedCodings(encs) || !ours && looksEncoded(data, encs) {
						break
					}
					if e := encodeBig(&resp.Body, encs, lim); e != nil {
						return e
					}
					data, full = resp.Body.Data, resp.Body.Size
				case c.Raw || len(data) == 0 || len(encs) == 0 || !supportedCodings(encs):
					// As transferred, or nothing to re-encode. Browsers export br/zstd
					// bodies decoded; those stay decoded.
				case !ours && alreadyEncoded(data, encs):
				default:
					// Browsers export decoded text; store it as it travelled.
					data = encode(data, encs)
					full = int64(len(data))
				}
				resp.Body.Data = data
				bodyLen = full
			}
			switch {
			case bodySize >= 0:
				resp.Body.Size = bodySize
			case compression >= 0 && size >= 0:
				resp.Body.Size = size - compression
			case size >= 0 && len(encs) == 0:
				resp.Body.Size = size
			default:
				resp.Body.Size = bodyLen
			}
			s.Response = resp
		}
		if s.Error == nil && len(rp.Error) > 0 {
			var msg string
			if json.Unmarshal(rp.Error, &msg) == nil && msg != "" {
				s.Error = &session.Error{Phase: session.PhaseResponse, Side: session.SideUpstream, Message: msg}
			}
		}
	}

	// Inspector's own fields.
	if len(re.Error) > 0 && string(re.Error) != "null" {
		var he harError
		var msg string
		switch {
		case json.Unmarshal(re.Error, &he) == nil:
			s.Error = &session.Error{Phase: session.Phase(he.Phase), Side: session.Side(he.Side), Proto: he.Proto, Message: he.Message}
		case json.Unmarshal(re.Error, &msg) == nil:
			if msg != "" {
				s.Error = &session.Error{Phase: session.PhaseResponse, Side: session.SideUpstream, Message: msg}
			}
		default:
			return errf("_error", "want an object {phase, side, message} or a string")
		}
	}
	if re.ClientProto != nil {
		s.Client.Proto = *re.ClientProto
	} else {
		s.Client.Proto = s.Request.Proto
	}
	if re.UpstreamProto != nil {
		s.Upstream.Proto = *re.UpstreamProto
	} else if s.Response != nil {
		s.Upstream.Proto = s.Response.Proto
	}
	s.Client.Addr = re.ClientAddress
	s.Client.Reused, s.Upstream.Reused = re.ClientReused, re.UpstreamReused
	if re.ClientConn != "" {
		s.Client.ConnID, _ = strconv.ParseUint(re.ClientConn, 10, 64)
	}
	if len(re.Connection) > 0 {
		var c string
		if json.Unmarshal(re.Connection, &c) != nil {
			c = string(re.Connection) // a number
		}
		s.Upstream.ConnID, _ = strconv.ParseUint(c, 10, 64)
	}
	if ip := strings.Trim(re.ServerIPAddress, "[]"); ip != "" {
		s.Upstream.Addr = ip
		if port := urlPort(u); port != "" {
			s.Upstream.Addr = net.JoinHostPort(ip, port)
		}
	}
	if re.TLS != nil {
		s.Client.TLS, s.Upstream.TLS = tlsIn(re.TLS.Client), tlsIn(re.TLS.Upstream)
	}
	f := &re.fingerprints
	if f.JA4 != "" || f.JA3 != "" || f.JA3Raw != "" || f.H2FP != "" {
		s.Client.Fingerprint = &session.Fingerprint{JA4: f.JA4, JA3: f.JA3, JA3Raw: f.JA3Raw, H2: f.H2FP}
	}
	if f.UpJA4 != "" || f.UpJA3 != "" || f.UpJA3Raw != "" || f.UpH2FP != "" || f.Mirror != "" {
		s.Upstream.Fingerprint = &session.Fingerprint{JA4: f.UpJA4, JA3: f.UpJA3, JA3Raw: f.UpJA3Raw, H2: f.UpH2FP, Mirror: f.Mirror}
	}
	s.ReplayOf = session.ID(re.ReplayOf)
	s.Mark, s.Comment = re.Mark, re.Comment
	if t := re.Truncated; t != nil {
		s.Request.Body.Truncated = t.Request
		if s.Response != nil {
			s.Response.Body.Truncated = t.Response
		}
	}
	for i, in := range re.Interim {
		f := fmt.Sprintf("_interim[%d]", i)
		if in.Status < 100 || in.Status > 199 {
			return errf(f+".status", "want an informational status (100–199), got %d", in.Status)
		}
		at, err := time.Parse(time.RFC3339Nano, in.Time)
		if err != nil {
			return errf(f+".time", "want an ISO 8601 date-time, got %q", in.Time)
		}
		if y := at.UTC().Year(); y < 1 || y > 9999 {
			return errf(f+".time", "%q is outside the years 0001–9999 in UTC", in.Time)
		}
		h, herr := readHeaders(in.Headers, f+".headers")
		if herr != nil {
			return herr
		}
		s.Interim = append(s.Interim, session.Interim{Status: in.Status, Header: h, At: at.UTC()})
	}
	for i, m := range re.WSMessages {
		f := fmt.Sprintf("_webSocketMessages[%d]", i)
		msg := session.Message{FromClient: m.Type == "send", Opcode: m.Opcode}
		if m.Type != "send" && m.Type != "receive" {
			return errf(f+".type", "want \"send\" or \"receive\", got %q", m.Type)
		}
		if math.IsNaN(m.Time) || math.Abs(m.Time) > 1e11 {
			return errf(f+".time", "not a time in seconds: %v", m.Time)
		}
		msg.Time = time.UnixMicro(int64(math.Round(m.Time * 1e6))).UTC()
		if int64(len(m.Data)) > lim.MaxBody*4/3+4 {
			return errf(f+".data", "message of %d bytes exceeds the limit of %d", len(m.Data), lim.MaxBody)
		}
		if m.Opcode == 1 {
			msg.Data = []byte(m.Data)
		} else if b, err := base64.StdEncoding.DecodeString(m.Data); err == nil {
			msg.Data = b
		} else {
			msg.Data = []byte(m.Data)
		}
		if len(msg.Data) == 0 {
			msg.Data = nil
		}
		msg.Size = int64(len(msg.Data))
		if m.Size > 0 {
			msg.Size = m.Size
		}
		s.Messages = append(s.Messages, msg)
	}

	// Timings, rebuilt as contiguous instants from startedDateTime.
	var tm rTimings
	if re.Timings != nil {
		tm = *re.Timings
	}
	var vals [7]float64
	for i, f := range []struct {
		p    *float64
		name string
	}{{tm.Blocked, "blocked"}, {tm.DNS, "dns"}, {tm.Connect, "connect"}, {tm.SSL, "ssl"},
		{tm.Send, "send"}, {tm.Wait, "wait"}, {tm.Receive, "receive"}} {
		if vals[i], e = msField(f.p, "timings."+f.name); e != nil {
			return e
		}
	}
	d := func(v float64) time.Duration {
		if v <= 0 {
			return 0
		}
		return time.Duration(math.Round(v*1000)) * time.Microsecond
	}
	blocked, dns, connect, ssl, send, wait, receive := vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], vals[6]
	T := &s.Timings
	t := s.Started
	T.RequestHeaders = t
	t = t.Add(d(blocked))
	T.RequestDone = t
	if dns >= 0 {
		T.DNSStart = t
		t = t.Add(d(dns))
		T.DNSDone = t
	}
	if connect >= 0 {
		T.ConnectStart = t
		if ssl >= 0 && ssl <= connect {
			T.ConnectDone = t.Add(d(connect) - d(ssl))
			T.UpstreamTLSDone = t.Add(d(connect))
		} else {
			T.ConnectDone = t.Add(d(connect))
		}
		t = t.Add(d(connect))
	}
	t = t.Add(d(send))
	T.RequestSent = t
	t = t.Add(d(wait))
	if hasResp || wait > 0 {
		T.FirstByte = t
	}
	t = t.Add(d(receive))
	T.ResponseDone = t
	return nil
}

// alreadyEncoded reports whether data is still in its transfer coding (some tools export
// the raw bytes): it then decodes cleanly.
func alreadyEncoded(data []byte, encs []string) bool {
	last := encs[len(encs)-1]
	if last != "deflate" && !(len(data) > 2 && data[0] == 0x1f && data[1] == 0x8b) {
		return false
	}
	if last == "deflate" && !(len(data) > 2 && data[0]&0x0f == 8 && (uint16(data[0])<<8|uint16(data[1]))%31 == 0) {
		return false
	}
	_, ok := decodeAll(data, encs, MaxExportDecoded)
	return ok
}

func urlPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch u.Scheme {
	case "https", "wss":
		return "443"
	case "http", "ws":
		return "80"
	}
	return ""
}

func tlsIn(t *harTLS) *session.TLSInfo {
	if t == nil {
		return nil
	}
	return &session.TLSInfo{Version: t.Version, CipherSuite: t.CipherSuite, ServerName: t.ServerName,
		ALPN: t.ALPN, Resumed: t.Resumed, Certificates: t.Certificates}
}
