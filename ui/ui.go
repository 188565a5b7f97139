// Package ui is Inspector's desktop window in Fyne: the live session list, filter bar,
// detail pane, status bar and actions. It sits on the plain-Go view-model in
// ui/viewmodel and the renderers in ui/render.
//
// # Threading
//
// Every method of UI must be called on the Fyne UI goroutine (widget callbacks, or inside
// fyne.Do), except Start, which launches the background goroutines: one event pump that
// reaches widgets only through fyne.Do at most ten times a second, and a one-second
// status ticker. Data sources (Store, Engine, OS) are called from the UI goroutine for
// quick calls and from background goroutines for slow ones (export, import), so their
// implementations must be safe for concurrent use.
package ui

import (
	"inspector/contract"

	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"

	"inspector/content"
	"inspector/engine"
	"inspector/engine/hooks/replay"
	"inspector/engine/session"
	"inspector/store"
	"inspector/ui/render"
	"inspector/ui/viewmodel"
)

// Store is what the window needs from the session store; *store.Store implements it.
type Store interface {
	List(q store.Query) ([]session.Summary, error)
	Get(id session.ID) (*session.Session, error)
	Delete(ids ...session.ID) error
	Clear() error
	Stats() store.Stats
	// Import stores sessions in one transaction, assigning new ids.
	Import(ss []*session.Session) ([]session.ID, error)
	// SetMark sets the user's mark and comment of a stored session.
	SetMark(id session.ID, mark, comment string) error
}

// Engine is what the window needs from the running proxy; *engine.Engine implements it.
type Engine interface {
	Addr() string
	Stats() engine.Stats
	SetCapture(on bool)
	Capturing() bool
	InFlight() []session.Summary
}

// OS is the operating-system integration behind the CA and system-proxy controls. The
// composition root adapts the platform package to it; a nil OS makes the controls say the
// feature is not available in this build.
type OS interface {
	// CAStatus reports whether the root CA is trusted, with a short human description
	// of where ("system store, Firefox").
	CAStatus() (trusted bool, detail string, err error)
	InstallCA() error
	RemoveCA() error
	// ProxyStatus reports whether the OS system proxy points at this instance.
	ProxyStatus() (on bool, detail string, err error)
	EnableProxy(addr string) error
	DisableProxy() error
}

// HARWriter streams sessions into one HAR document; Close finishes it. It is used from
// one goroutine at a time.
type HARWriter interface {
	Add(s *session.Session) error
	Close() error
}

// HAR is the HAR codec (package store/har, adapted by the composition root).
type HAR struct {
	NewWriter func(w io.Writer) (HARWriter, error)
	Read      func(r io.Reader) ([]*session.Session, error)
	// Decode reads a HAR document entry by entry (har.Decode), calling fn with each
	// session; with a store that imports streams (StreamImporter) the window's import uses
	// it, so a HAR file of any size is never held in memory. With spillDir set, bodies over
	// 1 MiB are decoded into files there as they are read (har.Limits.SpillDir) and the
	// store writes them in chunks, so one large body is not held in memory either.
	Decode func(r io.Reader, spillDir string, fn func(*session.Session) error) error
}

// StreamImporter is a store that imports a stream of sessions all or none
// (*store.Store's ImportStream).
type StreamImporter interface {
	ImportStream(read func(add func(*session.Session) error) error) ([]session.ID, error)
}

