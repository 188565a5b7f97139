package ui

import (
	"context"
	"fmt"

	"fyne.io/fyne/v2/widget"

	"inspector/engine/session"
	"inspector/filter"
	"inspector/store"
)

// "Search the rest" (issue 28, item 12): body: and text: look at the first
// filter.MaxSearchBody bytes of each body, as the store's index does. While such a filter
// is in force the status bar offers to search the rest: the stored sessions whose bodies
// go past that bound are read whole (store.SearchRest, off the UI goroutine) and the ones
// the filter then matches join the list, until the filter or the quick text changes.

// restSearcher is what "Search the rest" needs from Deps.Store; *store.Store has it.
type restSearcher interface {
	SearchRest(ctx context.Context, f *filter.Expr, skip func(session.ID) bool, limit int, progress func(read int)) ([]session.Summary, error)
}

// restMax bounds the sessions one "Search the rest" adds.
const restMax = 10000

type restSearch struct {
	u   *UI
	btn *widget.Button

	expr    *filter.Expr // the filter the search ran for (nil: none ran)
	quick   string       // and its quick text
	found   map[session.ID]bool
	running bool
	read    int // sessions read so far
	err     error
	stop    context.CancelFunc
	runs    int // searches finished (tests)
}

func newRestSearch(u *UI) *restSearch {
	r := &restSearch{u: u}
	r.btn = widget.NewButton("Search the rest", r.start)
	r.btn.Importance = widget.LowImportance
	r.btn.Hide()
	return r
}

// current reports whether the last search belongs to the filter in force.
func (r *restSearch) current() bool {
	f := r.u.filter
	return r.expr != nil && r.expr == f.expr && r.quick == f.quickText
}

// has reports whether the search of the rest matched id under the filter in force.
func (r *restSearch) has(id session.ID) bool { return r.current() && r.found[id] }

// offered reports whether the filter in force reads bodies, so part of them may be past
// the bound, and the store can search the rest.
func (r *restSearch) offered() bool {
	e := r.u.filter.expr
	_, ok := r.u.deps.Store.(restSearcher)
	return ok && e != nil && e.NeedsSession() && e.TextClauses() != nil
}

// text is what the result line says of the bound and of the search; it shows the button
// when a search can start.
func (r *restSearch) text() string {
	if !r.current() && r.stop != nil {
		r.stop() // the filter changed: that search's answer is for nothing
		r.stop, r.running = nil, false
	}
	bound := fmt.Sprintf("%d KiB", filter.MaxSearchBody>>10)
	var s string
	switch {
	case r.current() && r.running:
		s = fmt.Sprintf(" (searching the rest of the bodies past %s: %d sessions read…)", bound, r.read)
	case r.current() && r.err != nil:
		s = " (searching the rest failed: " + r.err.Error() + ")"
	case r.current():
		s = fmt.Sprintf(" (whole bodies searched: %s more past the first %s)", plural(len(r.found), "session", "sessions"), bound)
	default:
		s = fmt.Sprintf(" (body: and text: look at the first %s of each body)", bound)
	}
	if r.offered() && !r.current() {
		r.btn.Show()
	} else {
		r.btn.Hide()
	}
	return s
}

// start searches the rest of the bodies for the filter in force. UI goroutine only.
func (r *restSearch) start() {
	st, ok := r.u.deps.Store.(restSearcher)
	if !ok || !r.offered() {
		return
	}
	f := r.u.filter
	expr, err := f.storeExpr()
	if err != nil {
		return
	}
	if r.stop != nil {
		r.stop()
	}
	ctx, stop := context.WithCancel(context.Background())
	r.expr, r.quick, r.found, r.read, r.err, r.running, r.stop = f.expr, f.quickText, map[session.ID]bool{}, 0, nil, true, stop
	matched := make(map[session.ID]bool, len(f.storeMatches))
	for id := range f.storeMatches {
		matched[id] = true
	}
	for _, s := range r.u.model.Held() {
		if full, ok := r.u.recent[s.ID]; ok && expr.Match(full) {
			matched[s.ID] = true
		}
	}
	r.u.status.update()
	go func() {
		rows, err := st.SearchRest(ctx, expr, func(id session.ID) bool { return matched[id] }, restMax,
			func(n int) { r.u.post(func() { r.progress(ctx, n) }) })
		r.u.post(func() { r.finish(ctx, rows, err) })
	}()
}

func (r *restSearch) progress(ctx context.Context, n int) {
	if ctx.Err() == nil && r.current() {
		r.read = n
		r.u.status.update()
	}
}

func (r *restSearch) finish(ctx context.Context, rows []session.Summary, err error) {
	if ctx.Err() != nil || !r.current() {
		return // cancelled: a newer filter or search took over
	}
	r.running, r.stop, r.err = false, nil, err
	r.runs++
	for _, s := range rows {
		r.found[s.ID] = true
	}
	if len(rows) > 0 {
		r.u.changed(r.u.model.Upsert(rows))
		r.u.filter.rematch()
	}
	r.u.status.update()
}

// RestSearchDone reports how many "Search the rest" runs finished (for tests).
func (u *UI) RestSearchDone() int { return u.status.rest.runs }

// compile-time check that the store offers the search.
var _ restSearcher = (*store.Store)(nil)
