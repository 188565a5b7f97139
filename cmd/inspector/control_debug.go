package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"inspector/engine"
	"inspector/engine/hooks/breakpoint"
	"inspector/engine/hooks/replay"
	"inspector/engine/hooks/rules"
	"inspector/engine/session"
	"inspector/store"
)

// debugAPI is the write side of the control API: breakpoints, paused sessions, rules and
// replay. Its handlers are mounted by startControl behind the bearer token. All fields are
// required; the handlers are safe for concurrent use (the managers are).
type debugAPI struct {
	bp    *breakpoint.Manager
	rules *rules.Manager
	snd   replay.Sender
	st    *store.Store
}

// newDebugAPI loads DATA_DIR/breakpoints.json and DATA_DIR/rules.json; installHooks puts
// their hooks on eng, in its order. The caller should call bp.Close before closing the
// engine so no paused session holds the shutdown.
func newDebugAPI(dataDir string, eng *engine.Engine, st *store.Store) (*debugAPI, error) {
	bp, err := breakpoint.New(filepath.Join(dataDir, "breakpoints.json"))
	if err != nil {
		return nil, fmt.Errorf("breakpoints: %w", err)
	}
	rs, err := rules.New(filepath.Join(dataDir, "rules.json"))
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	if w := rs.Warning(); w != "" {
		fmt.Fprintln(stderr, "inspector: warning: "+w)
	}
	return &debugAPI{bp: bp, rules: rs, snd: eng, st: st}, nil
}

// maxAPIBody bounds the JSON body of a write call (edits carry bodies).
const maxAPIBody = 64 << 20

// handlers returns the routes for startControl's extra argument:
//
//	GET    /api/v1/breakpoints              {"breakpoints": […], "timeout": "5m", "on_timeout": "continue"}
//	POST   /api/v1/breakpoints              {"filter", "phase", "enabled"?} → {"id"}
//	PUT    /api/v1/breakpoints/{id}         {"filter", "phase", "enabled"}
//	DELETE /api/v1/breakpoints/{id}
//	PUT    /api/v1/breakpoints/timeout      {"timeout": "5m", "on_timeout": "abort"}
//	GET    /api/v1/paused                   [breakpoint.Paused…]
//	POST   /api/v1/sessions/{id}/resume     optional breakpoint.Edits
//	POST   /api/v1/sessions/{id}/respond    breakpoint.Answer
//	POST   /api/v1/sessions/{id}/abort
//	GET    /api/v1/rules                    {"rules": […]}
//	PUT    /api/v1/rules                    {"rules": […]} (replaces all) → {"rules": […]}
//	POST   /api/v1/rules                    one rule → {"id"}
//	DELETE /api/v1/rules/{id}
//	POST   /api/v1/replay                   {"ids", "edits"?, "count"?, "parallel"?} → {"ids", "results"}
//	POST   /api/v1/send                     {"method"?, "url", "header"?, "body"?} → the new session's summary
//
// Errors are {"error": "..."} with 400 (bad input), 404 (unknown id) or 409 (not paused).
func (d *debugAPI) handlers() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /api/v1/breakpoints":            http.HandlerFunc(d.listBreakpoints),
		"POST /api/v1/breakpoints":           http.HandlerFunc(d.addBreakpoint),
		"PUT /api/v1/breakpoints/{id}":       http.HandlerFunc(d.setBreakpoint),
		"DELETE /api/v1/breakpoints/{id}":    http.HandlerFunc(d.removeBreakpoint),
		"PUT /api/v1/breakpoints/timeout":    http.HandlerFunc(d.setTimeout),
		"GET /api/v1/paused":                 http.HandlerFunc(d.listPaused),
		"POST /api/v1/sessions/{id}/resume":  http.HandlerFunc(d.resume),
		"POST /api/v1/sessions/{id}/respond": http.HandlerFunc(d.respond),
		"POST /api/v1/sessions/{id}/abort":   http.HandlerFunc(d.abort),
		"GET /api/v1/rules":                  http.HandlerFunc(d.listRules),
		"PUT /api/v1/rules":                  http.HandlerFunc(d.replaceRules),
		"POST /api/v1/rules":                 http.HandlerFunc(d.addRule),
		"DELETE /api/v1/rules/{id}":          http.HandlerFunc(d.removeRule),
		"POST /api/v1/replay":                http.HandlerFunc(d.replay),
		"POST /api/v1/send":                  http.HandlerFunc(d.send),
	}
}

