package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/session"
)

// allStages implements every stage interface and records what it saw, in order.
type allStages struct {
	mu      sync.Mutex
	order   []string
	errs    []error
	done    chan *session.Session
	failReq error // returned by OnRequestBody when set
}

func (h *allStages) note(s string) {
	h.mu.Lock()
	h.order = append(h.order, s)
	h.mu.Unlock()
}

func (h *allStages) OnRequest(ctx context.Context, f *engine.Flow) error {
	h.note("RequestHeaders:" + f.Stage.String())
	return nil
}

func (h *allStages) OnRequestBody(ctx context.Context, f *engine.Flow) error {
	h.note("Request:" + f.Stage.String())
	return h.failReq
}

func (h *allStages) OnResponse(ctx context.Context, f *engine.Flow) error {
	h.note("ResponseHeaders:" + f.Stage.String())
	return nil
}

func (h *allStages) OnResponseBody(ctx context.Context, f *engine.Flow) error {
	h.note("Response:" + f.Stage.String())
	return nil
}

func (h *allStages) OnError(ctx context.Context, f *engine.Flow, err error) {
	h.note("Error:" + f.Stage.String())
	h.mu.Lock()
	h.errs = append(h.errs, err)
	h.mu.Unlock()
}

func (h *allStages) OnDone(s *session.Session) {
	h.note("Done")
	h.done <- s
}

func (h *allStages) take() ([]string, []error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o, e := h.order, h.errs
	h.order, h.errs = nil, nil
	return o, e
}

func TestStagesRunInOrder(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, nil, o)
	h := &allStages{done: make(chan *session.Session, 4)}
	if err := p.AddHook(h); err != nil {
		t.Fatal(err)
	}
	c := p.Client(t, et.ClientH1)
	resp, err := c.Post(o.URL+"/echo", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	s := <-h.done
	order, errs := h.take()
	want := "RequestHeaders:request headers Request:request ResponseHeaders:response headers Response:response Done"
	if got := strings.Join(order, " "); got != want || len(errs) != 0 {
		t.Errorf("stages %q errors %v, want %q", got, errs, want)
	}
	if s.Error != nil || s.Response == nil || s.Timings.ResponseDone.IsZero() {
		t.Errorf("Done saw an unfinished session: %+v", s)
	}

	// An exchange that fails: the stages after the failure do not run, Error does.
	h.failReq = errors.New("no")
	resp, err = c.Post(o.URL+"/echo", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	<-h.done
	order, errs = h.take()
	want = "RequestHeaders:request headers Request:request Error:error Done"
	if got := strings.Join(order, " "); got != want || len(errs) != 1 {
		t.Errorf("failing: stages %q errors %v, want %q", got, errs, want)
	}
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("failing hook: client got %s", resp.Status)
	}
}

func TestAddHookRefusesAValueWithNoStage(t *testing.T) {
	p := et.StartProxy(t, nil)
	for _, h := range []any{nil, struct{}{}, func() {}} {
		if err := p.AddHook(h); !errors.Is(err, engine.ErrNoStage) {
			t.Errorf("AddHook(%T): %v, want ErrNoStage", h, err)
		}
	}
	// The old registrations still take a value for one stage only.
	h := &allStages{done: make(chan *session.Session, 1)}
	p.AddRequestHook(h)
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(p.URL)}}).Get(o.URL + "/echo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	p.Next(t)
	if order, _ := h.take(); strings.Join(order, " ") != "RequestHeaders:request headers" {
		t.Errorf("AddRequestHook registered %q", order)
	}
}

var errSentinel = errors.New("sentinel: refused by the hook")

