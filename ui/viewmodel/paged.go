package viewmodel

import (
	"container/list"
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"inspector/engine/session"
	"inspector/filter"
	"inspector/store"
)

// Lister is what paging needs from the session store; *store.Store implements it.
// It must be safe for concurrent use.
type Lister interface {
	List(q store.Query) ([]session.Summary, error)
}

// DefaultPageSize is the number of summaries fetched from the store per page.
const DefaultPageSize = 256

// DefaultPageCache is the number of pages Pages keeps in memory (least recently used
// pages are dropped first).
const DefaultPageCache = 64

// maxQueued bounds the page requests waiting for the fetcher: when the user jumps
// around faster than pages arrive, the oldest requests (rows no longer on screen) are
// dropped, so a jump costs a bounded number of fetches.
const maxQueued = 8

// Pages gives positional access to every stored session matching a filter (ids up to
// a snapshot bound), in ascending id order, without holding them in memory: an index of
// page anchors (the first id of every page, 8 bytes per DefaultPageSize rows) is built
// once by BuildPages, and rows are fetched a page at a time with store.List into a small
// LRU cache.
//
// # Concurrency
//
// At, Len, Hi, Fetches and Close may be called from any goroutine (in the app: the UI
// goroutine). Page fetches run on one goroutine owned by Pages, started lazily; when a
// requested page arrives, the OnPage callback runs on that goroutine (the app hands it
// to fyne.Do). Rows returned by At are shared and must not be modified.
type Pages struct {
	src    Lister
	filter *filter.Expr
	size   int
	hi     session.ID   // only ids <= hi are covered
	lo     session.ID   // the first covered id (0 when empty)
	anchor []session.ID // anchor[p] is the first id of page p
	n      int          // rows covered
	hosts  map[string]int

	// OnPage, if set before the first At, is called on the fetch goroutine after a page
	// requested by At has arrived (or failed: see Err).
	OnPage func()

	mu      sync.Mutex
	cap     int
	cache   map[int]*list.Element // page -> element of lru (Value *page)
	lru     *list.List            // front: most recently used
	queue   []int                 // requested pages, newest last
	queued  map[int]bool
	running bool
	closed  bool
	err     error

	fetches atomic.Uint64
}

type page struct {
	n    int
	rows []session.Summary
}

