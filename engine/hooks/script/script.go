package script

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"

	"inspector/engine"
	"inspector/engine/session"
)

// Options configure a Manager. Zero values take the defaults on each field.
type Options struct {
	Dir          string        // folder of *.js addons; "" for none
	Files        []string      // more addon files
	Budget       time.Duration // per handler call: 100 ms
	MaxBody      int64         // bytes of a body a script may buffer: 8 MiB
	MemoryCap    int64         // heap growth during one call before it is stopped: 256 MiB; negative: none (memcap.go)
	PollInterval time.Duration // how often files are checked for changes: 1 s; negative: never
	Logf         func(format string, args ...any)
}

// Status describes one loaded file.
type Status struct {
	File     string    `json:"file"`
	Loaded   time.Time `json:"loaded"`
	Handlers []string  `json:"handlers"`
	Error    string    `json:"error,omitempty"` // compile or load error with file:line
}

// LogEntry is one console.log line or one script error.
type LogEntry struct {
	Time    time.Time  `json:"time"`
	File    string     `json:"file"`
	Session session.ID `json:"session,omitempty"`
	Error   bool       `json:"error,omitempty"`
	Text    string     `json:"text"`
}

// Manager loads addons and runs them as engine hooks.
type Manager struct {
	opts    Options
	scripts atomic.Pointer[[]*script] // sorted by file name
	kv      *kvStore

	loadMu sync.Mutex // serializes reloads
	logMu  sync.Mutex
	log    []LogEntry

	done     chan *session.Session // sessions for the error/done stages
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	// The message hook is registered with eng only while a script has a websocketMessage
	// handler, so that WebSockets are otherwise copied, not parsed.
	hookMu    sync.Mutex
	eng       *engine.Engine
	msgHooked bool
	// stageHooks are the optional stages' hook values by stage name, hooked says which
	// are registered (syncHooks).
	stageHooks map[string]any
	hooked     map[string]bool
}

const (
	defaultBudget  = 100 * time.Millisecond
	defaultMaxBody = 8 << 20
	defaultPoll    = time.Second
	logKeep        = 500
	doneQueue      = 1024
)

// New loads the addons and starts watching them. Close stops it.
func New(opts Options) (*Manager, error) {
	if opts.Budget <= 0 {
		opts.Budget = defaultBudget
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = defaultMaxBody
	}
	if opts.MemoryCap == 0 {
		opts.MemoryCap = defaultMemoryCap
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = defaultPoll
	}
	for _, f := range opts.Files {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("script: %w", err)
		}
	}
	m := &Manager{opts: opts, kv: newKVStore(), done: make(chan *session.Session, doneQueue), stop: make(chan struct{})}
	empty := []*script{}
	m.scripts.Store(&empty)
	m.Reload()
	m.wg.Add(1)
	go m.runDone()
	if opts.PollInterval > 0 {
		m.wg.Add(1)
		go m.watch()
	}
	return m, nil
}

// Close stops watching and the asynchronous stages.
func (m *Manager) Close() {
	m.stopOnce.Do(func() { close(m.stop) })
	m.wg.Wait()
}

// Install puts the Manager on eng's hook stages: the header stages always (a call with no
// handler costs a pointer load), and the body, done and message stages only while some
// script has a handler for them (syncHooks), so that without a request or response
// handler bodies stream instead of being buffered for scripts.
func (m *Manager) Install(eng *engine.Engine) {
	eng.AddRequestHook(m)
	eng.AddResponseHook(m)
	m.hookMu.Lock()
	m.eng = eng
	m.hookMu.Unlock()
	m.syncHooks()
}

// The Manager's optional stages, each a value of its own so it can be added and removed
// on its own.
type (
	requestBodyStage  struct{ m *Manager }
	responseBodyStage struct{ m *Manager }
	doneStage         struct{ m *Manager }
)

// OnRequestBody runs the request handlers with the body the engine buffered.
func (h *requestBodyStage) OnRequestBody(ctx context.Context, f *engine.Flow) error {
	return h.m.runStages(f, stageRequest)
}

