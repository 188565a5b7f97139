package engine

import (
	"encoding/hex"
	"fmt"
	"testing"

	"inspector/engine/session"
)

// TestKeyLogTableIsBounded: the in-memory key table keeps the lines of the last
// keyLogConns randoms and the randoms of the last keyLogSessions sessions; older ones go.
func TestKeyLogTableIsBounded(t *testing.T) {
	k := newKeyLog(nil)
	rnd := func(i int) []byte {
		var r [32]byte
		copy(r[:], fmt.Sprintf("%032d", i))
		return r[:]
	}
	n := keyLogConns + 10
	for i := range n {
		fmt.Fprintf(k, "CLIENT_RANDOM %s %064x\n", hex.EncodeToString(rnd(i)), i)
		k.note(session.ID(i+1), 0, rnd(i))
	}
	if len(k.lines) != keyLogConns || len(k.order) != keyLogConns {
		t.Fatalf("%d randoms held, want %d", len(k.lines), keyLogConns)
	}
	if c, _ := k.keys(1); c != nil {
		t.Error("the oldest connection's lines are still held")
	}
	if c, _ := k.keys(session.ID(n)); len(c) != 1 {
		t.Errorf("the newest session's lines: %v", c)
	}
	for i := range keyLogSessions {
		k.note(session.ID(100000+i), 1, rnd(n-1))
	}
	if len(k.sessions) != keyLogSessions {
		t.Errorf("%d sessions held, want %d", len(k.sessions), keyLogSessions)
	}
	if _, ok := k.sessions[session.ID(n)]; ok {
		t.Error("an old session's randoms are still held")
	}
	// Not key-log lines: ignored, not held.
	k.Write([]byte("garbage\nCLIENT_RANDOM zz 00\n"))
	if len(k.lines) != keyLogConns {
		t.Error("a malformed line was held")
	}
}
