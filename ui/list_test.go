package ui

import (
	"math"
	"strings"
	"testing"

	"inspector/engine/session"
)

// TestRowPitchIsWholePixels: the list places rows at float32 offsets; at a million rows
// (20 million px) float32 steps by 2 px, and a fractional pitch drifted the rows so far
// that the newest session ended below the view with "follow newest" on.
func TestRowPitchIsWholePixels(t *testing.T) {
	u, _ := newTestUI(t, Deps{})
	for _, d := range []Density{Compact, Comfortable} {
		u.SetDensity(d)
		if h := u.list.rowHeight(); h != float32(math.Trunc(float64(h))) {
			t.Fatalf("density %v: row pitch %v px", d, h)
		}
	}
}

// TestWebSocketTabShowsWhatHooksDid: the WebSocket tab marks messages a script changed,
// dropped or could not handle, so the list is not mistaken for what the peers sent.
func TestWebSocketTabShowsWhatHooksDid(t *testing.T) {
	s := mkSession(0, "ws.example", "/socket", 101, "", "")
	s.Flags |= session.FlagWebSocket
	t0 := s.Started
	s.Messages = []session.Message{
		{Time: t0, FromClient: true, Opcode: 1, Data: []byte("hello"), Size: 5},
		{Time: t0, FromClient: true, Opcode: 1, Data: []byte("HELLO"), Size: 5, Modified: true},
		{Time: t0, FromClient: false, Opcode: 1, Data: []byte("secret"), Size: 6, Dropped: true},
		{Time: t0, FromClient: false, Opcode: 2, Data: []byte{1}, Size: 1, HookError: "a.js:3: boom"},
		{Time: t0, FromClient: false, Opcode: 1, Data: []byte("x"), Size: 1, Unhooked: "compressed"},
	}
	st := openStore(t, s)
	u, _ := newTestUI(t, Deps{Store: st})
	u.SelectID(s.ID)
	if u.detail.cur == nil || u.detail.cur.ID != s.ID {
		t.Fatal("the session is not shown")
	}
	u.detail.extrasFor = 0
	u.detail.renderExtras()
	got := u.detail.ws.Text()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 5 || strings.Contains(lines[0], "[") ||
		!strings.Contains(lines[1], "[modified by a hook]") || !strings.Contains(lines[2], "[dropped by a hook]") ||
		!strings.Contains(lines[3], "hook failed, sent unmodified: a.js:3: boom") || !strings.Contains(lines[4], "not shown to hooks: compressed") {
		t.Fatalf("WebSocket tab:\n%s", got)
	}
}
