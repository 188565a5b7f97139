package main

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"inspector/rootca"
)

// TestWindowMCPSwitchTakesEffectForNewSessions: the window's "Allow MCP clients to change
// things" switch (ui.Deps.MCP) picks the server of MCP sessions started after it on
// /api/v1/mcp; sessions already open keep theirs. The activity the window lists is the
// endpoint's.
func TestWindowMCPSwitchTakesEffectForNewSessions(t *testing.T) {
	dir := t.TempDir()
	inst, err := startInstance(dir, instanceFlags{listen: "127.0.0.1:0", captureLimit: 1 << 20, upstreamProto: "auto", leafDays: rootca.MaxLeafDays})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.shutdown()
	d := windowDeps(inst, nil)
	if d.MCP == nil || d.Network == nil || d.Scripts == nil || d.DataDir != dir || d.Protos == nil {
		t.Fatalf("window deps not wired: MCP %v Network %v Scripts %v DataDir %q", d.MCP, d.Network, d.Scripts, d.DataDir)
	}
	if d.MCP.WritesAllowed() {
		t.Fatal("writes allowed without --mcp-writes")
	}
	info := readControlInfo(t, dir)
	hc := &http.Client{Transport: bearer{info.Token, http.DefaultTransport}}
	connect := func() *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "switch-agent", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: info.URL + "/api/v1/mcp", HTTPClient: hc, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	before := connect()
	if names := toolNames(t, before); slices.Contains(names, "resume") || !slices.Contains(names, "list_sessions") {
		t.Fatalf("read-only tools = %v", names)
	}
	d.MCP.SetWritesAllowed(true)
	after := connect()
	if names := toolNames(t, after); !slices.Contains(names, "resume") || !slices.Contains(names, "add_breakpoint") {
		t.Fatalf("tools after the switch = %v", names)
	}
	if names := toolNames(t, before); slices.Contains(names, "resume") {
		t.Fatal("a session opened before the switch got write tools")
	}
	callTool(t, after, "list_sessions", map[string]any{}, nil)
	var seen bool
	for _, e := range d.MCP.Activity() {
		seen = seen || (e.Client == "switch-agent" && e.Tool == "list_sessions")
	}
	if !seen {
		t.Fatalf("activity = %+v", d.MCP.Activity())
	}
	d.MCP.SetWritesAllowed(false)
	if names := toolNames(t, connect()); slices.Contains(names, "resume") {
		t.Fatal("switched off, a new session still gets write tools")
	}
}
