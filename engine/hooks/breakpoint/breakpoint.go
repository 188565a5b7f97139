// Package breakpoint pauses matching sessions at the request or response stage so that a
// user (through the UI or the control API) can continue them unchanged, continue them with
// edits, answer them with a custom response, or abort them.
//
// # Model
//
// A Breakpoint is data: a filter expression, a phase and an enabled flag. The set of
// breakpoints is a settings.Set (internal/settings): compiled once per edit into an
// immutable chain that is swapped atomically; hooks read the current chain without locks.
//
// A paused session is data too (Paused): the manager keeps one entry per waiting session,
// which List returns and Resume, Respond and Abort act on. The hooks do not block: a
// matching hook marks the flow paused (engine.Flow.Pause) and returns, the other hooks of
// the stage run, and then the pipeline waits on the pause, which snapshots the request or
// response as those hooks left it, waits for the decision and applies it. The wait runs on
// that session's own goroutine only: other connections and other HTTP/2 streams of the same
// connection keep flowing. While a request is paused nothing has been sent upstream, and
// while a response is paused its head has arrived, so no engine timeout runs for the
// paused stream; the manager's own Timeout (if set) ends a forgotten pause by continuing or
// aborting it. A client that goes away ends the pause.
//
// # Concurrency
//
// Manager is safe for concurrent use. Its hooks run on the engine's exchange goroutines;
// OnChange callbacks run on the goroutine that made the change (never under a lock) and must
// not block.
package breakpoint

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"inspector/content"
	"inspector/engine"
	"inspector/engine/hooks/bodyprobe"
	"inspector/engine/session"
	"inspector/filter"
	"inspector/internal/settings"
)

// Phase says at which stage a breakpoint pauses.
type Phase string

const (
	PhaseRequest  Phase = "request"  // before anything goes upstream
	PhaseResponse Phase = "response" // after the response head arrived, before the client gets it
	PhaseBoth     Phase = "both"
)

// Breakpoint is one rule. ID is assigned by the Manager.
type Breakpoint struct {
	ID      int64  `json:"id"`
	Filter  string `json:"filter"`
	Phase   Phase  `json:"phase"`
	Enabled bool   `json:"enabled"`
}

// Validate checks the phase and the filter expression.
func (b Breakpoint) Validate() error {
	switch b.Phase {
	case PhaseRequest, PhaseResponse, PhaseBoth:
	default:
		return fmt.Errorf("breakpoint: phase %q: want request, response or both", b.Phase)
	}
	if strings.TrimSpace(b.Filter) == "" {
		return errors.New("breakpoint: empty filter (use a filter such as host:example.com)")
	}
	if _, err := filter.Parse(b.Filter); err != nil {
		return fmt.Errorf("breakpoint: %w", err)
	}
	return nil
}

// TimeoutAction says what happens to a pause that outlives Settings.Timeout.
type TimeoutAction string

const (
	TimeoutContinue TimeoutAction = "continue"
	TimeoutAbort    TimeoutAction = "abort"
)

