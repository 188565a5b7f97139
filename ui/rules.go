package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/hooks/rules"
)

// ruleKinds are the kinds in the order the "Add" menu lists them, with their labels.
var ruleKinds = []struct {
	kind  rules.Kind
	label string
}{
	{rules.MapLocal, "Map local (answer from a file or an inline body)"},
	{rules.MapRemote, "Map remote (send elsewhere)"},
	{rules.AutoRespond, "Auto-respond (canned response)"},
	{rules.Header, "Header rewrite"},
	{rules.Throttle, "Throttle (latency, bandwidth)"},
	{rules.BodyRewrite, "Body rewrite (regex)"},
	{rules.URLRewrite, "URL rewrite (regex)"},
	{rules.StatusRewrite, "Status rewrite"},
	{rules.Block, "Block list (answer with a refusal)"},
}

func kindLabel(k rules.Kind) string {
	for _, x := range ruleKinds {
		if x.kind == k {
			return x.label
		}
	}
	return string(k)
}

// RulesEditor shows the rule list (enable, edit, move up, remove), a form per rule kind
// for adding and editing, and the whole set as JSON (import, export, edit). Every change
// replaces the list through Debugger.ReplaceRules, which refuses an invalid set and then
// changes nothing. UI goroutine only.
type RulesEditor struct {
	dbg Debugger
	win fyne.Window // for the file dialogs; nil in tests that call ImportJSON directly
	rs  []rules.Rule

	Rows    *fyne.Container
	AddKind *widget.Select
	Add     *widget.Button
	// Form edits one rule (nil: none open).
	Form    *RuleForm
	formBox *fyne.Container

	JSON      *widget.Entry
	ApplyJSON *widget.Button
	Import    *widget.Button
	Export    *widget.Button
	Result    *widget.Label
	Tabs      *container.AppTabs
	Content   fyne.CanvasObject
}

// NewRulesEditor loads the current rules.
func NewRulesEditor(dbg Debugger) *RulesEditor {
	e := &RulesEditor{dbg: dbg}
	e.Rows = container.NewVBox()
	labels := make([]string, len(ruleKinds))
	for i, k := range ruleKinds {
		labels[i] = k.label
	}
	e.AddKind = widget.NewSelect(labels, nil)
	e.AddKind.SetSelected(labels[0])
	e.Add = widget.NewButtonWithIcon("Add rule", theme.ContentAddIcon(), func() {
		e.NewRule(rules.Rule{Kind: ruleKinds[e.AddKind.SelectedIndex()].kind, Enabled: true})
	})
	e.Result = widget.NewLabel("")
	e.Result.Wrapping = fyne.TextWrapWord
	e.formBox = container.NewStack(widget.NewLabel("Choose a rule to edit, or add one."))

	e.JSON = widget.NewMultiLineEntry()
	e.JSON.TextStyle.Monospace = true
	e.JSON.SetPlaceHolder(`{"rules": [{"kind": "auto_respond", "enabled": true, "filter": "path:/health", "status": 200, "body": "ok"}]}`)
	e.ApplyJSON = widget.NewButton("Apply JSON", func() { e.report(e.ImportJSON(strings.NewReader(e.JSON.Text))) })
	e.Import = widget.NewButtonWithIcon("Import JSON…", theme.FolderOpenIcon(), e.importDialog)
	e.Export = widget.NewButtonWithIcon("Export JSON…", theme.DocumentSaveIcon(), e.exportDialog)

	list := container.NewBorder(
		container.NewBorder(nil, nil, nil, e.Add, e.AddKind), nil, nil, nil,
		container.NewVScroll(e.Rows))
	forms := container.NewHSplit(list, e.formBox)
	forms.SetOffset(0.42)
	jsonTab := container.NewBorder(widget.NewLabel("The rule set as saved in DATA_DIR/rules.json (docs/debugging.md lists the fields)."),
		container.NewHBox(e.ApplyJSON), nil, nil, e.JSON)
	e.Tabs = container.NewAppTabs(container.NewTabItem("Rules", forms), container.NewTabItem("JSON", jsonTab))
	e.Content = container.NewBorder(nil, container.NewVBox(capped(e.Result, 3), container.NewHBox(e.Import, e.Export)), nil, nil, e.Tabs)
	e.load(dbg.Rules())
	return e
}

// Rules is the list as shown.
func (e *RulesEditor) Rules() []rules.Rule { return append([]rules.Rule(nil), e.rs...) }

func (e *RulesEditor) report(err error) bool {
	if err != nil {
		e.Result.SetText("⚠ " + err.Error())
		return false
	}
	return true
}