// Deps are the window's data sources. Every field may be nil: without a Store only live
// sessions are shown; without an Engine the window is a viewer of stored sessions.
type Deps struct {
	Store  Store
	Engine Engine
	// Events is the engine subscription channel (engine.Subscription.C). The UI drains it
	// in one goroutine; the caller closes the subscription after the window is gone.
	Events <-chan engine.Event
	OS     OS
	HAR    *HAR
	// MaxRows bounds the summaries held in memory (viewmodel.DefaultMax when 0).
	MaxRows int
	// Debug drives breakpoints, the composer and replay; nil disables them.
	Debug Debugger
	// Post runs f on the UI goroutine; fyne.Do when nil. Background work (paging the
	// store) hands its results over with it; tests set it to run them on the test goroutine.
	Post func(f func())
	// Prefs stores the window's preferences; the app's (shared by every instance) when
	// nil. The composition root passes a FilePrefs in the data directory.
	Prefs Prefs
	// PrefsErr is the error loading Prefs, shown in the status bar.
	PrefsErr error
	// CA is the root CA certificate (PEM) for the start page's "Save CA file…" and
	// fingerprint; nil hides them.
	CA func() []byte
	// CAPath is the file that holds the root CA certificate (PEM) the start page's steps
	// name until the user saves a copy elsewhere; "" when there is none.
	CAPath string
	// ProxyAuth is the "user:password" the proxy listener demands ("" for none: the
	// generated one with --allow-remote), shown on the start page and in its steps.
	ProxyAuth string
	// ReadOnly makes the window a viewer (File ▸ Open HAR / Open store): no capture,
	// delete or import.
	ReadOnly bool
	// OpenStore opens another data directory's store read-only for File ▸ Open store…;
	// nil disables the item. The returned func closes it.
	OpenStore func(dir string) (Store, func() error, error)
	// Protos returns the instance's protobuf schemas for the body views (gRPC messages
	// by name); nil, or a nil result, decodes protobuf without a schema.
	Protos func() *content.Protos
	// Schemas shows and changes the instance's protobuf schema folders (Capture ▸ Protobuf
	// schemas…); nil disables the item.
	Schemas ProtoSchemas
	// DataDir is the instance's data directory (the diff ignore list, scripts); "" for
	// none.
	DataDir string
	// Network is the instance's network-condition shaper (Capture ▸ Network
	// conditions…, the status bar); nil disables them.
	Network NetShaper
	// Scripts is the instance's addon manager (Tools ▸ Scripts…); nil disables it.
	Scripts Scripts
	// MCP is the instance's MCP endpoint (Tools ▸ MCP…); nil disables it.
	MCP MCP
	// Contract returns the API contract inferred from the traffic (Tools ▸ API
	// contract), nil while the stored sessions are still being read; a nil Contract
	// disables the item.
	Contract func() *contract.Inferrer
	// Intercept starts intercepted clients (the Intercept menu and its toolbar button);
	// nil hides them.
	Intercept Interceptor
	// Retention shows and changes the store's retention limits (Tools ▸ Settings…); nil
	// disables the item.
	Retention Retention
	// TLSKeys is the TLS key log (Tools ▸ TLS key log…, the TLS tab's Copy TLS keys); nil
	// disables them.
	TLSKeys TLSKeys
}

// warmOnce compiles the syntax lexers once per process, in the background.
var warmOnce sync.Once

// recentCap is how many completed sessions are kept in memory for the detail pane while
// the store's writer may not have committed them yet.
const recentCap = 512

