package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"inspector/store"
)

// TestMCPMapLocalCannotReadTheCAKey is the reported attack over MCP's real transport
// (stdio, the SDK's client): with writes on, add_rule map_local for the CA key, a
// symlink to it or /etc/passwd is refused with the reason; send + export_har never
// carry the key.
func TestMCPMapLocalCannotReadTheCAKey(t *testing.T) {
	data := t.TempDir()
	startHeadless(t, data, "--mcp-writes")
	site := mapLocalSite(t, data)
	if code, _, errOut := runCLI(t, "rules", "allow-folder", "--data-dir", data, site); code != 0 {
		t.Fatalf("allow-folder: %s", errOut)
	}
	cs := connectStdio(t, "--data-dir", data, "--allow-writes")
	rule := func(file string) map[string]any {
		return map[string]any{"rule": map[string]any{"kind": "map_local", "enabled": true, "filter": "host:steal.example", "file": file}}
	}
	for file, want := range map[string]string{
		filepath.Join(data, "ca", "root-key.pem"): "data directory",
		filepath.Join(data, controlFile):          "data directory",
		filepath.Join(site, "key.pem"):            "data directory",
		"/etc/passwd":                             "not under a map-local folder",
		filepath.Join(site, "passwd"):             "not under a map-local folder",
	} {
		if msg := callTool(t, cs, "add_rule", rule(file), nil); !strings.Contains(msg, want) {
			t.Errorf("add_rule map_local %s: %q, want %q", file, msg, want)
		}
	}
	var id okOut
	callTool(t, cs, "add_rule", rule(site), &id)
	var sent struct {
		Status int `json:"status"`
	}
	for _, path := range []string{"/page.html", "/key.pem", "/ca/root-key.pem"} {
		callTool(t, cs, "send", map[string]any{"url": "http://steal.example" + path}, &sent)
	}
	var h harOut
	eventually(t, "the three sessions in the store", func() bool {
		callTool(t, cs, "export_har", map[string]any{"filter": "host:steal.example"}, &h)
		return h.Sessions == 3
	})
	if h.Sessions != 3 || !strings.Contains(h.HAR, "mine") || strings.Contains(h.HAR, "PRIVATE KEY") || !strings.Contains(h.HAR, "refused") {
		t.Fatalf("export_har: %d sessions, key in it %v:\n%.2000s", h.Sessions, strings.Contains(h.HAR, "PRIVATE KEY"), h.HAR)
	}
}

// TestMCPStdioAnswersQueuedCallsAtEOF: calls piped in before stdin ends are all
// answered (issue 28 item 15), and get_session of a session without request headers
// passes the output schema.
func TestMCPStdioAnswersQueuedCallsAtEOF(t *testing.T) {
	data := t.TempDir()
	st, err := store.Open(filepath.Join(data, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := mkSession(st.NextID(), 200, []byte("ok"))
	s.Request.Header = nil
	st.Put(s)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t), "mcp", "--data-dir", data)
	cmd.Stderr = os.Stderr
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_session","arguments":{"id":` + itoaID(uint64(s.ID)) + `}}}
`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("inspector mcp: %v", err)
	}
	answered := map[int]json.RawMessage{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID > 0 {
			if m.Error != nil {
				t.Errorf("call %d: error %s", m.ID, m.Error)
			}
			answered[m.ID] = m.Result
		}
	}
	for id := 1; id <= 3; id++ {
		if answered[id] == nil {
			t.Errorf("call %d not answered; output:\n%s", id, out)
		}
	}
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			RequestHeaders map[string][]string `json:"request_headers"`
		} `json:"structuredContent"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(answered[3], &res); err != nil || res.IsError || res.StructuredContent.RequestHeaders == nil {
		t.Fatalf("get_session of a session without request headers: %v %s", err, answered[3])
	}
}

func itoaID(n uint64) string { b, _ := json.Marshal(n); return string(b) }
