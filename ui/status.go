package ui

import (
	"fmt"
	"inspector/store"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"inspector/ui/viewmodel"
)

// statusBar shows the listening address, capture state, counts and rates, store size,
// dropped sessions, and the CA and system-proxy controls.
type statusBar struct {
	u        *UI
	label    *widget.Label
	caLabel  *widget.Label
	caBtn    *widget.Button
	proxyBtn *widget.Button
	box      fyne.CanvasObject

	lastCount uint64
	lastAt    time.Time
	rate      float64

	note     *widget.Label // flashed messages ("Copied URL")
	flashGen int
	rest     *restSearch // "Search the rest" of the bodies past the index bound
}

func newStatusBar(u *UI) *statusBar {
	s := &statusBar{u: u, label: widget.NewLabel(""), caLabel: widget.NewLabel("")}
	s.label.Truncation = fyne.TextTruncateEllipsis
	s.caBtn = widget.NewButton("CA…", s.caDialog)
	s.proxyBtn = widget.NewButton("System proxy…", s.proxyDialog)
	s.note = widget.NewLabel("")
	s.note.Importance = widget.SuccessImportance
	s.note.Hide()
	s.rest = newRestSearch(u)
	s.caBtn.Importance = widget.LowImportance
	s.proxyBtn.Importance = widget.LowImportance
	s.box = container.NewBorder(nil, nil, nil, container.NewHBox(s.rest.btn, s.note, s.caLabel, s.caBtn, s.proxyBtn), s.label)
	s.refreshOS()
	s.update()
	return s
}

func (s *statusBar) object() fyne.CanvasObject { return s.box }

// Text is the status line (for tests).
func (s *statusBar) Text() string { return s.label.Text }

func (s *statusBar) update() {
	var parts []string
	if e := s.u.deps.Engine; e != nil {
		parts = append(parts, "Listening on "+e.Addr())
		if e.Capturing() {
			parts = append(parts, "capture on")
		} else {
			parts = append(parts, "capture OFF")
		}
		st := e.Stats()
		now := time.Now()
		if !s.lastAt.IsZero() {
			if dt := now.Sub(s.lastAt).Seconds(); dt > 0.5 {
				s.rate = float64(st.Sessions-s.lastCount) / dt
				s.lastAt, s.lastCount = now, st.Sessions
			}
		} else {
			s.lastAt, s.lastCount = now, st.Sessions
		}
		if st.InFlight > 0 {
			parts = append(parts, fmt.Sprintf("%d in flight", st.InFlight))
		}
		if st.DroppedEvents > 0 {
			parts = append(parts, fmt.Sprintf("%d UI events dropped (resynced)", st.DroppedEvents))
		}
	} else {
		parts = append(parts, "No proxy running (viewer)")
	}
	if n := s.u.deps.Network; n != nil {
		if p := n.Profile(); p != nil {
			parts = append(parts, "network: "+profileText(p))
		}
	}
	count := s.countText()
	m := s.u.model
	paged, pagedShown := m.Paged()
	if paged > 0 && pagedShown {
		count += fmt.Sprintf(" (%d in memory, older ones paged from the store)", m.Total())
	} else if paged > 0 {
		col, _ := m.Sort()
		count += fmt.Sprintf(" (sorted by %s over the newest %d only; sort by # to page through %d older ones)",
			viewmodel.Columns[col].Title, m.Total(), paged)
	}
	if s.rate > 0 {
		count += fmt.Sprintf(" (%.1f/s)", s.rate)
	}
	parts = append(parts, count)
	if st := s.u.deps.Store; st != nil {
		ss := st.Stats()
		parts = append(parts, "store "+viewmodel.FormatBytes(ss.FileSize))
		if ss.Dropped > 0 {
			parts = append(parts, plural(ss.Dropped, "session", "sessions")+" dropped by the store")
		}
		if ss.BodiesDropped > 0 {
			parts = append(parts, plural(ss.BodiesDropped, "body", "bodies")+" not stored (the disk fell behind)")
		}
		if ss.Missing > 0 {
			parts = append(parts, plural(ss.Missing, "session may be missing", "sessions may be missing"))
		}
		if ss.Evicted > 0 && ss.LastEviction != nil {
			// Retention said aloud: "12,000 old sessions removed to stay under 4 GiB".
			parts = append(parts, store.Eviction{Count: ss.Evicted, Reason: ss.LastEviction.Reason}.Message())
		}
	} else {
		parts = append(parts, "not stored")
	}
	if ev := m.Evicted(); ev > 0 && paged == 0 {
		parts = append(parts, fmt.Sprintf("%d older sessions not loaded", ev))
	}
	if s.u.loadErr != nil {
		parts = append(parts, "store error: "+s.u.loadErr.Error())
	}
	if s.u.deps.PrefsErr != nil {
		parts = append(parts, s.u.deps.PrefsErr.Error())
	}
	if n := s.u.model.SelectionLen(); n > 1 {
		parts = append(parts, fmt.Sprintf("%d selected", n))
	}
	if s.u.deps.ReadOnly {
		parts = append([]string{"Read-only viewer"}, parts...)
	}
	s.label.SetText(strings.Join(parts, " · "))
}

