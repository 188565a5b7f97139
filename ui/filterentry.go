package ui

import (
	"errors"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"inspector/filter"
)

// FilterEntry is an entry for a filter expression (filter) that is checked as it
// is typed: Error shows the expression with a caret under the problem and the parser's
// message, and is hidden while the expression is valid. UI goroutine only.
type FilterEntry struct {
	*widget.Entry
	Error *widget.Label
	err   error
	// OnValid runs after every edit with the parse result (nil: valid).
	OnValid func(err error)
	// AllowEmpty makes a blank filter valid (a block rule can rely on its list alone).
	AllowEmpty bool
}

// NewFilterEntry builds the entry with a placeholder.
func NewFilterEntry(placeholder string) *FilterEntry {
	f := &FilterEntry{Entry: widget.NewEntry(), Error: widget.NewLabel("")}
	f.Entry.SetPlaceHolder(placeholder)
	f.Error.TextStyle.Monospace = true
	f.Error.Wrapping = fyne.TextWrapWord // a long message must not widen the form
	f.Error.Importance = widget.DangerImportance
	f.Error.Hide()
	f.Entry.OnChanged = func(string) { f.check() }
	return f
}

// Err is the parse error of the current text (nil when it parses). A blank filter is an
// error too: rules and breakpoints need one.
func (f *FilterEntry) Err() error { return f.err }

func (f *FilterEntry) check() {
	text := f.Entry.Text
	f.err = nil
	if strings.TrimSpace(text) == "" {
		f.Error.Hide()
		if !f.AllowEmpty {
			f.err = errors.New("empty filter (use one such as host:example.com)")
		}
	} else if _, err := filter.Parse(text); err != nil {
		f.err = err
		f.Error.SetText(caretMessage(text, err))
		f.Error.Show()
	} else {
		f.Error.Hide()
	}
	if f.OnValid != nil {
		f.OnValid(f.err)
	}
}

// caretMessage renders a filter error as the expression, a caret under the offending
// column and the message ("column 6: unmatched '('").
func caretMessage(text string, err error) string {
	var se *filter.SyntaxError
	if !errors.As(err, &se) {
		return err.Error()
	}
	pos := min(max(se.Pos, 0), len(text))
	col := len([]rune(text[:pos]))
	line := strings.NewReplacer("\n", " ", "\t", " ").Replace(text)
	return line + "\n" + strings.Repeat(" ", col) + "^ column " + strconv.Itoa(col+1) + ": " + se.Msg
}
