package ui

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/contract"
	"inspector/filter"
)

// contractPanel is Tools ▸ API contract: the OpenAPI contract inferred from the traffic
// (Deps.Contract, fed by the composition root with the stored and the live sessions), as
// a tree of hosts and operations with their sample counts, refreshed while open; it
// exports the document and can check sessions against it (the contract: filter terms).
type contractPanel struct {
	u       *UI
	win     fyne.Window
	tree    *widget.Tree
	status  *widget.Label
	checkOn *widget.Check
	detail  *widget.Entry // the selected operation's part of the document, as YAML
	hosts   []contract.HostSummary
	byID    map[string]string // tree node id -> label
	kids    map[string][]string
	loaded  string // the contract file traffic is checked against, "" for the inferred one
}

func (u *UI) showContract() *contractPanel {
	if u.deps.Contract == nil {
		dialog.ShowInformation("API contract", "The API contract is inferred from live traffic: it is not available in this window.", u.win)
		return nil
	}
	if u.contract != nil {
		u.contract.win.RequestFocus()
		return u.contract
	}
	p := &contractPanel{u: u, byID: map[string]string{}, kids: map[string][]string{}}
	p.tree = widget.NewTree(
		func(id widget.TreeNodeID) []widget.TreeNodeID { return p.kids[id] },
		func(id widget.TreeNodeID) bool { return id == "" || strings.HasPrefix(id, "h:") },
		func(branch bool) fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(id widget.TreeNodeID, _ bool, o fyne.CanvasObject) { o.(*widget.Label).SetText(p.byID[id]) })
	p.detail = widget.NewMultiLineEntry()
	p.detail.TextStyle = fyne.TextStyle{Monospace: true}
	p.detail.SetPlaceHolder("Select an operation to see its parameters and schemas.")
	p.tree.OnSelected = func(id widget.TreeNodeID) { p.showOperation(id) }
	p.status = widget.NewLabel("")
	p.status.Wrapping = fyne.TextWrapWord
	yaml := widget.NewButtonWithIcon("Export YAML…", theme.DocumentSaveIcon(), func() { p.export(false) })
	js := widget.NewButtonWithIcon("Export JSON…", theme.DocumentSaveIcon(), func() { p.export(true) })
	p.checkOn = widget.NewCheck("Check traffic against this contract (filter contract:violation)", func(on bool) { p.useAsContract(on) })
	load := widget.NewButtonWithIcon("Check against a file…", theme.FolderOpenIcon(), func() {
		home, _ := os.UserHomeDir()
		p.u.pathDialog("Check traffic against an OpenAPI contract", "Check", home, false, func(path string) {
			if err := p.loadFile(path); err != nil {
				dialog.ShowError(err, p.win)
			}
		})
	})
	bar := container.NewHBox(yaml, js, load, p.checkOn)
	split := container.NewHSplit(p.tree, p.detail)
	split.SetOffset(0.45)
	content := container.NewBorder(bar, p.status, nil, nil, split)
	u.contract = p
	p.win = u.liveWindow("API contract", fyne.NewSize(1000, 640), content, p.refresh, func() { u.contract = nil })
	return p
}

// refresh rebuilds the tree from the inferrer's summary (cheap: no schemas rendered).
func (p *contractPanel) refresh() {
	in := p.u.deps.Contract()
	if in == nil {
		p.status.SetText("Reading the stored sessions…")
		return
	}
	p.hosts = in.Summary()
	byID, kids := map[string]string{}, map[string][]string{}
	ops := 0
	for _, h := range p.hosts {
		hid := "h:" + h.Host
		kids[""] = append(kids[""], hid)
		byID[hid] = fmt.Sprintf("%s  (%d sessions, %d operations)", h.Host, h.Count, len(h.Operations))
		for _, op := range h.Operations {
			oid := "o:" + h.Host + " " + op.Method + " " + op.Path
			kids[hid] = append(kids[hid], oid)
			byID[oid] = fmt.Sprintf("%-7s %s  (%d)", op.Method, op.Path, op.Count)
			ops++
		}
	}
	first := len(p.kids[""]) == 0
	p.byID, p.kids = byID, kids
	p.tree.Refresh()
	if first {
		p.tree.OpenAllBranches() // hosts open at first: the operations are what one came for
	}
	st := in.Stats()
	line := fmt.Sprintf("%d sessions, %d operations over %d hosts, %d JSON bodies folded in", st.Sessions, ops, len(p.hosts), st.Bodies)
	skipped := 0
	for _, n := range st.Skipped {
		skipped += n
	}
	if skipped > 0 {
		line += fmt.Sprintf("; %d skipped (not HTTP, not JSON, truncated…)", skipped)
	}
	p.status.SetText(line)
}