// readJSON decodes the body into v, rejecting unknown fields and trailing data. An empty
// body is allowed when optional is true.
func readJSON(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAPIBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) && optional {
		return true
	}
	if err == nil && dec.More() {
		err = errors.New("trailing data after the JSON value")
	}
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, "request body: "+err.Error())
		return false
	}
	return true
}

func pathID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || n <= 0 {
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("%q is not an id", r.PathValue("id")))
		return 0, false
	}
	return n, true
}

func (d *debugAPI) listBreakpoints(w http.ResponseWriter, r *http.Request) {
	s := d.bp.Settings()
	if s.Breakpoints == nil {
		s.Breakpoints = []breakpoint.Breakpoint{}
	}
	writeJSON(w, s)
}

// breakpointBody is a breakpoint as posted: enabled defaults to true.
type breakpointBody struct {
	Filter  string           `json:"filter"`
	Phase   breakpoint.Phase `json:"phase"`
	Enabled *bool            `json:"enabled"`
}

func (b breakpointBody) breakpoint() breakpoint.Breakpoint {
	return breakpoint.Breakpoint{Filter: b.Filter, Phase: b.Phase, Enabled: b.Enabled == nil || *b.Enabled}
}

func (d *debugAPI) addBreakpoint(w http.ResponseWriter, r *http.Request) {
	var b breakpointBody
	if !readJSON(w, r, &b, false) {
		return
	}
	id, err := d.bp.Add(b.breakpoint())
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, map[string]int64{"id": id})
}

func (d *debugAPI) setBreakpoint(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var b breakpointBody
	if !readJSON(w, r, &b, false) {
		return
	}
	bp := b.breakpoint()
	bp.ID = id
	if err := d.bp.Set(bp); err != nil {
		writeJSONError(w, notFoundOr400(d.hasBreakpoint(id)), err.Error())
		return
	}
	writeJSON(w, bp)
}

func (d *debugAPI) hasBreakpoint(id int64) bool {
	for _, b := range d.bp.Settings().Breakpoints {
		if b.ID == id {
			return true
		}
	}
	return false
}

func notFoundOr400(exists bool) int {
	if exists {
		return http.StatusBadRequest
	}
	return http.StatusNotFound
}

func (d *debugAPI) removeBreakpoint(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if err := d.bp.Remove(id); err != nil {
		writeJSONError(w, notFoundOr400(d.hasBreakpoint(id)), err.Error())
		return
	}
	writeJSON(w, map[string]int64{"removed": id})
}

func (d *debugAPI) setTimeout(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Timeout   breakpoint.Duration      `json:"timeout"`
		OnTimeout breakpoint.TimeoutAction `json:"on_timeout"`
	}
	if !readJSON(w, r, &b, false) {
		return
	}
	if err := d.bp.SetTimeout(time.Duration(b.Timeout), b.OnTimeout); err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, d.bp.Settings())
}

func (d *debugAPI) listPaused(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, d.bp.List())
}

// pausedOp runs op on the paused session named in the path, mapping ErrNotPaused to 409.
func (d *debugAPI) pausedOp(w http.ResponseWriter, r *http.Request, op func(session.ID) error) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if err := op(session.ID(id)); err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, breakpoint.ErrNotPaused) {
			code = http.StatusConflict
		}
		writeJSONError(w, code, err.Error())
		return
	}
	writeJSON(w, map[string]int64{"id": id})
}

func (d *debugAPI) resume(w http.ResponseWriter, r *http.Request) {
	var e *breakpoint.Edits
	if !readJSON(w, r, &e, true) {
		return
	}
	d.pausedOp(w, r, func(id session.ID) error { return d.bp.Resume(id, e) })
}

func (d *debugAPI) respond(w http.ResponseWriter, r *http.Request) {
	var a breakpoint.Answer
	if !readJSON(w, r, &a, false) {
		return
	}
	d.pausedOp(w, r, func(id session.ID) error { return d.bp.Respond(id, a) })
}

func (d *debugAPI) abort(w http.ResponseWriter, r *http.Request) {
	d.pausedOp(w, r, d.bp.Abort)
}

type rulesBody struct {
	Rules []rules.Rule `json:"rules"`
}

func (d *debugAPI) listRules(w http.ResponseWriter, r *http.Request) {
	rs := d.rules.Rules()
	if rs == nil {
		rs = []rules.Rule{}
	}
	writeJSON(w, rulesBody{rs})
}

