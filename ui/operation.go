package ui

import (
	"fmt"

	"inspector/content"
	"inspector/engine/session"
	"inspector/ui/render"
	"inspector/ui/viewmodel"
)

// opsCap bounds the operations remembered from full sessions (a short string per row).
const opsCap = 1 << 16

// opCache holds the operations (content.Operation) of the full sessions the window has
// seen: a GraphQL POST's operation is in its body, which the list's summaries lack. Rows
// shown with the Operation column whose operation the summary cannot tell are read from
// the store one at a time, off the UI goroutine.
type opCache struct {
	m map[session.ID]string // "" once read and found to have none
	// fail is the application-level failure of the sessions in m (appFailure): a gRPC
	// call's status, a GraphQL response's errors; absent when there is none.
	fail map[session.ID]string
	// llm holds the model and tokens cells of the LLM calls among them.
	llm   map[session.ID][2]string
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
		delete(c.fail, c.order[0])
		delete(c.llm, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *opCache) note(s *session.Session) {
	c.put(s.ID, content.Operation(s))
	if c.fail == nil {
		c.fail = map[session.ID]string{}
	}
	if f := appFailure(s); f != "" {
		c.fail[s.ID] = f
	} else {
		delete(c.fail, s.ID)
	}
	if call, ok := content.LLMCallOf(s); ok {
		if c.llm == nil {
			c.llm = map[session.ID][2]string{}
		}
		tokens := ""
		if call.HasUsage {
			tokens = fmt.Sprintf("%d → %d", call.InputTokens, call.OutputTokens)
		}
		c.llm[s.ID] = [2]string{call.Model, tokens}
	}
}

// appFailure is how an exchange failed at the application level although its HTTP
// status says success: a gRPC call's non-OK grpc-status ("5 NOT_FOUND"), a GraphQL
// response's errors ("GraphQL errors"); "" when it did not.
func appFailure(s *session.Session) string {
	if s == nil || s.Response == nil {
		return ""
	}
	if _, ok := content.RPCMethod(s); ok {
		if st, ok := content.GRPCStatus(s.Response.Trailer, s.Response.Header); ok && st.Code != 0 {
			return fmt.Sprintf("%d %s", st.Code, st.Name)
		}
		return ""
	}
	if len(content.GraphQLOps(s)) > 0 {
		body, _, _, err := render.Decode(s.Response.Header, s.Response.Body.Data)
		if err != nil {
			body = s.Response.Body.Data
		}
		if errs := content.GraphQLErrors(body); len(errs) > 0 {
			return "GraphQL errors"
		}
	}
	return ""
}

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

// failure is the application-level failure of a row (appFailure), as far as the window
// has seen its full session; a POST not seen yet is queued to be read (as for its
// operation) and the row redrawn then.
func (u *UI) failure(s *session.Summary) string {
	if _, ok := u.ops.m[s.ID]; !ok && s.Method == "POST" && !s.InFlight && u.deps.Store != nil {
		u.ops.put(s.ID, viewmodel.SummaryOperation(s)) // asked once
		if u.detail.inline {                           // tests: at once
			if full, err := u.deps.Store.Get(s.ID); err == nil {
				u.ops.note(full)
			}
		} else {
			u.ops.queue = append(u.ops.queue, s.ID)
			u.readOps()
		}
	}
	return u.ops.fail[s.ID]
}

// llmCell is the Model or Tokens cell of a row (an LLM call's), as far as the window has
// seen its full session (read like its failure).
func (u *UI) llmCell(s *session.Summary, c viewmodel.Column) string {
	u.failure(s) // queues the read of a POST not seen yet
	cells := u.ops.llm[s.ID]
	if c == viewmodel.ColModel {
		return cells[0]
	}
	return cells[1]
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
	done := func(s *session.Session) {
		u.ops.busy = false
		if s != nil {
			u.ops.note(s)
			u.list.list.Refresh()
		}
		u.readOps()
	}
	if (inlineStoreReads || u.inlineReads) && u.deps.Post == nil { // tests without a Post of their own
		s, err := get(id)
		if err != nil {
			s = nil
		}
		done(s)
		return
	}
	go func() {
		s, err := get(id)
		if err != nil {
			s = nil
		}
		u.post(func() { done(s) })
	}()
}

// inlineStoreReads makes readOps read the store on the calling goroutine. The package's
// tests set it: with the fyne/test driver, work posted from another goroutine runs on that
// goroutine, concurrently with the test's own widget calls (a concurrent map write in
// Fyne's caches).
var inlineStoreReads bool
