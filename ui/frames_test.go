package ui

import (
	"strings"
	"testing"
	"time"

	"inspector/engine/session"
)

func sampleFrames(t0 time.Time) []session.Frame {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	return []session.Frame{
		{Leg: "client", Dir: "in", Time: ms(0), Proto: session.HTTP2, ConnID: 1, Stream: 0, Type: "SETTINGS", Length: 18, Detail: "MAX_FRAME_SIZE=16384"},
		{Leg: "client", Dir: "in", Time: ms(1), Proto: session.HTTP2, ConnID: 1, Stream: 1, Type: "HEADERS", Flags: "END_HEADERS", Length: 40,
			Headers: []session.HeaderField{{Name: ":method", Value: "POST"}, {Name: ":path", Value: "/up"}}},
		{Leg: "upstream", Dir: "out", Time: ms(2), Proto: session.HTTP2, ConnID: 7, Stream: 1, Type: "DATA", Length: 16384},
		{Leg: "upstream", Dir: "in", Time: ms(40), Proto: session.HTTP2, ConnID: 7, Stream: 0, Type: "WINDOW_UPDATE", Length: 4, Detail: "increment=65535"},
		{Leg: "upstream", Dir: "out", Time: ms(41), Proto: session.HTTP2, ConnID: 7, Stream: 1, Type: "DATA", Length: 100},
		{Leg: "upstream", Dir: "in", Time: ms(50), Proto: session.HTTP2, ConnID: 7, Stream: 1, Type: "RST_STREAM", Length: 4, Detail: "code=CANCEL"},
	}
}

func TestFramesTabTimelineFiltersAndNotes(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	frames := sampleFrames(time.Date(2026, 3, 1, 12, 0, 1, 0, time.UTC))
	if !st.PutFrames(1, frames) {
		t.Fatal("PutFrames refused")
	}
	if err := st.FlushFrames(); err != nil {
		t.Fatal(err)
	}
	u, _ := newTestUI(t, Deps{Store: st})
	u.SelectID(1)
	v := u.detail.frames
	if v.list.Length() != len(frames) {
		t.Fatalf("%d rows, want %d; status %q", v.list.Length(), len(frames), v.status.Text)
	}
	text := func() string {
		var b strings.Builder
		for i := 0; i < v.list.Length(); i++ {
			b.WriteString(v.rowText(v.rows[i]) + "\n")
		}
		return b.String()
	}
	all := text()
	for _, want := range []string{":path: /up", "MAX_FRAME_SIZE=16384", "stream reset by the origin", "flow-control stall: 39ms", "increment=65535"} {
		if !strings.Contains(all, want) {
			t.Errorf("timeline lacks %q:\n%s", want, all)
		}
	}
	v.typ.SetSelected("DATA")
	if v.list.Length() != 2 || strings.Contains(text(), "HEADERS") {
		t.Fatalf("type filter DATA: %d rows\n%s", v.list.Length(), text())
	}
	v.typ.SetSelected(filterAll)
	v.conn.SetSelected("client h2 #1")
	if v.list.Length() != 2 {
		t.Fatalf("connection filter: %d rows\n%s", v.list.Length(), text())
	}
	v.conn.SetSelected(filterAll)
	v.stream.SetSelected("0")
	if v.list.Length() != 2 {
		t.Fatalf("stream filter 0: %d rows\n%s", v.list.Length(), text())
	}

	// Another session: no frames, filters reset.
	u.SelectID(2)
	if v.list.Length() != 0 || v.stream.Selected != filterAll || !strings.Contains(v.status.Text, "No frames recorded") {
		t.Fatalf("session without frames: %d rows, stream filter %q, status %q", v.list.Length(), v.stream.Selected, v.status.Text)
	}
}

func TestWebSocketPayloadView(t *testing.T) {
	cases := []struct {
		m    session.Message
		want string
	}{
		{session.Message{Opcode: 1, Data: []byte("hello")}, "hello"},
		{session.Message{Opcode: 2, Data: []byte{0, 1, 0xff}}, "0001ff"},
		{session.Message{Opcode: 8, Data: []byte{3, 232, 'b', 'y', 'e'}}, `code 1000 "bye"`},
		{session.Message{Opcode: 1, Data: []byte{0xff, 0xfe}}, "fffe"},
		{session.Message{Opcode: 1, Data: []byte(strings.Repeat("x", 300))}, strings.Repeat("x", 200) + "…"},
	}
	for _, c := range cases {
		if got := wsPayload(c.m); got != c.want {
			t.Errorf("wsPayload(op %d %q) = %q, want %q", c.m.Opcode, c.m.Data, got, c.want)
		}
	}
	if wsOpName(2) != "binary" || wsOpName(77) != "op=77" {
		t.Error("opcode names")
	}
}
