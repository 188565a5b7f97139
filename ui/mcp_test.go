package ui

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// mcpLog is an MCP activity source as the instance keeps one (cmd/inspector's
// mcpWindow is the real adapter; its test drives the real endpoint).
type mcpLog struct {
	mu     sync.Mutex
	events []MCPEvent
	writes bool
	clear  bool // answers unmasked
}

func (m *mcpLog) Activity() []MCPEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]MCPEvent(nil), m.events...)
}
func (m *mcpLog) WritesAllowed() bool      { m.mu.Lock(); defer m.mu.Unlock(); return m.writes }
func (m *mcpLog) SetWritesAllowed(on bool) { m.mu.Lock(); defer m.mu.Unlock(); m.writes = on }
func (m *mcpLog) RedactAnswers() bool      { m.mu.Lock(); defer m.mu.Unlock(); return !m.clear }
func (m *mcpLog) SetRedactAnswers(on bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clear = !on
	return nil
}

func TestMCPPanelShowsActivityClientsAndSwitch(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.Local)
	m := &mcpLog{events: []MCPEvent{
		{Time: t0, Client: "claude-code", Tool: "list_sessions", Detail: "host:api.example.com"},
		{Time: t0.Add(time.Second), Client: "cursor", Tool: "get_session", Detail: "#12"},
	}}
	u, w := newTestUI(t, Deps{MCP: m})
	menuItem(t, editMenu(t, w, "Tools"), "MCP").Action()
	p := u.mcp
	if p == nil || windowTitled(u.app, "MCP") == nil {
		t.Fatal("no MCP window")
	}
	if got := p.clients.Text; !strings.Contains(got, "claude-code (last 12:00:00)") || !strings.Contains(got, "cursor (last 12:00:01)") {
		t.Fatalf("clients = %q", got)
	}
	if r, c := p.table.Length(); r != 2 || c != 4 {
		t.Fatalf("table %d×%d", r, c)
	}
	if got := mcpCell(p.events[len(p.events)-1], 2); got != "get_session" {
		t.Fatalf("newest tool = %q", got)
	}
	if p.writes.Checked {
		t.Fatal("the switch is on while writes are off")
	}
	p.writes.SetChecked(true)
	if !m.WritesAllowed() || !strings.Contains(u.status.Note(), "may change things") {
		t.Fatalf("switch on: writes %v, note %q", m.WritesAllowed(), u.status.Note())
	}
	// New activity shows on refresh.
	m.mu.Lock()
	m.events = append(m.events, MCPEvent{Time: t0.Add(2 * time.Second), Client: "cursor", Tool: "replay", Detail: "#12"})
	m.mu.Unlock()
	p.refresh()
	if r, _ := p.table.Length(); r != 3 || !strings.Contains(p.clients.Text, "cursor (last 12:00:02)") {
		t.Fatalf("after new activity: %d rows, %q", r, p.clients.Text)
	}
	p.writes.SetChecked(false)
	if m.WritesAllowed() {
		t.Fatal("switch off left writes on")
	}
	// Masking of answers: on by default, switched off and on from the window.
	if !p.redact.Checked {
		t.Fatal("the masking switch is off by default")
	}
	p.redact.SetChecked(false)
	if m.RedactAnswers() || !strings.Contains(u.status.Note(), "unmasked") {
		t.Fatalf("masking switch off: %v, note %q", m.RedactAnswers(), u.status.Note())
	}
	p.redact.SetChecked(true)
	if !m.RedactAnswers() {
		t.Fatal("masking switch on left it off")
	}
}