// Settings are the persisted state: the breakpoints and the timeout policy.
type Settings struct {
	Breakpoints []Breakpoint `json:"breakpoints"`
	// Timeout ends a pause after this long (0: wait until the client goes away).
	Timeout Duration `json:"timeout,omitempty"`
	// OnTimeout is TimeoutContinue (default) or TimeoutAbort.
	OnTimeout TimeoutAction `json:"on_timeout,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("5m") in JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("duration: want a string such as \"5m\": %w", err)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("duration %q: want a non-negative duration such as \"5m\"", s)
	}
	*d = Duration(v)
	return nil
}

// ErrAborted is the hook error of an aborted pause; the client sees a 502.
var ErrAborted = errors.New("aborted at a breakpoint")

// ErrNotPaused: no session with that id waits at a breakpoint.
var ErrNotPaused = errors.New("breakpoint: that session is not paused")

// MaxBody bounds the body bytes read into a pause for display and editing; the rest of a
// larger body streams on unchanged after the first MaxBody bytes unless an edit replaces it.
// Streaming bodies (text/event-stream, application/grpc…) are not read at all.
const MaxBody = 16 << 20

// Paused describes a session waiting at a breakpoint: a snapshot of the request (phase
// request) or the response (phase response). The maps and slices are copies owned by the
// caller.
type Paused struct {
	ID         session.ID  `json:"id"`
	Phase      Phase       `json:"phase"`
	Breakpoint int64       `json:"breakpoint"`
	Since      time.Time   `json:"since"`
	Method     string      `json:"method"`
	URL        string      `json:"url"`
	Status     int         `json:"status,omitempty"` // response phase
	Header     http.Header `json:"header"`
	// Body is the (request or response) body; gzip-encoded bodies are shown decoded and
	// Decoded says so ("gzip"). BodyTruncated: only the first MaxBody bytes are here.
	Body          []byte `json:"body,omitempty"`
	Decoded       string `json:"decoded,omitempty"`
	BodyTruncated bool   `json:"body_truncated,omitempty"`
}

// Edits change a paused session before it continues. Empty fields keep what is there.
// Request phase: Method, URL (absolute; a different host re-targets the request), Header,
// Body. Response phase: Status, Reason, Header, Body. An edited Status gets the standard
// reason phrase of the new code unless Reason is set (net/http writes the standard phrase
// to HTTP/1.1 clients whatever Reason says; the session records Reason). A non-nil Header replaces all headers. Body
// (text) or BodyBase64 replaces the body; Content-Length is set to match and
// Transfer-Encoding dropped; when the final headers say Content-Encoding: gzip and the
// pause showed the body decoded, the new body is gzip-encoded again.
type Edits struct {
	Method     string      `json:"method,omitempty"`
	URL        string      `json:"url,omitempty"`
	Status     int         `json:"status,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	Header     http.Header `json:"header,omitempty"`
	Body       *string     `json:"body,omitempty"`
	BodyBase64 *string     `json:"body_base64,omitempty"`
}

// body returns the replacement body, if any.
func (e *Edits) body() ([]byte, bool, error) {
	if e == nil {
		return nil, false, nil
	}
	if e.BodyBase64 != nil {
		b, err := base64.StdEncoding.DecodeString(*e.BodyBase64)
		if err != nil {
			return nil, false, fmt.Errorf("body_base64: %w", err)
		}
		return b, true, nil
	}
	if e.Body != nil {
		return []byte(*e.Body), true, nil
	}
	return nil, false, nil
}

// Validate checks the edits for the given phase.
func (e *Edits) Validate(p Phase) error {
	if e == nil {
		return nil
	}
	if _, _, err := e.body(); err != nil {
		return err
	}
	if p == PhaseRequest {
		if e.Status != 0 || e.Reason != "" {
			return errors.New("edits: status and reason apply to a response; this session is paused at its request")
		}
		if e.Method != "" && !httpguts.ValidHeaderFieldName(e.Method) {
			return fmt.Errorf("edits: method %q is not an HTTP token", e.Method)
		}
		if e.URL != "" {
			u, err := url.Parse(e.URL)
			if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("edits: url %q: want an absolute http or https URL", e.URL)
			}
		}
	} else {
		if e.Method != "" || e.URL != "" {
			return errors.New("edits: method and url apply to a request; this session is paused at its response")
		}
		if e.Status != 0 && (e.Status < 100 || e.Status > 999) {
			return fmt.Errorf("edits: status %d out of range", e.Status)
		}
		if err := validReason(e.Reason); err != nil {
			return fmt.Errorf("edits: %w", err)
		}
	}
	if err := settings.Header(e.Header); err != nil {
		return fmt.Errorf("edits: %w", err)
	}
	return nil
}

