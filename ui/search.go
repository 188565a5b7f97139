package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/session"
	"inspector/filter"
	"inspector/store"
)

// Search everything (Edit ▸ Search everything…, Ctrl+Shift+F): a window whose entry runs
// text:"<typed>" over the whole store, newest first, each result with the matching
// snippet highlighted. Typing is debounced; each new query cancels the one before.

const (
	searchDebounce = 150 * time.Millisecond
	searchPage     = 100  // results per store page
	searchMax      = 1000 // results kept per query (then "more not shown")
	searchSnippet  = 80
)

// searchStore is what the search needs from Deps.Store; *store.Store implements it.
type searchStore interface {
	ListContext(ctx context.Context, q store.Query) ([]session.Summary, error)
	CountContext(ctx context.Context, f *filter.Expr) (int, error)
	Get(id session.ID) (*session.Session, error)
	IndexStatus() store.IndexStatus
}

type searchHit struct {
	sum  session.Summary
	snip filter.Snippet
	ok   bool // snip found (false: matched on the record, the text was not loaded)
}

type searchWindow struct {
	u      *UI
	win    fyne.Window
	entry  *windowEntry
	status *widget.Label
	list   *widget.List

	hits    []searchHit
	query   string // the query the hits belong to
	count   int    // matches counted (-1: counting)
	more    bool   // more than searchMax matched
	err     error
	gen     int
	stop    context.CancelFunc
	timer   *time.Timer
	runs    int // queries started (tests)
	pending int // pages of the current query still streaming
	closed  bool
}

// OpenSearch shows the search window (one per UI; a second call focuses it).
func (u *UI) OpenSearch() {
	if u.search != nil {
		u.search.win.RequestFocus()
		u.search.win.Canvas().Focus(u.search.entry)
		return
	}
	s := &searchWindow{u: u, count: 0}
	s.entry = newWindowEntry(func() { s.win.Close() })
	s.entry.SetPlaceHolder("Search URLs, headers and bodies of every session")
	s.entry.OnChanged = s.typed
	s.entry.OnSubmitted = func(string) { s.choose(0) }
	s.status = widget.NewLabel("")
	s.list = widget.NewList(func() int { return len(s.hits) }, s.newRow, s.updateRow)
	s.list.OnSelected = func(i widget.ListItemID) { s.choose(i) }
	s.win = u.app.NewWindow("Search everything")
	s.win.SetContent(container.NewBorder(container.NewVBox(s.entry, s.status), nil, nil, nil, s.list))
	s.win.Resize(fyne.NewSize(800, 560))
	closeKeys(s.win, true)
	stop := make(chan struct{})
	s.win.SetOnClosed(func() {
		close(stop)
		s.closed = true
		s.cancel()
		u.search = nil
	})
	// The index's progress moves on its own while the window is open.
	u.every(time.Second, stop, func() { s.status.SetText(s.statusText()) })
	u.search = s
	s.win.Show()
	s.win.Canvas().Focus(s.entry)
}

// windowEntry is the one field of a small window: Esc and Ctrl+W (Cmd+W) close the
// window. A focused entry takes every key and shortcut, so the window's own Ctrl+W and
// Esc (closeKeys) never saw them while the field had the keyboard.
type windowEntry struct {
	widget.Entry
	close func()
}

func newWindowEntry(close func()) *windowEntry {
	e := &windowEntry{close: close}
	e.ExtendBaseWidget(e)
	return e
}

func (e *windowEntry) TypedKey(k *fyne.KeyEvent) {
	if k.Name == fyne.KeyEscape {
		e.close()
		return
	}
	e.Entry.TypedKey(k)
}

func (e *windowEntry) TypedShortcut(sc fyne.Shortcut) {
	if cs, ok := sc.(*desktop.CustomShortcut); ok && cs.KeyName == fyne.KeyW && cs.Modifier == fyne.KeyModifierShortcutDefault {
		e.close()
		return
	}
	e.Entry.TypedShortcut(sc)
}

// typed restarts the debounce timer; the query runs searchDebounce after the last key.
func (s *searchWindow) typed(text string) {
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timer = time.AfterFunc(searchDebounce, func() {
		s.u.post(func() {
			if !s.closed && s.entry.Text == text {
				s.run(text)
			}
		})
	})
}

func (s *searchWindow) cancel() {
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
	if s.timer != nil {
		s.timer.Stop()
	}
}

// run starts the query for text, cancelling the one before. UI goroutine only.
func (s *searchWindow) run(text string) context.Context {
	if s.stop != nil {
		s.stop()
	}
	s.gen++
	gen := s.gen
	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.hits, s.query, s.count, s.more, s.err, s.pending = nil, text, 0, false, nil, 0
	s.list.UnselectAll()
	defer s.refresh()
	st, _ := s.u.deps.Store.(searchStore)
	if strings.TrimSpace(text) == "" || st == nil {
		if st == nil && text != "" {
			s.err = errors.New("search needs the capture store (this window has none)")
		}
		return ctx
	}
	f, err := filter.Parse("text:" + quoteFilter(text)) // debug.go
	if err != nil {
		s.err = err
		return ctx
	}
	s.runs++
	s.count, s.pending = -1, 1
	go func() {
		n, err := st.CountContext(ctx, f)
		s.u.post(func() {
			if gen != s.gen {
				return
			}
			if err != nil && s.err == nil && ctx.Err() == nil {
				s.err = err
			}
			s.count = n
			s.refresh()
		})
	}()
	go s.stream(ctx, gen, st, f, text)
	return ctx
}

