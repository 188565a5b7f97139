package engine_test

import (
	"bufio"
	"net/http"
	"strings"
	"sync"
	"testing"

	et "inspector/engine/enginetest"
)

// Peek reads an open SSE stream's response as captured so far: after the client got event
// 1 (the origin holds event 2), the in-flight session's body holds event 1, marked
// Truncated (still open), and not event 2; once the session completed Peek says no.
func TestPeekInFlightSSE(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	o := et.StartOrigin(t, et.OriginH2TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("id: 1\ndata: one\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Write([]byte("id: 2\ndata: two\n\n"))
	}))
	p := et.StartProxy(t, nil, o)
	resp, err := p.Client(t, et.ClientH2).Get(o.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if first := readEvent(t, br); !strings.Contains(first, "id: 1") {
		t.Fatalf("first event %q", first)
	}
	running := p.InFlight()
	if len(running) != 1 {
		t.Fatalf("in flight: %d sessions, want 1", len(running))
	}
	id := running[0].ID
	s, ok := p.Peek(id)
	if !ok || s.Response == nil {
		t.Fatalf("Peek(%d) = %v, %v: want the open session", id, s, ok)
	}
	body := string(s.Response.Body.Data)
	if !strings.Contains(body, "data: one") || strings.Contains(body, "two") || !s.Response.Body.Truncated {
		t.Fatalf("peeked body %q truncated=%v: want event 1 only, marked partial", body, s.Response.Body.Truncated)
	}
	if ct := s.Response.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("peeked Content-Type %q", ct)
	}
	// The copy is the caller's: changing it does not change the next Peek.
	s.Response.Body.Data[0] = 'X'
	if s2, _ := p.Peek(id); s2 == nil || s2.Response.Body.Data[0] != 'i' {
		t.Fatal("Peek returned shared bytes")
	}
	unblock()
	if second := readEvent(t, br); !strings.Contains(second, "two") {
		t.Fatalf("second event %q", second)
	}
	done := p.Next(t)
	if !strings.Contains(string(done.Response.Body.Data), "two") {
		t.Fatalf("completed body %q", done.Response.Body.Data)
	}
	if _, ok := p.Peek(id); ok {
		t.Fatal("Peek still answers for a completed session")
	}
	if _, ok := p.Peek(id + 1000); ok {
		t.Fatal("Peek answers for an unknown id")
	}
}
