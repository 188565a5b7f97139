package script

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"

	"inspector/content"
	"inspector/engine"
	"inspector/engine/session"
	"inspector/filter"
)

// script is one loaded file with its own runtime.
type script struct {
	file     string
	mtime    time.Time
	size     int64
	loaded   time.Time
	err      string
	handlers map[string]goja.Callable
	memCap   int64 // Options.MemoryCap
	// filter is exports.filter: the flows the script's handlers see (nil: all). A flow
	// it does not match never waits for the script's runtime.
	filter *filter.Expr

	// turn is held by the call running in the runtime (a goja runtime is not safe for
	// concurrent use) and guards the fields below; held is when it was taken (0: free).
	turn  chan struct{}
	held  atomic.Int64
	skips atomic.Bool // a skip was logged during the current overrun
	rt    *goja.Runtime
	cur   session.ID
	flow  *goja.Object // built on first call, bound to d, st and stage
	d     *draft
	st    *flowState
	stage string
	msg   *goja.Object // the websocketMessage object, bound to ws
	ws    *wsDraft
}

// loadBudget bounds the top-level run of a file.
const loadBudget = time.Second

// regexpMatchTimeout bounds one match of a regular expression that goja hands to regexp2
// (the patterns Go's regexp cannot run: lookaround, backreferences), whose catastrophic
// backtracking goja's Interrupt cannot stop: regexp2 is Go code that never looks at the
// interrupt flag. regexp2 reads DefaultMatchTimeout when goja compiles the pattern (at its
// first use). A match cut off is "no match" to goja, so the timeout is a little past the
// handler budget (its overrun grace): by then the call's interrupt has fired, and the
// handler stops with the budget error at the line of the match instead of going on with a
// wrong answer. (With the timeout at the budget itself, regexp2's coarse clock sometimes
// ended the match before the interrupt's timer had run, on a loaded machine.)
var regexpMatchTimeout = defaultBudget + overrunGrace(defaultBudget)

func init() { regexp2.DefaultMatchTimeout = regexpMatchTimeout }

func (m *Manager) load(file string, fi os.FileInfo) *script {
	s := &script{file: file, mtime: fi.ModTime(), size: fi.Size(), loaded: time.Now(), handlers: map[string]goja.Callable{}, turn: make(chan struct{}, 1), memCap: m.opts.MemoryCap}
	src, err := os.ReadFile(file)
	if err != nil {
		s.err = err.Error()
		return s
	}
	prog, err := goja.Compile(filepath.Base(file), string(src), false)
	if err != nil {
		s.err = err.Error() // CompilerSyntaxError: "name: Line 3:7 Unexpected token …"
		return s
	}
	rt := goja.New()
	s.rt = rt
	module := rt.NewObject()
	exports := rt.NewObject()
	module.Set("exports", exports)
	rt.Set("module", module)
	rt.Set("exports", exports)
	logFn := func(call goja.FunctionCall) goja.Value {
		parts := make([]string, len(call.Arguments))
		for i, a := range call.Arguments {
			parts[i] = jsString(rt, a)
		}
		m.addLog(LogEntry{Time: time.Now(), File: filepath.Base(file), Session: s.cur, Text: strings.Join(parts, " ")})
		return goja.Undefined()
	}
	console := rt.NewObject()
	for _, n := range []string{"log", "info", "warn", "error", "debug"} {
		console.Set(n, logFn)
	}
	rt.Set("console", console)
	rt.Set("log", logFn)
	rt.Set("store", m.storeObject(rt, filepath.Base(file)))
	limitBuiltins(rt)
	if _, err := s.run(loadBudget, func() (goja.Value, error) { return rt.RunProgram(prog) }); err != nil {
		s.err = scriptErrorText(err)
		s.rt = nil // no handlers run in it; what the failed run built is freed
		return s
	}
	exp := module.Get("exports")
	if o, ok := exp.(*goja.Object); ok {
		if v := o.Get("filter"); v != nil && !goja.IsUndefined(v) && !goja.IsNull(v) {
			src, ok := v.Export().(string)
			if !ok {
				s.err, s.rt = filepath.Base(file)+": exports.filter must be a string (a filter expression, e.g. \"host:api.example.com\")", nil
				return s
			}
			x, err := filter.Parse(src)
			if err != nil {
				s.err, s.rt = fmt.Sprintf("%s: exports.filter %q: %v", filepath.Base(file), src, err), nil
				return s
			}
			s.filter = x
		}
	}
	for _, name := range stages {
		var v goja.Value
		if o, ok := exp.(*goja.Object); ok {
			v = o.Get(name)
		}
		if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
			v = rt.GlobalObject().Get(name)
		}
		if fn, ok := goja.AssertFunction(v); ok {
			s.handlers[name] = fn
		}
	}
	return s
}

