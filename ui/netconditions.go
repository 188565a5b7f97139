package ui

import (
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/netprofile"
)

// NetShaper is the instance's network-condition shaper (*netprofile.Shaper).
type NetShaper interface {
	Profile() *netprofile.Profile
	Set(p *netprofile.Profile) error
}

const (
	netNone   = "None (full speed)"
	netCustom = "Custom"
)

// netDialog is Capture ▸ Network conditions…: a preset, or custom bandwidth, latency,
// hosts and URL regular expressions.
type netDialog struct {
	u                        *UI
	choice                   *widget.RadioGroup
	down, up, latency, hosts *widget.Entry
	urls                     *widget.Entry // one regular expression per line
	current                  *widget.Label
	d                        *dialog.CustomDialog
}

func (u *UI) networkDialog() *netDialog {
	if u.deps.Network == nil {
		dialog.ShowInformation("Network conditions", "Network conditions are not available in this window (no proxy running).", u.win)
		return nil
	}
	n := &netDialog{u: u, down: widget.NewEntry(), up: widget.NewEntry(), latency: widget.NewEntry(), hosts: widget.NewEntry(),
		urls: widget.NewMultiLineEntry(), current: widget.NewLabel("")}
	n.urls.SetMinRowsVisible(2)
	n.urls.SetPlaceHolder("URL regular expressions, one per line, e.g. /api/v2/ (empty: all)")
	n.down.SetPlaceHolder("kbit/s, 0 = unlimited")
	n.up.SetPlaceHolder("kbit/s, 0 = unlimited")
	n.latency.SetPlaceHolder("ms added per request")
	n.hosts.SetPlaceHolder("host globs, e.g. api.example.com *.cdn.net (empty: all)")
	opts := []string{netNone}
	for _, p := range netprofile.Presets {
		if d := p.String(); d != p.Name {
			opts = append(opts, p.Name+" — "+d)
		} else {
			opts = append(opts, p.Name)
		}
	}
	opts = append(opts, netCustom)
	n.choice = widget.NewRadioGroup(opts, func(s string) { n.enableCustom(s == netCustom) })
	n.choice.Required = true
	n.load(u.deps.Network.Profile())
	form := widget.NewForm(widget.NewFormItem("Download", n.down), widget.NewFormItem("Upload", n.up),
		widget.NewFormItem("Latency", n.latency), widget.NewFormItem("Hosts", n.hosts), widget.NewFormItem("URLs", n.urls))
	apply := widget.NewButton("Apply", func() {
		if err := n.apply(); err != nil {
			dialog.ShowError(err, u.win)
		}
	})
	apply.Importance = widget.HighImportance
	box := container.NewVBox(n.current, n.choice, widget.NewSeparator(), widget.NewLabel("Custom"), form, apply)
	n.d = dialog.NewCustom("Network conditions", "Close", box, u.win)
	n.d.Resize(fyne.NewSize(560, 560))
	n.d.Show()
	return n
}

// load shows p as the dialog's choice.
func (n *netDialog) load(p *netprofile.Profile) {
	n.current.SetText("Now: " + profileText(p))
	sel := netNone
	if p != nil {
		sel = netCustom
		for i, pr := range netprofile.Presets {
			if pr.Name == p.Name && pr.DownKbps == p.DownKbps && pr.UpKbps == p.UpKbps && pr.LatencyMS == p.LatencyMS && pr.Offline == p.Offline && len(p.Hosts) == 0 && len(p.URLs) == 0 {
				sel = n.choice.Options[i+1]
			}
		}
		n.down.SetText(strconv.FormatInt(p.DownKbps, 10))
		n.up.SetText(strconv.FormatInt(p.UpKbps, 10))
		n.latency.SetText(strconv.Itoa(p.LatencyMS))
		n.hosts.SetText(strings.Join(p.Hosts, " "))
		n.urls.SetText(strings.Join(p.URLs, "\n"))
	}
	n.choice.SetSelected(sel)
	n.enableCustom(sel == netCustom)
}

func (n *netDialog) enableCustom(on bool) {
	for _, e := range []*widget.Entry{n.down, n.up, n.latency, n.hosts, n.urls} {
		if on {
			e.Enable()
		} else {
			e.Disable()
		}
	}
}

// profile is the profile the dialog describes; bad input is an error naming the field.
func (n *netDialog) profile() (*netprofile.Profile, error) {
	switch s := n.choice.Selected; s {
	case netNone:
		return nil, nil
	case netCustom:
		num := func(name, v string) (int64, error) {
			v = strings.TrimSpace(v)
			if v == "" {
				return 0, nil
			}
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil || x < 0 {
				return 0, fmt.Errorf("%s: %q is not a non-negative whole number", name, v)
			}
			return x, nil
		}
		p := &netprofile.Profile{}
		var err error
		if p.DownKbps, err = num("Download", n.down.Text); err != nil {
			return nil, err
		}
		if p.UpKbps, err = num("Upload", n.up.Text); err != nil {
			return nil, err
		}
		lat, err := num("Latency", n.latency.Text)
		if err != nil {
			return nil, err
		}
		p.LatencyMS = int(lat)
		p.Hosts = strings.FieldsFunc(n.hosts.Text, func(r rune) bool { return r == ' ' || r == ',' })
		for _, l := range strings.Split(n.urls.Text, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				p.URLs = append(p.URLs, l)
			}
		}
		if p.DownKbps == 0 && p.UpKbps == 0 && p.LatencyMS == 0 {
			return nil, fmt.Errorf("a custom profile needs a download or upload limit or a latency")
		}
		p.Name = p.String()
		return p, nil
	default:
		for i, o := range n.choice.Options {
			if o == s && i >= 1 && i <= len(netprofile.Presets) {
				p := netprofile.Presets[i-1]
				return &p, nil
			}
		}
	}
	return nil, fmt.Errorf("choose a profile")
}

// apply sets the shaper to the dialog's profile; on error nothing changes.
func (n *netDialog) apply() error {
	p, err := n.profile()
	if err != nil {
		return fmt.Errorf("network conditions: %w", err)
	}
	if err := n.u.deps.Network.Set(p); err != nil {
		return fmt.Errorf("network conditions: %w", err)
	}
	n.current.SetText("Now: " + profileText(p))
	n.u.notify("Network conditions: " + profileText(p))
	n.u.status.update()
	return nil
}

// profileText is a profile as the status bar says it.
func profileText(p *netprofile.Profile) string {
	if p == nil {
		return "none"
	}
	s := p.Name
	if d := p.String(); d != s && !p.Offline {
		s += " (" + d + ")"
	}
	if scope := append(append([]string(nil), p.Hosts...), p.URLs...); len(scope) > 0 {
		s += " for " + strings.Join(scope, ", ")
	}
	return s
}