// OnResponseBody runs the response handlers with the body the engine buffered.
func (h *responseBodyStage) OnResponseBody(ctx context.Context, f *engine.Flow) error {
	return h.m.runStages(f, stageResponse)
}

// OnDone queues the session for the error and done handlers, which run on the Manager's
// own goroutine: a script's time budget never delays the exchange.
func (h *doneStage) OnDone(sess *session.Session) {
	select {
	case h.m.done <- sess:
	default: // never block the engine; counted in the log
		h.m.addLog(LogEntry{Time: time.Now(), Error: true, Session: sess.ID, Text: "done/error handlers fell behind; a session was skipped"})
	}
}

// syncHooks registers the optional stages while some script has a handler for them and
// removes them when none has (after a reload).
func (m *Manager) syncHooks() {
	m.hookMu.Lock()
	defer m.hookMu.Unlock()
	if m.eng == nil {
		return
	}
	if m.stageHooks == nil {
		m.stageHooks = map[string]any{
			stageRequest:  &requestBodyStage{m},
			stageResponse: &responseBodyStage{m},
			stageDone:     &doneStage{m},
		}
		m.hooked = map[string]bool{}
	}
	for name, h := range m.stageHooks {
		want := m.wants(name)
		if name == stageDone {
			want = m.wantsDone()
		}
		switch {
		case want && !m.hooked[name]:
			_ = m.eng.AddHook(h) // each implements a stage
		case !want && m.hooked[name]:
			m.eng.RemoveHook(h)
		}
		m.hooked[name] = want
	}
	switch want := m.wants(stageWebSocketMessage); {
	case want && !m.msgHooked:
		m.eng.AddMessageHook(m)
	case !want && m.msgHooked:
		m.eng.RemoveMessageHook(m)
	}
	m.msgHooked = m.wants(stageWebSocketMessage)
}

func (m *Manager) wants(stage string) bool {
	for _, s := range *m.scripts.Load() {
		if s.handlers[stage] != nil {
			return true
		}
	}
	return false
}