// UI is the main window's controller. It owns its widgets; tests drive them directly.
type UI struct {
	inlineReads bool // the fyne/test driver: store reads and body formatting run on the calling goroutine (see New)
	app         fyne.App
	win         fyne.Window
	deps        Deps

	// lastRepeat is the result of the last one-click repeat (replay.go).
	lastRepeat []replay.Result

	// sharePreview is the export-for-sharing dialog's preview while it is open (share.go).
	sharePreviewText func() string

	model  *viewmodel.Model
	recent map[session.ID]*session.Session
	rorder []session.ID // recent ids, oldest first
	ops    opCache      // operations of the full sessions seen (the Operation column)
	health *healthBanner
	// scripts is the open Tools ▸ Scripts… window, or nil.
	scripts  *scriptsPanel
	contract *contractPanel
	mcp      *mcpPanel      // the open Tools ▸ MCP… window, or nil
	settings *settingsPanel // the open Tools ▸ Settings… window, or nil
	started  bool           // Start ran: the window is live (tickers run)

	list    *sessionList
	filter  *filterBar
	detail  *detailPane
	status  *statusBar
	hosts   *hostList
	start   *startPage
	menus   *menus
	tools   *toolbar
	content fyne.CanvasObject

	prefs Prefs
	theme *appTheme
	// following scrolls to the newest session as they arrive (View ▸ Follow newest).
	following bool
	listStack *fyne.Container // the list, or the start page while there are no sessions
	listSplit *container.Split
	hostSplit *container.Split
	hostsOn   bool
	// onCopy reports a copy in the status bar ("Copied URL"); tests read lastCopy.
	lastCopy string
	// compare is the "Compare with…" hook (SetCompareHook); nil keeps the item disabled.
	compare func(a, b *session.Session)
	search  *searchWindow // Edit ▸ Search everything… (search.go), nil when closed
	// inDetail is set by a click in the detail pane and cleared by one in the list: where
	// Ctrl+F finds.
	inDetail bool
	// confirmDlg is the last yes/no question asked (tests answer it).
	confirmDlg *dialog.ConfirmDialog
	// viewers are the read-only windows opened from this one.
	viewers []*UI
	// intercept is the Intercept menu (intercept.go), nil without Deps.Intercept.
	intercept *intercept

	pump  *viewmodel.Pump
	debug *debugViews
	// loadErr is the last error loading from the store, shown in the status bar.
	loadErr error

	// The rows held in memory are the newest MaxRows stored ones (the window) plus live
	// ones; stored rows older than the window are paged from the store (viewmodel.Pages).
	windowLo   session.ID // oldest stored id held after the last Reload (0: none)
	windowFull bool       // the store had more rows than the window holds
	reloads    int        // bumped by every reload; a start's late rows are dropped after another
	pagesGen   int        // bumped by every rebuildPages; stale builds are dropped
	// pagesStop cancels the page build in progress (a newer one replaces it).
	pagesStop context.CancelFunc
	// storedHosts counts the paged rows per host as of the last unfiltered index (the
	// host tree's counts do not shrink when a filter is typed).
	storedHosts map[string]int
}

// New builds the window's content on w (it calls w.SetContent) and loads stored
// sessions. Call Start to go live.
func New(a fyne.App, w fyne.Window, d Deps) *UI {
	u := &UI{
		app: a, win: w, deps: d,
		model:     viewmodel.New(d.MaxRows),
		recent:    make(map[session.ID]*session.Session),
		prefs:     d.Prefs,
		following: true,
	}
	if u.prefs == nil {
		u.prefs = a.Preferences()
	}
	warmOnce.Do(func() { go render.WarmTokens() })
	u.loadTheme()
	u.list = newSessionList(u)
	u.filter = newFilterBar(u)
	u.detail = newDetailPane(u)
	// Under fyne/test's driver, work posted with fyne.Do runs at once on the goroutine that
	// posts it, beside the test's own widget calls (a concurrent map write in Fyne's caches):
	// there, bodies are formatted and the store read on the calling goroutine.
	if a != nil && d.Post == nil && fmt.Sprintf("%T", a.Driver()) == "*test.driver" {
		u.detail.inline = true
		u.inlineReads = true
	}
	u.status = newStatusBar(u)
	u.hosts = newHostList(u)
	u.start = newStartPage(u)
	u.debug = newDebugViews(u, d.Debug)
	u.intercept = newIntercept(u)
	u.tools = newToolbar(u)
	u.menus = newMenus(u)
	u.updateCaptureButton()

	u.listStack = container.NewStack(u.list.object(), u.start.object())
	u.hostSplit = container.NewHSplit(u.hosts.object(), u.listStack)
	u.hostSplit.SetOffset(u.prefs.FloatWithFallback(prefSplitHosts, 0.15))
	u.hostsOn = u.prefs.String(prefHosts) != "off"
	var top fyne.CanvasObject = u.listStack
	if u.hostsOn {
		top = u.hostSplit
	}
	u.listSplit = container.NewVSplit(top, u.detail.object())
	u.listSplit.SetOffset(u.prefs.FloatWithFallback(prefSplitList, defaultListSplit))
	u.health = newHealthBanner(u)
	u.content = container.NewBorder(
		container.NewVBox(container.NewBorder(nil, nil, u.tools.object(), nil, u.filter.object()), u.health.box),
		u.status.object(),
		nil, nil,
		u.listSplit,
	)
	w.SetContent(u.content)
	w.SetMainMenu(u.menus.main)
	w.SetOnDropped(u.dropped)
	u.addShortcuts()
	if d.Store != nil {
		u.SetCompareHook(u.openCompare)
	}
	u.reloadAtStart()
	u.updateStart()
	return u
}

