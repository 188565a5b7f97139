package main

import (
	"sync/atomic"

	"inspector/ui"
)

// mcpWindow is the instance's MCP endpoint as the window's Tools ▸ MCP… sees it.
type mcpWindow struct {
	act    *mcpActivity
	writes *atomic.Bool
}

func (m mcpWindow) Activity() []ui.MCPEvent {
	es := m.act.list()
	out := make([]ui.MCPEvent, len(es))
	for i, e := range es {
		out[i] = ui.MCPEvent{Time: e.Time, Client: e.Client, Tool: e.Tool, Detail: e.Detail}
	}
	return out
}

func (m mcpWindow) WritesAllowed() bool      { return m.writes.Load() }
func (m mcpWindow) SetWritesAllowed(on bool) { m.writes.Store(on) }