// wantsFlow reports whether sess passes the script's filter (sum is sess's summary, made
// on first use).
func (s *script) wantsFlow(sess *session.Session, sum **session.Summary) bool {
	if s.filter == nil {
		return true
	}
	if sess == nil {
		return false
	}
	if s.filter.NeedsSession() {
		return s.filter.Match(sess)
	}
	if *sum == nil {
		x := sess.Summarize()
		*sum = &x
	}
	return s.filter.MatchSummary(*sum)
}

func (s *script) handlerNames() []string {
	var out []string
	for _, n := range stages {
		if s.handlers[n] != nil {
			out = append(out, n)
		}
	}
	return out
}

// errBusy is the error of a call skipped because the script is still running an earlier
// call that went over its budget (a built-in goja's Interrupt cannot stop at once).
var errBusy = errors.New("skipped: the script is still running an earlier call that went over its time budget")

// overrunGrace is how long past its budget a call may hold the runtime before the calls
// waiting for it give up: an interrupt lands within microseconds in script code, later on
// a loaded machine, and inside a long built-in only when the built-in returns.
func overrunGrace(budget time.Duration) time.Duration { return max(budget/4, 10*time.Millisecond) }

// lock takes the script's turn. It waits for the call in the runtime, unless that call
// has held it longer than its budget and overrunGrace: then errBusy, so that a script
// stuck over its budget never holds other exchanges.
func (s *script) lock(budget time.Duration) error {
	select {
	case s.turn <- struct{}{}:
		s.held.Store(time.Now().UnixNano())
		return nil
	default:
	}
	poll := max(budget/10, time.Millisecond)
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case s.turn <- struct{}{}:
			s.held.Store(time.Now().UnixNano())
			return nil
		case <-t.C:
			if h := s.held.Load(); h != 0 && time.Since(time.Unix(0, h)) > budget+overrunGrace(budget) {
				return errBusy
			}
		}
	}
}

func (s *script) unlock() {
	s.held.Store(0)
	s.skips.Store(false)
	<-s.turn
}

// run calls f with the runtime interrupted after budget, or when the heap grows past the
// memory cap (watchMemory). The caller holds s's turn (or is loading s, which no one else
// sees yet).
func (s *script) run(budget time.Duration, f func() (goja.Value, error)) (v goja.Value, err error) {
	t := time.AfterFunc(budget, func() { s.rt.Interrupt(fmt.Sprintf("time budget of %v exceeded", budget)) })
	stopMem := s.watchMemory(s.memCap)
	defer func() {
		t.Stop()
		stopMem()
		s.rt.ClearInterrupt()
		if p := recover(); p != nil { // a Go panic inside an API function
			err = fmt.Errorf("internal error: %v", p)
		}
	}()
	return f()
}

// call runs one stage handler on a draft of the flow and applies the draft only when the
// handler returned normally.
func (s *script) call(m *Manager, stage string, fn goja.Callable, st *flowState) error {
	if err := s.lock(m.opts.Budget); err != nil {
		return err
	}
	defer s.unlock()
	if st.f.Session != nil {
		s.cur = st.f.Session.ID
	}
	defer func() { s.cur, s.d, s.st = 0, nil, nil }()
	d := st.draft()
	obj := s.flowObject(d, st, stage)
	if _, err := s.run(m.opts.Budget, func() (goja.Value, error) { return fn(goja.Undefined(), obj) }); err != nil {
		return err
	}
	return st.apply(d)
}

func (s *script) callSummary(m *Manager, stage string, fn goja.Callable, sum session.Summary) error {
	var v map[string]any
	b, _ := json.Marshal(sum)
	json.Unmarshal(b, &v)
	return s.callValue(m, sum.ID, fn, v)
}

