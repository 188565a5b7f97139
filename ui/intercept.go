package ui

import (
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// Interceptor starts clients that go through this instance and trust its CA, with no
// change to the machine (the Intercept menu). The composition root implements it with
// the launcher of `inspector launch` and `inspector run`; nil hides the menu.
type Interceptor interface {
	// Clients are the launchable clients in menu order (browsers, then the terminal).
	Clients() []InterceptClient
	// Launch starts the client with that ID and says in one line what was started.
	Launch(id string) (string, error)
	// RunSupport is nil where Run can work, else the one line that says why it cannot.
	RunSupport() error
	// Run starts a command line (as sh -c does) in a network namespace of its own whose
	// TCP goes through this instance, and says in one line what was started.
	Run(line string) (string, error)
	// Phone is the WireGuard client configuration of the device named name (made the
	// first time).
	Phone(name string) (Phone, error)
	// EnablePhone turns WireGuard mode on, on UDP port, while the instance runs.
	EnablePhone(port int) error
}

// InterceptClient is one entry of the Intercept menu.
type InterceptClient struct {
	ID, Name string
	// Missing is "" for an installed client, else what was looked for ("looked for it on
	// PATH: google-chrome, google-chrome-stable").
	Missing string
}

// Phone is a device's WireGuard client configuration (Intercept ▸ Phone over WireGuard…).
type Phone struct {
	Name   string
	Config string // the wg-quick file the QR code holds
	// Port is the UDP port WireGuard mode listens on, 0 while it is off.
	Port int
}

// defaultWireGuardPort is WireGuard's usual UDP port, offered when the mode is off.
const defaultWireGuardPort = 51820

// intercept is the Intercept menu's controller.
type intercept struct {
	u    *UI
	menu *fyne.Menu
	// last is the outcome of the last action, as the status bar flashed it (for tests).
	last string
	// runDlg and phoneDlg are the open dialogs (tests drive them).
	runDlg   *runDialog
	phoneDlg *phoneDialog
}

func newIntercept(u *UI) *intercept {
	if u.deps.Intercept == nil {
		return nil
	}
	ic := &intercept{u: u, menu: fyne.NewMenu("Intercept")}
	ic.build()
	return ic
}

// build fills the menu: one entry per client (absent ones greyed, naming what was
// looked for), then Run a command… and Phone over WireGuard….
func (ic *intercept) build() {
	items := []*fyne.MenuItem{}
	for _, c := range ic.u.deps.Intercept.Clients() {
		label := c.Name
		if c.Missing != "" {
			label = c.Name + " (not installed: " + c.Missing + ")"
		}
		it := fyne.NewMenuItem(label, func() { ic.launch(c) })
		it.Disabled = c.Missing != ""
		if c.ID == "terminal" {
			items = append(items, fyne.NewMenuItemSeparator())
		}
		items = append(items, it)
	}
	run := fyne.NewMenuItem("Run a command…", ic.showRun)
	phone := fyne.NewMenuItem("Phone over WireGuard…", ic.showPhone)
	items = append(items, fyne.NewMenuItemSeparator(), run, phone)
	ic.menu.Items = items
}

// Item is the entry whose label starts with label (for tests), nil when none.
func (ic *intercept) Item(label string) *fyne.MenuItem {
	for _, it := range ic.menu.Items {
		if !it.IsSeparator && strings.HasPrefix(it.Label, label) {
			return it
		}
	}
	return nil
}

// launch starts c off the UI goroutine (a Firefox profile takes certutil runs) and
// says how it went in the status bar, or in an error dialog.
func (ic *intercept) launch(c InterceptClient) {
	ic.u.notify("Starting " + c.Name + "…")
	go func() {
		msg, err := ic.u.deps.Intercept.Launch(c.ID)
		ic.u.post(func() { ic.done(c.Name, msg, err) })
	}()
}

func (ic *intercept) done(what, msg string, err error) {
	if err != nil {
		ic.last = err.Error()
		dialog.ShowError(fmt.Errorf("%s: %w", what, err), ic.u.win)
		return
	}
	ic.last = msg
	ic.u.notify(msg)
}

// runDialog is Intercept ▸ Run a command….
type runDialog struct {
	d     *dialog.CustomDialog
	entry *widget.Entry
	note  *widget.Label
	start *widget.Button
}

func (ic *intercept) showRun() {
	r := &runDialog{entry: widget.NewEntry(), note: widget.NewLabel("")}
	r.note.Wrapping = fyne.TextWrapWord
	r.entry.SetPlaceHolder("curl -sS https://example.com/")
	r.start = widget.NewButtonWithIcon("Run", theme.MediaPlayIcon(), func() { ic.run(r) })
	r.start.Importance = widget.HighImportance
	r.entry.OnSubmitted = func(string) { ic.run(r) }
	intro := widget.NewLabel("The command runs in a network namespace of its own: all its TCP goes through this " +
		"instance, with or without proxy settings, and it trusts this CA through the variables of `inspector env`. " +
		"Its sessions carry its name.")
	intro.Wrapping = fyne.TextWrapWord
	if err := ic.u.deps.Intercept.RunSupport(); err != nil {
		r.note.SetText(err.Error())
		r.entry.Disable()
		r.start.Disable()
	}
	body := container.NewVBox(intro, container.NewBorder(nil, nil, nil, r.start, r.entry), r.note)
	r.d = dialog.NewCustom("Run a command", "Close", body, ic.u.win)
	r.d.Resize(fyne.NewSize(640, 260))
	ic.runDlg = r
	r.d.Show()
	ic.u.win.Canvas().Focus(r.entry)
}

func (ic *intercept) run(r *runDialog) {
	line := strings.TrimSpace(r.entry.Text)
	if line == "" {
		r.note.SetText("Type a command line first.")
		return
	}
	r.start.Disable()
	r.note.SetText("Starting…")
	go func() {
		msg, err := ic.u.deps.Intercept.Run(line)
		ic.u.post(func() {
			r.start.Enable()
			if err != nil {
				ic.last = err.Error()
				r.note.SetText(err.Error())
				return
			}
			ic.last = msg
			r.note.SetText(msg)
			ic.u.notify(msg)
		})
	}()
}

// phoneDialog is Intercept ▸ Phone over WireGuard….
type phoneDialog struct {
	d      *dialog.CustomDialog
	name   *widget.Entry
	state  *widget.Label
	enable *widget.Button
	show   *widget.Button
	port   *widget.Entry
	// enableRow holds the port and the enable button, shown while WireGuard mode is off.
	enableRow *fyne.Container
	qr        *canvas.Image
	config    *widget.Entry
	phone     Phone
}

func (ic *intercept) showPhone() {
	p := &phoneDialog{name: widget.NewEntry(), state: widget.NewLabel(""), config: widget.NewMultiLineEntry()}
	p.name.SetText("phone")
	p.state.Wrapping = fyne.TextWrapWord
	p.config.Wrapping = fyne.TextWrapOff
	p.config.TextStyle = fyne.TextStyle{Monospace: true}
	p.qr = canvas.NewImageFromImage(nil)
	p.qr.FillMode = canvas.ImageFillContain
	p.qr.SetMinSize(fyne.NewSize(260, 260))
	p.port = widget.NewEntry()
	p.port.SetText(strconv.Itoa(defaultWireGuardPort))
	p.enable = widget.NewButton("Turn WireGuard mode on", func() { ic.enablePhone(p) })
	p.enable.Importance = widget.HighImportance
	p.enableRow = container.NewBorder(nil, nil, widget.NewLabel("UDP port"), p.enable, p.port)
	p.enableRow.Hide()
	p.name.OnSubmitted = func(string) { ic.loadPhone(p) }
	p.show = widget.NewButton("Show", func() { ic.loadPhone(p) })
	steps := widget.NewLabel("1. Install the WireGuard app on the device and scan this code (Add tunnel ▸ Scan from QR code).\n" +
		"2. Turn the tunnel on, then open " + certPageURL + " on the device and install the CA it offers.\n" +
		"Each device is a peer with its own name; its sessions carry that name.")
	steps.Wrapping = fyne.TextWrapWord
	left := container.NewVBox(container.NewBorder(nil, nil, widget.NewLabel("Device name"), p.show, p.name), p.state, p.enableRow, steps)
	body := container.NewBorder(nil, nil, nil, p.qr, container.NewBorder(left, nil, nil, nil, p.config))
	p.d = dialog.NewCustom("Phone over WireGuard", "Close", body, ic.u.win)
	p.d.Resize(fyne.NewSize(900, 560))
	ic.phoneDlg = p
	ic.loadPhone(p)
	p.d.Show()
}

// loadPhone fetches the device's configuration and shows it with its QR code, or what
// is missing.
func (ic *intercept) loadPhone(p *phoneDialog) {
	ph, err := ic.u.deps.Intercept.Phone(strings.TrimSpace(p.name.Text))
	if err != nil {
		ic.last = err.Error()
		p.state.SetText(err.Error())
		p.qr.Image = nil
		p.qr.Refresh()
		p.config.SetText("")
		return
	}
	p.phone = ph
	p.config.SetText(ph.Config)
	if img, err := qrImage(ph.Config, 512); err == nil {
		p.qr.Image = img
	} else {
		p.qr.Image = nil
		p.state.SetText("QR code: " + err.Error())
	}
	p.qr.Refresh()
	if ph.Port == 0 {
		p.state.SetText("WireGuard mode is off in this instance: start Inspector with --wireguard :" + strconv.Itoa(defaultWireGuardPort) +
			", or turn it on now. The device's tunnel connects once it is on.")
		p.enableRow.Show()
	} else {
		p.state.SetText(fmt.Sprintf("WireGuard mode listens on UDP port %d. Device %q is ready.", ph.Port, ph.Name))
		p.enableRow.Hide()
	}
	ic.last = p.state.Text
}

func (ic *intercept) enablePhone(p *phoneDialog) {
	port, err := strconv.Atoi(strings.TrimSpace(p.port.Text))
	if err != nil || port < 0 || port > 65535 {
		p.state.SetText(fmt.Sprintf("UDP port %q: give a number from 1 to 65535 (51820 is WireGuard's usual port)", p.port.Text))
		ic.last = p.state.Text
		return
	}
	p.enable.Disable()
	go func() {
		err := ic.u.deps.Intercept.EnablePhone(port)
		ic.u.post(func() {
			p.enable.Enable()
			if err != nil {
				ic.last = err.Error()
				p.state.SetText("Could not turn WireGuard mode on: " + err.Error())
				return
			}
			ic.loadPhone(p)
		})
	}()
}

// InterceptLast is the outcome of the last Intercept action (for tests).
func (u *UI) InterceptLast() string {
	if u.intercept == nil {
		return ""
	}
	return u.intercept.last
}

// InterceptItem is the Intercept menu's entry whose label starts with label (for tests).
func (u *UI) InterceptItem(label string) *fyne.MenuItem {
	if u.intercept == nil {
		return nil
	}
	return u.intercept.Item(label)
}

// InterceptRunWidgets are the Run a command… dialog's entry, button and note (for tests;
// nils while it was never opened).
func (u *UI) InterceptRunWidgets() (*widget.Entry, *widget.Button, *widget.Label) {
	if u.intercept == nil || u.intercept.runDlg == nil {
		return nil, nil, nil
	}
	r := u.intercept.runDlg
	return r.entry, r.start, r.note
}

// PhoneWidgets are the Phone over WireGuard… dialog's parts (for tests).
type PhoneWidgets struct {
	Name, Port, Config *widget.Entry
	State              *widget.Label
	Show, Enable       *widget.Button
	QR                 *canvas.Image
}

// InterceptPhoneWidgets are the open Phone over WireGuard… dialog's widgets (for tests;
// nil while it was never opened).
func (u *UI) InterceptPhoneWidgets() *PhoneWidgets {
	if u.intercept == nil || u.intercept.phoneDlg == nil {
		return nil
	}
	p := u.intercept.phoneDlg
	return &PhoneWidgets{Name: p.name, Port: p.port, Config: p.config, State: p.state, Show: p.show, Enable: p.enable, QR: p.qr}
}

// toolbarItem is the toolbar's Intercept button: it opens the menu under itself.
func (ic *intercept) toolbarItem() widget.ToolbarItem {
	var a *tipAction
	a = newTipAction(ic.u, theme.ComputerIcon(), "Intercept a browser, a terminal, a command or a phone", func() {
		c := fyne.CurrentApp().Driver().CanvasForObject(a.button)
		if c == nil {
			return
		}
		pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(a.button)
		widget.ShowPopUpMenuAtPosition(ic.menu, c, pos.Add(fyne.NewPos(0, a.button.Size().Height)))
	})
	return a
}
