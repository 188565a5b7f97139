package breakpoint_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/hooks/breakpoint"
	"inspector/engine/session"
)

// setup starts an origin, a proxy and a manager with its hooks, and returns a channel
// that gets a value on every manager change.
func setup(t *testing.T, kind string) (*et.Origin, *et.Proxy, *breakpoint.Manager, chan struct{}) {
	t.Helper()
	o := et.StartOrigin(t, kind, nil)
	p := et.StartProxy(t, nil, o)
	m, err := breakpoint.New(filepath.Join(t.TempDir(), "breakpoints.json"))
	if err != nil {
		t.Fatal(err)
	}
	m.Install(p.Engine)
	changed := make(chan struct{}, 64)
	m.OnChange(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	t.Cleanup(m.ResumeAll)
	return o, p, m, changed
}

// waitPaused waits until n sessions are paused and returns them.
func waitPaused(t *testing.T, m *breakpoint.Manager, changed chan struct{}, n int) []breakpoint.Paused {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if l := m.List(); len(l) >= n {
			return l
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%d sessions paused, want %d", len(m.List()), n)
		}
	}
}

type result struct {
	resp *http.Response
	body []byte
	err  error
}

func do(c *http.Client, req *http.Request) <-chan result {
	ch := make(chan result, 1)
	go func() {
		resp, err := c.Do(req)
		var b []byte
		if err == nil {
			b, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		ch <- result{resp, b, err}
	}()
	return ch
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestRequestBreakpointPausesOnlyItsStream(t *testing.T) {
	for _, kind := range []string{et.ClientH1, et.ClientH2} {
		t.Run(kind, func(t *testing.T) {
			et.RequireNoLeaks(t)
			o, p, m, changed := setup(t, et.OriginH2TLS)
			if _, err := m.Add(breakpoint.Breakpoint{Filter: "path:/echo?hold", Phase: breakpoint.PhaseRequest, Enabled: true}); err != nil {
				t.Fatal(err)
			}
			c := p.Client(t, kind)
			req, _ := http.NewRequest("POST", o.URL+"/echo?hold", strings.NewReader("original body"))
			req.Header.Set("X-Orig", "1")
			held := do(c, req)
			paused := waitPaused(t, m, changed, 1)[0]
			if paused.Phase != breakpoint.PhaseRequest || paused.Method != "POST" || string(paused.Body) != "original body" ||
				paused.Header.Get("X-Orig") != "1" || !strings.HasSuffix(paused.URL, "/echo?hold") {
				t.Fatalf("paused = %+v", paused)
			}
			// Other requests complete while the first one waits (for h2 on the same
			// connection: the client multiplexes them).
			for i := 0; i < 3; i++ {
				resp, err := c.Get(o.URL + "/echo?free")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("free request: %s", resp.Status)
				}
			}
			free := p.Next(t)
			select {
			case r := <-held:
				t.Fatalf("the paused request completed: %+v", r)
			default:
			}
			newBody := "edited body"
			if err := m.Resume(paused.ID, &breakpoint.Edits{Header: http.Header{"X-Edited": {"yes"}, "Content-Type": {"text/plain"}}, Body: &newBody}); err != nil {
				t.Fatal(err)
			}
			r := <-held
			if r.err != nil {
				t.Fatal(r.err)
			}
			h := r.resp.Header
			if h.Get("X-Echo-H-X-Edited") != "yes" || h.Get("X-Echo-H-X-Orig") != "" ||
				h.Get("X-Echo-Body-Sha256") != sha([]byte(newBody)) || h.Get("X-Echo-Body-Size") != "11" {
				t.Errorf("origin saw %v", h)
			}
			var s *session.Session
			for s = p.Next(t); s.ID != paused.ID; s = p.Next(t) {
			}
			if string(s.Request.Body.Data) != newBody || s.Request.Header.Get("X-Edited") != "yes" {
				t.Errorf("session records %q %v", s.Request.Body.Data, s.Request.Header)
			}
			if kind == et.ClientH2 && s.Client.ConnID != free.Client.ConnID {
				t.Errorf("the h2 requests used different client connections (%d, %d)", s.Client.ConnID, free.Client.ConnID)
			}
			if len(m.List()) != 0 {
				t.Error("still listed as paused")
			}
			for len(p.Sessions) > 0 {
				<-p.Sessions
			}
		})
	}
}

func TestResponseBreakpointEditsStatusAndBody(t *testing.T) {
	et.RequireNoLeaks(t)
	o, p, m, changed := setup(t, et.OriginH1TLS)
	if _, err := m.Add(breakpoint.Breakpoint{Filter: "path:/echo", Phase: breakpoint.PhaseResponse, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	c := p.Client(t, et.ClientH1)
	req, _ := http.NewRequest("GET", o.URL+"/echo", nil)
	held := do(c, req)
	paused := waitPaused(t, m, changed, 1)[0]
	if paused.Phase != breakpoint.PhaseResponse || paused.Status != 200 || !strings.Contains(string(paused.Body), `"ok":true`) {
		t.Fatalf("paused = %+v", paused)
	}
	if err := m.Resume(paused.ID, &breakpoint.Edits{Method: "PUT"}); err == nil {
		t.Error("a method edit at the response stage was accepted")
	}
	body := "teapot"
	if err := m.Resume(paused.ID, &breakpoint.Edits{Status: 418, Body: &body}); err != nil {
		t.Fatal(err)
	}
	r := <-held
	if r.err != nil || r.resp.StatusCode != 418 || string(r.body) != "teapot" || r.resp.ContentLength != 6 {
		t.Fatalf("client got %+v %q", r.resp, r.body)
	}
	s := p.Next(t)
	if s.Status() != 418 || string(s.Response.Body.Data) != "teapot" {
		t.Errorf("session: %d %q", s.Status(), s.Response.Body.Data)
	}
}

func TestAbortRespondAndTimeout(t *testing.T) {
	et.RequireNoLeaks(t)
	o, p, m, changed := setup(t, et.OriginH2TLS)
	if _, err := m.Add(breakpoint.Breakpoint{Filter: "path:/echo", Phase: breakpoint.PhaseBoth, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{et.ClientH1, et.ClientH2} {
		c := p.Client(t, kind)
		// Abort at the request stage: no 2xx, nothing sent upstream.
		req, _ := http.NewRequest("GET", o.URL+"/echo?a", nil)
		held := do(c, req)
		id := waitPaused(t, m, changed, 1)[0].ID
		if err := m.Abort(id); err != nil {
			t.Fatal(err)
		}
		if r := <-held; r.err == nil && r.resp.StatusCode/100 == 2 {
			t.Errorf("%s: aborted request got %s", kind, r.resp.Status)
		}
		if s := p.Next(t); s.Error == nil || s.Upstream.Addr != "" {
			t.Errorf("%s: aborted session error %+v upstream %q", kind, s.Error, s.Upstream.Addr)
		}
		// Abort at the response stage.
		req, _ = http.NewRequest("GET", o.URL+"/echo?b", nil)
		held = do(c, req)
		id = waitPaused(t, m, changed, 1)[0].ID
		m.Resume(id, nil)
		paused := waitPaused(t, m, changed, 1)[0]
		if paused.Phase != breakpoint.PhaseResponse {
			t.Fatalf("second pause at %s", paused.Phase)
		}
		m.Abort(paused.ID)
		if r := <-held; r.err == nil && r.resp.StatusCode/100 == 2 {
			t.Errorf("%s: aborted response got %s", kind, r.resp.Status)
		}
		p.Next(t)
	}
	// Respond at the request stage.
	c := p.Client(t, et.ClientH2)
	held := do(c, mustReq("GET", o.URL+"/echo?c"))
	id := waitPaused(t, m, changed, 1)[0].ID
	if err := m.Respond(id, breakpoint.Answer{Status: 99}); err == nil {
		t.Error("status 99 accepted")
	}
	if err := m.Respond(id, breakpoint.Answer{Status: 201, Header: http.Header{"X-Canned": {"1"}}, Body: "made here"}); err != nil {
		t.Fatal(err)
	}
	if r := <-held; r.err != nil || r.resp.StatusCode != 201 || string(r.body) != "made here" || r.resp.Header.Get("X-Canned") != "1" {
		t.Errorf("respond: %+v %q", r.resp, r.body)
	}
	if s := p.Next(t); !s.Flags.Has(session.FlagAnswered) {
		t.Error("answered session not flagged")
	}
	if err := m.Resume(id, nil); err == nil {
		t.Error("resuming a finished session succeeded")
	}

	// A forgotten pause times out: abort.
	if err := m.SetTimeout(time.Millisecond, breakpoint.TimeoutAbort); err != nil {
		t.Fatal(err)
	}
	if r := <-do(c, mustReq("GET", o.URL+"/echo?d")); r.err == nil && r.resp.StatusCode/100 == 2 {
		t.Errorf("timed-out abort got %s", r.resp.Status)
	}
	p.Next(t)
	// ... or continue (through both stages).
	if err := m.SetTimeout(time.Millisecond, breakpoint.TimeoutContinue); err != nil {
		t.Fatal(err)
	}
	if r := <-do(c, mustReq("GET", o.URL+"/echo?e")); r.err != nil || r.resp.StatusCode != 200 {
		t.Errorf("timed-out continue: %+v", r)
	}
	p.Next(t)
}

func mustReq(method, url string) *http.Request {
	r, err := http.NewRequest(method, url, nil)
	if err != nil {
		panic(err)
	}
	return r
}

func TestClientLeavingEndsPause(t *testing.T) {
	et.RequireNoLeaks(t)
	o, p, m, changed := setup(t, et.OriginH1Plain)
	m.Add(breakpoint.Breakpoint{Filter: "path:/echo", Phase: breakpoint.PhaseRequest, Enabled: true})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", o.URL+"/echo", nil)
	held := do(p.Client(t, et.ClientH1), req)
	waitPaused(t, m, changed, 1)
	cancel()
	<-held
	if s := p.Next(t); s.Error == nil {
		t.Error("no error on a session whose client left during the pause")
	}
	if n := len(m.List()); n != 0 {
		t.Errorf("%d pauses left", n)
	}
}

func TestGzipBodyShownDecodedAndReencoded(t *testing.T) {
	et.RequireNoLeaks(t)
	o, p, m, changed := setup(t, et.OriginH1Plain)
	m.Add(breakpoint.Breakpoint{Filter: "method:POST", Phase: breakpoint.PhaseRequest, Enabled: true})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("hello plain"))
	zw.Close()
	req, _ := http.NewRequest("POST", o.URL+"/echo", bytes.NewReader(gz.Bytes()))
	req.Header.Set("Content-Encoding", "gzip")
	held := do(p.Client(t, et.ClientH1), req)
	paused := waitPaused(t, m, changed, 1)[0]
	if paused.Decoded != "gzip" || string(paused.Body) != "hello plain" {
		t.Fatalf("paused body %q decoded %q", paused.Body, paused.Decoded)
	}
	nb := "changed text"
	if err := m.Resume(paused.ID, &breakpoint.Edits{Body: &nb}); err != nil {
		t.Fatal(err)
	}
	r := <-held
	if r.err != nil {
		t.Fatal(r.err)
	}
	s := p.Next(t)
	zr, err := gzip.NewReader(bytes.NewReader(s.Request.Body.Data))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(zr)
	if string(got) != nb || r.resp.Header.Get("X-Echo-Body-Size") != strconv.Itoa(len(s.Request.Body.Data)) {
		t.Errorf("sent %q (size header %s)", got, r.resp.Header.Get("X-Echo-Body-Size"))
	}
}

func TestPersistenceAndBadInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "breakpoints.json")
	m, err := breakpoint.New(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []breakpoint.Breakpoint{
		{Filter: "(host:a", Phase: breakpoint.PhaseRequest},
		{Filter: "stauts:200", Phase: breakpoint.PhaseRequest},
		{Filter: "", Phase: breakpoint.PhaseRequest},
		{Filter: "host:a", Phase: "sometimes"},
	} {
		if _, err := m.Add(b); err == nil {
			t.Errorf("accepted %+v", b)
		}
	}
	id1, err := m.Add(breakpoint.Breakpoint{Filter: "host:a.example", Phase: breakpoint.PhaseRequest, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	id2, _ := m.Add(breakpoint.Breakpoint{Filter: "status:5xx", Phase: breakpoint.PhaseResponse})
	if err := m.Set(breakpoint.Breakpoint{ID: id2, Filter: "status:4xx", Phase: breakpoint.PhaseBoth, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(id1); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(id1); err == nil {
		t.Error("removed twice")
	}
	m.SetTimeout(5*time.Minute, breakpoint.TimeoutAbort)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("settings file: %v %v", fi, err)
	}
	m2, err := breakpoint.New(path)
	if err != nil {
		t.Fatal(err)
	}
	s := m2.Settings()
	if len(s.Breakpoints) != 1 || s.Breakpoints[0] != (breakpoint.Breakpoint{ID: id2, Filter: "status:4xx", Phase: breakpoint.PhaseBoth, Enabled: true}) ||
		time.Duration(s.Timeout) != 5*time.Minute || s.OnTimeout != breakpoint.TimeoutAbort {
		t.Errorf("reloaded %+v", s)
	}
	if id3, _ := m2.Add(breakpoint.Breakpoint{Filter: "host:b", Phase: breakpoint.PhaseRequest}); id3 <= id2 {
		t.Errorf("new id %d reuses an old one", id3)
	}
	for _, bad := range []string{"{", `{"breakpoints":[{"id":1,"filter":"(host:a","phase":"request"}]}`,
		`{"breakpoints":[{"id":1,"filter":"host:a","phase":"request"},{"id":1,"filter":"host:b","phase":"request"}]}`,
		`{"timeout":"soon"}`, `{"on_timeout":"explode"}`} {
		os.WriteFile(path, []byte(bad), 0o600)
		if _, err := breakpoint.New(path); err == nil {
			t.Errorf("loaded %s", bad)
		}
	}
	edits := []breakpoint.Edits{{Method: "GE T"}, {URL: "/relative"}, {URL: "ftp://x/"}, {Status: 200},
		{Header: http.Header{"Bad Name": {"x"}}}, {Header: http.Header{"X": {"a\r\nInjected: 1"}}}, {BodyBase64: ptr("!!")}}
	for _, e := range edits {
		if err := e.Validate(breakpoint.PhaseRequest); err == nil {
			t.Errorf("request edits %+v accepted", e)
		}
	}
	if err := (&breakpoint.Edits{Status: 1000}).Validate(breakpoint.PhaseResponse); err == nil {
		t.Error("status 1000 accepted")
	}
	if err := m2.Abort(12345); err == nil {
		t.Error("aborting an unknown session succeeded")
	}
}

func ptr(s string) *string { return &s }

// TestPauseOutlivesEngineTimeouts: with header, idle and response timeouts far shorter
// than the pause (which the manager's own timeout ends), paused streams still complete:
// no engine timeout runs for a paused stream.
func TestPauseOutlivesEngineTimeouts(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, func(c *engine.Config) {
		// Short, but not so short that a loaded machine's origin misses them (20 ms did:
		// "the origin sent no response head in time" before any pause).
		c.HeaderTimeout, c.IdleTimeout, c.ResponseTimeout = 100*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond
	}, o)
	m, err := breakpoint.New("")
	if err != nil {
		t.Fatal(err)
	}
	m.Install(p.Engine)
	m.Add(breakpoint.Breakpoint{Filter: "path:/echo", Phase: breakpoint.PhaseBoth, Enabled: true})
	m.SetTimeout(500*time.Millisecond, breakpoint.TimeoutContinue)
	for _, kind := range []string{et.ClientH1, et.ClientH2} {
		req, _ := http.NewRequest("POST", o.URL+"/echo", strings.NewReader("slow but fine"))
		r := <-do(p.Client(t, kind), req)
		if r.err != nil || r.resp.StatusCode != 200 || r.resp.Header.Get("X-Echo-Body-Size") != "13" {
			t.Errorf("%s: %+v", kind, r)
		}
		if s := p.Next(t); s.Error != nil {
			t.Errorf("%s: session error %v", kind, s.Error)
		}
	}
}

// TestHTTP3BothLegs pauses an HTTP/3 stream (client → proxy over QUIC, proxy → origin
// over HTTP/3) while another stream of the same QUIC connection completes, then resumes
// it with an edit and changes the response status at the response stage.
func TestHTTP3BothLegs(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH3, nil)
	p := et.StartProxy(t, func(c *engine.Config) {
		c.ListenH3 = "127.0.0.1:0"
		c.UpstreamProto = "h3"
	}, o)
	m, err := breakpoint.New("")
	if err != nil {
		t.Fatal(err)
	}
	m.Install(p.Engine)
	changed := make(chan struct{}, 64)
	m.OnChange(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	t.Cleanup(m.Close)
	m.Add(breakpoint.Breakpoint{Filter: "path:/echo?hold", Phase: breakpoint.PhaseBoth, Enabled: true})
	c := p.H3Client(t)
	req, _ := http.NewRequest("POST", o.H3URL+"/echo?hold", strings.NewReader("h3 body"))
	held := do(c, req)
	paused := waitPaused(t, m, changed, 1)[0]
	if resp, err := c.Get(o.H3URL + "/echo?free"); err != nil || resp.StatusCode != 200 || resp.ProtoMajor != 3 {
		t.Fatalf("other h3 stream: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	free := p.Next(t)
	nb := "edited h3"
	if err := m.Resume(paused.ID, &breakpoint.Edits{Body: &nb}); err != nil {
		t.Fatal(err)
	}
	var resp breakpoint.Paused
	for {
		l := waitPaused(t, m, changed, 1)
		if l[0].Phase == breakpoint.PhaseResponse {
			resp = l[0]
			break
		}
		<-changed
	}
	if resp.Header.Get("X-Echo-Body-Size") != "9" {
		t.Errorf("the origin saw %v", resp.Header)
	}
	m.Resume(resp.ID, &breakpoint.Edits{Status: 203})
	r := <-held
	if r.err != nil || r.resp.StatusCode != 203 || r.resp.ProtoMajor != 3 {
		t.Fatalf("client got %+v", r)
	}
	s := p.Next(t)
	if s.Client.Proto != session.HTTP3 || s.Upstream.Proto != session.HTTP3 || s.Status() != 203 || s.Client.ConnID != free.Client.ConnID {
		t.Errorf("session: client %s upstream %s status %d conns %d/%d", s.Client.Proto, s.Upstream.Proto, s.Status(), s.Client.ConnID, free.Client.ConnID)
	}
}

// TestStreamingResponsePausesAtItsHead: an event stream never ends, so a response
// breakpoint pauses at its head without waiting for the body, and the stream flows on
// after Continue.
func TestStreamingResponsePausesAtItsHead(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}))
	p := et.StartProxy(t, nil, o)
	m, err := breakpoint.New("")
	if err != nil {
		t.Fatal(err)
	}
	m.Install(p.Engine)
	changed := make(chan struct{}, 64)
	m.OnChange(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	t.Cleanup(m.Close)
	m.Add(breakpoint.Breakpoint{Filter: "path:/events", Phase: breakpoint.PhaseResponse, Enabled: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", o.URL+"/events", nil)
	got := make(chan string, 1)
	go func() {
		resp, err := p.Client(t, et.ClientH2).Do(req)
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		buf := make([]byte, 64)
		n, _ := io.ReadAtLeast(resp.Body, buf, len("data: first\n\n"))
		got <- string(buf[:n])
	}()
	paused := waitPaused(t, m, changed, 1)[0]
	if !paused.BodyTruncated || len(paused.Body) != 0 {
		t.Errorf("paused stream: %+v", paused)
	}
	m.Resume(paused.ID, nil)
	if s := <-got; s != "data: first\n\n" {
		t.Errorf("client read %q", s)
	}
	cancel()
	p.Next(t)
}

// TestDroppingContentEncodingSendsTheDecodedBody: removing Content-Encoding: gzip from a
// paused response's headers (body untouched) sends the decoded body, with its length.
func TestDroppingContentEncodingSendsTheDecodedBody(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1Plain, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "text/plain")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, "zipped text")
		zw.Close()
	}))
	p := et.StartProxy(t, nil, o)
	m, _ := breakpoint.New("")
	m.Install(p.Engine)
	changed := make(chan struct{}, 64)
	m.OnChange(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	t.Cleanup(m.Close)
	m.Add(breakpoint.Breakpoint{Filter: "path:/z", Phase: breakpoint.PhaseResponse, Enabled: true})
	held := do(p.Client(t, et.ClientH1), mustReq("GET", o.URL+"/z"))
	paused := waitPaused(t, m, changed, 1)[0]
	if paused.Decoded != "gzip" || string(paused.Body) != "zipped text" {
		t.Fatalf("paused %+v", paused)
	}
	h := paused.Header.Clone()
	h.Del("Content-Encoding")
	m.Resume(paused.ID, &breakpoint.Edits{Header: h})
	r := <-held
	if r.err != nil || string(r.body) != "zipped text" || r.resp.ContentLength != 11 || r.resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("client got %+v %q", r.resp, r.body)
	}
	p.Next(t)
}

// BenchmarkHookNoMatch is the cost a request pays for 20 enabled breakpoints that do not
// match it.
func BenchmarkHookNoMatch(b *testing.B) {
	m, _ := breakpoint.New("")
	for i := 0; i < 20; i++ {
		m.Add(breakpoint.Breakpoint{Filter: fmt.Sprintf("host:svc%d.example.com method:POST", i), Phase: breakpoint.PhaseBoth, Enabled: true})
	}
	s := &session.Session{ID: 1, Request: session.Request{Method: "GET", URL: "https://api.example.com/v1/items?page=2"}}
	f := &engine.Flow{Session: s, Request: mustReq("GET", s.Request.URL)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := m.OnRequest(ctx, f); err != nil {
			b.Fatal(err)
		}
	}
}