// callValue calls an asynchronous stage's handler with plain data.
func (s *script) callValue(m *Manager, id session.ID, fn goja.Callable, v map[string]any) error {
	if err := s.lock(m.opts.Budget); err != nil {
		return err
	}
	defer s.unlock()
	s.cur = id
	defer func() { s.cur = 0 }()
	_, err := s.run(m.opts.Budget, func() (goja.Value, error) { return fn(goja.Undefined(), s.rt.ToValue(v)) })
	return err
}

// flowState is what persists across the handlers of one hook call: the flow and the
// bodies read so far.
type flowState struct {
	f           *engine.Flow
	maxBody     int64
	bodyAllowed bool
	dropped     bool
	req, resp   *bodyState
}

type bodyState struct {
	data []byte
	read bool
	err  error // why the body could not be buffered (a later read says the same)
}

func newFlowState(f *engine.Flow, maxBody int64) *flowState {
	return &flowState{f: f, maxBody: maxBody, req: &bodyState{}, resp: &bodyState{}}
}

// draft is one handler's view: edits land here and reach the flow only on success.
type draft struct {
	method, url string
	reqHeader   http.Header
	reqBody     []byte // nil: unchanged
	status      int
	respHeader  http.Header
	respBody    []byte
	respond     *http.Response
	drop        bool
	mark        *string
	tags        []string
}

func (st *flowState) draft() *draft {
	d := &draft{method: st.f.Request.Method, url: st.f.Request.URL.String(), reqHeader: st.f.Request.Header.Clone()}
	if st.f.Response != nil {
		d.status = st.f.Response.StatusCode
		d.respHeader = st.f.Response.Header.Clone()
	}
	return d
}

func (st *flowState) apply(d *draft) error {
	r := st.f.Request
	if d.url != r.URL.String() {
		u, err := url.Parse(d.url)
		if err != nil || !u.IsAbs() {
			return fmt.Errorf("url %q is not an absolute URL", d.url)
		}
		r.URL, r.Host = u, u.Host
	}
	r.Method = d.method
	r.Header = d.reqHeader
	if d.reqBody != nil {
		setBody(&r.Body, &r.ContentLength, r.Header, d.reqBody)
		st.req.data, st.req.read = d.reqBody, true
	}
	if resp := st.f.Response; resp != nil && d.respond == nil {
		if d.status != resp.StatusCode {
			resp.StatusCode = d.status
			resp.Status = fmt.Sprintf("%d %s", d.status, http.StatusText(d.status))
		}
		resp.Header = d.respHeader
		if d.respBody != nil {
			setBody(&resp.Body, &resp.ContentLength, resp.Header, d.respBody)
			st.resp.data, st.resp.read = d.respBody, true
		}
	}
	if d.respond != nil {
		d.respond.Request = r
		st.f.Response = d.respond
	}
	if s := st.f.Session; s != nil {
		if d.mark != nil {
			s.Mark = *d.mark
		}
		for _, t := range d.tags {
			if s.Comment != "" {
				s.Comment += "\n"
			}
			s.Comment += t
		}
	}
	st.dropped = st.dropped || d.drop
	return nil
}

func setBody(body *io.ReadCloser, n *int64, h http.Header, data []byte) {
	*body = io.NopCloser(bytes.NewReader(data))
	*n = int64(len(data))
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Del("Transfer-Encoding")
}

var errBodyTooLarge = errors.New("body too large to buffer for a script")