// stream reads the matches newest first a page at a time (Before the oldest so far),
// loads each session for its snippet, and posts every page as it arrives.
func (s *searchWindow) stream(ctx context.Context, gen int, st searchStore, f *filter.Expr, needle string) {
	var before session.ID
	total := 0
	for {
		rows, err := st.ListContext(ctx, store.Query{Filter: f, Newest: true, Limit: searchPage, Before: before})
		hits := make([]searchHit, 0, len(rows))
		for _, r := range rows {
			h := searchHit{sum: r}
			if ss, gerr := st.Get(r.ID); gerr == nil {
				h.snip, h.ok = filter.FindSnippet(ss, needle, searchSnippet)
			}
			hits = append(hits, h)
		}
		total += len(rows)
		last := err != nil || len(rows) < searchPage || total >= searchMax || ctx.Err() != nil
		more := err == nil && len(rows) == searchPage && total >= searchMax
		s.u.post(func() {
			if gen != s.gen {
				return
			}
			s.hits = append(s.hits, hits...)
			if err != nil && ctx.Err() == nil {
				s.err = err
			}
			if last {
				s.pending, s.more = 0, more
			}
			s.refresh()
		})
		if last {
			return
		}
		before = rows[len(rows)-1].ID
	}
}

// statusText is the line under the entry.
func (s *searchWindow) statusText() string {
	var parts []string
	if s.err != nil {
		parts = append(parts, "error: "+s.err.Error())
	}
	if s.query != "" && s.err == nil {
		switch {
		case s.count < 0:
			parts = append(parts, fmt.Sprintf("%d shown, counting…", len(s.hits)))
		case s.more:
			parts = append(parts, fmt.Sprintf("%d matches (newest %d shown)", s.count, len(s.hits)))
		default:
			parts = append(parts, fmt.Sprintf("%d matches", s.count))
		}
		if s.pending > 0 {
			parts = append(parts, "searching…")
		}
	}
	if st, ok := s.u.deps.Store.(searchStore); ok {
		if ix := st.IndexStatus(); ix.Building {
			parts = append(parts, ix.String()+" — results may be partial")
		}
	}
	return strings.Join(parts, " · ")
}

func (s *searchWindow) refresh() {
	s.status.SetText(s.statusText())
	s.list.Refresh()
}

func (s *searchWindow) newRow() fyne.CanvasObject {
	line := widget.NewLabel("")
	line.Truncation = fyne.TextTruncateEllipsis
	snip := widget.NewRichText()
	snip.Truncation = fyne.TextTruncateEllipsis
	return container.NewVBox(line, snip)
}

func (s *searchWindow) updateRow(i widget.ListItemID, o fyne.CanvasObject) {
	if i < 0 || i >= len(s.hits) {
		return
	}
	box := o.(*fyne.Container)
	h := &s.hits[i]
	box.Objects[0].(*widget.Label).SetText(searchLine(&h.sum))
	rt := box.Objects[1].(*widget.RichText)
	rt.Segments = snippetSegments(h)
	rt.Refresh()
}

// searchLine is the session line of a result.
func searchLine(r *session.Summary) string {
	status := "…"
	if r.Status > 0 {
		status = fmt.Sprint(r.Status)
	}
	return fmt.Sprintf("#%d  %s  %s  %s", r.ID, r.Method, status, r.URL)
}

// snippetSegments renders a snippet with its match bold and in the primary colour.
func snippetSegments(h *searchHit) []widget.RichTextSegment {
	if !h.ok {
		return []widget.RichTextSegment{&widget.TextSegment{Text: "(match in the stored record)", Style: widget.RichTextStyleInline}}
	}
	flat := func(t string) string {
		return strings.Map(func(r rune) rune {
			if r == '\n' || r == '\r' || r == '\t' {
				return ' '
			}
			return r
		}, t)
	}
	sn := h.snip
	inline := widget.RichTextStyleInline
	hl := widget.RichTextStyleStrong
	hl.Inline = true
	hl.ColorName = "primary"
	return []widget.RichTextSegment{
		&widget.TextSegment{Text: sn.Part + ": ", Style: widget.RichTextStyleInline},
		&widget.TextSegment{Text: flat(sn.Text[:sn.Start]), Style: inline},
		&widget.TextSegment{Text: flat(sn.Text[sn.Start:sn.End]), Style: hl},
		&widget.TextSegment{Text: flat(sn.Text[sn.End:]), Style: inline},
	}
}

// choose selects result i in the main list (Enter: the newest result).
func (s *searchWindow) choose(i int) {
	if i < 0 || i >= len(s.hits) {
		return
	}
	id := s.hits[i].sum.ID
	s.u.setFollow(false)
	if p := s.u.model.Stored(); p != nil && s.u.model.IndexOf(id) < 0 {
		p.Locate(id) // an older stored row: read its page so the list can scroll to it
	}
	s.u.SelectID(id)
}