func TestHookErrorsKeepTheirType(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, nil, o)
	var mu sync.Mutex
	var seen []error
	fails := map[string]engine.Stage{
		"/req-head": engine.StageRequestHeaders, "/req-body": engine.StageRequest,
		"/resp-head": engine.StageResponseHeaders, "/resp-body": engine.StageResponse,
		"/paused": engine.StageRequestHeaders,
	}
	fail := func(stage engine.Stage) func(ctx context.Context, f *engine.Flow) error {
		return func(ctx context.Context, f *engine.Flow) error {
			st, ok := fails[f.Request.URL.Path]
			if !ok || st != stage {
				return nil
			}
			if f.Request.URL.Path == "/paused" {
				f.Pause(func(context.Context) error { return fmt.Errorf("while paused: %w", errSentinel) })
				return nil
			}
			return fmt.Errorf("wrapped: %w", errSentinel)
		}
	}
	p.AddRequestHook(engine.RequestHookFunc(fail(engine.StageRequestHeaders)))
	_ = p.AddHook(engine.RequestBodyHookFunc(fail(engine.StageRequest)))
	p.AddResponseHook(engine.ResponseHookFunc(fail(engine.StageResponseHeaders)))
	_ = p.AddHook(engine.ResponseBodyHookFunc(fail(engine.StageResponse)))
	_ = p.AddHook(engine.ErrorHookFunc(func(ctx context.Context, f *engine.Flow, err error) {
		mu.Lock()
		seen = append(seen, err)
		mu.Unlock()
	}))

	for path, stage := range fails {
		// Through Send: the error comes back as a value.
		req, _ := http.NewRequest("GET", o.URL+path, nil)
		s, err := p.Send(context.Background(), req, engine.SendOptions{})
		var he *engine.HookError
		if !errors.Is(err, errSentinel) || !errors.As(err, &he) || he.Stage != stage {
			t.Errorf("%s: Send returned %v (%T), want the sentinel at stage %v", path, err, err, stage)
		}
		if s == nil || s.Error == nil || s.Error.Phase != session.PhaseHook || !strings.Contains(s.Error.Message, "sentinel") {
			t.Errorf("%s: Send's session %+v", path, s)
		}
		// Through a client: the Error hooks get the value, the client a 502.
		resp, err := p.Client(t, et.ClientH2).Get(o.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "sentinel") {
			t.Errorf("%s: client got %s %q", path, resp.Status, body)
		}
		if s := p.Next(t); s.Error == nil || s.Error.Phase != session.PhaseHook || s.Error.Side != session.SideProxy {
			t.Errorf("%s: session error %+v", path, s.Error)
		}
	}
	for range fails {
		p.Next(t) // Send's sessions
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2*len(fails) {
		t.Fatalf("Error hooks ran %d times, want %d", len(seen), 2*len(fails))
	}
	for _, err := range seen {
		if !errors.Is(err, errSentinel) {
			t.Errorf("Error hook got %v (%T), not the sentinel", err, err)
		}
	}
}

// A failure that is not a hook's reaches the Error hooks as the transport's error value.
func TestErrorStageGetsTheTransportError(t *testing.T) {
	et.RequireNoLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := et.StartProxy(t, nil)
	got := make(chan error, 1)
	_ = p.AddHook(engine.ErrorHookFunc(func(ctx context.Context, f *engine.Flow, err error) { got <- err }))
	req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
	s, err := p.Send(context.Background(), req, engine.SendOptions{})
	if err != nil || s.Error == nil || s.Error.Phase != session.PhaseDial {
		t.Fatalf("send: %v, session error %+v", err, s.Error)
	}
	var op *net.OpError
	if e := <-got; !errors.As(e, &op) || op.Op != "dial" {
		t.Errorf("Error hook got %v (%T), want the dial's *net.OpError", e, e)
	}
	p.Next(t)
}

