package har

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	bodyc "inspector/content"
	"inspector/engine/session"
)

// Large bodies. A HAR body is one JSON string, and json.Decoder holds a whole value (the
// entry) in memory, then the string, then its decoded bytes: a 250 MiB base64 body took
// about 1.95 GB. When Limits.SpillDir is set, a diverter sits between the input and the
// JSON decoder: the value of every "text" key longer than Limits.SpillAbove raw bytes is
// unescaped straight into a file as it is read, and the decoder sees a short placeholder
// string in its place (same syntax, so the document's validity is unchanged). The entry
// then finds its body through the placeholder and streams it through the base64 decoder
// and the content codings into the body's spill file: session.Body.Data keeps the first
// SpillAbove bytes and Body.Spilled names the file with the rest, as live capture does.

// defaultSpillAbove is Limits.SpillAbove when it is 0.
const defaultSpillAbove = 1 << 20

func (l Limits) spillAbove() int64 {
	if l.SpillAbove > 0 {
		return l.SpillAbove
	}
	return defaultSpillAbove
}

// bigText is a diverted string value: its first bytes (unescaped) in head, the rest in
// the file path ("" when none).
type bigText struct {
	head []byte
	path string
	size int64
}

func (t *bigText) reader() (io.Reader, func(), error) {
	if t.path == "" {
		return bytes.NewReader(t.head), func() {}, nil
	}
	f, err := os.Open(t.path)
	if err != nil {
		return nil, nil, err
	}
	return io.MultiReader(bytes.NewReader(t.head), bufio.NewReaderSize(f, 256<<10)), func() { f.Close() }, nil
}

func (t *bigText) remove() {
	if t.path != "" {
		os.Remove(t.path)
		t.path = ""
	}
}

// Lexer states of the diverter: it only needs to recognise `"text"` `:` `"` outside
// strings.
const (
	lxNormal   = iota
	lxString   // inside a string (key holds its first bytes)
	lxAfterKey // after the string "text"
	lxColon    // after "text":
)

// diverter is the io.Reader the JSON decoder reads when large bodies are spilled.
type diverter struct {
	br    *bufio.Reader
	lim   Limits
	nonce string
	texts map[string]*bigText // by placeholder
	n     int

	out []byte // bytes for the decoder, from pos on
	pos int
	err error

	st     int
	esc    bool
	key    [5]byte
	keyLen int

	// shifts maps offsets the decoder sees to input offsets: at emitted offset at, the
	// input is delta bytes further on.
	emitted int64
	shifts  []shift
}

type shift struct{ at, delta int64 }

func newDiverter(r io.Reader, lim Limits) *diverter {
	var nb [12]byte
	rand.Read(nb[:])
	return &diverter{br: bufio.NewReaderSize(r, 64<<10), lim: lim, nonce: "\x00inspector-body-" + hex.EncodeToString(nb[:]) + "-", texts: map[string]*bigText{}}
}

func (d *diverter) Read(p []byte) (int, error) {
	for d.err == nil && len(d.out)-d.pos < len(p) && (len(d.out) == d.pos || d.br.Buffered() > 0) {
		c, err := d.br.ReadByte()
		if err != nil {
			d.err = err
			break
		}
		d.step(c)
	}
	if len(d.out) == d.pos {
		return 0, d.err
	}
	n := copy(p, d.out[d.pos:])
	d.pos += n
	d.emitted += int64(n)
	if d.pos == len(d.out) {
		d.out, d.pos = d.out[:0], 0
	}
	return n, nil
}

func (d *diverter) emit(c byte) { d.out = append(d.out, c) }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (d *diverter) step(c byte) {
	switch d.st {
	case lxString:
		d.emit(c)
		switch {
		case d.esc:
			d.esc = false
			d.keyLen = len(d.key) + 1 // an escaped key is not "text"
		case c == '\\':
			d.esc = true
		case c == '"':
			d.st = lxNormal
			if d.keyLen == 4 && string(d.key[:4]) == "text" {
				d.st = lxAfterKey
			}
		default:
			if d.keyLen < len(d.key) {
				d.key[d.keyLen] = c
			}
			d.keyLen++
		}
		return
	case lxAfterKey:
		switch {
		case isSpace(c):
		case c == ':':
			d.st = lxColon
		default:
			d.st = lxNormal
		}
	case lxColon:
		switch {
		case isSpace(c):
		case c == '"':
			d.value()
			return
		default:
			d.st = lxNormal
		}
	}
	d.emit(c)
	if d.st == lxNormal && c == '"' {
		d.st, d.keyLen, d.esc = lxString, 0, false
	}
}