// SetCompareHook wires Edit ▸ Compare with… and the context menu's "Compare with…" to
// the diff window: f gets the two sessions (the primary selection first). Until it is
// set, the items are shown disabled.
func (u *UI) SetCompareHook(f func(a, b *session.Session)) {
	u.compare = f
	u.menus.refreshChecks()
}

// setFollow turns "follow newest" on or off.
func (u *UI) setFollow(on bool) {
	if u.following == on {
		return
	}
	u.following = on
	if on {
		u.scrollToNewest()
	}
	u.menus.refreshChecks()
	u.tools.refresh()
}

// Following reports whether the list follows the newest session.
func (u *UI) Following() bool { return u.following }

// SetHostsShown shows or hides the host tree and persists the choice.
func (u *UI) SetHostsShown(on bool) {
	u.hostsOn = on
	if on {
		u.hostSplit.Trailing = u.listStack
		u.listSplit.Leading = u.hostSplit
		u.prefs.SetString(prefHosts, "on")
	} else {
		u.listSplit.Leading = u.listStack
		u.prefs.SetString(prefHosts, "off")
	}
	u.listSplit.Refresh()
	u.menus.refreshChecks()
}

// saveSplits persists the split positions (called by the status ticker and on close).
func (u *UI) saveSplits() {
	u.prefs.SetFloat(prefSplitList, u.listSplit.Offset)
	u.prefs.SetFloat(prefSplitHosts, u.hostSplit.Offset)
	u.prefs.SetFloat(prefSplitDetail, u.detail.split.Offset)
}

// updateStart shows the start page while nothing was captured and no filter is typed.
func (u *UI) updateStart() {
	empty := u.model.Total() == 0 && u.model.Stored().Len() == 0 && u.filter.empty() && !u.deps.ReadOnly
	if empty {
		u.start.show()
		u.list.object().Hide()
	} else {
		u.start.hide()
		u.list.object().Show()
	}
}

// Model exposes the view-model (for tests and the composition root's diagnostics).
func (u *UI) Model() *viewmodel.Model { return u.model }

// liveWindow opens a tool window showing content: refresh runs now and each second while
// it is open (in a live window), closed runs when it closes.
func (u *UI) liveWindow(title string, size fyne.Size, content fyne.CanvasObject, refresh, closed func()) fyne.Window {
	w := u.app.NewWindow(title)
	w.SetContent(content)
	w.Resize(size)
	closeKeys(w, true)
	stop := make(chan struct{})
	w.SetOnClosed(func() {
		close(stop)
		closed()
	})
	refresh()
	u.every(time.Second, stop, refresh)
	w.Show()
	return w
}

// every runs f on the UI goroutine each period until stop closes, once the window is
// live (Start ran; tests call the refreshes themselves).
func (u *UI) every(period time.Duration, stop <-chan struct{}, f func()) {
	if !u.started {
		return
	}
	go func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				u.post(f)
			}
		}
	}()
}

// Start runs the event pump and the status ticker until ctx is done.
func (u *UI) Start(ctx context.Context) {
	u.started = true
	u.health.watch(ctx)
	if u.deps.Events != nil {
		u.pump = &viewmodel.Pump{
			Events: u.deps.Events,
			Flush: func(b viewmodel.Batch) {
				fyne.Do(func() { u.ApplyBatch(b) })
			},
		}
		go u.pump.Run(ctx)
	}
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fyne.Do(func() {
					u.status.update()
					u.saveSplits()
				})
			}
		}
	}()
}