func TestRequestHeadersStreamsRequestBuffers(t *testing.T) {
	et.RequireNoLeaks(t)
	o := et.StartOrigin(t, et.OriginH1TLS, nil)
	p := et.StartProxy(t, func(c *engine.Config) { c.CaptureLimit = 1024 }, o)
	headSeen := make(chan struct{}, 1)
	var mu sync.Mutex
	var bodies []string
	var truncated []bool
	p.AddRequestHook(engine.RequestHookFunc(func(ctx context.Context, f *engine.Flow) error {
		if f.Body != nil {
			t.Errorf("RequestHeaders got a body")
		}
		select {
		case headSeen <- struct{}{}:
		default:
		}
		return nil
	}))
	bufferOn := make(chan bool, 1)
	bufferOn <- false
	_ = p.AddHook(engine.RequestBodyHookFunc(func(ctx context.Context, f *engine.Flow) error {
		on := <-bufferOn
		bufferOn <- on
		if on {
			mu.Lock()
			bodies, truncated = append(bodies, string(f.Body)), append(truncated, f.Truncated)
			mu.Unlock()
		}
		return nil
	}))
	c := p.Client(t, et.ClientH1)

	// RequestHeaders runs on the head alone: the client writes its body only after the
	// hook ran (a pipeline that read the body first would never get there).
	pr, pw := io.Pipe()
	go func() {
		<-headSeen
		pw.Write([]byte("written after the head was seen"))
		pw.Close()
	}()
	resp, err := c.Post(o.URL+"/echo", "text/plain", pr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	p.Next(t)

	// Request sees the whole body, or its first CaptureLimit bytes marked truncated;
	// the origin gets every byte either way.
	<-bufferOn
	bufferOn <- true
	for _, n := range []int{100, 5000} {
		b := et.Pattern(n)
		resp, err := c.Post(o.URL+"/echo", "application/octet-stream", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		sum := sha256.Sum256(b)
		if resp.Header.Get("X-Echo-Body-Sha256") != hex.EncodeToString(sum[:]) {
			t.Errorf("%d bytes: the origin got other bytes (size %s)", n, resp.Header.Get("X-Echo-Body-Size"))
		}
		if s := p.Next(t); s.Request.Body.Size != int64(n) {
			t.Errorf("%d bytes: session body size %d", n, s.Request.Body.Size)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || bodies[0] != string(et.Pattern(100)) || truncated[0] ||
		bodies[1] != string(et.Pattern(5000)[:1024]) || !truncated[1] {
		t.Errorf("Request stage saw %d bodies, truncated %v", len(bodies), truncated)
	}
}

// A request body that breaks off while the Request stage buffers it is never forwarded.
func TestRequestStageBrokenBodyIsNotForwarded(t *testing.T) {
	et.RequireNoLeaks(t)
	reached := make(chan string, 4)
	o := et.StartOrigin(t, et.OriginH1Plain, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- r.URL.Path
	}))
	p := et.StartProxy(t, nil, o)
	ran := make(chan struct{}, 1)
	_ = p.AddHook(engine.RequestBodyHookFunc(func(ctx context.Context, f *engine.Flow) error {
		ran <- struct{}{}
		return nil
	}))
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	host := strings.TrimPrefix(o.URL, "http://")
	fmt.Fprintf(conn, "POST %s/cut-short HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\n0123456789", o.URL, host)
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("client got %s, want 400", resp.Status)
		}
	}
	s := p.Next(t)
	if s.Error == nil || s.Error.Phase != session.PhaseRequest || s.Error.Side != session.SideClient {
		t.Errorf("session error %+v, want the client's request body", s.Error)
	}
	select {
	case <-ran:
		t.Error("the Request stage ran on a broken body")
	default:
	}
	select {
	case path := <-reached:
		t.Errorf("the origin got %s", path)
	default:
	}
}