// value reads a "text" value after its opening quote: short ones pass through as they
// are, longer ones are unescaped into a bigText and replaced by a placeholder.
func (d *diverter) value() {
	above := d.lim.spillAbove()
	hold := make([]byte, 0, 4096)
	esc := false
	for int64(len(hold)) <= above {
		c, err := d.br.ReadByte()
		if err != nil {
			d.emit('"')
			d.out = append(d.out, hold...)
			d.err = err
			d.st = lxNormal
			return
		}
		hold = append(hold, c)
		switch {
		case esc:
			esc = false
		case c == '\\':
			esc = true
		case c == '"':
			d.emit('"')
			d.out = append(d.out, hold...)
			d.st = lxNormal
			return
		}
	}
	src := &byteSrc{hold: hold, br: d.br}
	t, consumed, err := d.spill(src)
	if err != nil {
		d.err = err
		return
	}
	d.n++
	ph := fmt.Sprintf("%s%d", d.nonce, d.n)
	d.texts[ph] = t
	// The placeholder as a JSON string: the NUL escaped.
	lit := `"\u0000` + ph[1:] + `"`
	d.emit(lit[0])
	d.out = append(d.out, lit[1:]...)
	d.st = lxNormal
	d.shifts = append(d.shifts, shift{at: d.emitted + int64(len(d.out)-d.pos), delta: 1 + consumed - int64(len(lit))})
}

// inputOffset is the input offset of the decoder's offset off.
func (d *diverter) inputOffset(off int64) int64 {
	for _, s := range d.shifts {
		if s.at <= off {
			off += s.delta
		}
	}
	return off
}

// take returns the diverted text of a placeholder string value (nil if s is none).
func (d *diverter) take(s string) *bigText {
	if d == nil || len(s) <= len(d.nonce) || s[:len(d.nonce)] != d.nonce {
		return nil
	}
	t := d.texts[s]
	delete(d.texts, s)
	return t
}

// discard removes the files of texts no entry took.
func (d *diverter) discard() {
	if d == nil {
		return
	}
	for k, t := range d.texts {
		t.remove()
		delete(d.texts, k)
	}
}

// errJSONString is a bad string in a diverted value: the JSON decoder does not see it.
type errJSONString struct {
	off int64
	msg string
}

func (e *errJSONString) Error() string {
	return fmt.Sprintf("a body's JSON string at input byte %d: %s", e.off, e.msg)
}

// byteSrc reads the held bytes, then the input; unread puts bytes back in front.
type byteSrc struct {
	hold []byte
	br   *bufio.Reader
	n    int64
}

func (s *byteSrc) ReadByte() (byte, error) {
	s.n++
	if len(s.hold) > 0 {
		c := s.hold[0]
		s.hold = s.hold[1:]
		return c, nil
	}
	return s.br.ReadByte()
}

func (s *byteSrc) unread(b []byte) {
	s.n -= int64(len(b))
	s.hold = append(append(make([]byte, 0, len(b)+len(s.hold)), b...), s.hold...)
}

// spill unescapes a JSON string's content (after its opening quote, through its closing
// quote) as encoding/json does, keeping the first SpillAbove bytes in memory and writing
// the rest to a file in SpillDir. consumed is the raw bytes read, the closing quote
// included.
func (d *diverter) spill(s *byteSrc) (*bigText, int64, error) {
	t := &bigText{}
	sink := &prefixSink{t: t, limit: d.lim.spillAbove(), dir: d.lim.SpillDir, max: d.lim.MaxBody*4/3 + 4}
	err := unescape(s, sink)
	if errors.Is(err, errTooLarge) {
		err = &errJSONString{off: s.n, msg: fmt.Sprintf("a body's text of more than %d bytes exceeds the limit of %d body bytes", sink.max, d.lim.MaxBody)}
		sink.err = nil
	}
	if ferr := sink.close(); err == nil {
		err = ferr
	}
	if err != nil {
		t.remove()
		return nil, 0, err
	}
	return t, s.n, nil
}

