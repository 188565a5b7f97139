package ui

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/hooks/replay"
	"inspector/engine/session"
)

// Replayer replays sessions N times, P at once, with progress and cancel. UI goroutine
// only; the job runs on background goroutines.
type Replayer struct {
	dbg      Debugger
	sessions []*session.Session
	Count    *widget.Entry
	Parallel *widget.Entry
	Start    *widget.Button
	CancelB  *widget.Button
	Progress *widget.ProgressBar
	Result   *widget.Label
	Content  fyne.CanvasObject
	cancel   context.CancelFunc
	post     func(func()) // fyne.Do unless a test queues
}

// NewReplayer builds the replay controls for sessions.
func NewReplayer(dbg Debugger, sessions []*session.Session) *Replayer {
	r := &Replayer{dbg: dbg, sessions: sessions, post: fyne.Do}
	r.Count = widget.NewEntry()
	r.Count.SetText("1")
	r.Parallel = widget.NewEntry()
	r.Parallel.SetText("1")
	r.Progress = widget.NewProgressBar()
	r.Result = widget.NewLabel("")
	r.Result.Wrapping = fyne.TextWrapWord
	r.Start = widget.NewButton("Start", r.Run)
	r.Start.Importance = widget.HighImportance
	r.CancelB = widget.NewButton("Cancel", r.Cancel)
	r.CancelB.Disable()
	r.Content = container.NewVBox(
		widget.NewForm(widget.NewFormItem("Times", r.Count), widget.NewFormItem("In parallel", r.Parallel)),
		r.Progress, r.Result, container.NewHBox(r.Start, r.CancelB))
	return r
}

// Run starts the job.
func (r *Replayer) Run() {
	count, err1 := strconv.Atoi(strings.TrimSpace(r.Count.Text))
	par, err2 := strconv.Atoi(strings.TrimSpace(r.Parallel.Text))
	if err1 != nil || err2 != nil || count < 1 || par < 1 {
		r.Result.SetText("⚠ times and in parallel must be positive numbers")
		return
	}
	job := replay.Job{Sessions: r.sessions, Count: count, Parallel: par}
	if err := job.Validate(); err != nil {
		r.Result.SetText("⚠ " + err.Error())
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.Start.Disable()
	r.CancelB.Enable()
	r.Progress.SetValue(0)
	job.Progress = func(n, total int) {
		r.post(func() { r.Progress.SetValue(float64(n) / float64(total)) })
	}
	go func() {
		res, err := replay.Run(ctx, r.dbg, job)
		r.post(func() {
			cancel()
			r.Start.Enable()
			r.CancelB.Disable()
			failed := 0
			for _, x := range res {
				if x.Error != "" {
					failed++
				}
			}
			msg := fmt.Sprintf("%d sent, %d failed", len(res), failed)
			if len(res) > 0 && res[len(res)-1].ID != 0 {
				msg += fmt.Sprintf("; last new session #%d", res[len(res)-1].ID)
			}
			if err != nil {
				msg += " — " + err.Error()
			}
			r.Result.SetText(msg)
		})
	}()
}

// Cancel stops a running job (no-op when none runs).
func (r *Replayer) Cancel() {
	if r.cancel != nil {
		r.cancel()
	}
}

// repeatParallel bounds how many requests a one-click repeat sends at once.
const repeatParallel = 8

// RepeatSelection sends the selected requests again at once, each one time (Ctrl+R, the
// toolbar's Repeat, the context menu's Repeat): no dialog. The status bar says what was
// sent and the new sessions' ids. ReplaySelection keeps the dialog for counts and
// parallelism. It returns at once; the requests run on a background goroutine.
func (u *UI) RepeatSelection() {
	if u.deps.Debug == nil {
		return
	}
	ss := u.SelectedSessions()
	if len(ss) == 0 {
		u.notify("Select one or more sessions to repeat.")
		return
	}
	job := replay.Job{Sessions: ss, Count: 1, Parallel: min(len(ss), repeatParallel)}
	if err := job.Validate(); err != nil {
		u.notify("⚠ repeat: " + err.Error())
		return
	}
	u.notify(fmt.Sprintf("Repeating %s…", sessionsWord(ss)))
	dbg, post := u.deps.Debug, u.debug.post
	go func() {
		res, err := replay.Run(context.Background(), dbg, job)
		post(func() {
			u.lastRepeat = res
			u.notify(repeatSummary(ss, res, err))
		})
	}()
}

func sessionsWord(ss []*session.Session) string {
	if len(ss) == 1 {
		return fmt.Sprintf("#%d", ss[0].ID)
	}
	return fmt.Sprintf("%d sessions", len(ss))
}

// repeatSummary is the status line after a one-click repeat.
func repeatSummary(ss []*session.Session, res []replay.Result, err error) string {
	if len(ss) == 1 && len(res) == 1 {
		x := res[0]
		switch {
		case x.Error != "":
			return fmt.Sprintf("⚠ repeat #%d failed: %s", x.Original, x.Error)
		case x.ID != 0:
			return fmt.Sprintf("Repeated #%d → #%d (%s)", x.Original, x.ID, statusOrNone(x.Status))
		}
	}
	failed := 0
	var ids []session.ID
	for _, x := range res {
		if x.Error != "" {
			failed++
		} else if x.ID != 0 {
			ids = append(ids, x.ID)
		}
	}
	msg := fmt.Sprintf("Repeated %s: %d sent, %d failed", sessionsWord(ss), len(res), failed)
	slices.Sort(ids)
	switch {
	case len(ids) > 3:
		msg += fmt.Sprintf(" (new #%d … #%d)", ids[0], ids[len(ids)-1])
	case len(ids) > 0:
		names := make([]string, len(ids))
		for i, id := range ids {
			names[i] = fmt.Sprintf("#%d", id)
		}
		msg += " (new " + strings.Join(names, ", ") + ")"
	}
	if err != nil {
		msg += " — " + err.Error()
	}
	return msg
}

func statusOrNone(code int) string {
	if code == 0 {
		return "no response"
	}
	return strconv.Itoa(code)
}