// ApplyBatch applies one coalesced batch of engine events. UI goroutine only.
func (u *UI) ApplyBatch(b viewmodel.Batch) {
	for _, s := range b.Completed {
		u.remember(s)
	}
	if b.Resync {
		u.Reload()
	}
	ch := u.model.Upsert(b.Rows)
	u.changed(ch)
	for _, s := range b.Completed {
		if s.ID == u.detail.shown {
			u.detail.show(s.ID) // the in-flight session shown has completed
		}
	}
	if ch.Evicted > 0 && u.deps.Store != nil {
		// The oldest held rows were dropped: page them from the store instead.
		if lo, ok := u.model.OldestComplete(); ok {
			u.windowLo, u.windowFull = lo, true
		}
		u.extendPages()
	}
}

// extendPages moves the upper bound of the stored pages up to the held window after an
// eviction, scanning only the newly uncovered rows; without pages it builds them.
func (u *UI) extendPages() {
	old := u.model.Stored()
	if old == nil || u.windowLo <= old.Hi()+1 {
		if old == nil {
			u.rebuildPages()
		}
		return
	}
	gen, ctx := u.nextPagesBuild()
	hi := u.windowLo - 1
	go func() {
		p, err := old.Extend(ctx, hi)
		u.post(func() { u.installPages(gen, p, err) })
	}()
}

// Reload rebuilds the list from the store (newest MaxRows, or the store's matches of a
// filter that needs full sessions) plus the engine's in-flight sessions; older stored
// sessions are paged (rebuildPages).
func (u *UI) Reload() {
	u.reload()
	u.rebuildPages()
}

// startRows is how many of the newest stored rows the window holds when it first shows:
// a screenful and more, read in about a millisecond. Reading all maxRows (100,000
// summaries, 0.3–0.5 s over a million-session store) before the first frame made the
// window take 1.6 s to appear.
const startRows = 2000

// reloadAtStart is Reload for the window's start: the newest startRows rows at once, the
// rest of the held rows read off the UI goroutine and merged in when they arrive (unless
// a reload came first), then the older stored sessions paged (rebuildPages).
func (u *UI) reloadAtStart() {
	st, limit := u.deps.Store, u.maxRows()
	if st == nil || limit <= startRows || (u.filter.expr != nil && u.filter.expr.NeedsSession()) {
		u.Reload()
		return
	}
	u.reloadLimit(startRows)
	if !u.windowFull {
		u.rebuildPages() // every stored row is held
		return
	}
	gen := u.reloads
	go func() {
		rows, err := st.List(store.Query{Newest: true, Limit: limit})
		u.post(func() {
			if gen != u.reloads {
				return // a reload (a filter, a resync) replaced the rows meanwhile
			}
			if err != nil {
				u.loadErr = err
				u.status.update()
				return
			}
			// The rows that arrived meanwhile are fresher than the store's: they go last,
			// and the store's oldest make room for those newer than its newest.
			held := u.model.Held()
			if len(rows) > 0 {
				newer := len(held) - sort.Search(len(held), func(i int) bool { return held[i].ID > rows[0].ID })
				if keep := limit - newer; keep < len(rows) {
					rows = rows[:max(keep, 0)]
				}
			}
			if len(rows) > 0 {
				u.windowLo = rows[len(rows)-1].ID
				u.windowFull = true // the store had at least limit rows
			}
			u.changed(u.model.Replace(append(rows, held...)))
			u.rebuildPages()
		})
	}()
}

func (u *UI) reload() { u.reloadLimit(u.maxRows()) }

