package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"inspector/store"
)

// Retention is the instance's retention limits as Settings sees them.
type Retention interface {
	// Limits are the limits in force.
	Limits() store.Limits
	// Plan says what the limits l would remove now (store.PlanEvictionDetail).
	Plan(l store.Limits) (store.EvictionPlan, error)
	// Apply saves l (DATA-DIR/retention.json) and applies it to the running store at
	// once; it returns how many sessions that removed.
	Apply(l store.Limits) (uint64, error)
}

// settingsPanel is Tools ▸ Settings…: the retention limits, with what applying them would
// remove shown before it happens.
type settingsPanel struct {
	u                  *UI
	win                fyne.Window
	sessions, size, ag *widget.Entry
	preview            *widget.Label
	apply              *widget.Button
	plan               store.EvictionPlan
	planErr            error
}

func (u *UI) showSettings() *settingsPanel {
	if u.deps.Retention == nil {
		dialog.ShowInformation("Settings", "Retention settings are not available in this window (no store of this instance).", u.win)
		return nil
	}
	if u.settings != nil {
		u.settings.win.RequestFocus()
		return u.settings
	}
	p := &settingsPanel{u: u, sessions: widget.NewEntry(), size: widget.NewEntry(), ag: widget.NewEntry(), preview: widget.NewLabel("")}
	p.preview.Wrapping = fyne.TextWrapWord
	p.sessions.SetPlaceHolder("1000000")
	p.size.SetPlaceHolder("4GiB")
	p.ag.SetPlaceHolder("none, e.g. 30d, 12h")
	l := u.deps.Retention.Limits()
	if l.MaxSessions > 0 {
		p.sessions.SetText(strconv.Itoa(l.MaxSessions))
	}
	if l.MaxBytes > 0 {
		p.size.SetText(strings.ReplaceAll(store.FormatSize(l.MaxBytes), " ", ""))
	}
	if l.MaxAge > 0 {
		p.ag.SetText(ageText(l.MaxAge))
	}
	p.apply = widget.NewButton("Apply", p.applyNow)
	p.apply.Importance = widget.HighImportance
	for _, e := range []*widget.Entry{p.sessions, p.size, p.ag} {
		e.OnChanged = func(string) { p.refreshPlan() }
	}
	form := widget.NewForm(
		widget.NewFormItem("Keep at most (sessions)", p.sessions),
		widget.NewFormItem("Keep at most (size)", p.size),
		widget.NewFormItem("Remove older than", p.ag),
	)
	note := widget.NewLabel("The oldest sessions go first once a limit is passed; sessions marked Keep are never removed. " +
		"Apply saves the limits in retention.json and applies them now. --max-sessions, --max-size and --max-age on the command line override the file at start.")
	note.Wrapping = fyne.TextWrapWord
	content := container.NewVBox(
		widget.NewLabelWithStyle("Retention", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		form, widget.NewSeparator(),
		widget.NewLabelWithStyle("What applying removes", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		p.preview, container.NewHBox(p.apply), widget.NewSeparator(), note)
	p.win = u.app.NewWindow("Settings")
	p.win.SetContent(container.NewPadded(content))
	p.win.Resize(fyne.NewSize(640, 420))
	closeKeys(p.win, true)
	p.win.SetOnClosed(func() { u.settings = nil })
	u.settings = p
	p.refreshPlan()
	p.win.Show()
	return p
}

// ageText writes an age limit the way the entry reads it: 30d, 12h, 90m.
func ageText(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}

// limits reads the entries (empty: the default).
func (p *settingsPanel) limits() (store.Limits, error) {
	var l store.Limits
	var err error
	if v := strings.TrimSpace(p.sessions.Text); v != "" {
		n, perr := strconv.Atoi(strings.ReplaceAll(v, ",", ""))
		if perr != nil || n <= 0 {
			return l, fmt.Errorf("sessions %q: want a positive whole number", v)
		}
		l.MaxSessions = n
	}
	if v := strings.TrimSpace(p.size.Text); v != "" {
		if l.MaxBytes, err = store.ParseSize(v); err != nil {
			return l, err
		}
	}
	if v := strings.TrimSpace(p.ag.Text); v != "" && !strings.EqualFold(v, "none") {
		if l.MaxAge, err = store.ParseAge(v); err != nil {
			return l, err
		}
	}
	return l, nil
}

// refreshPlan shows what the entered limits would remove, and names it on the button.
func (p *settingsPanel) refreshPlan() {
	l, err := p.limits()
	if err == nil {
		p.plan, err = p.u.deps.Retention.Plan(l)
	}
	p.planErr = err
	switch {
	case err != nil:
		p.preview.SetText(err.Error())
		p.apply.SetText("Apply")
		p.apply.Disable()
	case p.plan.Count > 0:
		p.preview.SetText(p.plan.Message())
		p.apply.SetText("Apply and remove " + store.Thousands(int64(p.plan.Count)) + " sessions")
		p.apply.Enable()
	default:
		p.preview.SetText(p.plan.Message())
		p.apply.SetText("Apply")
		p.apply.Enable()
	}
}

// Preview is the preview's text (for tests).
func (p *settingsPanel) Preview() string { return p.preview.Text }

func (p *settingsPanel) applyNow() {
	l, err := p.limits()
	if err != nil {
		dialog.ShowError(err, p.win)
		return
	}
	n, err := p.u.deps.Retention.Apply(l)
	if err != nil {
		dialog.ShowError(err, p.win)
		return
	}
	limits := p.u.deps.Retention.Limits()
	msg := fmt.Sprintf("Retention: at most %s sessions, %s", store.Thousands(int64(limits.MaxSessions)), store.FormatSize(limits.MaxBytes))
	if limits.MaxAge > 0 {
		msg += ", " + store.FormatAge(limits.MaxAge)
	}
	if n > 0 {
		msg += "; " + store.Eviction{Count: n, Reason: p.plan.Reason}.Message()
	}
	p.u.notify(msg)
	p.u.Reload()
	p.refreshPlan()
}

// StoreRetention is the Retention of a running store: save keeps the limits (the
// composition root writes retention.json) before they are applied.
func StoreRetention(st *store.Store, save func(store.Limits) error) Retention {
	return storeRetention{st: st, save: save}
}

type storeRetention struct {
	st   *store.Store
	save func(store.Limits) error
}

func (r storeRetention) Limits() store.Limits { return r.st.Limits() }
func (r storeRetention) Plan(l store.Limits) (store.EvictionPlan, error) {
	return r.st.PlanEvictionDetail(l)
}

func (r storeRetention) Apply(l store.Limits) (uint64, error) {
	if r.save != nil {
		if err := r.save(l); err != nil {
			return 0, fmt.Errorf("saving the retention limits: %w", err)
		}
	}
	return r.st.SetLimits(l)
}