// validReason refuses a reason phrase that would break the status line.
func validReason(r string) error {
	if strings.ContainsAny(r, "\r\n\x00") {
		return fmt.Errorf("reason %q has a line break or NUL", r)
	}
	return nil
}

// StatusLine is the "418 I'm a teapot" part of a status line: code and reason, or the
// standard reason phrase of code when reason is blank (just the code when it has none).
func StatusLine(code int, reason string) string {
	if reason = strings.TrimSpace(reason); reason == "" {
		reason = http.StatusText(code)
	}
	if reason == "" {
		return strconv.Itoa(code)
	}
	return strconv.Itoa(code) + " " + reason
}

// Answer is a custom response for Respond. Reason is the reason phrase (blank: the
// standard one of Status).
type Answer struct {
	Status     int         `json:"status"`
	Reason     string      `json:"reason,omitempty"`
	Header     http.Header `json:"header,omitempty"`
	Body       string      `json:"body,omitempty"`
	BodyBase64 string      `json:"body_base64,omitempty"`
}

func (a *Answer) bytes() ([]byte, error) {
	if a.BodyBase64 != "" {
		return base64.StdEncoding.DecodeString(a.BodyBase64)
	}
	return []byte(a.Body), nil
}

// decision is what the user chose for a pause.
type decision struct {
	kind   int // decContinue, decRespond, decAbort
	edits  *Edits
	answer *Answer
}

const (
	decContinue = iota
	decRespond
	decAbort
)

type pause struct {
	info Paused
	done chan decision // buffered 1; the first decision wins
}

type compiled struct {
	req, resp []compiledBP
	timeout   time.Duration
	onTimeout TimeoutAction
}

type compiledBP struct {
	id   int64
	expr *filter.Expr
}

// needsBody reports whether a breakpoint's filter looks into the session beyond its
// summary, so the request body is read for matching (bodyprobe).
func needsBody(bps []compiledBP) bool {
	for _, b := range bps {
		if bodyprobe.Needed(b.expr) {
			return true
		}
	}
	return false
}

var spec = settings.Spec[Settings, Breakpoint, *compiled]{
	Name:     "breakpoint",
	Items:    func(s *Settings) *[]Breakpoint { return &s.Breakpoints },
	ID:       func(b *Breakpoint) *int64 { return &b.ID },
	Validate: Breakpoint.Validate,
	Check: func(s *Settings) error {
		switch s.OnTimeout {
		case "", TimeoutContinue, TimeoutAbort:
			return nil
		}
		return fmt.Errorf("on_timeout %q: want continue or abort", s.OnTimeout)
	},
	Compile: func(s *Settings) (*compiled, error) {
		c := &compiled{timeout: time.Duration(s.Timeout), onTimeout: s.OnTimeout}
		for _, b := range s.Breakpoints {
			if !b.Enabled {
				continue
			}
			cb := compiledBP{id: b.ID, expr: filter.MustParse(b.Filter)} // validated
			if b.Phase == PhaseRequest || b.Phase == PhaseBoth {
				c.req = append(c.req, cb)
			}
			if b.Phase == PhaseResponse || b.Phase == PhaseBoth {
				c.resp = append(c.resp, cb)
			}
		}
		return c, nil
	},
}

// Manager holds the breakpoints and the paused sessions. Create it with New; register its
// hooks with Install.
type Manager struct {
	set    *settings.Set[Settings, Breakpoint, *compiled]
	closed atomic.Bool

	mu     sync.Mutex
	paused map[session.ID]*pause
}

// New loads the settings from path (a JSON file, e.g. DATA_DIR/breakpoints.json; a missing
// file means none) and returns a Manager that saves every change there. An empty path keeps
// everything in memory. A file that does not parse is an error naming the file and the
// position (it is never overwritten).
func New(path string) (*Manager, error) {
	set, err := settings.Open(path, spec)
	if err != nil {
		return nil, err
	}
	return &Manager{set: set, paused: map[session.ID]*pause{}}, nil
}

