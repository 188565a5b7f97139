package render

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// LineSource is a text shown one visual row at a time (the detail pane draws only the
// rows on screen).
type LineSource interface {
	Len() int
	Line(i int) string
}

// MaxMatches bounds the matches FindAll and HexLines.Find report.
const MaxMatches = 100_000

// maxRowBytes bounds one visual row when wrapping is off (the rest of the line is not
// drawn: clipped at the view's edge anyway).
const maxRowBytes = 4096

// Lines indexes the visual rows of a text: every line, cut into rows of at most cols
// characters when wrapping (on a rune boundary), or one row per line when not. The
// index holds one offset per row, so a 3 MB single-line text wrapped at 120 columns
// costs 25,000 offsets and no copy of the text.
type Lines struct {
	cols  int
	text  string
	start []int32 // byte offset of each row
	end   []int32 // end of each row (before the newline)
	wrap  bool
}

// NewLines indexes text in rows of cols characters (wrap) or one row per line.
func NewLines(text string, cols int, wrap bool) *Lines {
	if cols < 1 {
		cols = 80
	}
	l := &Lines{text: text, wrap: wrap, cols: cols}
	pos := 0
	for {
		nl := strings.IndexByte(text[pos:], '\n')
		lineEnd := len(text)
		if nl >= 0 {
			lineEnd = pos + nl
		}
		line := text[pos:lineEnd]
		if lineEnd > pos && line[len(line)-1] == '\r' {
			lineEnd--
		}
		if !wrap {
			e := lineEnd
			if e-pos > maxRowBytes {
				e = pos + maxRowBytes
				for e > pos && !utf8.RuneStart(text[e]) {
					e--
				}
			}
			l.add(pos, e)
		} else if lineEnd == pos {
			l.add(pos, pos)
		} else {
			for p := pos; p < lineEnd; {
				e := advanceRunes(text, p, lineEnd, cols)
				l.add(p, e)
				p = e
			}
		}
		if nl < 0 {
			break
		}
		pos += nl + 1
	}
	return l
}

// advanceRunes returns the offset cols runes after p, at most end.
func advanceRunes(s string, p, end, cols int) int {
	e := min(p+cols, end)
	ascii := true // the fast path: cols bytes are cols runes
	for i := p; i < e && ascii; i++ {
		ascii = s[i] < utf8.RuneSelf
	}
	if ascii {
		return e
	}
	n := 0
	for p < end && n < cols {
		_, sz := utf8.DecodeRuneInString(s[p:end])
		p += sz
		n++
	}
	return p
}

func (l *Lines) add(s, e int) {
	l.start = append(l.start, int32(s))
	l.end = append(l.end, int32(e))
}

// Len is the number of visual rows.
func (l *Lines) Len() int { return len(l.start) }

// Line returns visual row i.
func (l *Lines) Line(i int) string {
	if i < 0 || i >= len(l.start) {
		return ""
	}
	return l.text[l.start[i]:l.end[i]]
}

// Cols is the row width the text was indexed for.
func (l *Lines) Cols() int { return l.cols }

// Wrap reports whether the rows are wrapped.
func (l *Lines) Wrap() bool { return l.wrap }

// Span returns the byte offsets of visual row i in the text: [start, end), end before
// the newline.
func (l *Lines) Span(i int) (start, end int) {
	if i < 0 || i >= len(l.start) {
		return 0, 0
	}
	return int(l.start[i]), int(l.end[i])
}

// RowOf returns the visual row holding byte offset off.
func (l *Lines) RowOf(off int) int {
	i := sort.Search(len(l.start), func(i int) bool { return int(l.start[i]) > off })
	return max(i-1, 0)
}