// readBody buffers a body on first use, up to maxBody, putting the bytes back in front of
// the stream so what goes on is unchanged.
func (st *flowState) readBody(bs *bodyState, body *io.ReadCloser) ([]byte, error) {
	if bs.read || bs.err != nil {
		return bs.data, bs.err
	}
	if *body == nil || *body == http.NoBody {
		bs.read = true
		return nil, nil
	}
	if f := st.f; !f.Truncated && int64(len(f.Body)) <= st.maxBody &&
		((f.Stage == engine.StageRequest && bs == st.req) || (f.Stage == engine.StageResponse && bs == st.resp)) {
		// The engine buffered the whole body for this stage (its Body still yields every
		// byte). A body longer than the engine's buffer is read on below, up to maxBody.
		bs.data, bs.read = f.Body, true
		return f.Body, nil
	}
	orig := *body
	data, err := io.ReadAll(io.LimitReader(orig, st.maxBody+1))
	if err != nil {
		*body = readCloser{io.MultiReader(bytes.NewReader(data), orig), orig}
		bs.err = fmt.Errorf("reading the body: %w", err)
		return nil, bs.err
	}
	if int64(len(data)) > st.maxBody {
		*body = readCloser{io.MultiReader(bytes.NewReader(data), orig), orig}
		bs.err = fmt.Errorf("%w (more than %d bytes)", errBodyTooLarge, st.maxBody)
		return nil, bs.err
	}
	orig.Close()
	*body = io.NopCloser(bytes.NewReader(data))
	bs.data, bs.read = data, true
	return data, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// flowObject returns the script's flow object, bound to this call's draft. It is built once
// per runtime: calls into a script are serialized and scripts have no timers, so one object
// whose methods read the current call's state serves every call (building ~30 functions per
// call cost more than the handlers themselves).
func (s *script) flowObject(d *draft, st *flowState, stage string) *goja.Object {
	s.d, s.st, s.stage = d, st, stage
	if s.flow == nil {
		s.flow = s.buildFlow()
	}
	return s.flow
}

func (s *script) buildFlow() *goja.Object {
	rt := s.rt
	throw := func(format string, a ...any) { panic(rt.NewTypeError(fmt.Sprintf(format, a...))) }
	flow := rt.NewObject()
	accessor(rt, flow, "id", func() any {
		if s.st.f.Session != nil {
			return uint64(s.st.f.Session.ID)
		}
		return 0
	}, nil)
	accessor(rt, flow, "stage", func() any { return s.stage }, nil)

	reqBody := func() []byte {
		if s.d.reqBody != nil {
			return s.d.reqBody
		}
		if !s.st.bodyAllowed {
			throw("the body is not available at %s; use the request or response stage", s.stage)
		}
		b, err := s.st.readBody(s.st.req, &s.st.f.Request.Body)
		if err != nil {
			throw("%v", err)
		}
		return b
	}
	req := s.messageObject(func() *http.Header { return &s.d.reqHeader }, reqBody, func(b []byte) { s.d.reqBody = b })
	accessor(rt, req, "method", func() any { return s.d.method }, func(v goja.Value) { s.d.method = strings.ToUpper(v.String()) })
	accessor(rt, req, "url", func() any { return s.d.url }, func(v goja.Value) { s.d.url = v.String() })
	flow.Set("request", req)

	respBody := func() []byte {
		if s.d.respBody != nil {
			return s.d.respBody
		}
		if !s.st.bodyAllowed {
			throw("the body is not available at %s; use the response stage", s.stage)
		}
		b, err := s.st.readBody(s.st.resp, &s.st.f.Response.Body)
		if err != nil {
			throw("%v", err)
		}
		return b
	}
	resp := s.messageObject(func() *http.Header { return &s.d.respHeader }, respBody, func(b []byte) { s.d.respBody = b })
	accessor(rt, resp, "status", func() any { return s.d.status }, func(v goja.Value) {
		n := int(v.ToInteger())
		if n < 100 || n > 999 {
			throw("status %d is not a status code", n)
		}
		s.d.status = n
	})
	accessor(rt, flow, "response", func() any {
		if s.st.f.Response == nil {
			return goja.Null()
		}
		return resp
	}, nil)
	flow.Set("respond", func(call goja.FunctionCall) goja.Value {
		if s.st.f.Response != nil {
			throw("respond: the response stage already has a response; change flow.response instead")
		}
		status := int(call.Argument(0).ToInteger())
		if status < 100 || status > 999 {
			throw("respond: status %d is not a status code", status)
		}
		h := http.Header{}
		if o, ok := call.Argument(1).(*goja.Object); ok {
			for _, k := range o.Keys() {
				v := o.Get(k).String()
				checkHeader(rt, k, v)
				h.Set(k, v)
			}
		}
		var body []byte
		if a := call.Argument(2); !goja.IsUndefined(a) && !goja.IsNull(a) {
			body = s.toBytes(a)
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		s.d.respond = &http.Response{
			StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		}
		return goja.Undefined()
	})
	flow.Set("drop", func() { s.d.drop = true })
	flow.Set("mark", func(colour string) { s.d.mark = &colour })
	flow.Set("tag", func(text string) { s.d.tags = append(s.d.tags, text) })
	return flow
}

// messageObject is a request or response: headers and body methods over the current
// call's draft (hp returns the header being edited).
func (s *script) messageObject(hp func() *http.Header, body func() []byte, setBody func([]byte)) *goja.Object {
	rt := s.rt
	o := rt.NewObject()
	o.Set("headers", s.headersObject(hp))
	o.Set("text", func() string { return string(decoded(*hp(), body())) })
	o.Set("json", func() goja.Value {
		var v any
		if err := json.Unmarshal(decoded(*hp(), body()), &v); err != nil {
			panic(rt.NewTypeError("json(): " + err.Error()))
		}
		return rt.ToValue(v)
	})
	o.Set("bytes", func() goja.Value { return s.uint8Array(body()) })
	setDecoded := func(b []byte) {
		hp().Del("Content-Encoding") // a script's body is plain
		setBody(b)
	}
	o.Set("setText", func(t string) { setDecoded([]byte(t)) })
	o.Set("setJSON", func(v goja.Value) {
		b, err := json.Marshal(v.Export())
		if err != nil {
			panic(rt.NewTypeError("setJSON(): " + err.Error()))
		}
		setDecoded(b)
	})
	o.Set("setBytes", func(v goja.Value) { setDecoded(s.toBytes(v)) })
	return o
}

// decoded undoes the content codings (gzip, deflate, br, zstd) for text() and json().
func decoded(h http.Header, b []byte) []byte {
	if out, encs, _, err := content.Decode(h, b, 64<<20); err == nil && len(encs) > 0 {
		return out
	}
	return b
}

func (s *script) headersObject(hp func() *http.Header) *goja.Object {
	rt := s.rt
	o := rt.NewObject()
	o.Set("get", func(name string) goja.Value {
		if vs := hp().Values(name); len(vs) > 0 {
			return rt.ToValue(vs[0])
		}
		return goja.Null()
	})
	o.Set("getAll", func(name string) []string { return append([]string{}, hp().Values(name)...) })
	o.Set("has", func(name string) bool { return len(hp().Values(name)) > 0 })
	o.Set("set", func(name, value string) { checkHeader(rt, name, value); hp().Set(name, value) })
	o.Set("add", func(name, value string) { checkHeader(rt, name, value); hp().Add(name, value) })
	o.Set("remove", func(name string) { hp().Del(name) })
	o.Set("delete", func(name string) { hp().Del(name) })
	o.Set("names", func() []string {
		var out []string
		for k := range *hp() {
			out = append(out, k)
		}
		return out
	})
	o.Set("toObject", func() map[string]any {
		out := map[string]any{}
		for k, vs := range *hp() {
			out[k] = strings.Join(vs, ", ")
		}
		return out
	})
	return o
}

// checkHeader refuses names and values that would forge header lines.
func checkHeader(rt *goja.Runtime, name, value string) {
	if name == "" || strings.ContainsAny(name, " \t\r\n:") || strings.ContainsAny(value, "\r\n\x00") {
		panic(rt.NewTypeError(fmt.Sprintf("invalid header %q", name)))
	}
}

func (s *script) uint8Array(b []byte) goja.Value {
	ab := s.rt.NewArrayBuffer(append([]byte(nil), b...))
	ctor := s.rt.Get("Uint8Array")
	v, err := s.rt.New(ctor, s.rt.ToValue(ab))
	if err != nil {
		panic(err)
	}
	return v
}

// toBytes accepts a string (UTF-8), an ArrayBuffer, a typed array or an array of numbers.
func (s *script) toBytes(v goja.Value) []byte {
	switch x := v.Export().(type) {
	case string:
		return []byte(x)
	case goja.ArrayBuffer:
		return append([]byte(nil), x.Bytes()...)
	case []byte:
		return append([]byte(nil), x...)
	}
	var out []byte
	if err := s.rt.ExportTo(v, &out); err != nil {
		panic(s.rt.NewTypeError("expected a string, ArrayBuffer or Uint8Array: " + err.Error()))
	}
	return out
}

// accessor defines a property with a getter and, when set is not nil, a setter.
func accessor(rt *goja.Runtime, o *goja.Object, name string, get func() any, set func(goja.Value)) {
	var setter goja.Value
	if set != nil {
		setter = rt.ToValue(set)
	}
	o.DefineAccessorProperty(name, rt.ToValue(get), setter, goja.FLAG_FALSE, goja.FLAG_TRUE)
}

func jsString(rt *goja.Runtime, v goja.Value) string {
	if o, ok := v.(*goja.Object); ok {
		if _, isFn := goja.AssertFunction(o); !isFn {
			if b, err := json.Marshal(o.Export()); err == nil {
				return string(b)
			}
		}
	}
	return v.String()
}

// storeObject is the key/value store shared by all scripts (values as JSON-like data).
// What each script keeps is counted against maxStorePerScript under its file name.
func (m *Manager) storeObject(rt *goja.Runtime, owner string) *goja.Object {
	o := rt.NewObject()
	o.Set("get", func(key string) goja.Value {
		b, ok := m.kv.get(key)
		if !ok {
			return goja.Undefined()
		}
		var v any
		json.Unmarshal(b, &v) // a fresh copy per get: no script shares another's objects
		return rt.ToValue(v)
	})
	o.Set("set", func(key string, v goja.Value) {
		// Stored as JSON, so no runtime's objects leak into another.
		b, err := json.Marshal(v.Export())
		if err != nil {
			panic(rt.NewTypeError("store.set: " + err.Error()))
		}
		if err := m.kv.set(owner, key, b, maxStorePerScript); err != nil {
			rangeError(rt, "store.set(%q): %v", key, err)
		}
	})
	o.Set("delete", func(key string) { m.kv.del(key) })
	return o
}

// wsDraft is one websocketMessage handler's view of the message: edits land here and
// reach the message only when the handler returns normally.
type wsDraft struct {
	m    *engine.WebSocketMessage
	op   int
	data []byte
	drop bool
}

// callMessage runs a websocketMessage handler on wm.
func (s *script) callMessage(m *Manager, fn goja.Callable, wm *engine.WebSocketMessage) error {
	if err := s.lock(m.opts.Budget); err != nil {
		return err
	}
	defer s.unlock()
	s.cur = wm.Session
	d := &wsDraft{m: wm, op: wm.Opcode, data: wm.Data}
	s.ws = d
	defer func() { s.cur, s.ws = 0, nil }()
	if s.msg == nil {
		s.msg = s.buildMessage()
	}
	if _, err := s.run(m.opts.Budget, func() (goja.Value, error) { return fn(goja.Undefined(), s.msg) }); err != nil {
		return err
	}
	wm.Opcode, wm.Data, wm.Drop = d.op, d.data, d.drop
	return nil
}

// buildMessage builds the script's message object, bound to the current call's draft
// (s.ws) like the flow object.
func (s *script) buildMessage() *goja.Object {
	rt := s.rt
	o := rt.NewObject()
	accessor(rt, o, "session", func() any { return uint64(s.ws.m.Session) }, nil)
	accessor(rt, o, "url", func() any { return s.ws.m.URL }, nil)
	accessor(rt, o, "from_client", func() any { return s.ws.m.FromClient }, nil)
	accessor(rt, o, "direction", func() any {
		if s.ws.m.FromClient {
			return "to_server"
		}
		return "to_client"
	}, nil)
	accessor(rt, o, "opcode", func() any { return s.ws.op }, func(v goja.Value) {
		n := int(v.ToInteger())
		if n != 1 && n != 2 {
			panic(rt.NewTypeError(fmt.Sprintf("opcode %d: a message is 1 (text) or 2 (binary)", n)))
		}
		s.ws.op = n
	})
	accessor(rt, o, "size", func() any { return len(s.ws.data) }, nil)
	accessor(rt, o, "text", func() any { return string(s.ws.data) }, func(v goja.Value) {
		s.ws.data = []byte(v.String())
	})
	accessor(rt, o, "bytes", func() any { return s.uint8Array(s.ws.data) }, func(v goja.Value) {
		s.ws.data = s.toBytes(v)
	})
	accessor(rt, o, "base64", func() any { return base64.StdEncoding.EncodeToString(s.ws.data) }, nil)
	accessor(rt, o, "json", func() any {
		var v any
		if err := json.Unmarshal(s.ws.data, &v); err != nil {
			panic(rt.NewTypeError("msg.json: " + err.Error()))
		}
		return rt.ToValue(v)
	}, func(v goja.Value) {
		b, err := json.Marshal(v.Export())
		if err != nil {
			panic(rt.NewTypeError("msg.json: " + err.Error()))
		}
		s.ws.data = b
	})
	accessor(rt, o, "dropped", func() any { return s.ws.drop }, nil)
	o.Set("drop", func() { s.ws.drop = true })
	return o
}