// OnChange registers f to be called after breakpoints, settings or paused sessions change.
func (m *Manager) OnChange(f func()) { m.set.OnChange(f) }

func (m *Manager) changed() { m.set.Notify() }

// Add adds a breakpoint (its ID is ignored) and returns the new id.
func (m *Manager) Add(b Breakpoint) (int64, error) { return m.set.Add(b) }

// Set replaces the breakpoint with b.ID.
func (m *Manager) Set(b Breakpoint) error { return m.set.Put(b) }

// Remove deletes a breakpoint; an unknown id is an error.
func (m *Manager) Remove(id int64) error { return m.set.Remove(id) }

// SetTimeout sets the pause timeout (0: none) and what happens when it fires.
func (m *Manager) SetTimeout(d time.Duration, action TimeoutAction) error {
	if d < 0 {
		return errors.New("breakpoint: negative timeout")
	}
	return m.set.Update(func(s *Settings) error {
		s.Timeout, s.OnTimeout = Duration(d), action
		return nil
	})
}

// Settings returns a copy of the current settings.
func (m *Manager) Settings() Settings { return m.set.Doc() }

// List returns the paused sessions, oldest pause first. The values are copies.
func (m *Manager) List() []Paused {
	m.mu.Lock()
	out := make([]Paused, 0, len(m.paused))
	for _, p := range m.paused {
		c := p.info
		c.Header = p.info.Header.Clone()
		c.Body = append([]byte(nil), p.info.Body...)
		out = append(out, c)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Get returns one paused session.
func (m *Manager) Get(id session.ID) (Paused, bool) {
	for _, p := range m.List() {
		if p.ID == id {
			return p, true
		}
	}
	return Paused{}, false
}

func (m *Manager) decide(id session.ID, d decision) error {
	m.mu.Lock()
	p, ok := m.paused[id]
	if ok {
		delete(m.paused, id)
	}
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w (id %d)", ErrNotPaused, id)
	}
	p.done <- d
	m.changed()
	return nil
}

// Resume continues a paused session, applying edits (nil: unchanged). Invalid edits are
// an error and leave the session paused.
func (m *Manager) Resume(id session.ID, edits *Edits) error {
	if p, ok := m.Get(id); ok {
		if err := edits.Validate(p.Phase); err != nil {
			return err
		}
	}
	return m.decide(id, decision{kind: decContinue, edits: edits})
}

// Respond answers a paused session with a (request phase) or in place of the origin's
// (response phase) response.
func (m *Manager) Respond(id session.ID, a Answer) error {
	if a.Status < 100 || a.Status > 999 {
		return fmt.Errorf("respond: status %d out of range", a.Status)
	}
	if _, err := a.bytes(); err != nil {
		return fmt.Errorf("respond: body_base64: %w", err)
	}
	if err := validReason(a.Reason); err != nil {
		return fmt.Errorf("respond: %w", err)
	}
	if err := (&Edits{Header: a.Header}).Validate(PhaseResponse); err != nil {
		return err
	}
	return m.decide(id, decision{kind: decRespond, answer: &a})
}

// Abort ends a paused session: the client sees a 502 (or a reset).
func (m *Manager) Abort(id session.ID) error {
	return m.decide(id, decision{kind: decAbort})
}

// ResumeAll continues every paused session unchanged (for example when the user turns
// breakpoints off or the application quits).
func (m *Manager) ResumeAll() {
	for _, p := range m.List() {
		_ = m.decide(p.ID, decision{kind: decContinue})
	}
}

// Close stops pausing sessions and continues every paused one; call it before closing
// the engine so no pause holds the shutdown.
func (m *Manager) Close() {
	m.closed.Store(true)
	m.ResumeAll()
}

// Install registers the manager's request and response hooks on e. Where it is in the
// hook order only decides which hooks' pauses wait first: a pause waits after every hook of
// its stage has returned, so edits made while paused are final (they are applied after a
// rule that re-targets the request, for example) and every hook's changes are shown.
func (m *Manager) Install(e *engine.Engine) {
	e.AddRequestHook(engine.RequestHookFunc(m.OnRequest))
	e.AddResponseHook(engine.ResponseHookFunc(m.OnResponse))
}

func (m *Manager) match(bps []compiledBP, s *session.Session) (int64, bool) {
	if m.closed.Load() || len(bps) == 0 {
		return 0, false
	}
	sum := s.Summarize() // once for all summary-only expressions
	for _, b := range bps {
		if b.expr.NeedsSession() && b.expr.Match(s) || !b.expr.NeedsSession() && b.expr.MatchSummary(&sum) {
			return b.id, true
		}
	}
	return 0, false
}

// readBody reads up to MaxBody bytes of rc and returns them and a reader that yields the
// whole body again (the bytes read, then the rest).
func readBody(rc io.ReadCloser) ([]byte, io.ReadCloser, bool, error) {
	if rc == nil || rc == http.NoBody {
		return nil, rc, false, nil
	}
	b, err := io.ReadAll(io.LimitReader(rc, MaxBody+1))
	if err != nil {
		return nil, nil, false, err
	}
	if len(b) > MaxBody {
		return b[:MaxBody], struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), rc), rc}, true, nil
	}
	rc.Close()
	return b, io.NopCloser(bytes.NewReader(b)), false, nil
}