// FindAll returns the byte offsets of the case-insensitive (ASCII) matches of q in text,
// at most max of them.
func FindAll(text, q string, max int) []int {
	if q == "" {
		return nil
	}
	lq := strings.ToLower(q)
	var out []int
	// Case-fold window by window so a big text is not copied whole.
	const win = 1 << 20
	for base := 0; base < len(text) && len(out) < max; base += win {
		end := min(base+win+len(q)-1, len(text))
		chunk := strings.ToLower(text[base:end])
		if len(chunk) != end-base { // non-ASCII case folding changed lengths: exact search
			chunk = text[base:end]
			lq = q
		}
		for p := 0; len(out) < max; {
			i := strings.Index(chunk[p:], lq)
			if i < 0 || base+p+i >= base+win {
				break
			}
			out = append(out, base+p+i)
			p += i + 1
		}
	}
	return out
}

// HexLines draws a hex dump 16 bytes a row, formatted on demand: a 50 MB body is shown
// without building its 250 MB dump.
type HexLines struct{ Data []byte }

// Len is the number of rows.
func (h *HexLines) Len() int { return (len(h.Data) + 15) / 16 }

// Line formats row i like hex.Dump.
func (h *HexLines) Line(i int) string {
	off := i * 16
	if off < 0 || off >= len(h.Data) {
		return ""
	}
	b := h.Data[off:min(off+16, len(h.Data))]
	var sb strings.Builder
	fmt.Fprintf(&sb, "%08x  ", off)
	for k := 0; k < 16; k++ {
		if k < len(b) {
			fmt.Fprintf(&sb, "%02x ", b[k])
		} else {
			sb.WriteString("   ")
		}
		if k == 7 {
			sb.WriteByte(' ')
		}
	}
	sb.WriteString(" |")
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		sb.WriteByte(c)
	}
	sb.WriteByte('|')
	return sb.String()
}

// Find returns the rows holding q as bytes (text typed) or as hex digits ("de ad"), at
// most max rows.
func (h *HexLines) Find(q string, max int) []int {
	needle := []byte(q)
	if hb, ok := parseHex(q); ok {
		needle = hb
	}
	var rows []int
	for p := 0; len(rows) < max; {
		i := bytes.Index(h.Data[p:], needle)
		if i < 0 {
			break
		}
		r := (p + i) / 16
		if len(rows) == 0 || rows[len(rows)-1] != r {
			rows = append(rows, r)
		}
		p += i + 1
	}
	return rows
}

func parseHex(q string) ([]byte, bool) {
	s := strings.ReplaceAll(strings.TrimSpace(q), " ", "")
	if len(s) < 2 || len(s)%2 != 0 {
		return nil, false
	}
	out := make([]byte, len(s)/2)
	for i := range out {
		var v byte
		for _, c := range []byte(s[2*i : 2*i+2]) {
			switch {
			case c >= '0' && c <= '9':
				v = v<<4 | (c - '0')
			case c >= 'a' && c <= 'f':
				v = v<<4 | (c - 'a' + 10)
			case c >= 'A' && c <= 'F':
				v = v<<4 | (c - 'A' + 10)
			default:
				return nil, false
			}
		}
		out[i] = v
	}
	return out, true
}

// LineOf returns the whole line that holds visual row i and the row's byte range in it,
// for highlighting a wrapped row in the context of its line (a string that wraps stays a
// string on the next row). ok is false when the line is longer than max bytes (it is
// not looked for further) or i is out of range.
func (l *Lines) LineOf(i, max int) (line string, from, to int, ok bool) {
	if i < 0 || i >= len(l.start) {
		return "", 0, 0, false
	}
	s, e := int(l.start[i]), int(l.end[i])
	back := l.text[s-min(s, max+1) : s]
	k := strings.LastIndexByte(back, '\n')
	if k < 0 && len(back) > max {
		return "", 0, 0, false
	}
	ls := s - len(back) + k + 1
	rest := l.text[e:min(len(l.text), e+max+1)]
	le := e
	if n := strings.IndexByte(rest, '\n'); n >= 0 {
		le = e + n
	} else if e+len(rest) < len(l.text) || len(rest) > max {
		return "", 0, 0, false
	} else {
		le = len(l.text)
	}
	if le > ls && le > e && l.text[le-1] == '\r' {
		le--
	}
	if le-ls > max {
		return "", 0, 0, false
	}
	return l.text[ls:le], s - ls, e - ls, true
}
