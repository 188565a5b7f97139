package replay_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	et "inspector/engine/enginetest"
	"inspector/engine/hooks/replay"
	"inspector/engine/session"
)

func TestReplayCreatesLinkedSessions(t *testing.T) {
	et.RequireNoLeaks(t)
	var hits atomic.Int64
	h := et.Handler()
	o := et.StartOrigin(t, et.OriginH2TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	p := et.StartProxy(t, nil, o)
	c := p.Client(t, et.ClientH2)
	req, _ := http.NewRequest("POST", o.URL+"/echo?x=1", strings.NewReader("payload"))
	req.Header.Set("X-Custom", "v")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	orig := p.Next(t)

	var progress []int
	res, err := replay.Run(context.Background(), p.Engine, replay.Job{
		Sessions: []*session.Session{orig}, Count: 4, Parallel: 2,
		Progress: func(done, total int) {
			if total != 4 {
				t.Errorf("total %d", total)
			}
			progress = append(progress, done)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || len(progress) != 4 || progress[3] != 4 {
		t.Fatalf("results %+v progress %v", res, progress)
	}
	seen := map[session.ID]bool{}
	for _, r := range res {
		if r.Original != orig.ID || r.ID == 0 || r.Status != 200 || r.Error != "" || seen[r.ID] {
			t.Errorf("result %+v", r)
		}
		seen[r.ID] = true
	}
	for i := 0; i < 4; i++ {
		s := p.Next(t)
		if s.ReplayOf != orig.ID || !seen[s.ID] || string(s.Request.Body.Data) != "payload" || s.Request.Header.Get("X-Custom") != "v" || s.Request.Method != "POST" {
			t.Errorf("replayed session %d: replay_of %d body %q", s.ID, s.ReplayOf, s.Request.Body.Data)
		}
	}
	if hits.Load() != 5 {
		t.Errorf("origin saw %d requests, want 5", hits.Load())
	}

	// With edits.
	body := "other"
	res, err = replay.Run(context.Background(), p.Engine, replay.Job{Sessions: []*session.Session{orig},
		Edits: &replay.Edits{Method: "PUT", Body: &body, Header: http.Header{"X-New": {"1"}}}})
	if err != nil || len(res) != 1 {
		t.Fatal(res, err)
	}
	s := p.Next(t)
	if s.Request.Method != "PUT" || string(s.Request.Body.Data) != "other" || s.Request.Header.Get("X-Custom") != "" || s.Request.Header.Get("X-New") != "1" || s.ReplayOf != orig.ID {
		t.Errorf("edited replay: %s %q %v", s.Request.Method, s.Request.Body.Data, s.Request.Header)
	}

	// Cancelled before it starts: nothing sent.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := hits.Load()
	if _, err := replay.Run(ctx, p.Engine, replay.Job{Sessions: []*session.Session{orig}, Count: 10}); err == nil {
		t.Error("cancelled job reported no error")
	}
	if hits.Load() != before {
		t.Error("a cancelled job sent requests")
	}
}

func TestReplayBadInput(t *testing.T) {
	p := et.StartProxy(t, nil)
	ok := &session.Session{ID: 1, Request: session.Request{Method: "GET", URL: "http://127.0.0.1:1/"}}
	truncated := &session.Session{ID: 2, Flags: session.FlagReqTruncated, Request: session.Request{Method: "POST", URL: "http://127.0.0.1:1/",
		Body: session.Body{Data: []byte("ab"), Size: 10, Truncated: true}}}
	ws := &session.Session{ID: 3, Request: session.Request{Method: "GET", URL: "wss://x/"}}
	for _, j := range []replay.Job{
		{},
		{Sessions: []*session.Session{ok}, Count: -1},
		{Sessions: []*session.Session{ok}, Count: replay.MaxCount + 1},
		{Sessions: []*session.Session{ok}, Parallel: 1000},
		{Sessions: []*session.Session{ok}, Edits: &replay.Edits{URL: "relative"}},
		{Sessions: []*session.Session{ok, truncated}},
		{Sessions: []*session.Session{ws}},
	} {
		if _, err := replay.Run(context.Background(), p.Engine, j); err == nil {
			t.Errorf("job %+v accepted", j)
		}
	}
	// A replacement body makes a truncated session replayable.
	b := "full"
	if _, err := replay.Request(context.Background(), truncated, &replay.Edits{Body: &b}); err != nil {
		t.Error(err)
	}
}