// countText is "N sessions", or "N of M shown" while any filter (expression, quick text,
// host) is in force: M counts every session, also when a body or header filter made the
// window load only the store's matches.
func (s *statusBar) countText() string {
	m := s.u.model
	shown := m.Len()
	all := m.Total()
	if st := s.u.deps.Store; st != nil {
		inflight := 0
		if e := s.u.deps.Engine; e != nil {
			inflight = e.Stats().InFlight
		}
		all = max(all, int(st.Stats().Sessions)+inflight)
	}
	if s.u.filter.active() {
		text := fmt.Sprintf("%d of %d shown", shown, all)
		if e := s.u.filter.expr; e != nil && e.TextClauses() != nil {
			// Said where the result is read, so a miss past the bound is not taken for
			// an absence; the rest can be searched (searchrest.go).
			text += s.rest.text()
		} else {
			s.rest.btn.Hide()
		}
		return text
	}
	s.rest.btn.Hide()
	return plural(max(shown, all), "session", "sessions")
}

// flash shows a short message (copy feedback) at the right of the status bar until the
// next one; it fades after a few seconds.
func (s *statusBar) flash(msg string) {
	s.flashGen++
	gen := s.flashGen
	s.note.SetText(msg)
	s.note.Show()
	time.AfterFunc(4*time.Second, func() {
		s.u.post(func() {
			if gen == s.flashGen {
				s.note.Hide()
			}
		})
	})
}

// Note is the last flashed message, "" when none is shown (for tests).
func (s *statusBar) Note() string {
	if !s.note.Visible() {
		return ""
	}
	return s.note.Text
}

// refreshOS sets the CA label to one short phrase; where the CA is trusted (one line per
// store) and any error are the detail of the CA button's dialog.
func (s *statusBar) refreshOS() {
	o := s.u.deps.OS
	if o == nil {
		s.caLabel.SetText("CA: OS integration not available")
		return
	}
	trusted, detail, err := o.CAStatus()
	switch {
	case err != nil:
		s.caLabel.SetText("CA state unknown")
	case trusted:
		s.caLabel.SetText("CA trusted")
	default:
		s.caLabel.SetText("CA not trusted")
	}
	// A detail opening with "warning:" is the root's expiry 30 days ahead (rootca.Expiry).
	if err == nil && strings.HasPrefix(detail, "warning:") {
		s.caLabel.SetText(s.caLabel.Text + " · expires soon")
	}
}

func (s *statusBar) notAvailable(what string) {
	dialog.ShowInformation(what, what+" is not available in this build yet: the operating-system integration is missing.\n"+
		"Use 'inspector ca export' and install the certificate by hand meanwhile.", s.u.win)
}

func (s *statusBar) caDialog() {
	o := s.u.deps.OS
	if o == nil {
		s.notAvailable("CA installation")
		return
	}
	trusted, detail, err := o.CAStatus()
	msg := "The Inspector root CA is not trusted by this system."
	if err != nil {
		msg = "Could not read the CA state: " + err.Error()
	} else if trusted {
		msg = "The Inspector root CA is trusted: " + detail
	} else if strings.HasPrefix(detail, "warning:") {
		msg += "\n" + strings.SplitN(detail, "\n", 2)[0]
	}
	install := widget.NewButton("Install (trust)", func() { s.osAction("Install CA", o.InstallCA) })
	remove := widget.NewButton("Remove (untrust)", func() { s.osAction("Remove CA", o.RemoveCA) })
	dialog.ShowCustom("Root CA", "Close", container.NewVBox(widget.NewLabel(msg), container.NewHBox(install, remove)), s.u.win)
}

func (s *statusBar) proxyDialog() {
	o := s.u.deps.OS
	if o == nil {
		s.notAvailable("System proxy control")
		return
	}
	on, detail, err := o.ProxyStatus()
	msg := "The system proxy does not point at Inspector."
	if err != nil {
		msg = "Could not read the system proxy: " + err.Error()
	} else if on {
		msg = "The system proxy points at Inspector: " + detail
	}
	addr := ""
	if s.u.deps.Engine != nil {
		addr = s.u.deps.Engine.Addr()
	}
	enable := widget.NewButton("Use Inspector as system proxy", func() {
		s.osAction("Enable system proxy", func() error { return o.EnableProxy(addr) })
	})
	if addr == "" {
		enable.Disable()
	}
	disable := widget.NewButton("Restore previous proxy", func() { s.osAction("Disable system proxy", o.DisableProxy) })
	dialog.ShowCustom("System proxy", "Close", container.NewVBox(widget.NewLabel(msg), container.NewHBox(enable, disable)), s.u.win)
}

// osDone says in words what each OS action did.
var osDone = map[string]string{
	"Install CA":           "The Inspector root CA was added to this system's trust store: HTTPS traffic through Inspector is decrypted without certificate warnings in clients that use it.",
	"Remove CA":            "The Inspector root CA was removed from this system's trust store: clients no longer trust Inspector's certificates.",
	"Enable system proxy":  "The system proxy now points at Inspector; the previous setting is restored when you turn it off or Inspector exits.",
	"Disable system proxy": "The system proxy was restored to what it was before Inspector changed it.",
}

// osAction runs a possibly slow OS call off the UI goroutine and reports the outcome in
// words.
func (s *statusBar) osAction(title string, f func() error) {
	go func() {
		err := f()
		fyne.Do(func() {
			if err != nil {
				dialog.ShowError(fmt.Errorf("%s failed: %w", title, err), s.u.win)
			} else {
				msg, ok := osDone[title]
				if !ok {
					msg = title + ": done."
				}
				dialog.ShowInformation(title, msg, s.u.win)
			}
			s.refreshOS()
			s.u.start.refresh()
		})
	}()
}
