package ui

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"google.golang.org/protobuf/encoding/protowire"

	"inspector/content"

	"inspector/engine/hooks/script"
	"inspector/engine/netprofile"
	"inspector/engine/session"
	"inspector/store"
	"inspector/ui/viewmodel"
)

// TestRenderWireScreenshots renders the content views (gRPC, GraphQL, SSE/LLM, JWT), a
// diff opened from the context menu, the network conditions dialog, the scripts and MCP
// windows and the store health banner with the software painter. A tool like
// TestRenderScreenshots: it runs only with INSPECTOR_SCREENSHOTS set to the output folder.
func TestRenderWireScreenshots(t *testing.T) {
	out := os.Getenv("INSPECTOR_SCREENSHOTS")
	if out == "" {
		t.Skip("set INSPECTOR_SCREENSHOTS to the output folder")
	}
	shot := func(w fyne.Window, name string) {
		t.Helper()
		w.Content().Refresh()
		f, err := os.Create(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := png.Encode(f, w.Canvas().Capture()); err != nil {
			t.Fatal(err)
		}
	}
	ss := contentSessions()
	twin := mkSession(0, "api.example", "/graphql", 200, "application/json", `{"data":{"user":{"name":"Sample","plan":"pro"}}}`)
	twin.Request = ss[1].Request
	twin.Request.Header = ss[1].Request.Header.Clone()
	twin.Request.Header.Set("X-Client-Version", "2.4.1")
	twin.Response.Header.Set("Cache-Control", "no-store")
	// #6 a multipart upload, #7 a brotli-encoded JSON response, #8 a plain protobuf response.
	mp := "--b1\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nQuarterly report\r\n" +
		"--b1\r\nContent-Disposition: form-data; name=\"file\"; filename=\"report.csv\"\r\nContent-Type: text/csv\r\n\r\nregion,total\nnorth,1200\nsouth,980\r\n--b1--\r\n"
	up := mkSession(0, "files.example", "/upload", 201, "application/json", `{"id":"f-91"}`)
	up.Request.Method = "POST"
	up.Request.Header.Set("Content-Type", "multipart/form-data; boundary=b1")
	up.Request.Body = session.Body{Data: []byte(mp), Size: int64(len(mp))}
	brJSON, _ := content.Encode([]string{"br"}, []byte(`{"items":[{"sku":"A-1","price":12.5},{"sku":"B-7","price":3}],"currency":"EUR"}`))
	br := mkSession(0, "cdn.example", "/api/cart", 200, "application/json", string(brJSON))
	br.Response.Header.Set("Content-Encoding", "br")
	pb := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "order-17")
	pb = protowire.AppendVarint(protowire.AppendTag(pb, 2, protowire.VarintType), 3)
	inner := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "Lisbon")
	pb = protowire.AppendBytes(protowire.AppendTag(pb, 3, protowire.BytesType), inner)
	pbs := mkSession(0, "api.example", "/orders/17", 200, "application/x-protobuf", string(pb))
	st := openStore(t, append(ss, twin, up, br, pbs)...)
	data := t.TempDir()
	dir := filepath.Join(data, "scripts")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "tag-requests.js"), []byte("exports.request = function (flow) {\n  flow.request.headers.set('X-Debug', '1')\n  console.log('tagged ' + flow.request.url)\n}\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "broken.js"), []byte("exports.response = function (flow) {\n  this is not javascript\n}\n"), 0o600)
	sm, err := script.New(script.Options{Dir: dir, PollInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	sh, _ := netprofile.New(nil)
	t0 := time.Now().Add(-time.Minute)
	mcpSrc := &mcpLog{events: []MCPEvent{
		{Time: t0, Client: "claude-code", Tool: "list_sessions", Detail: "status:5xx"},
		{Time: t0.Add(3 * time.Second), Client: "claude-code", Tool: "get_session", Detail: "#2"},
		{Time: t0.Add(9 * time.Second), Client: "cursor", Tool: "search_bodies", Detail: "\"plan\""},
		{Time: t0.Add(12 * time.Second), Client: "claude-code", Tool: "replay", Detail: "#2"},
	}}
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	u := New(a, w, Deps{Store: st, DataDir: data, Network: sh, Scripts: sm, MCP: mcpSrc})
	u.detail.inline = true
	u.SetThemeMode(ThemeLight)
	w.Resize(fyne.NewSize(1280, 820))
	u.listSplit.SetOffset(0.36)
	u.list.toggle(viewmodel.ColOperation, true)
	body := func(id session.ID, req bool, view string) {
		u.SelectID(id)
		u.detail.tabs.SelectIndex(0)
		u.detail.req.tabs.SelectIndex(0)
		u.detail.resp.tabs.SelectIndex(1)
		b := u.detail.resp.body
		if req {
			u.detail.req.tabs.SelectIndex(1)
			b = u.detail.req.body
		}
		b.mode.SetSelected(view)
	}
	body(1, true, "Messages")
	shot(w, "content-grpc.png")
	body(2, true, "GraphQL")
	shot(w, "content-graphql.png")
	body(3, false, "LLM text")
	shot(w, "content-sse-llm.png")
	body(4, true, "JWT (Authorization)")
	shot(w, "content-jwt.png")
	body(6, true, "Parts")
	shot(w, "content-multipart.png")
	body(7, false, "JSON")
	shot(w, "content-brotli.png")
	body(8, false, "Protobuf")
	shot(w, "content-protobuf.png")

	// Two GraphQL calls compared from the context menu.
	u.setFollow(false)
	u.model.SelectOnly(2)
	u.model.Toggle(5)
	u.selectionChanged()
	menuItem(t, u.contextMenu(), "Compare with").Action()
	dw := windowTitled(a, "Compare #2 with #5")
	if dw == nil {
		t.Fatal("no diff window")
	}
	dw.Resize(fyne.NewSize(1100, 760))
	shot(dw, "diff-from-menu.png")

	// Network conditions, with the profile in the status bar.
	n := u.networkDialog()
	n.choice.SetSelected(n.choice.Options[2])
	if err := n.apply(); err != nil {
		t.Fatal(err)
	}
	shot(w, "network-conditions.png")
	n.d.Hide()

	p := u.showScripts()
	p.list.Select(0) // broken.js: its error beside the editor
	p.win.Resize(fyne.NewSize(1100, 680))
	shot(p.win, "scripts.png")

	m := u.showMCP()
	m.win.Resize(fyne.NewSize(960, 560))
	shot(m.win, "mcp.png")

	u.health.set(store.Health{LastError: "write sessions.db: no space left on device", Lost: 12, BodiesLost: 3})
	u.status.update()
	shot(w, "health-banner.png")
	if !strings.Contains(u.health.Text(), "no space left") {
		t.Fatal("no banner")
	}
}
