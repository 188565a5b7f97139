package engine_test

import (
	"strings"
	"testing"

	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

// Past the messages kept per session (10,000) the rest are still counted: the session
// says how many it carried and how many it keeps (issue 26).
func TestWebSocketMessagesPastTheLimitCounted(t *testing.T) {
	t.Parallel()
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	conn, br := p.WSDial(t, strings.Replace(o.URL, "http", "ws", 1)+"/ws")
	const n = 6000 // echoed: 12,000 messages
	errc := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			if err := et.WriteWSFrame(conn, 1, []byte("m"), true); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for i := 0; i < n; i++ {
		if op, data, err := et.ReadWSFrame(br); err != nil || op != 1 || string(data) != "m" {
			t.Fatalf("echo %d: op %d %q %v", i, op, data, err)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	et.WriteWSFrame(conn, 8, []byte{3, 232}, true)
	et.ReadWSFrame(br)
	conn.Close()
	s := p.Next(t)
	seen, kept := s.MessageCounts()
	if kept != 10000 || seen < 2*n || seen > 2*n+2 || s.MessagesSeen != seen {
		t.Fatalf("seen %d (MessagesSeen %d) kept %d; want %d–%d seen, 10000 kept", seen, s.MessagesSeen, kept, 2*n, 2*n+2)
	}
	if !s.Flags.Has(session.FlagWebSocket) {
		t.Fatal("not a WebSocket session")
	}
}
