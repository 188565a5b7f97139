package engine_test

import (
	"bufio"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"inspector/content"
	et "inspector/engine/enginetest"
)

// readEvent reads one SSE event (up to its blank line) or fails after a generous bound,
// so a proxy that buffers the stream fails the test instead of hanging it.
func readEvent(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		var sb strings.Builder
		for {
			line, err := r.ReadString('\n')
			sb.WriteString(line)
			if err != nil || line == "\n" {
				got <- sb.String()
				return
			}
		}
	}()
	select {
	case s := <-got:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("the first event did not reach the client while the origin held the second: the proxy buffers SSE")
		return ""
	}
}

// An SSE body is relayed chunk by chunk: the client receives the first event before the
// origin sends the second (the origin waits until the test has read event 1), over
// HTTP/1.1 and h2, and the session holds the whole stream, parsed into events.
func TestSSERelayedChunkByChunk(t *testing.T) {
	for _, c := range []struct{ origin, client string }{
		{et.OriginH1TLS, et.ClientH1}, {et.OriginH2TLS, et.ClientH2},
	} {
		t.Run(c.origin+"/"+c.client, func(t *testing.T) {
			release := make(chan struct{})
			var once sync.Once
			unblock := func() { once.Do(func() { close(release) }) }
			t.Cleanup(unblock)
			o := et.StartOrigin(t, c.origin, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Cache-Control", "no-cache")
				w.Write([]byte("id: 1\nevent: token\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"))
				w.(http.Flusher).Flush()
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
				w.Write([]byte("id: 2\nevent: token\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\n\ndata: [DONE]\n\n"))
			}))
			p := et.StartProxy(t, nil, o)
			resp, err := p.Client(t, c.client).Get(o.URL + "/stream")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			first := readEvent(t, br)
			if !strings.Contains(first, "id: 1") || strings.Contains(first, "id: 2") {
				t.Fatalf("first event %q", first)
			}
			unblock() // only now may the origin send event 2
			second := readEvent(t, br)
			if !strings.Contains(second, `"lo"`) {
				t.Fatalf("second event %q", second)
			}
			s := p.Next(t)
			vs := content.Views(s.Response.Header, s.Response.Body.Data, content.Options{})
			if len(vs) < 2 || vs[0].Name != "Events" || !strings.Contains(vs[0].Note, "3 events") {
				t.Fatalf("views %+v", vs)
			}
			if vs[1].Name != "LLM text" || vs[1].Text != "Hello" || vs[1].Partial {
				t.Errorf("LLM text %+v", vs[1])
			}
		})
	}
}
