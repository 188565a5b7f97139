package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"

	"inspector/engine/session"
)

// # Hook stages
//
// An exchange passes through named stages, in this order (mitmproxy's event hooks):
//
//	RequestHeaders   the request head arrived; its body has not been read (it streams).
//	Request          the request body is buffered (up to a cap), when a hook asked for it.
//	(upstream)       the transport is chosen and the request sent; nothing runs here.
//	ResponseHeaders  the response head arrived; its body has not been read (it streams).
//	Response         the response body is buffered (up to a cap), when a hook asked for it.
//	Error            the exchange ended with an error: the hook sees the error value.
//	Done             the exchange is complete: the session is immutable.
//
// Each stage is a one-method interface with a Func adapter, so a new stage never breaks
// an existing hook; Engine.AddHook registers a value for every stage interface it
// implements. Hooks of a stage run one after another on the exchange's goroutine, in the
// order they were added; a stage's pauses (Flow.Pause) run once all its hooks returned.
// A hook error ends the exchange: the client gets a 502 that says why, the session's
// Error is PhaseHook/SideProxy with the error's text, Error-stage hooks get the error
// itself (wrapped in a *HookError, so errors.Is and errors.As see through it), and
// Engine.Send returns it.

// Stage names a hook stage.
type Stage uint8

const (
	StageRequestHeaders Stage = iota + 1
	StageRequest
	StageResponseHeaders
	StageResponse
	StageError
	StageDone
)

var stageNames = [...]string{"", "request headers", "request", "response headers", "response", "error", "done"}

func (s Stage) String() string {
	if int(s) < len(stageNames) {
		return stageNames[s]
	}
	return "stage " + strconv.Itoa(int(s))
}

// HookError is the error of a hook (or of a pause it asked for) at a stage. It keeps the
// hook's error value: errors.Is(err, ErrSomething) holds through it.
type HookError struct {
	Stage Stage
	Err   error
}

func (e *HookError) Error() string { return "a " + e.Stage.String() + " hook failed: " + e.Err.Error() }
func (e *HookError) Unwrap() error { return e.Err }

// Flow is what a hook sees at a stage: the live session and the request or response in
// net/http's vocabulary. Hooks run on the exchange's goroutine, one after another.
//
//   - RequestHeaders: Request may be changed (method, URL, header, or Body replaced by a
//     new reader; Request itself may be replaced). Setting Response answers the request:
//     nothing is sent upstream and the later request stages do not run.
//   - Request: as RequestHeaders, and Body holds the request body as read so far: the
//     whole body, or, when Truncated, its first Config.CaptureLimit bytes (1 MiB when that is
//     negative) (Request.Body still
//     yields every byte: the held ones, then the rest as it streams). SetBody replaces it.
//   - ResponseHeaders: Response may be changed (status, header, Body replaced); Request
//     is what was sent upstream, and must not be changed.
//   - Response: as ResponseHeaders, with Body, Truncated and SetBody for the response.
//   - Error: read only; Response is the origin's response when one came, else nil.
//   - Done: DoneHook gets the immutable session only.
//
// Session is the engine's record of the exchange: hooks read it; what they change in
// Request and Response is recorded in it after the stage.
type Flow struct {
	Session  *session.Session
	Request  *http.Request
	Response *http.Response

	// Stage is the stage now running.
	Stage Stage
	// Body is the buffered body of the message of the Request and Response stages (nil
	// at the others), Truncated says the message is longer than Body.
	Body      []byte
	Truncated bool

	pauses []func(ctx context.Context) error
	// fingerprint is the ClientHello policy a hook asked for (SetFingerprint).
	fingerprint fpPolicy
}

// Pause marks the flow paused at the current stage (a breakpoint is data on the session,
// not a call that blocks inside a hook): once every hook of the stage has returned, the
// pipeline calls wait on the exchange's goroutine, in the order the pauses were asked
// for, and goes on when it returns. Only this exchange waits. wait may change Request (a
// request stage) or Response (a response stage), or set Response at a request stage to
// answer; an error ends the exchange as a hook's error does. ctx ends when the client
// leaves.
func (f *Flow) Pause(wait func(ctx context.Context) error) {
	f.pauses = append(f.pauses, wait)
}

// resume runs the pauses asked for at the stage that just ran, and clears them.
func (f *Flow) resume(ctx context.Context) error {
	for len(f.pauses) > 0 {
		wait := f.pauses[0]
		f.pauses = f.pauses[1:]
		if err := wait(ctx); err != nil {
			f.pauses = nil
			return err
		}
	}
	return nil
}

// SetBody replaces the body of the stage's message (the request at the request stages,
// the response at the response stages) with b, and sets its Content-Length to match.
func (f *Flow) SetBody(b []byte) {
	var h http.Header
	rc := io.NopCloser(bytes.NewReader(b))
	switch {
	case f.Stage == StageResponseHeaders || f.Stage == StageResponse:
		if f.Response == nil {
			return
		}
		f.Response.Body, f.Response.ContentLength, h = rc, int64(len(b)), f.Response.Header
		f.Response.TransferEncoding = nil
	case f.Request != nil:
		f.Request.Body, f.Request.ContentLength, h = rc, int64(len(b)), f.Request.Header
		f.Request.TransferEncoding = nil
		f.Request.GetBody = nil
	default:
		return
	}
	f.Body, f.Truncated = b, false
	if h != nil {
		h.Set("Content-Length", strconv.Itoa(len(b)))
	}
}

