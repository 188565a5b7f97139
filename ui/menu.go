package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/ui/viewmodel"
)

// menus is the main menu's controller: the fyne.MainMenu and the items whose checks and
// enabled state follow the window.
type menus struct {
	u    *UI
	main *fyne.MainMenu

	capture, follow, hosts *fyne.MenuItem
	density                []*fyne.MenuItem
	themes                 []*fyne.MenuItem
	columns                []*fyne.MenuItem
	compare                *fyne.MenuItem
	mutating               []*fyne.MenuItem // disabled in a read-only viewer
}

func newMenus(u *UI) *menus {
	m := &menus{u: u}
	ctrl := fyne.KeyModifierShortcutDefault
	sc := func(k fyne.KeyName, mod fyne.KeyModifier) fyne.Shortcut {
		return &desktop.CustomShortcut{KeyName: k, Modifier: mod}
	}
	item := func(label string, f func(), s fyne.Shortcut) *fyne.MenuItem {
		it := fyne.NewMenuItem(label, f)
		it.Shortcut = s
		return it
	}

	openHAR := item("Open HAR…", u.openHARDialog, sc(fyne.KeyO, ctrl))
	openHAR.Icon = theme.FolderOpenIcon()
	openStore := item("Open store…", u.openStoreDialog, nil)
	if u.deps.OpenStore == nil {
		openStore.Disabled = true
	}
	imp := item("Import HAR into this capture…", u.importDialog, sc(fyne.KeyI, ctrl))
	exp := item("Export HAR…", u.exportDialog, sc(fyne.KeyS, ctrl))
	exp.Icon = theme.DocumentSaveIcon()
	share := item("Export for sharing…", u.shareDialog, nil)
	saz := item("Export Fiddler .saz…", u.exportSAZDialog, nil)
	saveCapture := item("Save capture as…", u.saveCaptureDialog, nil)
	if _, ok := u.deps.Store.(CaptureSaver); !ok {
		saveCapture.Disabled = true
	}
	quit := item("Quit", u.app.Quit, sc(fyne.KeyQ, ctrl))
	quit.IsQuit = true
	file := fyne.NewMenu("File", openHAR, openStore, saveCapture, fyne.NewMenuItemSeparator(), imp, exp, share, saz, fyne.NewMenuItemSeparator(), quit)

	del := item("Delete", u.DeleteSelection, sc(fyne.KeyDelete, ctrl))
	clr := item("Clear all…", u.confirmClear, sc(fyne.KeyX, ctrl|fyne.KeyModifierShift))
	copyAs := u.copyAsItem()
	copyAs.Disabled = false // the menu is built once; with nothing selected it copies nothing
	copyMasked := u.copyAsMaskedItem()
	copyMasked.Disabled = false
	m.compare = item("Compare selected", u.compareTwo, sc(fyne.KeyD, ctrl))
	edit := fyne.NewMenu("Edit",
		item("Copy URL", u.CopyURL, sc(fyne.KeyC, ctrl|fyne.KeyModifierShift)),
		item("Copy as curl", u.CopyCurl, sc(fyne.KeyK, ctrl|fyne.KeyModifierShift)),
		item("Copy raw", u.CopyRaw, sc(fyne.KeyR, ctrl|fyne.KeyModifierShift)),
		copyAs,
		copyMasked,
		fyne.NewMenuItemSeparator(),
		// Ctrl+A stays the entries' own select-all; in the list it selects every session.
		item("Select all sessions", u.SelectAll, nil),
		item("Find in body", func() { u.detail.openFind() }, nil),
		item("Search everything…", u.OpenSearch, sc(fyne.KeyF, ctrl|fyne.KeyModifierShift)),
		m.compare,
		fyne.NewMenuItemSeparator(),
		del, clr,
	)
	m.mutating = append(m.mutating, del, clr, imp)

	colsMenu := fyne.NewMenu("Columns")
	for c := range viewmodel.NumColumns {
		it := fyne.NewMenuItem(viewmodel.Columns[c].Title, func() { u.list.toggle(c, !u.list.shown(c)) })
		m.columns = append(m.columns, it)
		colsMenu.Items = append(colsMenu.Items, it)
	}
	columns := fyne.NewMenuItem("Columns", nil)
	columns.ChildMenu = colsMenu
	densMenu := fyne.NewMenu("Density")
	for i, n := range []string{"Compact", "Comfortable"} {
		it := fyne.NewMenuItem(n, func() { u.SetDensity(Density(i)) })
		m.density = append(m.density, it)
		densMenu.Items = append(densMenu.Items, it)
	}
	density := fyne.NewMenuItem("Density", nil)
	density.ChildMenu = densMenu
	thMenu := fyne.NewMenu("Theme")
	for i, n := range []string{"System", "Light", "Dark"} {
		it := fyne.NewMenuItem(n, func() { u.SetThemeMode(ThemeMode(i)) })
		m.themes = append(m.themes, it)
		thMenu.Items = append(thMenu.Items, it)
	}
	th := fyne.NewMenuItem("Theme", nil)
	th.ChildMenu = thMenu
	m.hosts = fyne.NewMenuItem("Host tree", func() { u.SetHostsShown(!u.hostsOn) })
	m.follow = item("Follow newest", func() { u.setFollow(!u.following) }, sc(fyne.KeyG, ctrl))
	view := fyne.NewMenu("View", columns, density, th, fyne.NewMenuItemSeparator(), m.hosts, m.follow,
		fyne.NewMenuItemSeparator(),
		item("Next session", func() { u.Step(1) }, sc(fyne.KeyDown, ctrl)),
		item("Previous session", func() { u.Step(-1) }, sc(fyne.KeyUp, ctrl)),
	)

	m.capture = item("Capture", u.ToggleCapture, sc(fyne.KeyE, ctrl))
	capture := fyne.NewMenu("Capture", m.capture,
		fyne.NewMenuItemSeparator(),
		item("Breakpoints…", u.debug.showPanel, sc(fyne.KeyB, ctrl|fyne.KeyModifierShift)),
		item("Break on this host", u.debug.breakOnSelectedHost, nil),
		item("Rules…", u.debug.showRules, nil),
		item("Network conditions…", func() { u.networkDialog() }, nil),
		item("Protobuf schemas…", func() { u.schemasDialog() }, nil),
		fyne.NewMenuItemSeparator(),
		item("System proxy…", u.status.proxyDialog, nil),
		item("Root CA…", u.status.caDialog, nil),
	)
	tools := fyne.NewMenu("Tools",
		item("Composer…", u.debug.composeSelected, sc(fyne.KeyN, ctrl|fyne.KeyModifierShift)),
		item("Repeat selected", u.RepeatSelection, sc(fyne.KeyR, ctrl)),
		item("Replay selected… (times, parallel)", u.ReplaySelection, nil),
		fyne.NewMenuItemSeparator(),
		item("Compare recordings…", u.compareRecordingsDialog, nil),
		item("API contract…", func() { u.showContract() }, nil),
		fyne.NewMenuItemSeparator(),
		item("Scripts…", func() { u.showScripts() }, nil),
		item("MCP…", func() { u.showMCP() }, nil),
		item("TLS key log…", func() { u.showKeyLog() }, nil),
		fyne.NewMenuItemSeparator(),
		item("Settings…", func() { u.showSettings() }, nil),
	)
	help := fyne.NewMenu("Help",
		item("Keyboard shortcuts", u.ShowShortcuts, nil),
		item("Set up a client…", u.showSetup, nil),
	)
	menus := []*fyne.Menu{file, edit, view}
	if u.intercept != nil {
		menus = append(menus, u.intercept.menu)
	}
	m.main = fyne.NewMainMenu(append(menus, capture, tools, help)...)
	m.refreshChecks()
	return m
}