func (p *contractPanel) export(asJSON bool) {
	in := p.u.deps.Contract()
	if in == nil {
		return
	}
	name := "api.yaml"
	if asJSON {
		name = "api.json"
	}
	home, _ := os.UserHomeDir()
	p.u.pathDialog("Export the API contract", "Export", filepath.Join(home, name), true, func(path string) {
		if err := p.write(in, path, asJSON); err != nil {
			dialog.ShowError(err, p.win)
			return
		}
		p.status.SetText("Exported to " + path)
	})
}

func (p *contractPanel) write(in *contract.Inferrer, path string, asJSON bool) error {
	var b bytes.Buffer
	doc := in.Document(contract.Options{})
	var err error
	if asJSON {
		err = contract.WriteJSON(&b, doc)
	} else {
		err = contract.WriteYAML(&b, doc)
	}
	if err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// useAsContract checks sessions against a snapshot of the inferred document (a later
// toggle takes a new one), so the filter bar's contract:violation shows what departs
// from it; off removes the check.
func (p *contractPanel) useAsContract(on bool) {
	if !on {
		filter.SetContract(nil)
		p.loaded = ""
		p.checkOn.Text = "Check traffic against this contract (filter contract:violation)"
		p.checkOn.Refresh()
		p.u.Reload()
		return
	}
	if p.loaded != "" {
		return // loadFile installed the file's validator and checked the box
	}
	in := p.u.deps.Contract()
	if in == nil {
		p.checkOn.SetChecked(false)
		return
	}
	v, err := contract.NewValidator(in.Document(contract.Options{}))
	if err != nil {
		dialog.ShowError(err, p.win)
		p.checkOn.SetChecked(false)
		return
	}
	filter.SetContract(v.Filter())
	p.u.Reload()
}

// showOperation shows the selected operation (or host) as YAML: the operation of the
// rendered document, with its parameters, request body and responses.
func (p *contractPanel) showOperation(id string) {
	in := p.u.deps.Contract()
	if in == nil || !strings.HasPrefix(id, "o:") {
		return
	}
	host, rest, _ := strings.Cut(strings.TrimPrefix(id, "o:"), " ")
	method, path, _ := strings.Cut(rest, " ")
	doc := in.Document(contract.Options{Host: host})
	item := doc.Paths.Value(path)
	if item == nil || item.GetOperation(method) == nil {
		p.detail.SetText("")
		return
	}
	var b bytes.Buffer
	if err := contract.WriteYAMLValue(&b, map[string]any{method + " " + path: item.GetOperation(method)}); err != nil {
		p.detail.SetText(err.Error())
		return
	}
	p.detail.SetText(b.String())
}

// loadFile checks traffic against an OpenAPI document from a file (a contract the user
// has, not the inferred one): the filter bar's contract:violation then shows what departs
// from it, and the detail pane lists how the inferred contract drifts from the file. A
// document that does not load is refused with its file, line and reason, and the check in
// place stays.
func (p *contractPanel) loadFile(path string) error {
	doc, err := contract.LoadDocument(path)
	if err != nil {
		return err
	}
	v, err := contract.NewValidator(doc)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	filter.SetContract(v.Filter())
	p.loaded = path
	p.checkOn.Text = "Check traffic against " + filepath.Base(path) + " (filter contract:violation)"
	p.checkOn.SetChecked(true) // useAsContract sees p.loaded and keeps the file's validator
	p.u.Reload()
	ops := 0
	if doc.Paths != nil {
		for _, item := range doc.Paths.Map() {
			ops += len(item.Operations())
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Checking traffic against %s (%d operations).\n", path, ops)
	if in := p.u.deps.Contract(); in != nil {
		drift := contract.CompareDocuments(doc, in.Document(contract.Options{}))
		fmt.Fprintf(&b, "\nThe traffic departs from it in %d places:\n", len(drift))
		for _, d := range drift {
			b.WriteString("  " + d.String() + "\n")
		}
	}
	p.detail.SetText(b.String())
	p.status.SetText("Checking traffic against " + path)
	return nil
}