func unescape(s *byteSrc, w *prefixSink) error {
	bad := func(msg string) error { return &errJSONString{off: s.n, msg: msg} }
	var u8 [utf8.UTFMax]byte
	for {
		if len(s.hold) == 0 && s.br.Buffered() > 0 {
			// The fast path: a run of bytes that need no unescaping, in bulk.
			buf, _ := s.br.Peek(s.br.Buffered())
			i := 0
			for i < len(buf) && buf[i] >= 0x20 && buf[i] < utf8.RuneSelf && buf[i] != '"' && buf[i] != '\\' {
				i++
			}
			if i > 0 {
				w.write(buf[:i])
				s.br.Discard(i)
				s.n += int64(i)
				if w.err != nil {
					return w.err
				}
				continue
			}
		}
		c, err := s.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		switch {
		case c == '"':
			return nil
		case c == '\\':
			e, err := s.ReadByte()
			if err != nil {
				return io.ErrUnexpectedEOF
			}
			switch e {
			case '"', '\\', '/':
				w.writeByte(e)
			case 'b':
				w.writeByte('\b')
			case 'f':
				w.writeByte('\f')
			case 'n':
				w.writeByte('\n')
			case 'r':
				w.writeByte('\r')
			case 't':
				w.writeByte('\t')
			case 'u':
				r, ok := hex4(s)
				if !ok {
					return bad(`invalid \u escape`)
				}
				if utf16.IsSurrogate(r) {
					// A pair when a low surrogate follows; else U+FFFD and the next
					// escape is read on its own (as encoding/json does).
					var next [6]byte
					k := 0
					for ; k < 6; k++ {
						b, err := s.ReadByte()
						if err != nil {
							break
						}
						next[k] = b
					}
					r2 := rune(-1)
					if k == 6 && next[0] == '\\' && next[1] == 'u' {
						r2 = hexRune(next[2:6])
					}
					if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
						r = dec
					} else {
						r = unicode.ReplacementChar
						s.unread(next[:k])
					}
				}
				w.write(u8[:utf8.EncodeRune(u8[:], r)])
			default:
				return bad(fmt.Sprintf("invalid escape \\%c", e))
			}
		case c < 0x20:
			return bad(fmt.Sprintf("control character %#02x in a string", c))
		case c < utf8.RuneSelf:
			w.writeByte(c)
		default:
			// Valid UTF-8 is copied; each byte of an invalid sequence becomes U+FFFD.
			u8[0] = c
			k := 1
			for ; k < utf8.UTFMax && !utf8.FullRune(u8[:k]); k++ {
				b, err := s.ReadByte()
				if err != nil {
					break
				}
				u8[k] = b
			}
			r, size := utf8.DecodeRune(u8[:k])
			if r == utf8.RuneError && size == 1 {
				w.write([]byte(string(unicode.ReplacementChar)))
			} else {
				w.write(u8[:size])
			}
			if size < k {
				s.unread(append([]byte(nil), u8[size:k]...))
			}
		}
		if w.err != nil {
			return w.err
		}
	}
}

func hex4(s *byteSrc) (rune, bool) {
	var h [4]byte
	for i := range h {
		b, err := s.ReadByte()
		if err != nil {
			return 0, false
		}
		h[i] = b
	}
	r := hexRune(h[:])
	return r, r >= 0
}

func hexRune(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// prefixSink keeps the first limit bytes written in t.head and the rest in a new file in
// dir; more than max bytes in all is an error.
type prefixSink struct {
	t     *bigText
	limit int64
	dir   string
	max   int64
	f     *os.File
	bw    *bufio.Writer
	err   error
}

var errTooLarge = errors.New("too large")

func (p *prefixSink) writeByte(c byte) {
	if p.bw != nil && p.t.size < p.max {
		p.t.size++
		if err := p.bw.WriteByte(c); err != nil && p.err == nil {
			p.err = err
		}
		return
	}
	p.write([]byte{c})
}

func (p *prefixSink) Write(b []byte) (int, error) {
	p.write(b)
	if p.err != nil {
		return 0, p.err
	}
	return len(b), nil
}

func (p *prefixSink) write(b []byte) {
	if p.err != nil {
		return
	}
	if p.t.size+int64(len(b)) > p.max {
		p.err = errTooLarge
		return
	}
	p.t.size += int64(len(b))
	if n := min(int64(len(b)), p.limit-int64(len(p.t.head))); n > 0 {
		p.t.head = append(p.t.head, b[:n]...)
		b = b[n:]
	}
	if len(b) == 0 {
		return
	}
	if p.f == nil {
		f, err := os.CreateTemp(p.dir, "har-body-*")
		if err != nil {
			p.err = err
			return
		}
		p.f, p.t.path, p.bw = f, f.Name(), bufio.NewWriterSize(f, 256<<10)
	}
	if _, err := p.bw.Write(b); err != nil {
		p.err = err
	}
}

func (p *prefixSink) close() error {
	if p.f != nil {
		if err := p.bw.Flush(); err != nil && p.err == nil {
			p.err = err
		}
		if err := p.f.Close(); err != nil && p.err == nil {
			p.err = err
		}
	}
	return p.err
}

// spillBody streams r into a body: its first SpillAbove bytes in Data, the rest in a new
// file in SpillDir (Spilled). More than MaxBody bytes is errTooLarge.
func spillBody(r io.Reader, lim Limits) (data []byte, path string, size int64, err error) {
	t := &bigText{}
	sink := &prefixSink{t: t, limit: lim.spillAbove(), dir: lim.SpillDir, max: lim.MaxBody}
	_, err = io.Copy(sink, r)
	if errors.Is(err, errTooLarge) {
		sink.err = nil
	}
	if cerr := sink.close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.remove()
		return nil, "", 0, err
	}
	return t.head, t.path, t.size, nil
}