// OnMessage runs the websocketMessage handlers on one WebSocket message, in file-name
// order, on the relay (engine.MessageHook): each may change the message or drop it. When
// a handler throws or runs out of time, the message goes on as it came (the engine undoes
// every script's edits of it and records the error on the message) and the error is
// logged with file:line.
func (m *Manager) OnMessage(ctx context.Context, wm *engine.WebSocketMessage) error {
	var errs []error
	for _, s := range *m.scripts.Load() {
		fn := s.handlers[stageWebSocketMessage]
		if fn == nil {
			continue
		}
		if err := s.callMessage(m, fn, wm); err != nil {
			errs = append(errs, errors.New("script error: "+m.logScriptError(s, wm.Session, stageWebSocketMessage, err)))
			continue
		}
		if wm.Drop {
			break
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) files() []string {
	seen := map[string]bool{}
	var out []string
	if m.opts.Dir != "" {
		matches, _ := filepath.Glob(filepath.Join(m.opts.Dir, "*.js"))
		for _, f := range matches {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	for _, f := range m.opts.Files {
		if abs, err := filepath.Abs(f); err == nil {
			f = abs
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// Reload loads new and changed files and drops removed ones. It reports whether anything
// changed.
func (m *Manager) Reload() bool {
	m.loadMu.Lock()
	defer m.loadMu.Unlock()
	old := map[string]*script{}
	for _, s := range *m.scripts.Load() {
		old[s.file] = s
	}
	var next []*script
	changed := false
	for _, f := range m.files() {
		fi, err := os.Stat(f)
		if err != nil {
			continue
		}
		if s, ok := old[f]; ok && s.mtime.Equal(fi.ModTime()) && s.size == fi.Size() {
			next = append(next, s)
			delete(old, f)
			continue
		}
		delete(old, f)
		changed = true
		s := m.load(f, fi)
		if s.err != "" {
			m.logf("script %s: %s", filepath.Base(f), s.err)
			m.addLog(LogEntry{Time: time.Now(), File: filepath.Base(f), Error: true, Text: s.err})
		}
		next = append(next, s)
	}
	if len(old) > 0 {
		changed = true
	}
	if changed {
		m.scripts.Store(&next)
		m.syncHooks()
	}
	return changed
}

func (m *Manager) watch() {
	defer m.wg.Done()
	t := time.NewTicker(m.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.Reload()
		}
	}
}

// Status lists the loaded files.
func (m *Manager) Status() []Status {
	var out []Status
	for _, s := range *m.scripts.Load() {
		out = append(out, Status{File: s.file, Loaded: s.loaded, Handlers: s.handlerNames(), Error: s.err})
	}
	return out
}

// Log returns the newest log lines, oldest first.
func (m *Manager) Log() []LogEntry {
	m.logMu.Lock()
	defer m.logMu.Unlock()
	return append([]LogEntry(nil), m.log...)
}

func (m *Manager) addLog(e LogEntry) {
	m.logMu.Lock()
	defer m.logMu.Unlock()
	m.log = append(m.log, e)
	if len(m.log) > logKeep {
		m.log = append(m.log[:0:0], m.log[len(m.log)-logKeep:]...)
	}
}

func (m *Manager) logf(format string, args ...any) {
	if m.opts.Logf != nil {
		m.opts.Logf(format, args...)
	}
}

// Stage names.
const (
	stageRequestHeaders  = "requestHeaders"
	stageRequest         = "request"
	stageResponseHeaders = "responseHeaders"
	stageResponse        = "response"
	stageError           = "error"
	stageDone            = "done"
	// stageWebSocketMessage sees each WebSocket data message on the relay, before it is
	// forwarded: it may change or drop it.
	stageWebSocketMessage = "websocketMessage"
)

var stages = []string{stageRequestHeaders, stageRequest, stageResponseHeaders, stageResponse, stageError, stageDone, stageWebSocketMessage}

// OnRequest runs the requestHeaders handlers (the engine's RequestHeaders stage: the
// body has not been read).
func (m *Manager) OnRequest(ctx context.Context, f *engine.Flow) error {
	return m.runStages(f, stageRequestHeaders)
}

// OnResponse runs the responseHeaders handlers (the engine's ResponseHeaders stage).
func (m *Manager) OnResponse(ctx context.Context, f *engine.Flow) error {
	return m.runStages(f, stageResponseHeaders)
}

// ErrDropped is the hook error of a flow a script dropped.
var ErrDropped = errors.New("dropped by a script")

func (m *Manager) runStages(f *engine.Flow, names ...string) error {
	scripts := *m.scripts.Load()
	if len(scripts) == 0 {
		return nil
	}
	st := newFlowState(f, m.opts.MaxBody)
	var sum *session.Summary // f.Session's, for the scripts' filters
	for _, name := range names {
		st.bodyAllowed = name == stageRequest || name == stageResponse
		// The body is read (up to MaxBody) before any script's turn: a client or origin
		// that sends it slowly then holds only its own flow, never the script's runtime,
		// which every other flow through that script waits for.
		switch name {
		case stageRequest:
			st.readBody(st.req, &f.Request.Body) // an error is kept and thrown by text() etc.
		case stageResponse:
			if f.Response != nil {
				st.readBody(st.resp, &f.Response.Body)
			}
		}
		for _, s := range scripts {
			fn := s.handlers[name]
			if fn == nil || !s.wantsFlow(f.Session, &sum) {
				continue
			}
			if err := s.call(m, name, fn, st); err != nil {
				m.scriptError(s, f.Session, name, err)
				continue
			}
			if st.dropped {
				return ErrDropped
			}
			if f.Response != nil && (name == stageRequest || name == stageRequestHeaders) {
				return nil // answered: later request handlers do not run
			}
		}
	}
	return nil
}

func (m *Manager) scriptError(s *script, sess *session.Session, stage string, err error) {
	var id session.ID
	if sess != nil {
		id = sess.ID
	}
	msg := m.logScriptError(s, id, stage, err)
	if sess != nil {
		if sess.Comment != "" {
			sess.Comment += "\n"
		}
		sess.Comment += "script error: " + msg
	}
}

// logScriptError puts a script's error in the log and returns its text.
func (m *Manager) logScriptError(s *script, id session.ID, stage string, err error) string {
	msg := fmt.Sprintf("%s (%s): %s", filepath.Base(s.file), stage, scriptErrorText(err))
	if errors.Is(err, errBusy) && s.skips.Swap(true) {
		return msg // logged once per overrun; each skipped session still says so
	}
	m.logf("script error: %s", msg)
	m.addLog(LogEntry{Time: time.Now(), File: filepath.Base(s.file), Session: id, Error: true, Text: msg})
	return msg
}

// scriptErrorText is goja's message with the script's file:line:col (exceptions and
// interrupts carry their stack; Error gives its first frame). When that frame is a
// built-in (an interrupt that lands in RegExp.prototype.test, String.prototype.repeat…),
// the first frame in the script's own source is added, so the user sees the line.
func scriptErrorText(err error) string {
	msg := strings.TrimSpace(err.Error())
	var stack []goja.StackFrame
	var ie *goja.InterruptedError
	var ex *goja.Exception
	switch {
	case errors.As(err, &ie):
		stack = ie.Stack()
	case errors.As(err, &ex):
		stack = ex.Stack()
	}
	for _, f := range stack {
		if p := f.Position(); p.Filename != "" && p.Line > 0 {
			if loc := fmt.Sprintf("%s:%d:%d", p.Filename, p.Line, p.Column); !strings.Contains(msg, loc) {
				msg += " at " + loc
			}
			break
		}
	}
	return msg
}

func (m *Manager) wantsDone() bool { return m.wants(stageDone) || m.wants(stageError) }

func (m *Manager) runDone() {
	defer m.wg.Done()
	for {
		select {
		case <-m.stop:
			return
		case sess := <-m.done:
			sum := sess.Summarize()
			psum := &sum
			for _, s := range *m.scripts.Load() {
				if !s.wantsFlow(sess, &psum) {
					continue
				}
				for _, name := range []string{stageError, stageDone} {
					if name == stageError && sess.Error == nil {
						continue
					}
					if fn := s.handlers[name]; fn != nil {
						if err := s.callSummary(m, name, fn, sum); err != nil {
							m.scriptError(s, nil, name, err)
						}
					}
				}
			}
		}
	}
}

// kvStore is the scripts' shared key/value store. Each entry is charged to the script
// that set it (its file name), and no script may keep more than its limit.
type kvStore struct {
	mu    sync.Mutex
	m     map[string]kvEntry
	usage map[string]int64 // bytes per owner
}

type kvEntry struct {
	owner string
	v     []byte // JSON
}

func newKVStore() *kvStore { return &kvStore{m: map[string]kvEntry{}, usage: map[string]int64{}} }

func (k *kvStore) get(key string) ([]byte, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.m[key]
	return e.v, ok
}

// set stores v under key for owner, unless owner would then keep more than limit bytes.
func (k *kvStore) set(owner, key string, v []byte, limit int64) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	use := k.usage[owner] + int64(len(key)+len(v))
	old, had := k.m[key]
	if had && old.owner == owner {
		use -= int64(len(key) + len(old.v))
	}
	if use > limit {
		return fmt.Errorf("%s would keep %d bytes in the store, more than its limit of %d; delete keys it no longer needs", owner, use, limit)
	}
	if had {
		k.usage[old.owner] -= int64(len(key) + len(old.v))
	}
	k.usage[owner] += int64(len(key) + len(v))
	k.m[key] = kvEntry{owner, v}
	return nil
}

func (k *kvStore) del(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.m[key]; ok {
		k.usage[e.owner] -= int64(len(key) + len(e.v))
		delete(k.m, key)
	}
}