// load shows rs: the rows and the JSON text.
func (e *RulesEditor) load(rs []rules.Rule) {
	e.rs = append([]rules.Rule(nil), rs...)
	e.Rows.RemoveAll()
	for i, r := range e.rs {
		on := widget.NewCheck("", nil)
		on.SetChecked(r.Enabled)
		on.OnChanged = func(v bool) {
			if v != e.rs[i].Enabled {
				next := e.Rules()
				next[i].Enabled = v
				e.replace(next, fmt.Sprintf("Rule #%d %s.", r.ID, map[bool]string{true: "enabled", false: "disabled"}[v]))
			}
		}
		edit := widget.NewButtonWithIcon("", theme.DocumentCreateIcon(), func() { e.Edit(r.ID) })
		up := widget.NewButtonWithIcon("", theme.MoveUpIcon(), func() {
			if i > 0 {
				next := e.Rules()
				next[i-1], next[i] = next[i], next[i-1]
				e.replace(next, fmt.Sprintf("Rule #%d moved up.", r.ID))
			}
		})
		if i == 0 {
			up.Disable()
		}
		rm := widget.NewButtonWithIcon("", theme.DeleteIcon(), func() { e.Remove(r.ID) })
		for _, b := range []*widget.Button{edit, up, rm} {
			b.Importance = widget.LowImportance
		}
		label := widget.NewLabel(ruleLine(r))
		label.Truncation = fyne.TextTruncateEllipsis
		e.Rows.Add(container.NewBorder(nil, nil, on, container.NewHBox(edit, up, rm), label))
	}
	e.Rows.Refresh()
	b, _ := json.MarshalIndent(map[string][]rules.Rule{"rules": nonNil(e.rs)}, "", "  ")
	e.JSON.SetText(string(b))
}

func nonNil(rs []rules.Rule) []rules.Rule {
	if rs == nil {
		return []rules.Rule{}
	}
	return rs
}

// ruleLine is a rule's one-line description in the list.
func ruleLine(r rules.Rule) string {
	var what string
	switch r.Kind {
	case rules.MapRemote:
		what = "→ " + r.Target
	case rules.MapLocal:
		what = "→ " + r.File
		if r.File == "" {
			what = fmt.Sprintf("→ inline body (%d bytes)", len(r.Body))
		}
	case rules.AutoRespond:
		what = "→ " + statusText(r.Status, "")
	case rules.Header:
		op, ph := r.Op, r.Phase
		if op == "" {
			op = "set"
		}
		if ph == "" {
			ph = "request"
		}
		what = fmt.Sprintf("%s %s %s: %s", ph, op, r.HeaderName, r.HeaderValue)
	case rules.Throttle:
		what = fmt.Sprintf("%d ms, %d B/s", r.LatencyMS, r.BytesPerSec)
	default:
		what = rewriteLine(r)
	}
	name := ""
	if r.Name != "" {
		name = r.Name + " · "
	}
	return fmt.Sprintf("#%d %s%s  %s  %s", r.ID, name, r.Kind, r.Filter, what)
}

// replace saves next as the whole list; on error nothing changes and the list is
// shown as it was.
func (e *RulesEditor) replace(next []rules.Rule, msg string) error {
	saved, err := e.dbg.ReplaceRules(next)
	if err != nil {
		e.report(err)
		e.load(e.rs)
		return err
	}
	e.load(saved)
	e.Result.SetText(msg + e.foldersNote(saved))
	return nil
}

// NewRule opens the form on a new rule (r gives the kind and any prefilled fields).
func (e *RulesEditor) NewRule(r rules.Rule) {
	r.ID = 0
	e.open(NewRuleForm(r))
	e.Tabs.SelectIndex(0)
}

// Edit opens the form on the rule with that id; false when there is none.
func (e *RulesEditor) Edit(id int64) bool {
	for _, r := range e.rs {
		if r.ID == id {
			e.open(NewRuleForm(r))
			e.Tabs.SelectIndex(0)
			return true
		}
	}
	return false
}

func (e *RulesEditor) open(f *RuleForm) {
	e.Form = f
	f.Save.OnTapped = func() { e.saveForm(f) }
	f.Cancel.OnTapped = e.closeForm
	if f.PickFile != nil {
		f.PickFile.OnTapped = func() {
			if e.win == nil {
				return
			}
			dialog.ShowFileOpen(func(rc fyne.URIReadCloser, err error) {
				if err == nil && rc != nil {
					f.File.SetText(rc.URI().Path())
					rc.Close()
				}
			}, e.win)
		}
		f.PickFolder.OnTapped = func() {
			if e.win == nil {
				return
			}
			dialog.ShowFolderOpen(func(u fyne.ListableURI, err error) {
				if err == nil && u != nil {
					f.File.SetText(u.Path())
				}
			}, e.win)
		}
	}
	e.formBox.Objects = []fyne.CanvasObject{f.Content}
	e.formBox.Refresh()
}