// RequestHook is the RequestHeaders stage: it runs after the request head arrived,
// before anything goes upstream or the body is read.
type RequestHook interface {
	OnRequest(ctx context.Context, f *Flow) error
}

// RequestBodyHook is the Request stage: it runs after the RequestHeaders stage, with the
// request body buffered in Flow.Body. Implementing it is how a hook asks for the body
// buffered; while no hook does, request bodies stream.
type RequestBodyHook interface {
	OnRequestBody(ctx context.Context, f *Flow) error
}

// ResponseHook is the ResponseHeaders stage: it runs after the response head arrived,
// before anything is sent to the client or the body is read.
type ResponseHook interface {
	OnResponse(ctx context.Context, f *Flow) error
}

// ResponseBodyHook is the Response stage: it runs after the ResponseHeaders stage, with
// the response body buffered in Flow.Body (not for a 101 Switching Protocols).
type ResponseBodyHook interface {
	OnResponseBody(ctx context.Context, f *Flow) error
}

// ErrorHook is the Error stage: it runs when the exchange ended with an error (the
// session's Error is set), before the session is published, with the error value (a
// *HookError for a hook's, the transport's own error for a failed round trip). It must
// not change the flow.
type ErrorHook interface {
	OnError(ctx context.Context, f *Flow, err error)
}

// DoneHook is the Done stage: it runs once the session is complete and published, with
// the immutable session, on the exchange's goroutine (so it should be quick).
type DoneHook interface {
	OnDone(s *session.Session)
}

// RequestHookFunc adapts a function to RequestHook.
type RequestHookFunc func(ctx context.Context, f *Flow) error

func (h RequestHookFunc) OnRequest(ctx context.Context, f *Flow) error { return h(ctx, f) }

// RequestBodyHookFunc adapts a function to RequestBodyHook.
type RequestBodyHookFunc func(ctx context.Context, f *Flow) error

func (h RequestBodyHookFunc) OnRequestBody(ctx context.Context, f *Flow) error { return h(ctx, f) }

// ResponseHookFunc adapts a function to ResponseHook.
type ResponseHookFunc func(ctx context.Context, f *Flow) error

func (h ResponseHookFunc) OnResponse(ctx context.Context, f *Flow) error { return h(ctx, f) }

// ResponseBodyHookFunc adapts a function to ResponseBodyHook.
type ResponseBodyHookFunc func(ctx context.Context, f *Flow) error

func (h ResponseBodyHookFunc) OnResponseBody(ctx context.Context, f *Flow) error { return h(ctx, f) }

// ErrorHookFunc adapts a function to ErrorHook.
type ErrorHookFunc func(ctx context.Context, f *Flow, err error)

func (h ErrorHookFunc) OnError(ctx context.Context, f *Flow, err error) { h(ctx, f, err) }

// DoneHookFunc adapts a function to DoneHook.
type DoneHookFunc func(s *session.Session)

func (h DoneHookFunc) OnDone(s *session.Session) { h(s) }

// hookSet is the registered hooks of every stage; it is replaced, never changed.
type hookSet struct {
	reqHead  []RequestHook
	reqBody  []RequestBodyHook
	respHead []ResponseHook
	respBody []ResponseBodyHook
	errs     []ErrorHook
	done     []DoneHook
}

// ErrNoStage is returned by AddHook for a value that implements no stage interface.
var ErrNoStage = errors.New("the hook implements no stage interface (OnRequest, OnRequestBody, OnResponse, OnResponseBody, OnError, OnDone)")

// AddHook registers h for every stage interface it implements (RequestHook,
// RequestBodyHook, ResponseHook, ResponseBodyHook, ErrorHook, DoneHook), after the hooks
// already there. It fails, registering nothing, when h implements none.
func (e *Engine) AddHook(h any) error {
	e.hooksMu.Lock()
	defer e.hooksMu.Unlock()
	n := *e.hooks.Load() // a copy; the slices it adds to are re-made
	added := []bool{addStage(&n.reqHead, h), addStage(&n.reqBody, h), addStage(&n.respHead, h),
		addStage(&n.respBody, h), addStage(&n.errs, h), addStage(&n.done, h)}
	if !slices.Contains(added, true) {
		return fmt.Errorf("%w: %T", ErrNoStage, h)
	}
	e.hooks.Store(&n)
	return nil
}

// addStage appends h to the stage's hooks s (a new slice) when h implements the stage's
// interface T.
func addStage[T any](s *[]T, h any) bool {
	v, ok := h.(T)
	if ok {
		*s = append(append([]T(nil), *s...), v)
	}
	return ok
}

// AddRequestHook appends a hook to the RequestHeaders stage.
func (e *Engine) AddRequestHook(h RequestHook) { _ = e.AddHook(RequestHookFunc(h.OnRequest)) }

// AddResponseHook appends a hook to the ResponseHeaders stage.
func (e *Engine) AddResponseHook(h ResponseHook) { _ = e.AddHook(ResponseHookFunc(h.OnResponse)) }
