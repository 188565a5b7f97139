package ui

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/hooks/rules"
	"inspector/engine/session"
)

// The forms of map_local's inline body and of the rewrite kinds (body, URL, status
// rewrite and the block list), kept apart from rules.go's kinds.

// inlineFrom fills a new map_local rule's inline body (and Content-Type) with s's decoded
// response body when it is text of at most 1 MiB: the form opens ready to edit and save.
func inlineFrom(r *rules.Rule, s *session.Session) {
	if s.Response == nil {
		return
	}
	data, _, _, err := decodeForSave(s.Response.Header, s.Response.Body)
	if err != nil || len(data) == 0 || len(data) > 1<<20 || !utf8.Valid(data) {
		return
	}
	r.Body = string(data)
	if ct := s.Response.Header.Get("Content-Type"); ct != "" {
		r.Header = http.Header{"Content-Type": {ct}}
	}
}

const (
	sourceFile   = "File or folder"
	sourceInline = "Inline body (kept in rules.json)"
)

// mapLocalSource is the "Answer from" choice of a map_local form: a rule without a file
// answers with its inline body.
func (f *RuleForm) mapLocalSource(r rules.Rule) *widget.Select {
	f.Source = widget.NewSelect([]string{sourceFile, sourceInline}, nil)
	// A saved rule without a file, or a new one given a body, is inline; a new blank one
	// starts on the file.
	if r.File == "" && (r.ID != 0 || r.Body != "") {
		f.Source.SetSelected(sourceInline)
	} else {
		f.Source.SetSelected(sourceFile)
	}
	return f.Source
}

func (f *RuleForm) inline() bool { return f.Source != nil && f.Source.Selected == sourceInline }

// mapLocalBody is the lower part of a map_local form: the response headers, and the
// inline body editor while the source is the inline body (the file row is disabled then).
func (f *RuleForm) mapLocalBody(r rules.Rule, fileRow fyne.CanvasObject) fyne.CanvasObject {
	f.Body = widget.NewMultiLineEntry()
	f.Body.TextStyle.Monospace = true
	f.Body.Wrapping = entryWrapping([]byte(r.Body))
	f.Body.SetText(r.Body)
	f.Body.SetPlaceHolder(`{"mocked": true}`)
	body := container.NewBorder(heading("Inline body"), nil, nil, nil, mono(f.Body))
	split := container.NewVSplit(f.headersBox(), body)
	show := func(s string) {
		inline := s == sourceInline
		for _, w := range []fyne.Disableable{f.File, f.PickFile, f.PickFolder} {
			if inline {
				w.Disable()
			} else {
				w.Enable()
			}
		}
		if inline {
			body.Show()
			f.Body.Enable()
		} else {
			body.Hide()
			f.Body.Disable()
		}
		split.Refresh()
	}
	f.Source.OnChanged = show
	show(f.Source.Selected)
	return split
}

// rewriteFields adds the fields of a rewrite kind to the form items; extra is the part
// under the form (the block list's editor), or nil.
func (f *RuleForm) rewriteFields(r rules.Rule, items []*widget.FormItem) ([]*widget.FormItem, fyne.CanvasObject) {
	pattern := func(ph string) {
		f.Pattern = widget.NewEntry()
		f.Pattern.TextStyle.Monospace = true
		f.Pattern.SetText(r.Pattern)
		f.Pattern.SetPlaceHolder(ph)
		f.Replace = widget.NewEntry()
		f.Replace.TextStyle.Monospace = true
		f.Replace.SetText(r.Replace)
		f.Replace.SetPlaceHolder("replacement; $1 or ${name} insert a group")
	}
	switch r.Kind {
	case rules.BodyRewrite:
		f.Phase = widget.NewSelect([]string{"request", "response"}, nil)
		f.Phase.SetSelected(orDefault(r.Phase, "request"))
		pattern(`regular expression (RE2), e.g. "debug":\s*false`)
		items = append(items, widget.NewFormItem("In the body of the", f.Phase),
			widget.NewFormItem("Find (regex)", f.Pattern), widget.NewFormItem("Replace with", f.Replace),
			widget.NewFormItem("", widget.NewLabel(fmt.Sprintf("Bodies are decoded first and sent decoded; over %d MiB, streams and unknown encodings pass unchanged.", rules.MaxRewriteBody>>20))))
	case rules.URLRewrite:
		pattern(`regular expression on the full URL, e.g. ^https://prod\.`)
		items = append(items, widget.NewFormItem("Find (regex)", f.Pattern), widget.NewFormItem("Replace with", f.Replace))
	case rules.StatusRewrite:
		f.Status = statusEntry(r.Status, "e.g. 200")
		items = append(items, widget.NewFormItem("New status", f.Status))
	case rules.Block:
		f.Filter.AllowEmpty = true
		f.Filter.SetPlaceHolder("optional, e.g. -method:OPTIONS")
		f.Filter.check()
		f.Status = statusEntry(r.Status, "403 (default)")
		f.List = widget.NewMultiLineEntry()
		f.List.TextStyle.Monospace = true
		f.List.SetText(strings.Join(r.List, "\n"))
		f.List.SetPlaceHolder("ads.example.com\n*.tracker.example\nhttps://example.com/beacon/")
		items = append(items, widget.NewFormItem("Status", f.Status))
		return items, container.NewBorder(heading("Blocked hosts (globs) and URL prefixes, one a line"), nil, nil, nil, mono(f.List))
	}
	return items, nil
}

// readRewrite reads a rewrite kind's fields into r.
func (f *RuleForm) readRewrite(r *rules.Rule, num func(*widget.Entry, string, *int) error) error {
	switch f.Kind {
	case rules.BodyRewrite, rules.URLRewrite:
		if f.Phase != nil {
			r.Phase = f.Phase.Selected
		}
		r.Pattern, r.Replace = f.Pattern.Text, f.Replace.Text
	case rules.StatusRewrite:
		return num(f.Status, "status", &r.Status)
	case rules.Block:
		for _, l := range strings.Split(f.List.Text, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				r.List = append(r.List, l)
			}
		}
		return num(f.Status, "status", &r.Status)
	}
	return nil
}

// rewriteLine is a rewrite rule's description in the list.
func rewriteLine(r rules.Rule) string {
	switch r.Kind {
	case rules.BodyRewrite:
		return fmt.Sprintf("%s body s/%s/%s/", orDefault(r.Phase, "request"), r.Pattern, r.Replace)
	case rules.URLRewrite:
		return fmt.Sprintf("URL s/%s/%s/", r.Pattern, r.Replace)
	case rules.StatusRewrite:
		return fmt.Sprintf("→ status %d", r.Status)
	case rules.Block:
		return fmt.Sprintf("blocks %s", strings.Join(r.List, ", "))
	}
	return ""
}