func (e *RulesEditor) closeForm() {
	e.Form = nil
	e.formBox.Objects = []fyne.CanvasObject{widget.NewLabel("Choose a rule to edit, or add one.")}
	e.formBox.Refresh()
}

func (e *RulesEditor) saveForm(f *RuleForm) {
	r, err := f.Rule()
	if err != nil {
		f.Err.SetText("⚠ " + err.Error())
		return
	}
	next := e.Rules()
	msg := "Rule added."
	if r.ID == 0 {
		next = append(next, r)
	} else {
		found := false
		for i := range next {
			if next[i].ID == r.ID {
				next[i], found = r, true
			}
		}
		if !found {
			f.Err.SetText(fmt.Sprintf("⚠ rule #%d was removed meanwhile; save it as a new rule", r.ID))
			return
		}
		msg = fmt.Sprintf("Rule #%d saved.", r.ID)
	}
	saved, err := e.dbg.ReplaceRules(next)
	if err != nil {
		f.Err.SetText("⚠ " + err.Error())
		return
	}
	e.load(saved)
	if r.ID == 0 && len(saved) > 0 {
		msg = fmt.Sprintf("Rule #%d added.", saved[len(saved)-1].ID)
	}
	e.Result.SetText(msg + e.foldersNote(saved))
	e.closeForm()
}

// Remove deletes the rule with that id.
func (e *RulesEditor) Remove(id int64) {
	var next []rules.Rule
	for _, r := range e.rs {
		if r.ID != id {
			next = append(next, r)
		}
	}
	if e.Form != nil && e.Form.id == id {
		e.closeForm()
	}
	e.replace(next, fmt.Sprintf("Rule #%d removed.", id))
}

// ImportJSON replaces the whole rule set with the one read from r: the rules.json format
// {"rules": [...]} or a bare array. Unknown fields and invalid rules are errors and change
// nothing.
func (e *RulesEditor) ImportJSON(r io.Reader) error {
	b, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err != nil {
		return err
	}
	rs, err := parseRuleSet(b)
	if err != nil {
		return err
	}
	return e.replace(rs, fmt.Sprintf("Imported %d rules.", len(rs)))
}

func parseRuleSet(b []byte) ([]rules.Rule, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, nil
	}
	var rs []rules.Rule
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var err error
	if b[0] == '[' {
		err = dec.Decode(&rs)
	} else {
		var f struct {
			Rules []rules.Rule `json:"rules"`
		}
		err = dec.Decode(&f)
		rs = f.Rules
	}
	if err != nil {
		return nil, fmt.Errorf("rules JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("rules JSON: text after the rule set")
	}
	return rs, nil
}

