package engine_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

func TestHooksModifyAndAnswer(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, nil, o)
	p.AddRequestHook(engine.RequestHookFunc(func(ctx context.Context, f *engine.Flow) error {
		switch f.Request.URL.Path {
		case "/echo":
			f.Request.Header.Set("X-Added-By-Hook", "1")
		case "/answered":
			f.Response = &http.Response{StatusCode: 418, Header: http.Header{"X-Hook": {"yes"}},
				Body: io.NopCloser(strings.NewReader("short and stout"))}
		case "/refused":
			return errors.New("not today")
		}
		return nil
	}))
	p.AddResponseHook(engine.ResponseHookFunc(func(ctx context.Context, f *engine.Flow) error {
		f.Response.Header.Set("X-Seen-By-Response-Hook", f.Session.Request.Method)
		return nil
	}))
	c := p.Client(t, et.ClientH2)

	resp, err := c.Get(o.URL + "/echo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Echo-H-X-Added-By-Hook") != "1" || resp.Header.Get("X-Seen-By-Response-Hook") != "GET" {
		t.Errorf("hooks not applied: %v", resp.Header)
	}
	if s := p.Next(t); s.Request.Header.Get("X-Added-By-Hook") != "1" {
		t.Error("the session does not show the request as sent upstream")
	}

	resp, err = c.Get(o.URL + "/answered")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 418 || string(body) != "short and stout" {
		t.Errorf("answer: %s %q", resp.Status, body)
	}
	s := p.Next(t)
	if !s.Flags.Has(session.FlagAnswered) || s.Status() != 418 || string(s.Response.Body.Data) != "short and stout" || s.Upstream.Addr != "" {
		t.Errorf("answered session flags %b status %d upstream %q", s.Flags, s.Status(), s.Upstream.Addr)
	}

	resp, err = c.Get(o.URL + "/refused")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s := p.Next(t); resp.StatusCode != 502 || s.Error == nil || s.Error.Phase != session.PhaseHook {
		t.Errorf("hook error: %s %+v", resp.Status, s.Error)
	}
}

// cancelMidRequest sends GET url through p with a client of kind, cancels it once started
// fires, and returns the client's error.
func cancelMidRequest(t *testing.T, p *et.Proxy, kind, url string, started <-chan struct{}) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	c := p.Client(t, kind)
	// An h1 client leaves by closing its TCP connection. Go's Transport closes its TLS
	// connection on a cancel, which sends close_notify before closing the socket, and a
	// response written in between is still read and returned as a success: the client
	// here drops the socket itself, so it leaves for sure. (h2 leaves with RST_STREAM,
	// after which a response for the stream is discarded.)
	var raw chan net.Conn
	if kind == et.ClientH1 {
		raw = make(chan net.Conn, 1)
		tr := c.Transport.(*http.Transport)
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				raw <- conn
			}
			return conn, err
		}
	}
	errc := make(chan error, 1)
	go func() {
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-started
	if raw != nil {
		(<-raw).Close()
	}
	cancel()
	return <-errc
}

func TestClientGoingAwayCancelsUpstream(t *testing.T) {
	et.RequireNoLeaks(t)
	reached := make(chan struct{}, 1)
	cancelled := make(chan struct{}, 1)
	o := et.StartOrigin(t, et.OriginH2TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- struct{}{}
		<-r.Context().Done()
		cancelled <- struct{}{}
	}))
	p := et.StartProxy(t, nil, o)
	for _, kind := range []string{et.ClientH1, et.ClientH2} {
		cancelMidRequest(t, p, kind, o.URL+"/slow", reached)
		<-cancelled // the origin saw its request cancelled: the proxy did not keep it going
		s := p.Next(t)
		if s.Error == nil || s.Error.Side != session.SideClient {
			t.Errorf("%s: session error %+v, want client side (status %d)", kind, s.Error, s.Status())
		}
	}
}

// TestResponseAfterTheClientLeft: a response that is ready only after the client went
// away (here a hook's answer; in the wild, an origin's response racing the cancellation)
// reaches nobody, and the session says so instead of looking delivered.
func TestResponseAfterTheClientLeft(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, nil, o)
	waiting := make(chan struct{}, 1)
	p.AddRequestHook(engine.RequestHookFunc(func(ctx context.Context, f *engine.Flow) error {
		waiting <- struct{}{}
		<-ctx.Done()
		f.Response = &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("late"))}
		return nil
	}))
	for _, kind := range []string{et.ClientH1, et.ClientH2} {
		if err := cancelMidRequest(t, p, kind, o.URL+"/late", waiting); err == nil {
			t.Fatalf("%s: the cancelled request succeeded", kind)
		}
		s := p.Next(t)
		if s.Error == nil || s.Error.Side != session.SideClient || !strings.Contains(s.Error.Message, "went away") {
			t.Errorf("%s: session error %+v, want the client side", kind, s.Error)
		}
	}
}

