package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

// recordingOrigin is a plain HTTP origin that keeps every request's path and headers.
type recordingOrigin struct {
	mu   sync.Mutex
	seen []http.Header
	*et.Origin
}

func startRecordingOrigin(t *testing.T) *recordingOrigin {
	o := &recordingOrigin{}
	o.Origin = et.StartOrigin(t, et.OriginH1Plain, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		h := r.Header.Clone()
		h.Set("X-Test-Path", r.URL.Path)
		o.seen = append(o.seen, h)
		o.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true,"path":"` + r.URL.Path + `"}`))
	}))
	return o
}

func (o *recordingOrigin) requests() []http.Header {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.seen)
}

// callTool calls a tool and decodes its structured result into out; a tool error fails
// the test unless wantErr, in which case the error text is returned.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any, out any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var msg strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				msg.WriteString(tc.Text)
			}
		}
		if out != nil {
			t.Fatalf("%s: tool error: %s", name, msg.String())
		}
		return msg.String()
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: decode %s: %v", name, b, err)
		}
	}
	return ""
}

// eventually retries check until it holds or 15 s pass; it waits on the condition, not on
// a fixed delay.
func eventually(t *testing.T, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func connectStdio(t *testing.T, args ...string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "inspector-test-agent", Version: "1"}, nil)
	cmd := exec.Command(binary(t), append([]string{"mcp"}, args...)...)
	cmd.Stderr = os.Stderr
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestMCPLiveLoop drives a running instance with the SDK's own client over stdio: find a
// session by filter, hold a request at a breakpoint, resume it with an edit the origin
// receives, replay it; then over streamable HTTP on the control API; then read-only from
// the store once the instance is gone.
func TestMCPLiveLoop(t *testing.T) {
	data := t.TempDir()
	origin := startRecordingOrigin(t)
	h := startHeadless(t, data, "--mcp-writes")
	proxyURL, _ := url.Parse("http://" + h.addr)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 30 * time.Second}

	// A first request, to find by filter.
	resp, err := client.Get(origin.URL + "/first?x=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	cs := connectStdio(t, "--data-dir", data, "--allow-writes")
	if names := toolNames(t, cs); !slices.Contains(names, "resume") || !slices.Contains(names, "list_sessions") {
		t.Fatalf("tools with --allow-writes: %v", names)
	}

	var list listOut
	eventually(t, "the first session in the store", func() bool {
		callTool(t, cs, "list_sessions", map[string]any{"filter": "path:/first"}, &list)
		return len(list.Sessions) == 1
	})
	var got mcpSession
	callTool(t, cs, "get_session", map[string]any{"id": list.Sessions[0].ID}, &got)
	if got.Status != 200 || got.ResponseBody == nil || !strings.Contains(got.ResponseBody.Text, `"path":"/first"`) {
		t.Fatalf("get_session: status %d body %+v", got.Status, got.ResponseBody)
	}

	// Hold /held at the request phase.
	var bp okOut
	callTool(t, cs, "add_breakpoint", map[string]any{"filter": "path:/held", "phase": "request"}, &bp)
	if bp.ID == 0 {
		t.Fatal("add_breakpoint returned no id")
	}
	// A real curl request is the one held.
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed (make test installs it)")
	}
	done := make(chan error, 1)
	go func() {
		out, err := exec.Command(curl, "-sS", "-f", "-o", "/dev/null", "-x", "http://"+h.addr, origin.URL+"/held").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("curl: %v: %s", err, out)
		}
		done <- err
	}()
	var paused pausedOut
	eventually(t, "the request to be paused", func() bool {
		callTool(t, cs, "list_paused", map[string]any{}, &paused)
		return len(paused.Paused) == 1
	})
	p := paused.Paused[0]
	if !strings.HasSuffix(p.URL, "/held") {
		t.Fatalf("paused %s", p.URL)
	}
	if n := len(origin.requests()); n != 1 {
		t.Fatalf("origin saw %d requests while one was held (want 1: the first)", n)
	}
	hdr := p.Header.Clone()
	hdr.Set("X-Edited-By", "agent")
	callTool(t, cs, "resume", map[string]any{"id": p.ID, "header": hdr}, &okOut{})
	if err := <-done; err != nil {
		t.Fatalf("held request: %v", err)
	}
	reqs := origin.requests()
	if len(reqs) != 2 || reqs[1].Get("X-Test-Path") != "/held" || reqs[1].Get("X-Edited-By") != "agent" {
		t.Fatalf("origin did not receive the edit: %v", reqs)
	}
	callTool(t, cs, "remove_breakpoint", map[string]any{"id": bp.ID}, &okOut{})

	// Replay the edited session: the origin gets it again, edit included.
	var held listOut
	eventually(t, "the held session in the store", func() bool {
		callTool(t, cs, "list_sessions", map[string]any{"filter": "path:/held", "newest": true}, &held)
		return len(held.Sessions) == 1
	})
	var rep struct {
		IDs []uint64 `json:"ids"`
	}
	callTool(t, cs, "replay", map[string]any{"ids": []uint64{uint64(held.Sessions[0].ID)}}, &rep)
	if len(rep.IDs) != 1 {
		t.Fatalf("replay ids %v", rep.IDs)
	}
	if reqs := origin.requests(); len(reqs) != 3 || reqs[2].Get("X-Edited-By") != "agent" {
		t.Fatalf("replay did not reach the origin with the edit: %v", reqs)
	}
	// Compare the original with its replay: the same request, so no request changes.
	var d struct {
		Changes int `json:"changes"`
	}
	eventually(t, "the replay in the store", func() bool {
		return callTool(t, cs, "get_session", map[string]any{"id": rep.IDs[0]}, nil) == ""
	})
	callTool(t, cs, "diff_sessions", map[string]any{"a": list.Sessions[0].ID, "b": held.Sessions[0].ID}, &d)
	if d.Changes == 0 {
		t.Fatal("diff of /first and /held found no changes")
	}
	var same struct {
		Request struct {
			Line []struct {
				Name string `json:"name"`
				Op   string `json:"op"`
			} `json:"line"`
		} `json:"request"`
	}
	callTool(t, cs, "diff_sessions", map[string]any{"a": held.Sessions[0].ID, "b": rep.IDs[0]}, &same)
	if len(same.Request.Line) != 2 || same.Request.Line[0].Op != "equal" || same.Request.Line[1].Op != "equal" {
		t.Fatalf("diff of a replay with its original: request line %+v", same.Request.Line)
	}
	var code codeOut
	callTool(t, cs, "request_as_code", map[string]any{"id": held.Sessions[0].ID, "lang": "curl"}, &code)
	if !strings.Contains(code.Code, "X-Edited-By: agent") || !strings.Contains(code.Code, "/held") {
		t.Fatalf("request_as_code: %s", code.Code)
	}
	var sent struct {
		ID     uint64 `json:"id"`
		Status int    `json:"status"`
	}
	callTool(t, cs, "send", map[string]any{"method": "POST", "url": origin.URL + "/composed", "body": "hello"}, &sent)
	if sent.ID == 0 || sent.Status != 200 {
		t.Fatalf("send: %+v", sent)
	}

	var np networkProfileBody
	callTool(t, cs, "set_network_profile", map[string]any{"spec": "Slow 3G"}, &np)
	if np.Profile == nil || np.Profile.Name != "Slow 3G" || np.Profile.LatencyMS != 400 {
		t.Fatalf("set_network_profile: %+v", np.Profile)
	}
	callTool(t, cs, "set_network_profile", map[string]any{"spec": "none"}, &np)
	callTool(t, cs, "get_network_profile", map[string]any{}, &np)
	if np.Profile != nil || len(np.Presets) == 0 {
		t.Fatalf("get_network_profile after none: %+v", np)
	}
	if msg := callTool(t, cs, "set_network_profile", map[string]any{"spec": "5G"}, nil); !strings.Contains(msg, "not one of") {
		t.Fatalf("bad profile: %q", msg)
	}

	// Streamable HTTP on the control API, same token.
	info := readControlInfo(t, data)
	hc := &http.Client{Transport: bearer{info.Token, http.DefaultTransport}}
	hcs, err := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: info.URL + "/api/v1/mcp", HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hcs.Close()
	var all listOut
	eventually(t, "the replayed and composed sessions in the store", func() bool {
		callTool(t, hcs, "list_sessions", map[string]any{"newest": true, "limit": 3}, &all)
		return len(all.Sessions) == 3 && all.More
	})
	if all.Sessions[0].ID != session.ID(sent.ID) || all.Sessions[1].ReplayOf != held.Sessions[0].ID {
		t.Fatalf("newest 2 over HTTP: %+v", all)
	}
	// Without the token the endpoint is closed.
	if resp, err := http.Post(info.URL+"/api/v1/mcp", "application/json", strings.NewReader("{}")); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("MCP without token: %v %v", resp, err)
	}
	// The instance knows which clients did what.
	var act struct {
		Activity []mcpActivityEntry `json:"activity"`
	}
	areq, _ := http.NewRequest("GET", info.URL+"/api/v1/mcp/activity", nil)
	aresp, err := hc.Do(areq)
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(aresp.Body).Decode(&act)
	aresp.Body.Close()
	var clients, tools []string
	for _, e := range act.Activity {
		clients, tools = append(clients, e.Client), append(tools, e.Tool)
	}
	if !slices.Contains(clients, "inspector-test-agent") || !slices.Contains(clients, "http-agent") || !slices.Contains(tools, "resume") {
		t.Fatalf("activity: clients %v tools %v", clients, tools)
	}
	cs.Close()

	// Read-only from the store once the instance has exited.
	h.cmd.Process.Signal(syscall.SIGTERM)
	h.cmd.Wait()
	ro := connectStdio(t, "--data-dir", data)
	if names := toolNames(t, ro); slices.Contains(names, "resume") || slices.Contains(names, "add_breakpoint") {
		t.Fatalf("write tools offered without --allow-writes: %v", names)
	}
	var stored listOut
	callTool(t, ro, "list_sessions", map[string]any{}, &stored)
	if len(stored.Sessions) != 4 {
		t.Fatalf("stored sessions read-only: %d, want 4", len(stored.Sessions))
	}
	if msg := callTool(t, ro, "list_paused", map[string]any{}, nil); !strings.Contains(msg, "needs a running Inspector instance") {
		t.Fatalf("list_paused without an instance: %q", msg)
	}
	var found listOut
	callTool(t, ro, "search_bodies", map[string]any{"text": `"path":"/composed"`}, &found)
	if len(found.Sessions) != 1 || found.Sessions[0].ID != session.ID(sent.ID) {
		t.Fatalf("search_bodies: %+v", found)
	}
}

type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

func readControlInfo(t *testing.T, data string) controlInfo {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, controlFile))
	if err != nil {
		t.Fatal(err)
	}
	var info controlInfo
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	return info
}
