package ui

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/hooks/breakpoint"
	"inspector/engine/hooks/rules"
	"inspector/engine/session"
)

// contextMenu builds the row context menu for the current selection.
func (u *UI) contextMenu() *fyne.Menu {
	n := u.model.SelectionLen()
	one := n == 1
	noDbg := u.deps.Debug == nil
	item := func(label string, f func(), disabled bool) *fyne.MenuItem {
		it := fyne.NewMenuItem(label, f)
		it.Disabled = disabled
		return it
	}
	marks := fyne.NewMenu("Mark colour")
	for _, m := range markNames {
		marks.Items = append(marks.Items, fyne.NewMenuItem(m, func() { u.MarkSelection(m) }))
	}
	mark := fyne.NewMenuItem("Mark colour", nil)
	mark.ChildMenu = marks
	mark.Disabled = u.deps.ReadOnly
	repeat, replay := "Repeat", "Replay…"
	if n > 1 {
		repeat, replay = fmt.Sprintf("Repeat %d sessions", n), fmt.Sprintf("Replay %d sessions…", n)
	}
	del := "Delete"
	if n > 1 {
		del = fmt.Sprintf("Delete %d sessions", n)
	}
	_, canKeep := u.deps.Store.(Keeper)
	keep := "Keep (never removed by retention)"
	if u.selectionKept() {
		keep = "Don't keep"
	}
	return fyne.NewMenu("",
		item("Copy URL", u.CopyURL, n == 0),
		item("Copy as curl", u.CopyCurl, n == 0),
		item("Copy raw", u.CopyRaw, n == 0),
		u.copyAsItem(),
		u.copyAsMaskedItem(),
		fyne.NewMenuItemSeparator(),
		item(repeat, u.RepeatSelection, noDbg || n == 0),
		item(replay, u.ReplaySelection, noDbg || n == 0),
		item("Edit and resend…", u.debug.composeSelected, noDbg || !one),
		fyne.NewMenuItemSeparator(),
		item("Break on this host", u.debug.breakOnSelectedHost, noDbg || !one),
		item("Break on this URL", u.BreakOnSelectedURL, noDbg || !one),
		item("Map local from this exchange…", u.mapLocalDialog, noDbg || !one),
		item("Map remote from this exchange…", u.mapRemoteDialog, noDbg || !one),
		fyne.NewMenuItemSeparator(),
		mark,
		item(keep, u.ToggleKeepSelection, n == 0 || !canKeep || u.deps.ReadOnly),
		item("Compare with…", u.compareSelected, u.compare == nil || n == 0 || n > 2),
		fyne.NewMenuItemSeparator(),
		item(del, u.DeleteSelection, n == 0 || u.deps.ReadOnly),
	)
}

// showContextMenu pops the context menu up at an absolute canvas position.
func (u *UI) showContextMenu(at fyne.Position) {
	if u.model.SelectionLen() == 0 {
		return
	}
	widget.ShowPopUpMenuAtPosition(u.contextMenu(), u.win.Canvas(), at)
}

// contextMenuPos is where the menu key opens the menu: at the primary selected row.
func (u *UI) contextMenuPos() fyne.Position {
	d := fyne.CurrentApp().Driver()
	base := d.AbsolutePositionForObject(u.list.list)
	id, ok := u.model.Selected()
	if !ok {
		return base
	}
	i := u.model.IndexOf(id)
	pitch := u.list.rowHeight()
	y := float32(i)*pitch - u.list.list.GetScrollOffset() + pitch
	y = min(max(y, 0), u.list.list.Size().Height)
	return base.Add(fyne.NewPos(40, y))
}

// markNames are the mark colours offered; "none" clears the mark.
var markNames = []string{"none", "red", "orange", "green", "blue", "purple"}

// MarkSelection sets the mark of every selected session ("none" clears it).
func (u *UI) MarkSelection(mark string) {
	if mark == "none" {
		mark = ""
	}
	var errs []error
	for _, s := range u.SelectedSessions() {
		if err := u.setMark(s, mark, s.Comment); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		dialog.ShowError(err, u.win)
	}
	if id, ok := u.model.Selected(); ok {
		u.detail.show(id)
	}
}

// setMark stores a mark and comment and updates the row.
func (u *UI) setMark(s *session.Session, mark, comment string) error {
	if st := u.deps.Store; st != nil {
		if err := st.SetMark(s.ID, mark, comment); err != nil {
			return fmt.Errorf("saving the mark of #%d failed: %w", s.ID, err)
		}
	}
	c := s.Clone() // cached sessions are immutable: replace, never modify
	c.Mark, c.Comment = mark, comment
	u.remember(c)
	sum := c.Summarize()
	if r, ok := u.model.Get(s.ID); ok {
		sum.InFlight = r.InFlight
	}
	u.changed(u.model.Upsert([]session.Summary{sum}))
	return nil
}

// Keeper is a store with the Keep mark (*store.Store): a kept session is never evicted.
type Keeper interface {
	SetKeep(id session.ID, on bool) error
}

// selectionKept says every selected session is marked Keep.
func (u *UI) selectionKept() bool {
	ss := u.SelectedSessions()
	for _, s := range ss {
		if !s.Flags.Has(session.FlagKept) {
			return false
		}
	}
	return len(ss) > 0
}