// ExportJSON writes the rule set in the rules.json format.
func (e *RulesEditor) ExportJSON(w io.Writer) error {
	b, err := json.MarshalIndent(map[string][]rules.Rule{"rules": nonNil(e.rs)}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func (e *RulesEditor) importDialog() {
	if e.win == nil {
		return
	}
	dialog.ShowFileOpen(func(rc fyne.URIReadCloser, err error) {
		if err != nil || rc == nil {
			e.report(err)
			return
		}
		defer rc.Close()
		e.report(e.ImportJSON(rc))
	}, e.win)
}

func (e *RulesEditor) exportDialog() {
	if e.win == nil {
		return
	}
	d := dialog.NewFileSave(func(wc fyne.URIWriteCloser, err error) {
		if err != nil || wc == nil {
			e.report(err)
			return
		}
		err = e.ExportJSON(wc)
		if cerr := wc.Close(); err == nil {
			err = cerr
		}
		if e.report(err) {
			e.Result.SetText(fmt.Sprintf("Exported %d rules to %s.", len(e.rs), wc.URI().Path()))
		}
	}, e.win)
	d.SetFileName("rules.json")
	d.Show()
}

// RuleForm edits one rule with the fields of its kind; the filter is checked as it is
// typed (Save is disabled while it does not parse). UI goroutine only.
type RuleForm struct {
	Kind rules.Kind
	id   int64

	Name    *widget.Entry
	Filter  *FilterEntry
	Enabled *widget.Check
	// map_remote
	Target *widget.Entry
	// map_local (File, optional Status and Headers) and auto_respond (Status, Headers, Body)
	File *widget.Entry
	// PickFile and PickFolder fill File from a file dialog (map_local; they need the
	// rules window).
	PickFile, PickFolder *widget.Button
	Status               *widget.Entry
	Headers              *HeaderTable
	Body                 *widget.Entry
	// header
	Phase       *widget.Select
	Op          *widget.Select
	HeaderName  *widget.Entry
	HeaderValue *widget.Entry
	// throttle
	Latency *widget.Entry
	Rate    *widget.Entry
	// map_local: Source chooses a file or the inline Body (rules_rewrite.go).
	Source *widget.Select
	// body_rewrite, url_rewrite (Pattern, Replace; Phase for bodies), status_rewrite
	// (Status), block (List, one entry a line; Status).
	Pattern, Replace *widget.Entry
	List             *widget.Entry

	Save, Cancel *widget.Button
	Err          *widget.Label
	Content      fyne.CanvasObject
}

// NewRuleForm builds the form for r's kind, filled from r.
func NewRuleForm(r rules.Rule) *RuleForm {
	f := &RuleForm{Kind: r.Kind, id: r.ID}
	f.Name = widget.NewEntry()
	f.Name.SetText(r.Name)
	f.Name.SetPlaceHolder("optional")
	f.Filter = NewFilterEntry("e.g. host:api.example.com path:/v1/*")
	f.Enabled = widget.NewCheck("Enabled", nil)
	f.Enabled.SetChecked(r.Enabled)
	f.Err = widget.NewLabel("")
	f.Err.Wrapping = fyne.TextWrapWord
	f.Save = widget.NewButton("Save rule", nil)
	f.Save.Importance = widget.HighImportance
	f.Cancel = widget.NewButton("Cancel", nil)
	f.Filter.OnValid = func(err error) {
		if err != nil {
			f.Save.Disable()
		} else {
			f.Save.Enable()
		}
	}
	f.Filter.SetText(r.Filter)
	f.Filter.check() // SetText of an unchanged text fires no OnChanged

	items := []*widget.FormItem{
		widget.NewFormItem("Name", f.Name),
		widget.NewFormItem("Filter", container.NewVBox(f.Filter.Entry, f.Filter.Error)),
	}
	var extra fyne.CanvasObject
	switch r.Kind {
	case rules.MapRemote:
		f.Target = widget.NewEntry()
		f.Target.SetText(r.Target)
		f.Target.SetPlaceHolder("https://staging.example.com")
		items = append(items, widget.NewFormItem("Target", f.Target))
	case rules.MapLocal:
		f.File = widget.NewEntry()
		f.File.SetText(r.File)
		f.File.SetPlaceHolder("/absolute/path/to/file-or-folder")
		f.Status = statusEntry(r.Status, "200 (default)")
		f.Headers = NewHeaderTable(r.Header)
		f.PickFile = widget.NewButtonWithIcon("File…", theme.FileIcon(), nil)
		f.PickFolder = widget.NewButtonWithIcon("Folder…", theme.FolderIcon(), nil)
		fileRow := container.NewBorder(nil, nil, nil, container.NewHBox(f.PickFile, f.PickFolder), f.File)
		items = append(items, widget.NewFormItem("Answer from", f.mapLocalSource(r)),
			widget.NewFormItem("File or folder", fileRow), widget.NewFormItem("Status", f.Status))
		extra = f.mapLocalBody(r, fileRow)
	case rules.AutoRespond:
		st := r.Status
		if st == 0 {
			st = 200
		}
		f.Status = statusEntry(st, "")
		f.Headers = NewHeaderTable(r.Header)
		f.Body = widget.NewMultiLineEntry()
		f.Body.TextStyle.Monospace = true
		f.Body.Wrapping = entryWrapping([]byte(r.Body))
		f.Body.SetText(r.Body)
		items = append(items, widget.NewFormItem("Status", f.Status))
		body := container.NewBorder(heading("Body"), nil, nil, nil, mono(f.Body))
		s := container.NewVSplit(f.headersBox(), body)
		extra = s
	case rules.Header:
		f.Phase = widget.NewSelect([]string{"request", "response"}, nil)
		f.Phase.SetSelected(orDefault(r.Phase, "request"))
		f.Op = widget.NewSelect([]string{"set", "add", "remove"}, nil)
		f.Op.SetSelected(orDefault(r.Op, "set"))
		f.HeaderName = widget.NewEntry()
		f.HeaderName.SetText(r.HeaderName)
		f.HeaderName.SetPlaceHolder("X-Debug")
		f.HeaderValue = widget.NewEntry()
		f.HeaderValue.SetText(r.HeaderValue)
		items = append(items, widget.NewFormItem("On the", f.Phase), widget.NewFormItem("Operation", f.Op),
			widget.NewFormItem("Header", f.HeaderName), widget.NewFormItem("Value", f.HeaderValue))
	case rules.Throttle:
		f.Latency = widget.NewEntry()
		f.Latency.SetPlaceHolder("0")
		if r.LatencyMS != 0 {
			f.Latency.SetText(strconv.Itoa(r.LatencyMS))
		}
		f.Rate = widget.NewEntry()
		f.Rate.SetPlaceHolder("0 = unlimited")
		if r.BytesPerSec != 0 {
			f.Rate.SetText(strconv.FormatInt(r.BytesPerSec, 10))
		}
		items = append(items, widget.NewFormItem("Latency (ms)", f.Latency), widget.NewFormItem("Bandwidth (bytes/s)", f.Rate))
	default:
		items, extra = f.rewriteFields(r, items)
	}
	items = append(items, widget.NewFormItem("", f.Enabled))
	title := kindLabel(r.Kind)
	if r.ID != 0 {
		title = fmt.Sprintf("Rule #%d: %s", r.ID, title)
	}
	top := container.NewVBox(heading(title), widget.NewForm(items...))
	bottom := container.NewVBox(capped(f.Err, 3), container.NewHBox(f.Save, f.Cancel))
	f.Content = container.NewBorder(top, bottom, nil, nil, extra)
	return f
}

func (f *RuleForm) headersBox() fyne.CanvasObject {
	return container.NewBorder(heading("Response headers"), nil, nil, nil, f.Headers.Content)
}

func statusEntry(n int, placeholder string) *widget.Entry {
	e := widget.NewEntry()
	e.SetPlaceHolder(placeholder)
	if n != 0 {
		e.SetText(strconv.Itoa(n))
	}
	return e
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Rule reads the form; a field that does not parse, or a rule that does not validate, is
// an error naming the field.
func (f *RuleForm) Rule() (rules.Rule, error) {
	r := rules.Rule{ID: f.id, Kind: f.Kind, Name: strings.TrimSpace(f.Name.Text), Enabled: f.Enabled.Checked,
		Filter: strings.TrimSpace(f.Filter.Text)}
	if err := f.Filter.Err(); err != nil {
		return r, fmt.Errorf("filter: %w", err)
	}
	num := func(e *widget.Entry, what string, dst *int) error {
		s := strings.TrimSpace(e.Text)
		if s == "" {
			return nil
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return fmt.Errorf("%s %q: want a whole number", what, s)
		}
		*dst = n
		return nil
	}
	var err error
	switch f.Kind {
	case rules.MapRemote:
		r.Target = strings.TrimSpace(f.Target.Text)
	case rules.MapLocal, rules.AutoRespond:
		if f.File != nil && !f.inline() {
			r.File = strings.TrimSpace(f.File.Text)
		}
		if err = num(f.Status, "status", &r.Status); err != nil {
			return r, err
		}
		if r.Header, err = f.Headers.Header(); err != nil {
			return r, err
		}
		if len(r.Header) == 0 {
			r.Header = nil
		}
		if f.Body != nil && (f.Kind == rules.AutoRespond || f.inline()) {
			r.Body = f.Body.Text
		}
	case rules.Header:
		r.Phase, r.Op = f.Phase.Selected, f.Op.Selected
		r.HeaderName, r.HeaderValue = strings.TrimSpace(f.HeaderName.Text), f.HeaderValue.Text
	case rules.Throttle:
		if err = num(f.Latency, "latency", &r.LatencyMS); err != nil {
			return r, err
		}
		var bps int
		if err = num(f.Rate, "bandwidth", &bps); err != nil {
			return r, err
		}
		r.BytesPerSec = int64(bps)
	default:
		if err := f.readRewrite(&r, num); err != nil {
			return r, err
		}
	}
	return r, r.Validate()
}

// MapLocalFolderLister is implemented by a Debugger whose map_local rules serve files only
// from folders the user allowed (engine/hooks/rules: saving a map_local rule in this form
// allows its file's folder; docs/security.md).
type MapLocalFolderLister interface {
	MapLocalFolders() []string
}

// foldersNote names the allowed map-local folders after a save that holds a map_local rule.
func (e *RulesEditor) foldersNote(rs []rules.Rule) string {
	l, ok := e.dbg.(MapLocalFolderLister)
	if !ok || !slices.ContainsFunc(rs, func(r rules.Rule) bool { return r.Kind == rules.MapLocal }) {
		return ""
	}
	return "\nMap-local files are served only from: " + strings.Join(l.MapLocalFolders(), ", ") +
		" (never the data directory; `inspector rules remove-folder DIR` takes one off)"
}