// BuildPages scans the store once (in pages, each read transaction short) and returns
// the page index of the sessions matching f (nil: all) with ids <= hi; hi == 0 means
// "up to the newest stored id at the time of the call". It does the I/O on the calling
// goroutine: call it off the UI goroutine. size <= 0 means DefaultPageSize; cacheCap <= 0
// means DefaultPageCache. The rows read while indexing warm the cache. It stops with
// ctx.Err() between two pages once ctx is done (a newer filter replaced this one).
func BuildPages(ctx context.Context, src Lister, f *filter.Expr, hi session.ID, size, cacheCap int) (*Pages, error) {
	if src == nil {
		return nil, fmt.Errorf("viewmodel: BuildPages needs a store")
	}
	if size <= 0 {
		size = DefaultPageSize
	}
	if cacheCap <= 0 {
		cacheCap = DefaultPageCache
	}
	if hi == 0 {
		last, err := src.List(store.Query{Newest: true, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(last) > 0 {
			hi = last[0].ID
		}
	}
	p := &Pages{
		src: src, filter: f, size: size, hi: hi, cap: cacheCap, hosts: make(map[string]int),
		cache: make(map[int]*list.Element), lru: list.New(), queued: make(map[int]bool),
	}
	if hi == 0 {
		return p, nil // empty store
	}
	if err := p.scan(ctx, 0, 0); err != nil {
		return nil, err
	}
	return p, nil
}

// Extend returns Pages with the same filter, size and cache capacity covering the ids up
// to hi (which must not be below p.Hi()), reading only the rows after p's last full page:
// it is the cheap path when the rows held in memory move up (eviction). Pages of p in
// memory are shared with the result. p is left as it was (the caller closes it). Like
// BuildPages it does I/O on the calling goroutine and stops when ctx is done.
func (p *Pages) Extend(ctx context.Context, hi session.ID) (*Pages, error) {
	if hi < p.hi {
		return nil, fmt.Errorf("viewmodel: Extend to %d below the covered %d", hi, p.hi)
	}
	q := &Pages{
		src: p.src, filter: p.filter, size: p.size, hi: hi, cap: p.cap, hosts: make(map[string]int, len(p.hosts)),
		cache: make(map[int]*list.Element), lru: list.New(), queued: make(map[int]bool),
	}
	for h, c := range p.hosts {
		q.hosts[h] = c
	}
	full := p.n / p.size
	q.anchor = append([]session.ID(nil), p.anchor[:full]...)
	q.n = full * p.size
	after := p.hi
	if full < len(p.anchor) {
		after = p.anchor[full] - 1 // rescan the partial last page
	}
	p.mu.Lock()
	for e := p.lru.Back(); e != nil; e = e.Prev() {
		if x := e.Value.(*page); x.n < full {
			q.put(x.n, x.rows)
		}
	}
	p.mu.Unlock()
	if err := q.scan(ctx, after, p.hi); err != nil {
		return nil, err
	}
	return q, nil
}

// scan appends the pages of rows with ids in (after, p.hi] to the index, counting the
// hosts of rows with ids above counted. p is not shared yet.
func (p *Pages) scan(ctx context.Context, after, counted session.ID) error {
	f, size, hi := p.filter, p.size, p.hi
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rows, err := p.src.List(store.Query{Filter: f, After: after, Before: hi + 1, Limit: size})
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		for i := range rows {
			if rows[i].ID > counted {
				p.hosts[HostKey(&rows[i])]++
			}
		}
		pg := len(p.anchor)
		p.anchor = append(p.anchor, rows[0].ID)
		p.n += len(rows)
		// The LRU keeps the last pages scanned: the ones next to the held rows, where a
		// list opened at the newest row starts scrolling up.
		p.put(pg, rows)
		if len(rows) < size {
			break
		}
		after = rows[len(rows)-1].ID
	}
	if len(p.anchor) > 0 {
		p.lo = p.anchor[0]
	}
	return nil
}

// Len is the number of rows covered.
func (p *Pages) Len() int {
	if p == nil {
		return 0
	}
	return p.n
}

// Hi is the snapshot bound: rows with larger ids are not covered (they are live rows).
func (p *Pages) Hi() session.ID {
	if p == nil {
		return 0
	}
	return p.hi
}

// Hosts returns the number of covered rows per host, counted while indexing. The map is
// shared and must not be modified.
func (p *Pages) Hosts() map[string]int {
	if p == nil {
		return nil
	}
	return p.hosts
}

// Filter is the expression the pages were built with (nil: all).
func (p *Pages) Filter() *filter.Expr { return p.filter }

// Fetches counts page reads done by the fetch goroutine since BuildPages (the index scan
// not included).
func (p *Pages) Fetches() uint64 { return p.fetches.Load() }

// Err returns the last page fetch error, or nil.
func (p *Pages) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// At returns row i (0 <= i < Len) in ascending id order, or nil when its page is not in
// memory yet: then the page is requested, and OnPage runs once it has arrived. A row
// deleted from the store after BuildPages shifts later rows of its page up by one, and
// the page's last rows may then be nil until the index is rebuilt.
func (p *Pages) At(i int) *session.Summary {
	if i < 0 || i >= p.n {
		return nil
	}
	pg, off := i/p.size, i%p.size
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.cache[pg]; ok {
		p.lru.MoveToFront(e)
		x := e.Value.(*page)
		if off < len(x.rows) {
			return &x.rows[off]
		}
		return nil
	}
	p.request(pg)
	return nil
}

// Cached reports whether the page holding row i is in memory.
func (p *Pages) Cached(i int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.cache[i/p.size]
	return ok
}

// IndexOf returns the row index of id, or -1 when id is not covered or its page is not
// in memory (it never reads the store).
func (p *Pages) IndexOf(id session.ID) int {
	if p == nil || p.n == 0 || id < p.lo || id > p.hi {
		return -1
	}
	pg := p.pageOf(id)
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.cache[pg]
	if !ok {
		return -1
	}
	for k, r := range e.Value.(*page).rows {
		if r.ID == id {
			return pg*p.size + k
		}
	}
	return -1
}

// Close stops fetching: queued requests are dropped and OnPage is not called again.
func (p *Pages) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	p.queue = nil
	clear(p.queued)
	p.mu.Unlock()
}