// decodeBig is decodeText for a diverted text: the body streamed into Data and a spill
// file.
func decodeBig(t *bigText, enc, field string, lim Limits) (data []byte, path string, size int64, e *Error) {
	defer t.remove()
	var r io.Reader
	switch strings.ToLower(enc) {
	case "":
		if t.size > lim.MaxBody {
			return nil, "", 0, errf(field, "body of %d bytes exceeds the limit of %d", t.size, lim.MaxBody)
		}
		// The text is the body: its file becomes the body's spill file.
		data, path, size = t.head, t.path, t.size
		t.path = ""
		return data, path, size, nil
	case "base64":
		if n := int64(base64.StdEncoding.DecodedLen(int(min(t.size, 1<<40)))); n > lim.MaxBody+3 {
			return nil, "", 0, errf(field, "base64 body of about %d bytes exceeds the limit of %d", n, lim.MaxBody)
		}
		tr, done, err := t.reader()
		if err != nil {
			return nil, "", 0, errf(field, "reading the spilled body: %v", err)
		}
		defer done()
		r = base64.NewDecoder(base64.StdEncoding, tr)
	default:
		return nil, "", 0, errf(field, "unsupported encoding %q (want base64 or none)", enc)
	}
	data, path, size, err := spillBody(r, lim)
	switch {
	case errors.Is(err, errTooLarge):
		return nil, "", 0, errf(field, "body of more than %d bytes exceeds the limit", lim.MaxBody)
	case err != nil:
		var ce base64.CorruptInputError
		if errors.As(err, &ce) {
			return nil, "", 0, errf(field, "bad base64: %v", err)
		}
		return nil, "", 0, errf(field, "spilling the body: %v", err)
	}
	return data, path, size, nil
}

// looksEncoded is alreadyEncoded for a spilled body, by its first bytes only: the magic
// of its last coding (gzip, or a zlib header for deflate). br and zstd bodies from other
// tools are taken as decoded, as alreadyEncoded takes them.
func looksEncoded(head []byte, encs []string) bool {
	switch encs[len(encs)-1] {
	case "gzip", "x-gzip":
		return len(head) > 2 && head[0] == 0x1f && head[1] == 0x8b
	case "deflate":
		return len(head) > 2 && head[0]&0x0f == 8 && (uint16(head[0])<<8|uint16(head[1]))%31 == 0
	}
	return false
}

// encodeBig applies encs (in order) to a spilled body as it streams, into a new spill
// file, and removes the old one.
func encodeBig(b *session.Body, encs []string, lim Limits) *Error {
	const field = "response.content.text"
	old := &bigText{head: b.Data, path: b.Spilled}
	defer old.remove()
	in, done, err := old.reader()
	if err != nil {
		return errf(field, "reading the spilled body: %v", err)
	}
	defer done()
	out := &bigText{}
	sink := &prefixSink{t: out, limit: lim.spillAbove(), dir: lim.SpillDir, max: 2*lim.MaxBody + 1<<20}
	var w io.Writer = sink
	var closers []io.Closer
	for i := len(encs) - 1; i >= 0; i-- {
		ew, err := bodyc.NewEncoder(encs[i], w)
		if err != nil {
			return errf(field, "encoding the body: %v", err)
		}
		closers = append(closers, ew)
		w = ew
	}
	_, err = io.Copy(w, in)
	for i := len(closers) - 1; i >= 0; i-- { // outermost first
		if cerr := closers[i].Close(); err == nil {
			err = cerr
		}
	}
	if cerr := sink.close(); err == nil {
		err = cerr
	}
	if err != nil {
		out.remove()
		return errf(field, "encoding the body: %v", err)
	}
	b.Data, b.Spilled, b.Size = out.head, out.path, out.size
	return nil
}
