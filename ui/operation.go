package ui

import (
	"inspector/engine/content"
	"inspector/engine/session"
	"inspector/ui/viewmodel"
)

// opsCap bounds the operations remembered from full sessions (a short string per row).
const opsCap = 1 << 16

// opCache holds the operations (content.Operation) of the full sessions the window has
// seen: a GraphQL POST's operation is in its body, which the list's summaries lack.
type opCache struct {
	m     map[session.ID]string
	order []session.ID
}

func (c *opCache) note(s *session.Session) {
	if c.m == nil {
		c.m = map[session.ID]string{}
	}
	op := content.Operation(s)
	if op == "" {
		return
	}
	if _, ok := c.m[s.ID]; !ok {
		c.order = append(c.order, s.ID)
	}
	c.m[s.ID] = op
	for len(c.order) > opsCap {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}

// operation is the Operation cell of a row: from the full session when the window has
// seen it, else what the summary tells.
func (u *UI) operation(s *session.Summary) string {
	if op, ok := u.ops.m[s.ID]; ok {
		return op
	}
	return viewmodel.SummaryOperation(s)
}