// streaming reports bodies that may never end (server-sent events, gRPC streams): a
// pause does not wait for them; it shows no body (BodyTruncated) and the body streams on
// after the pause unless an edit replaces it.
func streaming(h http.Header) bool {
	ct := strings.ToLower(h.Get("Content-Type"))
	return strings.HasPrefix(ct, "text/event-stream") || strings.HasPrefix(ct, "application/grpc")
}

// holdBody reads a body to be shown while paused (up to MaxBody; *body is replaced by one
// that still delivers every byte). Endless streams (event streams, gRPC) are not read:
// they pause at their head with trunc set.
func holdBody(h http.Header, body *io.ReadCloser) (raw []byte, trunc bool, err error) {
	if streaming(h) {
		return nil, *body != nil && *body != http.NoBody, nil
	}
	raw, rest, trunc, err := readBody(*body)
	if err != nil {
		return nil, false, err
	}
	if rest != nil {
		*body = rest
	}
	return raw, trunc, nil
}

// hold reads the part of a body a pause shows: the first message of a gRPC stream
// (grpchold.go), or holdBody's.
func hold(h http.Header, body *io.ReadCloser) (raw []byte, trunc bool, err error) {
	if grpcRequest(h) {
		return holdFirstMessage(body)
	}
	return holdBody(h, body)
}

// abortError is the error of an aborted pause: ErrAborted, or why ctx ended.
func abortError(ctx context.Context) error {
	if ctx.Err() != nil {
		return fmt.Errorf("breakpoint: %w", ctx.Err())
	}
	return ErrAborted
}

