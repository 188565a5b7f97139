package ui

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"inspector/engine"
	"inspector/engine/session"
	"inspector/rootca"
	"inspector/ui/viewmodel"
)

// An open server-sent-events stream is shown live: a real engine and an SSE origin that
// sends event 1 and then waits on a channel; with the in-flight session selected, the
// window's Events view shows event 1 (flagged partial) before the test releases event 2,
// and after completion it shows both from the finished session. UI work posted from the
// live refresh runs on the test goroutine (standing in for fyne.Do).
func TestLiveSSEShownWhileStreamOpen(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("id: 1\nevent: token\ndata: first-chunk\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Write([]byte("id: 2\nevent: token\ndata: second-chunk\n\n"))
	}))
	defer origin.Close()

	eng, sub := startTestEngine(t)

	posts := make(chan func(), 1024)
	u, _ := newTestUI(t, Deps{Store: openStore(t), Engine: eng, Post: func(f func()) { posts <- f }})
	batches := make(chan viewmodel.Batch, 64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go (&viewmodel.Pump{Events: sub.C, Flush: func(b viewmodel.Batch) { batches <- b }}).Run(ctx)

	proxyURL, _ := url.Parse("http://" + eng.Addr())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	resp, err := client.Get(origin.URL + "/v1/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	go func() { // drain the client side so the stream is never held up by it
		for {
			if _, err := br.ReadString('\n'); err != nil {
				return
			}
		}
	}()

	// pumpUntil runs posted UI work and applies batches until cond holds.
	deadline := time.After(20 * time.Second)
	pumpUntil := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case f := <-posts:
				f()
			case b := <-batches:
				u.ApplyBatch(b)
			case <-deadline:
				t.Fatalf("timed out waiting for %s; title %q, views %v, text %q", what, u.detail.title.Text, u.detail.resp.body.mode.Options, u.detail.resp.body.text.Text())
			}
		}
	}
	var id session.ID
	pumpUntil("the in-flight row", func() bool {
		for i := 0; i < u.model.Len(); i++ {
			if r := u.model.At(i); r.InFlight {
				id = r.ID
				return true
			}
		}
		return false
	})
	u.SelectID(id)
	events := func() string {
		b := u.detail.resp.body
		if !slices.Contains(b.mode.Options, "Events") {
			return ""
		}
		b.mode.SetSelected("Events")
		return b.text.Text()
	}
	pumpUntil("event 1 in the live Events view", func() bool { return strings.Contains(events(), "first-chunk") })
	if got := events(); strings.Contains(got, "second-chunk") {
		t.Fatalf("event 2 shown before the origin sent it: %q", got)
	}
	if r, _ := u.model.Get(id); !r.InFlight {
		t.Fatal("the session completed before its live view was checked")
	}
	if v, _ := u.detail.resp.body.View(); !v.Partial {
		t.Fatalf("live view of an open stream not flagged partial: %+v", v)
	}
	if !strings.Contains(u.detail.title.Text, "live") {
		t.Fatalf("title %q does not say the stream is live", u.detail.title.Text)
	}

	unblock() // only now may the origin send event 2 and end the stream
	pumpUntil("both events after completion", func() bool {
		r, _ := u.model.Get(id)
		got := events()
		return !r.InFlight && strings.Contains(got, "first-chunk") && strings.Contains(got, "second-chunk")
	})
	if u.detail.liveCancel != nil {
		t.Fatal("live refresh still running after the session completed")
	}
}

// startTestEngine runs a real engine on 127.0.0.1:0 with a subscription, both closed
// when the test ends.
func startTestEngine(t *testing.T) (*engine.Engine, *engine.Subscription) {
	t.Helper()
	ca, err := rootca.Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Listen: "127.0.0.1:0", CA: ca})
	if err != nil {
		t.Fatal(err)
	}
	go eng.Serve()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		eng.Close(ctx)
	})
	sub := eng.Subscribe(1024)
	t.Cleanup(sub.Close)
	return eng, sub
}