func (d *debugAPI) replaceRules(w http.ResponseWriter, r *http.Request) {
	var b rulesBody
	if !readJSON(w, r, &b, false) {
		return
	}
	rs, err := d.rules.Replace(b.Rules)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	if rs == nil {
		rs = []rules.Rule{}
	}
	writeJSON(w, rulesBody{rs})
}

func (d *debugAPI) addRule(w http.ResponseWriter, r *http.Request) {
	var rule rules.Rule
	if !readJSON(w, r, &rule, false) {
		return
	}
	id, err := d.rules.Add(rule)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, map[string]int64{"id": id})
}

func (d *debugAPI) removeRule(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if err := d.rules.Remove(id); err != nil {
		writeJSONError(w, http.StatusNotFound, err.Error())
		return
	}
	writeJSON(w, map[string]int64{"removed": id})
}

// replayRequest is the body of POST /api/v1/replay.
type replayRequest struct {
	IDs      []session.ID  `json:"ids"`
	Edits    *replay.Edits `json:"edits,omitempty"`
	Count    int           `json:"count,omitempty"`
	Parallel int           `json:"parallel,omitempty"`
}

// replayResponse is its answer: the new session ids (in job order; failed requests that
// recorded no session are left out) and one result per request.
type replayResponse struct {
	IDs     []session.ID    `json:"ids"`
	Results []replay.Result `json:"results"`
}

func (d *debugAPI) replay(w http.ResponseWriter, r *http.Request) {
	var req replayRequest
	if !readJSON(w, r, &req, false) {
		return
	}
	if len(req.IDs) == 0 {
		writeJSONError(w, http.StatusBadRequest, "replay: no ids")
		return
	}
	sessions, err := loadSessions(d.st, req.IDs)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, store.ErrNotFound) {
			code = http.StatusNotFound
		}
		writeJSONError(w, code, err.Error())
		return
	}
	res, err := replay.Run(r.Context(), d.snd, replay.Job{Sessions: sessions, Edits: req.Edits, Count: req.Count, Parallel: req.Parallel})
	if err != nil && res == nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, replayResponseOf(res))
}

func replayResponseOf(res []replay.Result) replayResponse {
	out := replayResponse{IDs: []session.ID{}, Results: res}
	for _, x := range res {
		if x.ID != 0 {
			out.IDs = append(out.IDs, x.ID)
		}
	}
	return out
}

// loadSessions reads the sessions to replay. A session completed a moment ago may still
// sit in the store's write queue: a miss flushes the queue once and retries.
func loadSessions(st *store.Store, ids []session.ID) ([]*session.Session, error) {
	out := make([]*session.Session, 0, len(ids))
	flushed := false
	for _, id := range ids {
		s, err := st.Get(id)
		if errors.Is(err, store.ErrNotFound) && !flushed {
			flushed = true
			if ferr := st.Flush(); ferr == nil {
				s, err = st.Get(id)
			}
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// The methods below let the window use debugAPI as its ui.Debugger.

func (d *debugAPI) Breakpoints() []breakpoint.Breakpoint                 { return d.bp.Settings().Breakpoints }
func (d *debugAPI) AddBreakpoint(b breakpoint.Breakpoint) (int64, error) { return d.bp.Add(b) }
func (d *debugAPI) SetBreakpoint(b breakpoint.Breakpoint) error          { return d.bp.Set(b) }
func (d *debugAPI) RemoveBreakpoint(id int64) error                      { return d.bp.Remove(id) }
func (d *debugAPI) Paused() []breakpoint.Paused                          { return d.bp.List() }
func (d *debugAPI) Resume(id session.ID, e *breakpoint.Edits) error      { return d.bp.Resume(id, e) }
func (d *debugAPI) Respond(id session.ID, a breakpoint.Answer) error     { return d.bp.Respond(id, a) }
func (d *debugAPI) Abort(id session.ID) error                            { return d.bp.Abort(id) }
func (d *debugAPI) Rules() []rules.Rule                                  { return d.rules.Rules() }
func (d *debugAPI) ReplaceRules(rs []rules.Rule) ([]rules.Rule, error) {
	return d.rules.ReplaceAllowingFolders(rs) // the window: the user entered these files
}
func (d *debugAPI) MapLocalFolders() []string { return d.rules.Folders() }
func (d *debugAPI) OnChange(f func())         { d.bp.OnChange(f) }
func (d *debugAPI) Send(ctx context.Context, req *http.Request, opts engine.SendOptions) (*session.Session, error) {
	return d.snd.Send(ctx, req, opts)
}