// editableBody is what the editor shows: a whole gzip body decoded (an edit is gzipped
// again), anything else as it travelled.
func editableBody(h http.Header, raw []byte, trunc bool) (body []byte, decoded string) {
	if !trunc && strings.EqualFold(h.Get("Content-Encoding"), "gzip") {
		if d, _, cut, err := content.Decode(h, raw, MaxBody); err == nil && !cut {
			return d, "gzip"
		}
	}
	return raw, ""
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// wait registers the pause and blocks until a decision, the timeout or ctx.
func (m *Manager) wait(ctx context.Context, info Paused) decision {
	p := &pause{info: info, done: make(chan decision, 1)}
	c := m.set.Chain()
	timeout, action := c.timeout, c.onTimeout
	m.mu.Lock()
	if m.closed.Load() { // Close ran after the hook matched: it continued every pause
		m.mu.Unlock()
		return decision{kind: decContinue}
	}
	m.paused[info.ID] = p
	m.mu.Unlock()
	m.changed()

	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	select {
	case d := <-p.done:
		return d
	case <-expire:
		d := decision{kind: decContinue}
		if action == TimeoutAbort {
			d.kind = decAbort
		}
		_ = m.decide(info.ID, d) // fails only if a user decision won the race
	case <-ctx.Done():
		_ = m.decide(info.ID, decision{kind: decAbort})
	}
	return <-p.done
}

// OnRequest is the request-stage hook. It only matches: a matching session is marked
// paused (engine.Flow.Pause) and the hook returns at once, so the other request hooks run
// before the pause waits; the pause shows the request as they left it.
func (m *Manager) OnRequest(ctx context.Context, f *engine.Flow) error {
	bps := m.set.Chain().req
	probe := f.Session
	if len(bps) > 0 && needsBody(bps) {
		probe = bodyprobe.Request(f.Session, f.Request.Header, &f.Request.Body)
	}
	if bp, ok := m.match(bps, probe); ok {
		f.Pause(func(ctx context.Context) error { return m.pauseRequest(ctx, f, bp) })
	}
	return nil
}

// pauseRequest holds the request until a decision and applies it (the pause of OnRequest).
func (m *Manager) pauseRequest(ctx context.Context, f *engine.Flow, bp int64) error {
	r := f.Request
	raw, trunc, err := hold(r.Header, &r.Body)
	if err != nil {
		return fmt.Errorf("breakpoint: reading the request body: %w", err)
	}
	info := Paused{ID: f.Session.ID, Phase: PhaseRequest, Breakpoint: bp, Since: time.Now(),
		Method: r.Method, URL: f.Session.Request.URL, Header: r.Header.Clone(), BodyTruncated: trunc}
	info.Body, info.Decoded = editableBody(r.Header, raw, trunc)
	d := m.wait(ctx, info)
	switch d.kind {
	case decAbort:
		return abortError(ctx)
	case decRespond:
		if f.Response != nil && f.Response.Body != nil { // a later hook's answer, replaced
			f.Response.Body.Close()
		}
		f.Response = answerResponse(d.answer, r)
		return nil
	}
	e := d.edits
	if e == nil {
		return nil
	}
	if e.Method != "" {
		r.Method = e.Method
	}
	if e.URL != "" {
		u, _ := url.Parse(e.URL) // validated
		r.URL = u
		r.Host = u.Host
	}
	if e.Header != nil {
		r.Header = e.Header.Clone()
		if h := r.Header.Get("Host"); h != "" {
			r.Host = h
			r.Header.Del("Host")
		}
	}
	if nb, ok := newBody(e, r.Header, &info); ok {
		if g, held := r.Body.(*grpcHeld); held {
			// The edited first message, then the rest of the stream; gRPC has no length.
			r.Body, r.ContentLength = g.withRest(nb), -1
			r.Header.Del("Content-Length")
			return nil
		}
		if r.Body != nil {
			r.Body.Close()
		}
		r.Body = io.NopCloser(bytes.NewReader(nb))
		r.ContentLength = int64(len(nb))
		r.TransferEncoding = nil
		r.Header.Del("Transfer-Encoding")
		r.Header.Set("Content-Length", strconv.Itoa(len(nb)))
		if len(nb) == 0 {
			r.Body = http.NoBody
		}
	} else if e.Header != nil && r.ContentLength >= 0 && r.Header.Get("Content-Length") != "" {
		r.Header.Set("Content-Length", strconv.FormatInt(r.ContentLength, 10))
	}
	return nil
}

// newBody returns the body to send after edits, if it changes: the edited body (gzipped
// again when it was shown decoded and h still says gzip), or the decoded body when the
// edits dropped Content-Encoding: gzip from h without touching the body.
func newBody(e *Edits, h http.Header, info *Paused) ([]byte, bool) {
	if nb, ok, _ := e.body(); ok {
		return reencode(nb, h, info.Decoded), true
	}
	if info.Decoded == "gzip" && !strings.EqualFold(h.Get("Content-Encoding"), "gzip") {
		return info.Body, true
	}
	return nil, false
}

// reencode gzips nb when the pause showed the body decoded and the headers still say gzip.
func reencode(nb []byte, h http.Header, decoded string) []byte {
	if decoded == "gzip" && strings.EqualFold(h.Get("Content-Encoding"), "gzip") {
		return gzipBytes(nb)
	}
	return nb
}

func answerResponse(a *Answer, r *http.Request) *http.Response {
	b, _ := a.bytes() // validated
	h := a.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Del("Transfer-Encoding")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	return &http.Response{StatusCode: a.Status, Status: StatusLine(a.Status, a.Reason),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, ContentLength: int64(len(b)),
		Body: io.NopCloser(bytes.NewReader(b)), Request: r}
}

// OnResponse is the response-stage hook. Like OnRequest it only matches and marks the
// session paused; the pause waits after every response hook has returned.
func (m *Manager) OnResponse(ctx context.Context, f *engine.Flow) error {
	if f.Response.StatusCode == http.StatusSwitchingProtocols {
		return nil // an upgraded connection has no body to edit
	}
	if bp, ok := m.match(m.set.Chain().resp, f.Session); ok {
		f.Pause(func(ctx context.Context) error { return m.pauseResponse(ctx, f, bp) })
	}
	return nil
}

// pauseResponse holds the response until a decision and applies it (the pause of
// OnResponse).
func (m *Manager) pauseResponse(ctx context.Context, f *engine.Flow, bp int64) error {
	resp := f.Response
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return nil // a later hook made it an upgrade
	}
	raw, trunc, err := hold(resp.Header, &resp.Body)
	if err != nil {
		return fmt.Errorf("breakpoint: reading the response body: %w", err)
	}
	info := Paused{ID: f.Session.ID, Phase: PhaseResponse, Breakpoint: bp, Since: time.Now(),
		Method: f.Session.Request.Method, URL: f.Session.Request.URL, Status: resp.StatusCode,
		Header: resp.Header.Clone(), BodyTruncated: trunc}
	info.Body, info.Decoded = editableBody(resp.Header, raw, trunc)
	d := m.wait(ctx, info)
	switch d.kind {
	case decAbort:
		return abortError(ctx)
	case decRespond:
		n := answerResponse(d.answer, resp.Request)
		if resp.Body != nil {
			resp.Body.Close()
		}
		resp.StatusCode, resp.Status, resp.Header, resp.Body, resp.ContentLength = n.StatusCode, n.Status, n.Header, n.Body, n.ContentLength
		resp.Trailer = nil
		return nil
	}
	e := d.edits
	if e == nil {
		return nil
	}
	if e.Status != 0 || e.Reason != "" {
		if e.Status != 0 {
			resp.StatusCode = e.Status
		}
		resp.Status = StatusLine(resp.StatusCode, e.Reason)
	}
	if e.Header != nil {
		// Replace in place: the reverse proxy copies resp.Header after the hooks.
		for k := range resp.Header {
			delete(resp.Header, k)
		}
		for k, vv := range e.Header {
			resp.Header[k] = append([]string(nil), vv...)
		}
	}
	if nb, ok := newBody(e, resp.Header, &info); ok {
		if g, held := resp.Body.(*grpcHeld); held {
			// The edited first message, then the rest and the trailers (grpc-status).
			resp.Body, resp.ContentLength = g.withRest(nb), -1
			resp.Header.Del("Content-Length")
			return nil
		}
		if resp.Body != nil {
			resp.Body.Close()
		}
		resp.Body = io.NopCloser(bytes.NewReader(nb))
		resp.ContentLength = int64(len(nb))
		resp.TransferEncoding = nil
		resp.Header.Del("Transfer-Encoding")
		resp.Header.Set("Content-Length", strconv.Itoa(len(nb)))
		resp.Trailer = nil
	}
	return nil
}