// editAll edits at every stage; the edits must reach the origin and the client.
func editAll(p *et.Proxy) {
	p.AddRequestHook(engine.RequestHookFunc(func(ctx context.Context, f *engine.Flow) error {
		f.Request.Header.Set("X-Stage-Request-Headers", "1")
		return nil
	}))
	_ = p.AddHook(engine.RequestBodyHookFunc(func(ctx context.Context, f *engine.Flow) error {
		f.SetBody(bytes.ToUpper(f.Body))
		return nil
	}))
	p.AddResponseHook(engine.ResponseHookFunc(func(ctx context.Context, f *engine.Flow) error {
		f.Response.Header.Set("X-Stage-Response-Headers", "1")
		return nil
	}))
	_ = p.AddHook(engine.ResponseBodyHookFunc(func(ctx context.Context, f *engine.Flow) error {
		f.SetBody(append(append([]byte(nil), f.Body...), " +edited"...))
		return nil
	}))
}

// postEdited posts through c and checks that every stage's edit of editAll reached the
// origin, the client and the session.
func postEdited(t *testing.T, p *et.Proxy, c *http.Client, url string) *session.Session {
	t.Helper()
	resp, err := c.Post(url+"/echo", "text/plain", strings.NewReader("lower case"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("LOWER CASE"))
	if resp.Header.Get("X-Echo-H-X-Stage-Request-Headers") != "1" {
		t.Error("RequestHeaders edit did not reach the origin")
	}
	if resp.Header.Get("X-Echo-Body-Sha256") != hex.EncodeToString(sum[:]) {
		t.Errorf("Request edit did not reach the origin: it got %s bytes", resp.Header.Get("X-Echo-Body-Size"))
	}
	if resp.Header.Get("X-Stage-Response-Headers") != "1" {
		t.Error("ResponseHeaders edit did not reach the client")
	}
	want := `{"ok":true,"path":"/echo"} +edited`
	if string(body) != want {
		t.Errorf("Response edit: client got %q, want %q", body, want)
	}
	if cl := resp.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(want)) {
		t.Errorf("Content-Length %s for %d bytes", cl, len(want))
	}
	s := p.Next(t)
	if string(s.Request.Body.Data) != "LOWER CASE" || string(s.Response.Body.Data) != want || s.Error != nil {
		t.Errorf("session: request %q response %q error %v", s.Request.Body.Data, s.Response.Body.Data, s.Error)
	}
	return s
}

func TestEveryStageEditReachesTheWire(t *testing.T) {
	for _, kind := range []string{et.ClientH1, et.ClientH2, et.ClientH3} {
		t.Run(kind, func(t *testing.T) {
			et.RequireNoLeaks(t)
			o := et.StartOrigin(t, et.OriginH2TLS, nil)
			p := et.StartProxy(t, func(c *engine.Config) {
				if kind == et.ClientH3 {
					c.ListenH3 = "127.0.0.1:0"
				}
			}, o)
			editAll(p)
			var c *http.Client
			if kind == et.ClientH3 {
				c = p.H3Client(t)
			} else {
				c = p.Client(t, kind)
			}
			postEdited(t, p, c, o.URL)
		})
	}
}

// The same edits on every upstream leg: HTTP/1.1 (plain and TLS), HTTP/2 and HTTP/3.
func TestEveryStageEditReachesTheOrigin(t *testing.T) {
	for _, kind := range []string{et.OriginH1Plain, et.OriginH1TLS, et.OriginH2TLS, et.OriginH3} {
		t.Run(kind, func(t *testing.T) {
			et.RequireNoLeaks(t)
			o := et.StartOrigin(t, kind, nil)
			url := o.URL
			p := et.StartProxy(t, func(c *engine.Config) {
				if kind == et.OriginH3 {
					c.UpstreamProto = "h3"
				}
			}, o)
			if kind == et.OriginH3 {
				url = o.H3URL
			}
			editAll(p)
			want := map[string]string{et.OriginH1Plain: session.HTTP1, et.OriginH1TLS: session.HTTP1,
				et.OriginH2TLS: session.HTTP2, et.OriginH3: session.HTTP3}[kind]
			if s := postEdited(t, p, p.Client(t, et.ClientH2), url); s.Upstream.Proto != want {
				t.Errorf("upstream %s, want %s", s.Upstream.Proto, want)
			}
		})
	}
}