// ToggleKeepSelection marks the selected sessions Keep, or, when all of them are kept
// already, removes the mark.
func (u *UI) ToggleKeepSelection() {
	k, ok := u.deps.Store.(Keeper)
	if !ok {
		return
	}
	on := !u.selectionKept()
	var errs []error
	n := 0
	for _, s := range u.SelectedSessions() {
		if err := k.SetKeep(s.ID, on); err != nil {
			errs = append(errs, fmt.Errorf("#%d: %w", s.ID, err))
			continue
		}
		n++
		c := s.Clone() // cached sessions are immutable: replace, never modify
		if on {
			c.Flags |= session.FlagKept
		} else {
			c.Flags &^= session.FlagKept
		}
		u.remember(c)
		sum := c.Summarize()
		if r, ok := u.model.Get(s.ID); ok {
			sum.InFlight = r.InFlight
		}
		u.changed(u.model.Upsert([]session.Summary{sum}))
	}
	if err := errors.Join(errs...); err != nil {
		dialog.ShowError(err, u.win)
	}
	if on {
		u.notify(plural(uint64(n), "session kept", "sessions kept") + ": retention never removes them")
	} else {
		u.notify(plural(uint64(n), "session", "sessions") + " no longer kept")
	}
}

// BreakOnSelectedURL adds a request breakpoint for the selected session's URL (without
// its query).
func (u *UI) BreakOnSelectedURL() {
	s := u.selectedSession()
	if s == nil || u.deps.Debug == nil {
		return
	}
	target := s.Request.URL
	if pu, err := url.Parse(target); err == nil {
		pu.RawQuery, pu.Fragment = "", ""
		target = pu.String()
	}
	if _, err := u.deps.Debug.AddBreakpoint(breakpoint.Breakpoint{Filter: "url:" + quoteFilter(target), Phase: breakpoint.PhaseRequest, Enabled: true}); err != nil {
		dialog.ShowError(err, u.win)
		return
	}
	u.notify("Breakpoint added on " + target)
}

// urlFilter is the rule filter matching a session's URL without its query.
func urlFilter(raw string) string {
	if pu, err := url.Parse(raw); err == nil {
		pu.RawQuery, pu.Fragment = "", ""
		raw = pu.String()
	}
	return "url:" + quoteFilter(raw)
}

// addRule appends r to the rule list through the Debugger.
func (u *UI) addRule(r rules.Rule) error {
	if u.deps.Debug == nil {
		return errors.New("rules need a running proxy")
	}
	rs := append(u.deps.Debug.Rules(), r)
	_, err := u.deps.Debug.ReplaceRules(rs)
	return err
}

// MapLocalFromSession saves s's decoded response body to file and adds a map_local rule
// serving it for s's URL.
func (u *UI) MapLocalFromSession(s *session.Session, file string) error {
	if s.Response == nil {
		return errors.New("the session has no response to serve")
	}
	data, _, _, err := decodeForSave(s.Response.Header, s.Response.Body)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return err
	}
	r := rules.Rule{Name: "map local " + s.Request.URL, Kind: rules.MapLocal, Enabled: true, Filter: urlFilter(s.Request.URL), File: file}
	if ct := s.Response.Header.Get("Content-Type"); ct != "" {
		r.Header = map[string][]string{"Content-Type": {ct}}
	}
	return u.addRule(r)
}

// MapRemoteFromSession adds a map_remote rule sending s's URL to target.
func (u *UI) MapRemoteFromSession(s *session.Session, target string) error {
	pu, err := url.Parse(strings.TrimSpace(target))
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return fmt.Errorf("the target must be an absolute http(s) URL, like https://staging.example.com")
	}
	return u.addRule(rules.Rule{Name: "map remote " + s.Request.URL, Kind: rules.MapRemote, Enabled: true, Filter: urlFilter(s.Request.URL), Target: pu.String()})
}

func (u *UI) mapLocalDialog() {
	s := u.selectedSession()
	if s == nil {
		return
	}
	name := "body"
	if pu, err := url.Parse(s.Request.URL); err == nil {
		if b := filepath.Base(pu.Path); b != "/" && b != "." && b != "" {
			name = b
		}
	}
	home, _ := os.UserHomeDir()
	u.pathDialog("Map local: save the response to", "Save and map", filepath.Join(home, "inspector-map-local", name), true, func(p string) {
		if err := u.MapLocalFromSession(s, p); err != nil {
			dialog.ShowError(err, u.win)
			return
		}
		u.notify("Map local rule added: " + s.Request.URL + " → " + p)
	})
}

func (u *UI) mapRemoteDialog() {
	s := u.selectedSession()
	if s == nil {
		return
	}
	e := widget.NewEntry()
	if pu, err := url.Parse(s.Request.URL); err == nil {
		e.SetText(pu.Scheme + "://" + pu.Host)
	}
	dialog.ShowForm("Map remote "+s.Request.URL, "Add rule", "Cancel",
		[]*widget.FormItem{widget.NewFormItem("Send to", e)}, func(ok bool) {
			if !ok {
				return
			}
			if err := u.MapRemoteFromSession(s, e.Text); err != nil {
				dialog.ShowError(err, u.win)
				return
			}
			u.notify("Map remote rule added: " + s.Request.URL + " → " + e.Text)
		}, u.win)
}

// compareSelected hands two sessions to the compare hook: the two selected ones, or the
// one selected and the next one picked (the hook's window asks).
func (u *UI) compareSelected() {
	if u.compare == nil {
		return
	}
	ss := u.SelectedSessions()
	switch len(ss) {
	case 2:
		u.compare(ss[0], ss[1])
	case 1:
		u.compare(ss[0], nil)
	}
}