// reloadLimit is reload holding at most limit stored rows.
func (u *UI) reloadLimit(limit int) {
	var rows []session.Summary
	u.reloads++
	u.windowLo, u.windowFull = 0, false
	u.loadErr = nil
	if st := u.deps.Store; st != nil {
		q := store.Query{Newest: true, Limit: limit}
		if e := u.filter.expr; e != nil && e.NeedsSession() {
			q.Filter = e
		}
		got, err := st.List(q)
		if err != nil {
			u.loadErr = err
		}
		rows = got
		if len(got) > 0 {
			u.windowLo = got[len(got)-1].ID
			u.windowFull = len(got) == q.Limit
		}
		if q.Filter != nil {
			u.filter.storeMatches = make(map[session.ID]bool, len(got))
			for _, r := range got {
				u.filter.storeMatches[r.ID] = true
			}
		}
	}
	var inflight []session.Summary
	if e := u.deps.Engine; e != nil {
		inflight = e.InFlight()
	}
	if u.deps.Store == nil {
		// Without a store the rows held in memory are all there is: keep them.
		u.changed(u.model.Upsert(inflight))
		return
	}
	u.changed(u.model.Replace(append(rows, inflight...)))
}

// rebuildPages indexes, off the UI goroutine, the stored sessions older than the held
// window that match the filter (expression and quick text), and installs them in the
// model when done; until then the list shows the held rows only. UI goroutine only.
func (u *UI) rebuildPages() {
	gen, ctx := u.nextPagesBuild()
	st := u.deps.Store
	if st == nil || !u.windowFull || u.windowLo <= 1 {
		u.storedHosts = nil
		if u.model.Stored() != nil {
			u.changed(u.model.SetStored(nil))
		}
		return
	}
	expr, err := u.filter.storeExpr()
	if err != nil {
		u.loadErr = err
		return
	}
	hi := u.windowLo - 1
	go func() {
		p, err := viewmodel.BuildPages(ctx, st, expr, hi, 0, 0)
		u.post(func() { u.installPages(gen, p, err) })
	}()
}

// nextPagesBuild cancels the page build in progress and starts a new generation.
func (u *UI) nextPagesBuild() (int, context.Context) {
	if u.pagesStop != nil {
		u.pagesStop()
	}
	u.pagesGen++
	ctx, stop := context.WithCancel(context.Background())
	u.pagesStop = stop
	return u.pagesGen, ctx
}

// installPages puts the result of a page build in the model unless a newer build was
// started meanwhile. UI goroutine only.
func (u *UI) installPages(gen int, p *viewmodel.Pages, err error) {
	if gen != u.pagesGen {
		if p != nil {
			p.Close()
		}
		return
	}
	if err != nil {
		u.loadErr = err
		u.status.update()
		return
	}
	p.OnPage = func() { u.post(u.list.refresh) }
	if p.Filter() == nil {
		u.storedHosts = p.Hosts()
	}
	u.changed(u.model.SetStored(p))
	u.list.reselect()
	u.syncDetail()
}

// syncDetail makes the detail pane follow the filter: a selected session the filter now
// hides is no longer shown (the pane says so), and shown again when the filter lets it
// back in. The selection itself is kept.
func (u *UI) syncDetail() {
	id, ok := u.model.Selected()
	visible := ok && u.model.IndexOf(id) >= 0
	switch {
	case visible && u.detail.shown != id:
		u.detail.show(id)
	case !visible && u.detail.shown != 0:
		u.detail.reset()
		if ok {
			u.detail.title.SetText(fmt.Sprintf("#%d is hidden by the filter.", id))
		}
	}
}

// post runs f on the UI goroutine (Deps.Post, else fyne.Do).
func (u *UI) post(f func()) {
	if u.deps.Post != nil {
		u.deps.Post(f)
		return
	}
	fyne.Do(f)
}

func (u *UI) maxRows() int {
	if u.deps.MaxRows > 0 {
		return u.deps.MaxRows
	}
	return viewmodel.DefaultMax
}

// changed refreshes the widgets after a model change.
func (u *UI) changed(ch viewmodel.Change) {
	if !ch.Any() {
		return
	}
	// A reset counts too: installing the stored pages puts every older session in front
	// of the held rows without adding any, and the list would stay at the old bottom
	// offset (on a 1,000,000-session store: ids near the oldest held).
	if u.following && (ch.Added > 0 || ch.Reset) && u.model.Len() > 0 {
		u.scrollToNewest()
	}
	// Always refresh: scrolling redraws only when the table actually moves, so a row
	// updated in a batch that also adds rows (a session completing while the next begins)
	// would keep its old cells while the list still fits the window.
	u.list.refresh()
	if ch.Reset || ch.Added > 0 {
		u.hosts.refresh()
	}
	u.status.update()
	u.updateStart()
}

