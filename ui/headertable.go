package ui

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"golang.org/x/net/http/httpguts"

	"inspector/ui/render"
)

// HeaderRow is one name/value row of a HeaderTable.
type HeaderRow struct {
	Name, Value *widget.Entry
	Remove      *widget.Button
	box         *fyne.Container
}

// HeaderTable edits headers as name/value rows that can be added and removed. A row with
// a blank name and value is ignored; anything else must be a valid header. UI goroutine only.
type HeaderTable struct {
	Rows    []*HeaderRow
	AddRow  *widget.Button
	rows    *fyne.Container
	Content fyne.CanvasObject
	// OnChanged runs after any edit (typing, adding or removing a row).
	OnChanged func()
}

// NewHeaderTable builds a table holding h (names sorted, one row per value).
func NewHeaderTable(h http.Header) *HeaderTable {
	t := &HeaderTable{rows: container.NewVBox()}
	t.AddRow = widget.NewButtonWithIcon("Add header", theme.ContentAddIcon(), func() {
		t.add("", "")
		t.changed()
	})
	t.AddRow.Importance = widget.LowImportance
	head := container.NewGridWithColumns(2, heading("Name"), heading("Value"))
	t.Content = container.NewBorder(head, container.NewHBox(t.AddRow), nil, nil, container.NewVScroll(t.rows))
	t.Set(h)
	return t
}

// Set replaces every row with the headers of h.
func (t *HeaderTable) Set(h http.Header) {
	t.Rows = nil
	t.rows.RemoveAll()
	for _, kv := range render.HeaderRows(h) {
		t.add(kv[0], kv[1])
	}
	t.rows.Refresh()
}

func (t *HeaderTable) add(name, value string) *HeaderRow {
	r := &HeaderRow{Name: widget.NewEntry(), Value: widget.NewEntry()}
	r.Name.SetText(name)
	r.Name.SetPlaceHolder("Header-Name")
	r.Value.SetText(value)
	r.Name.OnChanged = func(string) { t.changed() }
	r.Value.OnChanged = func(string) { t.changed() }
	r.Remove = widget.NewButtonWithIcon("", theme.DeleteIcon(), func() { t.remove(r) })
	r.Remove.Importance = widget.LowImportance
	r.box = container.NewBorder(nil, nil, nil, r.Remove, container.NewGridWithColumns(2, r.Name, r.Value))
	t.Rows = append(t.Rows, r)
	t.rows.Add(r.box)
	return r
}

// Add appends a row (for tests and callers that prefill one).
func (t *HeaderTable) Add(name, value string) *HeaderRow {
	r := t.add(name, value)
	t.changed()
	return r
}

func (t *HeaderTable) remove(r *HeaderRow) {
	for i, x := range t.Rows {
		if x == r {
			t.Rows = append(t.Rows[:i], t.Rows[i+1:]...)
			break
		}
	}
	t.rows.Remove(r.box)
	t.changed()
}

func (t *HeaderTable) changed() {
	if t.OnChanged != nil {
		t.OnChanged()
	}
}

// Header returns the headers of the rows, or an error naming the first bad row (1-based).
func (t *HeaderTable) Header() (http.Header, error) {
	h := http.Header{}
	for i, r := range t.Rows {
		name, value := strings.TrimSpace(r.Name.Text), strings.TrimSpace(r.Value.Text)
		if name == "" && value == "" {
			continue
		}
		if !httpguts.ValidHeaderFieldName(name) {
			return nil, fmt.Errorf("header row %d: name %q is not a valid header name", i+1, name)
		}
		if !httpguts.ValidHeaderFieldValue(value) {
			return nil, fmt.Errorf("header row %d (%s): the value has a control character", i+1, name)
		}
		k := http.CanonicalHeaderKey(name)
		h[k] = append(h[k], value)
	}
	return h, nil
}

