package ui

import (
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"inspector/engine/session"
	"inspector/ui/viewmodel"
)

func grpcFrame(msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// contentSessions are a gRPC call, a GraphQL POST, an SSE LLM stream and a request with a
// JWT bearer token.
func contentSessions() []*session.Session {
	msg := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "sample-user")
	msg = protowire.AppendVarint(protowire.AppendTag(msg, 2, protowire.VarintType), 42)
	g := mkSession(0, "rpc.example", "/users.v1.Users/Get", 200, "application/grpc", string(grpcFrame(msg)))
	g.Request.Method = "POST"
	g.Request.Header.Set("Content-Type", "application/grpc")
	g.Request.Body = session.Body{Data: grpcFrame(msg), Size: int64(len(grpcFrame(msg)))}
	g.Response.Trailer = http.Header{"Grpc-Status": {"0"}}

	gqBody := `{"query":"query GetUser($id: ID!) { user(id: $id) { name } }","operationName":"GetUser","variables":{"id":"7"}}`
	gq := mkSession(0, "api.example", "/graphql", 200, "application/json", `{"data":{"user":{"name":"Sample"}}}`)
	gq.Request.Method = "POST"
	gq.Request.Header.Set("Content-Type", "application/json")
	gq.Request.Body = session.Body{Data: []byte(gqBody), Size: int64(len(gqBody))}

	sse := "data: {\"choices\":[{\"delta\":{\"content\":\"Hello\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\" world\"}}]}\n\ndata: [DONE]\n\n"
	ev := mkSession(0, "llm.example", "/v1/chat/completions", 200, "text/event-stream", sse)

	enc := base64.RawURLEncoding.EncodeToString
	tok := enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc([]byte(`{"sub":"user-7","exp":4102444800}`)) + ".c2ln"
	jw := mkSession(0, "auth.example", "/me", 200, "application/json", `{"ok":true}`)
	jw.Request.Header.Set("Authorization", "Bearer "+tok)
	return []*session.Session{g, gq, ev, jw}
}

func TestBodyPaneShowsContentViews(t *testing.T) {
	st := openStore(t, contentSessions()...)
	u, _ := newTestUI(t, Deps{Store: st})
	view := func(b *bodyView, name string) string {
		t.Helper()
		if !slices.Contains(b.mode.Options, name) {
			t.Fatalf("views %v lack %q (info %q)", b.mode.Options, name, b.info.Text)
		}
		b.mode.SetSelected(name)
		return b.text.Text()
	}
	u.SelectID(1)
	if got := view(u.detail.req.body, "Messages"); !strings.Contains(got, "sample-user") || !strings.Contains(got, "42") {
		t.Fatalf("gRPC request messages = %q", got)
	}
	if !strings.HasPrefix(u.detail.req.body.info.Text, "gRPC") {
		t.Fatalf("gRPC summary = %q", u.detail.req.body.info.Text)
	}
	u.SelectID(2)
	if got := view(u.detail.req.body, "GraphQL"); !strings.Contains(got, "user(id: $id)") {
		t.Fatalf("GraphQL view = %q", got)
	}
	if v, _ := u.detail.req.body.View(); v.Lang != "graphql" {
		t.Fatalf("GraphQL view lang = %q", v.Lang)
	}
	u.SelectID(3)
	if got := view(u.detail.resp.body, "LLM text"); !strings.Contains(got, "Hello world") {
		t.Fatalf("LLM text = %q", got)
	}
	if got := view(u.detail.resp.body, "Events"); !strings.Contains(got, "[DONE]") {
		t.Fatalf("events = %q", got)
	}
	u.SelectID(4)
	if got := view(u.detail.req.body, "JWT (Authorization)"); !strings.Contains(got, "user-7") || !strings.Contains(got, "HS256") {
		t.Fatalf("JWT view = %q", got)
	}
	// Raw shows the bytes as sent, never decoded views.
	u.SelectID(1)
	b := u.detail.req.body
	b.raw.SetChecked(true)
	if slices.Contains(b.mode.Options, "Messages") || !slices.Contains(b.mode.Options, "Hex") {
		t.Fatalf("raw views = %v", b.mode.Options)
	}
}

func TestBodyViewsBadInputKeepsHex(t *testing.T) {
	h := http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}}
	views, sum := bodyViews(t.Context(), h, session.Body{Data: []byte("not gzip at all"), Size: 15}, bodyViewOptions{})
	if len(views) == 0 || views[len(views)-1].Name != "Hex" || string(views[len(views)-1].Data) != "not gzip at all" {
		t.Fatalf("views of an undecodable body = %+v", views)
	}
	if !strings.Contains(sum, "not decoded") {
		t.Fatalf("summary = %q", sum)
	}
	// A charset body is converted.
	views, _ = bodyViews(t.Context(), http.Header{"Content-Type": {"text/html; charset=iso-8859-1"}},
		session.Body{Data: []byte("<p>caf\xe9</p>"), Size: 11}, bodyViewOptions{})
	if views[0].Text != "<p>café</p>" || !strings.Contains(views[0].Note, "charset") {
		t.Fatalf("charset view = %+v", views[0])
	}
}

func TestOperationColumnHiddenByDefaultShownFromViewMenu(t *testing.T) {
	st := openStore(t, contentSessions()...)
	u, w := newTestUI(t, Deps{Store: st})
	if u.list.shown(viewmodel.ColOperation) {
		t.Fatal("the Operation column is shown by default")
	}
	var view *fyne.Menu
	for _, m := range w.MainMenu().Items {
		if m.Label == "View" {
			view = m
		}
	}
	menuItem(t, menuItem(t, view, "Columns").ChildMenu, "Operation").Action()
	if !u.list.shown(viewmodel.ColOperation) {
		t.Fatal("View ▸ Columns ▸ Operation did not show the column")
	}
	if got := u.operation(u.model.At(0)); got != "users.v1.Users/Get" {
		t.Fatalf("gRPC operation = %q", got)
	}
	// A GraphQL POST's operation is in its body: the row's session is read from the store.
	if got := u.operation(u.model.At(1)); got != "query GetUser" {
		t.Fatalf("GraphQL operation = %q", got)
	}
	if got := u.operation(u.model.At(3)); got != "" {
		t.Fatalf("a GET without an operation = %q", got)
	}
}

// TestOperationColumnReadsStoredPOSTsInTheBackground: off the tests' inline mode the
// store is read off the UI goroutine and the row is redrawn with the operation.
func TestOperationColumnReadsStoredPOSTsInTheBackground(t *testing.T) {
	st := openStore(t, contentSessions()...)
	posts := make(chan func(), 16)
	u, w := newTestUI(t, Deps{Store: st, Post: func(f func()) { posts <- f }})
	u.detail.inline = false
	u.list.toggle(viewmodel.ColOperation, true)
	if got := u.operation(u.model.At(1)); got != "" {
		t.Fatalf("before the read: %q", got)
	}
	for u.ops.busy || len(u.ops.queue) > 0 {
		(<-posts)()
	}
	if got := u.operation(u.model.At(1)); got != "query GetUser" {
		t.Fatalf("after the read: %q", got)
	}
	w.Canvas().Refresh(w.Content())
	found := false
	for _, r := range rowsOnScreen(u) {
		if r != nil && slices.Contains(r.full, "query GetUser") {
			found = true
		}
	}
	if !found {
		t.Fatal("no row on screen shows the operation")
	}
}