func (u *UI) scrollToNewest() {
	if u.model.Len() == 0 {
		return
	}
	if col, desc := u.model.Sort(); col == viewmodel.ColID && desc {
		u.list.list.ScrollToTop()
	} else {
		u.list.list.ScrollToBottom()
	}
}

// remember caches a completed session for the detail pane.
func (u *UI) remember(s *session.Session) {
	if _, ok := u.recent[s.ID]; !ok {
		u.rorder = append(u.rorder, s.ID)
	}
	u.recent[s.ID] = s
	u.ops.note(s)
	for len(u.rorder) > recentCap {
		delete(u.recent, u.rorder[0])
		u.rorder = u.rorder[1:]
	}
}

// session loads a full session: from the recent cache, else the store.
func (u *UI) session(id session.ID) (*session.Session, error) {
	if s, ok := u.recent[id]; ok {
		return s, nil
	}
	if u.deps.Store == nil {
		return nil, store.ErrNotFound
	}
	return u.deps.Store.Get(id)
}

// SelectID makes id the only selected session, scrolls to it and shows it in the detail
// pane.
func (u *UI) SelectID(id session.ID) {
	u.model.SelectOnly(id)
	if i := u.model.IndexOf(id); i >= 0 {
		u.list.scrollTo(i)
	}
	u.detail.shown = 0 // show it again even when it is shown
	u.selectionChanged()
}

// selectionChanged redraws the highlight and shows the primary selected session.
func (u *UI) selectionChanged() {
	u.list.list.Refresh()
	if id, ok := u.model.Selected(); ok {
		if u.detail.shown != id {
			u.detail.show(id)
		}
	} else {
		u.detail.reset()
	}
	u.status.update()
	u.tools.refresh()
}

// SelectAll selects every visible session (Edit ▸ Select all, Ctrl+A in the list).
func (u *UI) SelectAll() {
	u.model.SelectAll()
	u.selectionChanged()
}

// SelectedIDs returns the selected session ids in capture order.
func (u *UI) SelectedIDs() []session.ID { return u.model.SelectedIDs() }

// SelectedSessions loads the selected sessions in capture order; sessions that cannot be
// loaded (deleted meanwhile) are left out.
func (u *UI) SelectedSessions() []*session.Session {
	var out []*session.Session
	for _, id := range u.model.SelectedIDs() {
		if s, err := u.session(id); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// Step moves the selection to the next (+1) or previous (-1) visible session.
func (u *UI) Step(delta int) { u.step(delta, false) }

// step moves (or, with extend, extends) the selection by delta rows.
func (u *UI) step(delta int, extend bool) {
	var i int
	if extend {
		i = u.model.StepExtend(delta)
	} else {
		i = u.model.Step(delta)
	}
	if i < 0 {
		return
	}
	u.setFollow(i == u.model.Len()-1 && u.following)
	u.list.scrollTo(i)
	u.selectionChanged()
}

// ToggleCapture turns capture on or off.
func (u *UI) ToggleCapture() {
	if u.deps.Engine == nil {
		return
	}
	u.deps.Engine.SetCapture(!u.deps.Engine.Capturing())
	u.updateCaptureButton()
	u.status.update()
}

func (u *UI) updateCaptureButton() {
	u.tools.refresh()
	u.menus.refreshChecks()
}

// selectedSession returns the selected full session, or nil.
func (u *UI) selectedSession() *session.Session {
	id, ok := u.model.Selected()
	if !ok {
		return nil
	}
	s, err := u.session(id)
	if err != nil {
		return nil
	}
	return s
}

// headerValue is a small helper for optional headers.
func headerValue(h http.Header, k string) string {
	if h == nil {
		return ""
	}
	return h.Get(k)
}