// Lines is the table as "Name: value" lines (tests and screenshots).
func (t *HeaderTable) Lines() []string {
	var out []string
	for _, r := range t.Rows {
		out = append(out, r.Name.Text+": "+r.Value.Text)
	}
	return out
}

// heading is a bold section label.
func heading(s string) *widget.Label {
	return widget.NewLabelWithStyle(s, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
}

// lineList is a list of one truncated label per item of *items, its text from line;
// sample sizes the rows.
func lineList[T any](items *[]T, sample string, line func(T) string) *widget.List {
	return widget.NewList(
		func() int { return len(*items) },
		func() fyne.CanvasObject {
			l := widget.NewLabel(sample)
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(*items) {
				o.(*widget.Label).SetText(line((*items)[i]))
			}
		})
}

// editBodyMax bounds the body text put into an editable entry: Fyne's entry lays out all
// its text on the UI goroutine (16 KiB took 0.4-1 s under the test driver, 64 KiB with
// wrapping about a minute), so a larger body is held aside and sent unchanged unless a
// replacement is typed.
const editBodyMax = 16 << 10

// setBody shows data in entry; a body over editBodyMax is not shown but returned, to be
// held aside, and the placeholder says so.
func setBody(entry *widget.Entry, data []byte) (held []byte) {
	if len(data) > editBodyMax {
		entry.SetText("")
		entry.SetPlaceHolder(fmt.Sprintf("The body (%d bytes) is too large to edit here and is sent unchanged; type here to replace it.", len(data)))
		return data
	}
	entry.SetPlaceHolder("")
	entry.Wrapping = entryWrapping(data)
	entry.SetText(string(data))
	return nil
}

// longLine is the line length (in bytes) from which an editor wraps its text: one text
// object per line is drawn as one GL texture, and past the driver's texture limit (16,384
// px, about 1,900 monospace characters) a long single-line body was drawn as a black bar.
// Shorter lines stay unwrapped, since Fyne rewraps an entry's whole text on every change.
const longLine = 1000

// entryWrapping is the wrapping of an editor showing data: by characters when a line is
// long, else none.
func entryWrapping(data []byte) fyne.TextWrap {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			i = len(data)
		}
		if i > longLine {
			return fyne.TextWrapBreak
		}
		data = data[min(i+1, len(data)):]
	}
	return fyne.TextWrapOff
}

// bodyOf is the body to send: what is typed in entry, or the held body when it was left
// empty.
func bodyOf(entry *widget.Entry, held []byte) []byte {
	if held != nil && entry.Text == "" {
		return held
	}
	return []byte(entry.Text)
}

// wrapColumn is where textRows breaks long lines.
const wrapColumn = 160

// textRows splits s into display rows: at line breaks, and every wrapColumn runes of a
// longer line, so that a virtualised list (lineList) draws only short visible rows.
func textRows(s string) []string {
	var rows []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSuffix(line, "\r")
		for {
			cut, n := 0, 0
			for cut < len(line) && n < wrapColumn {
				_, size := utf8.DecodeRuneInString(line[cut:])
				cut += size
				n++
			}
			rows = append(rows, line[:cut])
			if cut == len(line) {
				break
			}
			line = line[cut:]
		}
	}
	return rows
}

// textList draws *rows as monospace text, one row per list item, without separators:
// a read-only text view that only lays out the visible rows.
func textList(rows *[]string) *widget.List {
	l := widget.NewList(
		func() int { return len(*rows) },
		func() fyne.CanvasObject {
			t := canvas.NewText("m", theme.Color(theme.ColorNameForeground)) // a wide template would widen the pane
			t.TextStyle.Monospace = true
			t.TextSize = monoSize() // at 13 px the monospace face loses its underscores
			return t
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(*rows) {
				t := o.(*canvas.Text)
				t.Text = (*rows)[i]
				t.Color = theme.Color(theme.ColorNameForeground)
				t.TextSize = monoSize()
				t.Refresh()
			}
		})
	l.HideSeparators = true
	return l
}