// refreshChecks updates the checked and enabled states.
func (m *menus) refreshChecks() {
	if m == nil {
		return
	}
	u := m.u
	if u.list == nil || u.theme == nil {
		return
	}
	m.capture.Checked = u.deps.Engine != nil && u.deps.Engine.Capturing()
	m.capture.Disabled = u.deps.Engine == nil
	m.follow.Checked = u.following
	m.hosts.Checked = u.hostsOn
	for i, it := range m.density {
		it.Checked = Density(i) == u.theme.density
	}
	for i, it := range m.themes {
		it.Checked = ThemeMode(i) == u.theme.mode
	}
	for c, it := range m.columns {
		it.Checked = u.list.shown(viewmodel.Column(c))
	}
	m.compare.Disabled = u.compare == nil
	for _, it := range m.mutating {
		it.Disabled = u.deps.ReadOnly
	}
	m.main.Refresh()
}

// toolbar is the one compact row of icons for the frequent actions, each with a tooltip.
type toolbar struct {
	u       *UI
	bar     *widget.Toolbar
	capture *tipAction
	follow  *tipAction
	paused  *pausedItem
}

func newToolbar(u *UI) *toolbar {
	t := &toolbar{u: u}
	t.capture = newTipAction(u, theme.MediaPauseIcon(), "Pause capture (Ctrl+E)", u.ToggleCapture)
	t.follow = newTipAction(u, theme.MoveDownIcon(), "Follow newest (Ctrl+G)", func() { u.setFollow(!u.following) })
	t.paused = &pausedItem{u: u}
	var items []widget.ToolbarItem
	if u.intercept != nil {
		// First: it is how traffic gets in.
		items = append(items, u.intercept.toolbarItem(), widget.NewToolbarSeparator())
	}
	t.bar = widget.NewToolbar(append(items,
		t.capture,
		newTipAction(u, theme.DeleteIcon(), "Clear all sessions (Ctrl+Shift+X)", u.confirmClear),
		widget.NewToolbarSeparator(),
		newTipAction(u, theme.FolderOpenIcon(), "Open HAR in a viewer (Ctrl+O)", u.openHARDialog),
		newTipAction(u, theme.DocumentSaveIcon(), "Export HAR (Ctrl+S)", u.exportDialog),
		widget.NewToolbarSeparator(),
		newTipAction(u, theme.ContentCopyIcon(), "Copy URL (Ctrl+Shift+C)", u.CopyURL),
		newTipAction(u, theme.MediaReplayIcon(), "Repeat selected now (Ctrl+R); Tools ▸ Replay selected… for counts", u.RepeatSelection),
		newTipAction(u, theme.DocumentCreateIcon(), "Compose a request", u.debug.composeSelected),
		newTipAction(u, theme.MediaRecordIcon(), "Breakpoints", u.debug.showPanel),
		newTipAction(u, theme.SettingsIcon(), "Rules", u.debug.showRules),
		t.paused,
		widget.NewToolbarSeparator(),
		t.follow,
		newTipAction(u, theme.HelpIcon(), "Set up a client", u.showSetup),
	)...)
	return t
}

