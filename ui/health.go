package ui

import (
	"context"
	"fmt"
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/store"
)

// healthWatcher is the store's health feed (*store.Store implements it).
type healthWatcher interface {
	WatchHealth() (<-chan store.Health, func())
}

// healthBanner is the strip above the list while the store does not store sessions.
type healthBanner struct {
	u      *UI
	label  *widget.Label
	box    *fyne.Container
	failed bool // the last health seen was unhealthy
	health store.Health
}

func newHealthBanner(u *UI) *healthBanner {
	b := &healthBanner{u: u, label: widget.NewLabel("")}
	b.label.Wrapping = fyne.TextWrapWord
	b.label.Importance = widget.DangerImportance
	bg := canvas.NewRectangle(color.NRGBA{R: 0xd3, G: 0x2f, B: 0x2f, A: 0x30})
	b.box = container.NewStack(bg, container.NewBorder(nil, nil, widget.NewIcon(theme.ErrorIcon()), nil, b.label))
	b.box.Hide()
	return b
}

// watch follows the store's health until ctx ends.
func (b *healthBanner) watch(ctx context.Context) {
	hw, ok := b.u.deps.Store.(healthWatcher)
	if !ok {
		return
	}
	ch, stop := hw.WatchHealth()
	go func() {
		defer stop()
		for {
			select {
			case h := <-ch:
				b.u.post(func() { b.set(h) })
			case <-ctx.Done():
				return
			}
		}
	}()
}

// set shows h: the banner while unhealthy, a notice with what was lost on recovery.
func (b *healthBanner) set(h store.Health) {
	b.health = h
	if !h.Healthy {
		b.failed = true
		b.label.SetText(healthText(h))
		b.box.Show()
		return
	}
	b.box.Hide()
	if b.failed {
		b.failed = false
		b.u.notify(fmt.Sprintf("Sessions are stored again; while the store failed %s not stored, %s stored without their bodies",
			plural(h.Lost, "session was", "sessions were"), plural(h.BodiesLost, "session was", "sessions were")))
	}
}

// Text is the banner's text ("" when hidden).
func (b *healthBanner) Text() string {
	if !b.box.Visible() {
		return ""
	}
	return b.label.Text
}

func healthText(h store.Health) string {
	if h.Damaged {
		return "Sessions are not being stored: the store file is damaged (" + h.LastError + "): restart with --reset-store to move it aside and begin a new one"
	}
	msg := "Sessions are not being stored: " + h.LastError
	if h.Lost > 0 || h.BodiesLost > 0 {
		msg += fmt.Sprintf(" (so far %s not stored, %s without bodies)", plural(h.Lost, "session", "sessions"), plural(h.BodiesLost, "session", "sessions"))
	}
	return msg
}

// plural is "1 one" or "N many".
func plural[N int | int64 | uint64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
