package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

// wsSession records a real WebSocket session through the proxy: each message the client
// sends is echoed by the origin, so every one appears in both directions.
func wsSession(t *testing.T, msgs ...[]byte) *session.Session {
	t.Helper()
	o := et.StartOrigin(t, et.OriginH1TLS, nil)
	p := et.StartProxy(t, nil, o)
	conn, br := p.WSDial(t, "wss://"+strings.TrimPrefix(o.URL, "https://")+"/ws")
	for _, m := range msgs {
		op := 1
		if len(m) > 0 && m[0] == 0 {
			op = 2
		}
		if err := et.WriteWSFrame(conn, op, m, true); err != nil {
			t.Fatal(err)
		}
		if _, _, err := et.ReadWSFrame(br); err != nil {
			t.Fatal(err)
		}
	}
	_ = et.WriteWSFrame(conn, 8, []byte{3, 232, 'b', 'y', 'e'}, true)
	_, _, _ = et.ReadWSFrame(br)
	conn.Close()
	s := p.Next(t)
	if !s.Flags.Has(session.FlagWebSocket) {
		t.Fatalf("not a WebSocket session: %+v", s.Flags)
	}
	return s
}

// The WebSocket tab lists the messages to select, filters them by direction, kind and
// text, finds among them, and shows the selected one whole, JSON indented.
func TestWebSocketMessageList(t *testing.T) {
	s := wsSession(t,
		[]byte(`{"op":"subscribe","topic":"prices"}`),
		[]byte("hello"),
		[]byte(`{"op":"order","qty":3,"note":"PRICES up"}`),
		[]byte{0, 1, 2, 0xfe},
	)
	st := openStore(t, s)
	u, w := newTestUI(t, Deps{Store: st})
	w.Resize(fyne.NewSize(1280, 820))
	u.SelectID(s.ID)
	u.detail.tabs.SelectIndex(4)
	if u.detail.tabs.Selected().Text != "WebSocket" {
		t.Fatalf("tab 4 is %q", u.detail.tabs.Selected().Text)
	}
	v := u.detail.ws
	if len(v.msgs) != 10 || v.Count.Text != "10 messages" || v.List.Length() != 10 {
		t.Fatalf("%d messages, count %q, %d rows", len(v.msgs), v.Count.Text, v.List.Length())
	}
	// The first message is selected and shown whole, indented.
	if !strings.Contains(v.Head.Text, "Message 1 of 10 · text · sent by the client") || !strings.Contains(v.Head.Text, "JSON") ||
		v.Detail.Text() != "{\n  \"op\": \"subscribe\",\n  \"topic\": \"prices\"\n}" {
		t.Errorf("first message: %q\n%s", v.Head.Text, v.Detail.Text())
	}

	// Direction: the server's echoes only.
	v.Dir.SetSelected(wsDirServer)
	if v.List.Length() != 5 || v.Count.Text != "5 of 10 messages" || !strings.Contains(v.Head.Text, "sent by the server") {
		t.Errorf("server side: %d rows, %q, %q", v.List.Length(), v.Count.Text, v.Head.Text)
	}
	// Text, as typed: case-insensitive, in both JSON messages.
	v.Dir.SetSelected(wsDirAll)
	test.Type(v.Filter, "prices")
	if v.List.Length() != 4 || v.Count.Text != "4 of 10 messages" {
		t.Errorf("text filter: %d rows, %q\n%s", v.List.Length(), v.Count.Text, v.Text())
	}
	// Select the third listed row by tapping it: the order message, indented.
	v.List.Select(2)
	if !strings.Contains(v.Head.Text, "Message 5 of 10") || !strings.Contains(v.Detail.Text(), "\"qty\": 3,\n") {
		t.Errorf("selected row 2: %q\n%s", v.Head.Text, v.Detail.Text())
	}
	// A filter that keeps the selection keeps it.
	v.Dir.SetSelected(wsDirClient)
	if !strings.Contains(v.Head.Text, "Message 5 of 10") {
		t.Errorf("selection lost: %q", v.Head.Text)
	}
	v.Dir.SetSelected(wsDirAll)
	v.Filter.SetText("")

	// Kind: binary shows a hex dump; control lists the close frames with their code.
	v.Kind.SetSelected(wsKindBinary)
	if v.List.Length() != 2 || !strings.Contains(v.Detail.Text(), "00 01 02 fe") {
		t.Errorf("binary: %d rows\n%s", v.List.Length(), v.Detail.Text())
	}
	v.Kind.SetSelected(wsKindControl)
	if v.List.Length() != 2 || !strings.Contains(v.Detail.Text(), `Close, code 1000, reason "bye"`) {
		t.Errorf("control: %d rows\n%s", v.List.Length(), v.Detail.Text())
	}
	v.Kind.SetSelected(wsKindAll)
	// Hex bytes of a binary message can be filtered on too.
	v.Filter.SetText("0102fe")
	if v.List.Length() != 2 {
		t.Errorf("hex filter: %d rows", v.List.Length())
	}
	v.Filter.SetText("no such text")
	if v.List.Length() != 0 || v.Detail.Text() != "No message passes the filters." {
		t.Errorf("no match: %d rows, %q", v.List.Length(), v.Detail.Text())
	}
	v.Filter.SetText("")

	// Find: Enter selects the next message holding the text, wrapping; Prev goes back.
	v.List.Select(0)
	test.Type(v.Find, "hello")
	v.Find.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if !strings.Contains(v.Head.Text, "Message 3 of 10") || v.FindResult.Text != "1 of 2" {
		t.Errorf("find 1: %q %q", v.Head.Text, v.FindResult.Text)
	}
	test.Tap(v.Next)
	if v.FindResult.Text != "2 of 2" || v.Detail.Text() != "hello" {
		t.Errorf("find 2: %q %q", v.FindResult.Text, v.Detail.Text())
	}
	test.Tap(v.Next)
	if v.FindResult.Text != "1 of 2" {
		t.Errorf("find wraps: %q", v.FindResult.Text)
	}
	test.Tap(v.Prev)
	if v.FindResult.Text != "2 of 2" {
		t.Errorf("find back: %q", v.FindResult.Text)
	}
	v.Find.SetText("zzz")
	test.Tap(v.Next)
	if v.FindResult.Text != "not found" {
		t.Errorf("find nothing: %q", v.FindResult.Text)
	}

	// Another session: not a WebSocket one.
	other := mkSession(0, "a.example", "/x", 200, "text/plain", "x")
	st.Put(func() *session.Session { other.ID = st.NextID(); return other }())
	_ = st.Flush()
	u.detail.ws.set(other)
	if v.List.Length() != 0 || v.Detail.Text() != "Not a WebSocket session." {
		t.Errorf("plain session: %q", v.Detail.Text())
	}
}

// Messages past the kept ones are counted; the tab says so.
func TestWebSocketListSaysWhatWasNotKept(t *testing.T) {
	s := mkSession(0, "ws.example", "/socket", 101, "", "")
	s.Flags |= session.FlagWebSocket
	for i := range 3 {
		s.Messages = append(s.Messages, session.Message{Time: s.Started, FromClient: i%2 == 0, Opcode: 1, Data: []byte("m"), Size: 1})
	}
	s.MessagesSeen = 12000
	u, _ := newTestUI(t, Deps{Store: openStore(t, s)})
	u.detail.ws.set(s)
	if c := u.detail.ws.Count.Text; c != "3 messages (12000 seen, the first 3 kept)" {
		t.Errorf("count %q", c)
	}
}