func (t *toolbar) object() fyne.CanvasObject { return t.bar }

func (t *toolbar) refresh() {
	if t == nil {
		return
	}
	u := t.u
	switch {
	case u.deps.Engine == nil:
		t.capture.setTip("Capture (no proxy running)")
		t.capture.Disable()
	case u.deps.Engine.Capturing():
		t.capture.SetIcon(theme.MediaPauseIcon())
		t.capture.setTip("Pause capture (Ctrl+E)")
	default:
		t.capture.SetIcon(theme.MediaPlayIcon())
		t.capture.setTip("Resume capture (Ctrl+E)")
	}
	if u.following {
		t.follow.setTip("Following newest: on (Ctrl+G)")
		t.follow.button.Importance = widget.HighImportance
	} else {
		t.follow.setTip("Follow newest: off (Ctrl+G)")
		t.follow.button.Importance = widget.LowImportance
	}
	t.follow.button.Refresh()
}

// tipAction is a toolbar icon button that shows its tooltip while the mouse is over it.
type tipAction struct {
	u      *UI
	button *tipButton
}

func newTipAction(u *UI, icon fyne.Resource, tip string, f func()) *tipAction {
	b := &tipButton{u: u, tip: tip}
	b.Icon = icon
	b.OnTapped = f
	b.Importance = widget.LowImportance
	b.ExtendBaseWidget(b)
	return &tipAction{u: u, button: b}
}

func (a *tipAction) ToolbarObject() fyne.CanvasObject { return a.button }
func (a *tipAction) SetIcon(r fyne.Resource)          { a.button.SetIcon(r) }
func (a *tipAction) Disable()                         { a.button.Disable() }
func (a *tipAction) setTip(s string)                  { a.button.tip = s }

// Tip is the tooltip text (for tests).
func (a *tipAction) Tip() string { return a.button.tip }

type tipButton struct {
	widget.Button
	u   *UI
	tip string
	pop *widget.PopUp
}

func (b *tipButton) MouseIn(e *desktop.MouseEvent) {
	b.Button.MouseIn(e)
	b.showTip()
}

func (b *tipButton) MouseOut() {
	b.Button.MouseOut()
	b.hideTip()
}

func (b *tipButton) Tapped(e *fyne.PointEvent) {
	b.hideTip()
	b.Button.Tapped(e)
}

func (b *tipButton) showTip() {
	c := fyne.CurrentApp().Driver().CanvasForObject(b)
	if c == nil || b.tip == "" {
		return
	}
	txt := canvas.NewText(b.tip, theme.Color(theme.ColorNameForeground))
	txt.TextSize = theme.CaptionTextSize()
	b.pop = widget.NewPopUp(container.NewPadded(txt), c)
	pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(b)
	b.pop.ShowAtPosition(pos.Add(fyne.NewPos(0, b.Size().Height+2)))
}

func (b *tipButton) hideTip() {
	if b.pop != nil {
		b.pop.Hide()
		b.pop = nil
	}
}

// pausedItem is the toolbar's breakpoint indicator (the debug views' button).
type pausedItem struct{ u *UI }

func (p *pausedItem) ToolbarObject() fyne.CanvasObject {
	if p.u.deps.Debug == nil {
		return container.NewStack() // no breakpoints without a proxy: nothing to show
	}
	return p.u.debug.indicator
}
