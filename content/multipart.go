package content

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Part is one part of a multipart body.
type Part struct {
	Header   textproto.MIMEHeader `json:"header"`
	Name     string               `json:"name,omitempty"`     // form-data field name
	FileName string               `json:"filename,omitempty"` // form-data file name
	Body     []byte               `json:"-"`
	Size     int                  `json:"size"`
	// Partial: the part was cut (by the capture or by the part size cap).
	Partial bool `json:"partial,omitempty"`
}

// maxParts bounds how many parts SplitMultipart returns.
const maxParts = 1000

// ErrMultipart: the body is not multipart as its Content-Type says (no boundary, no
// first boundary line).
var ErrMultipart = errors.New("bad multipart body")

// SplitMultipart splits a multipart/* body by the boundary of contentType. Each part
// keeps at most limit bytes. Parts before a damage are returned with the error; a body
// cut short ends with a Partial part.
func SplitMultipart(contentType string, body []byte, limit int) ([]Part, error) {
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, fmt.Errorf("%w: Content-Type: %v", ErrMultipart, err)
	}
	boundary := params["boundary"]
	if boundary == "" {
		return nil, fmt.Errorf("%w: no boundary in Content-Type", ErrMultipart)
	}
	if !bytes.Contains(body, []byte("--"+boundary)) {
		return nil, fmt.Errorf("%w: boundary %q not found in the body", ErrMultipart, boundary)
	}
	r := multipart.NewReader(bytes.NewReader(body), boundary)
	var out []Part
	for len(out) < maxParts {
		p, err := r.NextRawPart()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			if len(out) > 0 && errors.Is(err, io.ErrUnexpectedEOF) {
				out[len(out)-1].Partial = true
				return out, nil
			}
			return out, fmt.Errorf("%w: part %d: %v", ErrMultipart, len(out)+1, err)
		}
		data, rerr := io.ReadAll(io.LimitReader(p, int64(limit)+1))
		part := Part{Header: p.Header, Name: p.FormName(), FileName: p.FileName(), Body: data, Size: len(data)}
		if len(data) > limit {
			part.Body, part.Size, part.Partial = data[:limit], limit, true
			io.Copy(io.Discard, p)
		}
		if rerr != nil {
			part.Partial = true
			out = append(out, part)
			return out, nil
		}
		out = append(out, part)
	}
	return out, fmt.Errorf("%w: more than %d parts; the rest not listed", ErrMultipart, maxParts)
}

// PartHeader returns a part's headers as an http.Header (for Detect and Views).
func (p Part) PartHeader() http.Header { return http.Header(p.Header) }

// FormFields parses an application/x-www-form-urlencoded body into name/value pairs in
// their order (names repeat when the form repeats them). Undecodable escapes are kept
// as written.
func FormFields(body string) [][2]string {
	var out [][2]string
	for body != "" {
		var kv string
		kv, body, _ = cutAny(body, "&")
		if kv == "" {
			continue
		}
		k, v, _ := cutAny(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if uv, err := url.QueryUnescape(v); err == nil {
			v = uv
		}
		out = append(out, [2]string{k, v})
		if len(out) >= 10000 {
			break
		}
	}
	return out
}

func cutAny(s, seps string) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(seps); j++ {
			if s[i] == seps[j] {
				return s[:i], s[i+1:], true
			}
		}
	}
	return s, "", false
}

func init() {
	Register(KindMultipart, func(in *Input) []View {
		return []View{multipartView(in.Header.Get("Content-Type"), in.Body, in.Options, in.Partial, in.Note)}
	})
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