// request queues page pg for the fetcher. p.mu is held.
func (p *Pages) request(pg int) {
	if p.queued[pg] || p.closed {
		return
	}
	p.queued[pg] = true
	p.queue = append(p.queue, pg)
	if len(p.queue) > maxQueued {
		drop := len(p.queue) - maxQueued
		for _, d := range p.queue[:drop] {
			delete(p.queued, d)
		}
		p.queue = append(p.queue[:0], p.queue[drop:]...)
	}
	if !p.running {
		p.running = true
		go p.fetchLoop()
	}
}

// fetchLoop serves requests newest first (the rows on screen now) until the queue is empty.
func (p *Pages) fetchLoop() {
	for {
		p.mu.Lock()
		if len(p.queue) == 0 || p.closed {
			p.running = false
			p.mu.Unlock()
			return
		}
		pg := p.queue[len(p.queue)-1]
		p.queue = p.queue[:len(p.queue)-1]
		p.mu.Unlock()

		rows, err := p.src.List(store.Query{Filter: p.filter, After: p.anchor[pg] - 1, Before: p.hi + 1, Limit: p.size})
		p.fetches.Add(1)

		p.mu.Lock()
		delete(p.queued, pg)
		if err != nil {
			p.err = err
		} else {
			p.put(pg, rows)
		}
		closed := p.closed
		p.mu.Unlock()
		if !closed && p.OnPage != nil {
			p.OnPage()
		}
	}
}

// put caches a page, dropping the least recently used beyond the cap. p.mu is held
// (or p is not shared yet).
func (p *Pages) put(pg int, rows []session.Summary) {
	if e, ok := p.cache[pg]; ok {
		e.Value.(*page).rows = rows
		p.lru.MoveToFront(e)
		return
	}
	p.cache[pg] = p.lru.PushFront(&page{n: pg, rows: rows})
	for p.lru.Len() > p.cap {
		old := p.lru.Back()
		p.lru.Remove(old)
		delete(p.cache, old.Value.(*page).n)
	}
}

// pageOf is the last page whose anchor is <= id (-1: none).
func (p *Pages) pageOf(id session.ID) int {
	return sort.Search(len(p.anchor), func(m int) bool { return p.anchor[m] > id }) - 1
}

// Locate returns the row index of id like IndexOf, reading its page from the store on the
// calling goroutine when it is not in memory (one page read: for a jump to a row found
// elsewhere, such as a search result). ok is false when id is not covered or not stored.
func (p *Pages) Locate(id session.ID) (int, bool) {
	if i := p.IndexOf(id); i >= 0 {
		return i, true
	}
	if p == nil || p.n == 0 || id < p.lo || id > p.hi {
		return -1, false
	}
	pg := p.pageOf(id)
	if pg < 0 {
		return -1, false
	}
	rows, err := p.src.List(store.Query{Filter: p.filter, After: p.anchor[pg] - 1, Before: p.hi + 1, Limit: p.size})
	p.fetches.Add(1)
	if err != nil {
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		return -1, false
	}
	p.mu.Lock()
	if !p.closed {
		p.put(pg, rows)
	}
	p.mu.Unlock()
	i := p.IndexOf(id)
	return i, i >= 0
}
