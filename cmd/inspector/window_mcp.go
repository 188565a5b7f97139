package main

import (
	"sync/atomic"

	"inspector/redact"
	"inspector/ui"
)

// mcpWindow is the instance's MCP endpoint as the window's Tools ▸ MCP… sees it.
type mcpWindow struct {
	act    *mcpActivity
	writes *atomic.Bool
	redact *atomic.Bool
	rules  *redact.Settings // the switch is saved there
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

func (m mcpWindow) RedactAnswers() bool { return m.redact.Load() }
func (m mcpWindow) SetRedactAnswers(on bool) error {
	if m.rules != nil {
		if err := m.rules.SetMCP(on); err != nil {
			return err
		}
	}
	m.redact.Store(on)
	return nil
}