func TestSlowSubscriberIsToldNotWaitedFor(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	sub := p.Subscribe(2) // never read while traffic flows
	defer sub.Close()
	c := p.Client(t, et.ClientH1)
	for i := 0; i < 20; i++ {
		resp, err := c.Get(o.URL + "/echo")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		p.Next(t)
	}
	if sub.Dropped() == 0 || p.Stats().DroppedEvents == 0 {
		t.Fatalf("dropped %d / %d", sub.Dropped(), p.Stats().DroppedEvents)
	}
	// Drain, then the next event brings a resync notice first.
	for len(sub.C) > 0 {
		<-sub.C
	}
	resp, err := c.Get(o.URL + "/echo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	p.Next(t)
	if ev := <-sub.C; ev.Kind != engine.EventResync {
		t.Errorf("first event after falling behind: %v", ev.Kind)
	}
	if got := p.Stats().Sessions; got != 21 {
		t.Errorf("completed %d sessions", got)
	}
}

func TestSubscribeToKinds(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	all := p.Subscribe(64)
	defer all.Close()
	done := p.Subscribe(64, engine.EventComplete)
	defer done.Close()
	c := p.Client(t, et.ClientH1)
	for i := 0; i < 3; i++ {
		resp, err := c.Get(o.URL + "/echo")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		p.Next(t)
	}
	// Read until the third completion (publish may still be sending when Next returns).
	kinds := func(sub *engine.Subscription) map[engine.EventKind]int {
		m := map[engine.EventKind]int{}
		for m[engine.EventComplete] < 3 {
			select {
			case ev := <-sub.C:
				m[ev.Kind]++
			case <-time.After(10 * time.Second):
				t.Fatalf("events so far %v", m)
			}
		}
		for len(sub.C) > 0 {
			m[(<-sub.C).Kind]++
		}
		return m
	}
	if got := kinds(done); len(got) != 1 || got[engine.EventComplete] != 3 {
		t.Errorf("completed-only subscriber got %v", got)
	}
	if got := kinds(all); got[engine.EventBegin] != 3 || got[engine.EventUpdate] != 3 || got[engine.EventComplete] != 3 {
		t.Errorf("subscriber to every kind got %v", got)
	}
}

func TestCaptureOffRecordsNothing(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1TLS, nil)
	p := et.StartProxy(t, nil, o)
	p.SetCapture(false)
	resp, err := p.Client(t, et.ClientH2).Get(o.URL + "/echo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	p.SetCapture(true)
	resp, err = p.Client(t, et.ClientH1).Get(o.URL + "/status?code=201")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s := p.Next(t); s.Status() != 201 {
		t.Errorf("first recorded session is %d, want the one after capture resumed", s.Status())
	}
}

func TestSendRecordsALinkedSession(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, nil, o)
	req, _ := http.NewRequest("POST", o.URL+"/echo", strings.NewReader("again"))
	req.Header.Set("X-Replay", "1")
	s, err := p.Send(context.Background(), req, engine.SendOptions{ReplayOf: 41})
	if err != nil {
		t.Fatal(err)
	}
	if s.ReplayOf != 41 || s.Status() != 200 || string(s.Request.Body.Data) != "again" ||
		s.Response.Header.Get("X-Echo-H-X-Replay") != "1" || s.Upstream.Proto != session.HTTP2 {
		t.Errorf("sent session: replay_of %d status %d body %q", s.ReplayOf, s.Status(), s.Request.Body.Data)
	}
	if got := p.Next(t); got != s {
		t.Error("the sent session was not published like a live one")
	}
	bad, _ := http.NewRequest("GET", "/relative", nil)
	if _, err := p.Send(context.Background(), bad, engine.SendOptions{}); err == nil {
		t.Error("relative URL accepted")
	}
}

func TestResponseHookReplacesBody(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1TLS, nil)
	p := et.StartProxy(t, nil, o)
	p.AddResponseHook(engine.ResponseHookFunc(func(ctx context.Context, f *engine.Flow) error {
		f.Response.Body.Close()
		f.Response.StatusCode = 203
		f.Response.Header.Del("Content-Length")
		f.Response.ContentLength = -1
		f.Response.Body = io.NopCloser(strings.NewReader("edited"))
		return nil
	}))
	resp, err := p.Client(t, et.ClientH1).Get(o.URL + "/echo")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s := p.Next(t)
	if resp.StatusCode != 203 || string(body) != "edited" || s.Status() != 203 || string(s.Response.Body.Data) != "edited" {
		t.Errorf("client %d %q, session %d %q", resp.StatusCode, body, s.Status(), s.Response.Body.Data)
	}
}

// TestPauseWaitsAfterTheStage: a hook that pauses a flow returns at once; the other hooks of
// the stage run first, then the pipeline waits, and what the wait changes reaches the wire.
func TestPauseWaitsAfterTheStage(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, nil, o)
	var order []string
	p.AddRequestHook(engine.RequestHookFunc(func(ctx context.Context, f *engine.Flow) error {
		order = append(order, "pausing hook")
		f.Pause(func(ctx context.Context) error {
			order = append(order, "wait")
			f.Request.Header.Set("X-Edited-While-Paused", "yes")
			return nil
		})
		return nil
	}))
	p.AddRequestHook(engine.RequestHookFunc(func(ctx context.Context, f *engine.Flow) error {
		order = append(order, "next hook")
		return nil
	}))
	p.AddResponseHook(engine.ResponseHookFunc(func(ctx context.Context, f *engine.Flow) error {
		f.Pause(func(ctx context.Context) error {
			if f.Request.URL.Path == "/refuse" {
				return errors.New("refused while paused")
			}
			f.Response.Header.Set("X-Set-While-Paused", "yes")
			return nil
		})
		return nil
	}))
	c := p.Client(t, et.ClientH1)
	resp, err := c.Get(o.URL + "/echo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	p.Next(t)
	if got := strings.Join(order, ", "); got != "pausing hook, next hook, wait" {
		t.Fatalf("order: %s", got)
	}
	if resp.Header.Get("X-Echo-H-X-Edited-While-Paused") != "yes" || resp.Header.Get("X-Set-While-Paused") != "yes" {
		t.Fatalf("the edits made while paused did not reach the wire: %v", resp.Header)
	}
	resp, err = c.Get(o.URL + "/refuse")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s := p.Next(t)
	if resp.StatusCode != http.StatusBadGateway || s.Error == nil || !strings.Contains(s.Error.Message, "refused while paused") {
		t.Fatalf("response pause error: status %d, session error %+v", resp.StatusCode, s.Error)
	}
}
