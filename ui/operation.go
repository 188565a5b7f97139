package ui

import (
	"inspector/engine/content"
	"inspector/engine/session"
	"inspector/ui/viewmodel"
)

// opsCap bounds the operations remembered from full sessions (a short string per row).
const opsCap = 1 << 16

// opCache holds the operations (content.Operation) of the full sessions the window has
// seen: a GraphQL POST's operation is in its body, which the list's summaries lack. Rows
// shown with the Operation column whose operation the summary cannot tell are read from
// the store one at a time, off the UI goroutine.
type opCache struct {
	m     map[session.ID]string // "" once read and found to have none
	order []session.ID
	queue []session.ID // to read from the store
	busy  bool         // a reader runs
}

func (c *opCache) put(id session.ID, op string) {
	if c.m == nil {
		c.m = map[session.ID]string{}
	}
	if _, ok := c.m[id]; !ok {
		c.order = append(c.order, id)
	}
	c.m[id] = op
	for len(c.order) > opsCap {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *opCache) note(s *session.Session) { c.put(s.ID, content.Operation(s)) }

// operation is the Operation cell of a row: from the full session when the window has
// seen it, else what the summary tells; a POST whose summary tells nothing is read from
// the store and the row redrawn.
func (u *UI) operation(s *session.Summary) string {
	if op, ok := u.ops.m[s.ID]; ok {
		return op
	}
	if op := viewmodel.SummaryOperation(s); op != "" {
		return op
	}
	if s.Method == "POST" && !s.InFlight && u.deps.Store != nil {
		u.ops.put(s.ID, "")  // asked once
		if u.detail.inline { // tests: at once
			if full, err := u.deps.Store.Get(s.ID); err == nil {
				u.ops.note(full)
			}
			return u.ops.m[s.ID]
		}
		u.ops.queue = append(u.ops.queue, s.ID)
		u.readOps()
	}
	return ""
}

// readOps reads the queued sessions' operations from the store, one at a time.
func (u *UI) readOps() {
	if u.ops.busy || len(u.ops.queue) == 0 {
		return
	}
	id := u.ops.queue[0]
	u.ops.queue = u.ops.queue[1:]
	u.ops.busy = true
	get := u.deps.Store.Get
	done := func(op string) {
		u.ops.busy = false
		if op != "" {
			u.ops.put(id, op)
			u.list.list.Refresh()
		}
		u.readOps()
	}
	go func() {
		op := ""
		if s, err := get(id); err == nil {
			op = content.Operation(s)
		}
		u.post(func() { done(op) })
	}()
}
