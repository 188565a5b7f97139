package main

// The MCP server (Model Context Protocol, github.com/modelcontextprotocol/go-sdk): an agent
// reads captured traffic and, when the user allows it, works in the live intercept loop:
// set a breakpoint, see the paused request, resume it with edits, replay it, compare.
//
// Two ways in, one set of tools:
//   - `inspector mcp` serves MCP on stdio. It attaches to the running instance through the
//     control API, or opens the store read-only when no instance runs (then only the read
//     tools that need no live engine answer; the others say an instance is needed).
//   - A running instance serves streamable HTTP at /api/v1/mcp on its control API, behind
//     the same bearer token and loopback checks as every other route.
//
// Every tool that changes anything (breakpoints, resume/respond/abort, replay, send, rules)
// is registered only when writes are allowed: `inspector mcp --allow-writes`, or
// `--mcp-writes` on the instance for the HTTP endpoint. Tool results are capped in size
// (bodies, HAR, lists) and say when they were cut.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"inspector/codegen"
	"inspector/content"
	"inspector/diff"
	"inspector/engine/hooks/breakpoint"
	"inspector/engine/session"
	"inspector/filter"
	"inspector/redact"
	"inspector/store"
	"inspector/store/har"
)

func init() {
	register("mcp", "serve MCP (Model Context Protocol) on stdio for AI agents", runMCP)
}

// Caps on what one tool call returns.
const (
	mcpDefaultList   = 50
	mcpMaxList       = 500
	mcpDefaultBody   = 64 << 10
	mcpMaxBody       = 1 << 20
	mcpDefaultHAR    = 1 << 20
	mcpMaxHAR        = 8 << 20
	mcpMaxHAREntries = 1000
)

// errNeedsInstance is the answer of live tools when the MCP server reads a store directly.
var errNeedsInstance = errors.New("this tool needs a running Inspector instance (start `inspector` or `inspector --headless`); the store is open read-only")

// mcpBackend is where the tools get their data: a read-only store (st) or a running
// instance's control API (api). Exactly one is set, or neither for an empty data directory.
type mcpBackend struct {
	st      *store.Store
	api     *controlClient
	dataDir string // for the diff's ignore list when reading the store directly
	// activity records each tool call (client name, tool, a short summary of the input)
	// so the running instance can show what an agent did. Nil: not recorded.
	activity func(client, tool, detail string)
	// masker returns the Redactor answers go through, or nil when masking is off (the
	// window's Tools ▸ MCP switch, `inspector mcp --no-redact`). Nil func: off.
	masker func() *redact.Redactor
}

func (b *mcpBackend) redactor() *redact.Redactor {
	if b.masker == nil {
		return nil
	}
	return b.masker()
}

func (b *mcpBackend) live() (*controlClient, error) {
	if b.api == nil {
		return nil, errNeedsInstance
	}
	return b.api, nil
}

func (b *mcpBackend) list(expr string, after session.ID, limit int, newest bool) ([]session.Summary, error) {
	sums, err := b.listRaw(expr, after, limit, newest)
	if r := b.redactor(); r != nil {
		for i := range sums {
			sums[i] = r.Summary(sums[i])
		}
	}
	return sums, err
}

func (b *mcpBackend) listRaw(expr string, after session.ID, limit int, newest bool) ([]session.Summary, error) {
	switch {
	case b.st != nil:
		q := store.Query{After: after, Limit: limit, Newest: newest}
		if expr != "" {
			f, err := filter.Parse(expr)
			if err != nil {
				return nil, err
			}
			q.Filter = f
		}
		return b.st.List(q)
	case b.api != nil:
		return b.api.sessionsQuery(expr, after, limit, newest)
	}
	return []session.Summary{}, nil
}

func (b *mcpBackend) get(id session.ID) (*session.Session, error) {
	ss, err := b.getRaw(id)
	if r := b.redactor(); r != nil && ss != nil {
		ss, _ = r.Session(ss)
	}
	return ss, err
}

func (b *mcpBackend) getRaw(id session.ID) (*session.Session, error) {
	switch {
	case b.st != nil:
		return b.st.Get(id)
	case b.api != nil:
		return b.api.session(id)
	}
	return nil, fmt.Errorf("session %d: %w", id, store.ErrNotFound)
}

func (b *mcpBackend) frames(id session.ID) ([]session.Frame, error) {
	fs, err := b.framesRaw(id)
	if r := b.redactor(); r != nil && fs != nil {
		fs = r.Frames(fs)
	}
	return fs, err
}

func (b *mcpBackend) framesRaw(id session.ID) ([]session.Frame, error) {
	switch {
	case b.st != nil:
		return b.st.Frames(id)
	case b.api != nil:
		var fs []session.Frame
		err := b.api.do("GET", "/api/v1/sessions/"+strconv.FormatUint(uint64(id), 10)+"/frames", nil, &fs)
		return fs, err
	}
	return nil, fmt.Errorf("session %d: %w", id, store.ErrNotFound)
}

func (b *mcpBackend) stats() (store.Stats, error) {
	switch {
	case b.st != nil:
		return b.st.Stats(), nil
	case b.api != nil:
		return b.api.stats()
	}
	return store.Stats{}, nil
}

// newMCPServer builds the server with the read tools, and the write tools when
// allowWrites.
func newMCPServer(b *mcpBackend, allowWrites bool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "inspector", Title: "Inspector HTTP(S) traffic inspector", Version: version}, &mcp.ServerOptions{
		Instructions: "Inspector records HTTP(S) traffic through its proxy as sessions with integer ids. " +
			"Use list_sessions with the filter language (e.g. 'host:api.example.com status:5xx', 'body:token', 'method:POST') " +
			"to find sessions and get_session to read one. " +
			writeHint(allowWrites),
	})
	addReadTools(s, b)
	if allowWrites {
		addWriteTools(s, b)
	}
	addResources(s, b)
	return s
}

func writeHint(allowWrites bool) string {
	if allowWrites {
		return "Live loop: add_breakpoint, then list_paused shows held requests; resume (optionally with edits), respond or abort them; replay sends stored requests again; send composes a new one."
	}
	return "Write tools (breakpoints, resume, replay, send, rules) are off; the user enables them with `inspector mcp --allow-writes`, `--mcp-writes` on the instance, or the switch in the window's Tools ▸ MCP…."
}

// tool registers a typed tool whose calls are recorded in the activity log.
func tool[In, Out any](s *mcp.Server, b *mcpBackend, name, desc string, h func(context.Context, In) (Out, error)) {
	mcp.AddTool(s, &mcp.Tool{Name: name, Description: desc}, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		if b.activity != nil {
			client := "unknown client"
			if req != nil && req.Session != nil {
				if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil {
					client = p.ClientInfo.Name
				}
			}
			detail, _ := json.Marshal(in)
			b.activity(client, name, capString(string(detail), 200))
		}
		out, err := h(ctx, in)
		return nil, out, err
	})
}

// Tool inputs and outputs.

type listIn struct {
	Filter string `json:"filter,omitempty" jsonschema:"filter expression, e.g. 'host:example.com status:4xx' (empty: all)"`
	After  uint64 `json:"after,omitempty" jsonschema:"only sessions with an id above this (paging, oldest first)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many (default 50, at most 500)"`
	Newest bool   `json:"newest,omitempty" jsonschema:"newest first (the most recent sessions) instead of oldest first"`
}

type listOut struct {
	Sessions []session.Summary `json:"sessions"`
	More     bool              `json:"more"` // the limit was reached; page with after/newest
}

type idIn struct {
	ID uint64 `json:"id" jsonschema:"session id"`
}

type getIn struct {
	ID        uint64 `json:"id" jsonschema:"session id"`
	BodyLimit int    `json:"body_limit,omitempty" jsonschema:"bytes of each body to return (default 65536, at most 1048576)"`
}

// mcpBody is a body as an agent reads it: decoded text when it is text, else base64.
type mcpBody struct {
	Size      int64  `json:"size"`               // bytes on the wire
	Encoding  string `json:"encoding,omitempty"` // content coding that was decoded (gzip, …)
	Text      string `json:"text,omitempty"`
	Base64    string `json:"base64,omitempty"`
	Truncated bool   `json:"truncated,omitempty"` // only the first body_limit bytes are here
	Note      string `json:"note,omitempty"`
}

type mcpSession struct {
	ID           session.ID        `json:"id"`
	ReplayOf     session.ID        `json:"replay_of,omitempty"`
	Started      time.Time         `json:"started"`
	Method       string            `json:"method"`
	URL          string            `json:"url"`
	ClientProto  string            `json:"client_proto,omitempty"`
	UpstreamAddr string            `json:"upstream_addr,omitempty"`
	UpstreamProt string            `json:"upstream_proto,omitempty"`
	RequestHead  http.Header       `json:"request_headers"`
	RequestBody  mcpBody           `json:"request_body"`
	Status       int               `json:"status,omitempty"`
	ResponseHead http.Header       `json:"response_headers,omitempty"`
	Trailers     http.Header       `json:"response_trailers,omitempty"`
	ResponseBody *mcpBody          `json:"response_body,omitempty"`
	DurationMS   float64           `json:"duration_ms"`
	Error        string            `json:"error,omitempty"`
	Messages     []session.Message `json:"websocket_messages,omitempty"`
	MessagesCut  int               `json:"websocket_messages_omitted,omitempty"`
	MessagesSeen int64             `json:"websocket_messages_seen,omitempty"` // when more were seen than the session keeps
	Mark         string            `json:"mark,omitempty"`
	Comment      string            `json:"comment,omitempty"`
	Timings      session.Timings   `json:"timings"`
	TLS          *session.TLSInfo  `json:"client_tls,omitempty"`
	Flags        session.Flags     `json:"flags,omitempty"`
}

type searchIn struct {
	Text   string `json:"text" jsonschema:"text to find in decoded request and response bodies"`
	Filter string `json:"filter,omitempty" jsonschema:"further filter terms (ANDed)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many (default 50, at most 500)"`
}

type diffIn struct {
	A uint64 `json:"a" jsonschema:"first session id"`
	B uint64 `json:"b" jsonschema:"second session id"`
}

type codeIn struct {
	ID   uint64 `json:"id" jsonschema:"session id"`
	Lang string `json:"lang" jsonschema:"curl, wget, httpie, powershell, fetch, node, python, httpx, go, java, csharp, php or rust"`
}

type codeOut struct {
	Lang string `json:"lang"`
	Code string `json:"code"`
}

type framesOut struct {
	Frames  []session.Frame `json:"frames"`
	Omitted int             `json:"omitted,omitempty"`
}

type harIn struct {
	Filter   string `json:"filter,omitempty" jsonschema:"only sessions matching this filter (empty: all, newest 1000 at most)"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"cap on the HAR text (default 1 MiB, at most 8 MiB)"`
}

type harOut struct {
	HAR       string `json:"har"`
	Sessions  int    `json:"sessions"`
	Truncated bool   `json:"truncated,omitempty"`
	Note      string `json:"note,omitempty"`
}

func clampLimit(n, def, max int) int {
	if n <= 0 {
		return def
	}
	return min(n, max)
}

// listPage lists one page of at most limit (clamped) summaries and says whether there are
// more.
func listPage(b *mcpBackend, expr string, after session.ID, limit int, newest bool) (listOut, error) {
	limit = clampLimit(limit, mcpDefaultList, mcpMaxList)
	sums, err := b.list(expr, after, limit+1, newest)
	if err != nil {
		return listOut{}, err
	}
	out := listOut{Sessions: sums}
	if len(sums) > limit {
		out.Sessions, out.More = sums[:limit], true
	}
	if out.Sessions == nil {
		out.Sessions = []session.Summary{}
	}
	return out, nil
}

func addReadTools(s *mcp.Server, b *mcpBackend) {
	tool(s, b, "list_sessions", "List captured sessions (summaries: id, method, url, status, protocols, sizes, duration, error) matching a filter expression. Filter language: host:, url:, path:, method:, status: (404, 4xx, 400-499), type:, proto:, size:, dur:, header:, body:, error:yes, marked:, id:; terms ANDed, OR between terms, -term negates.",
		func(ctx context.Context, in listIn) (listOut, error) {
			return listPage(b, in.Filter, session.ID(in.After), in.Limit, in.Newest)
		})
	tool(s, b, "get_session", "One session in full: request and response line, headers, bodies (decoded from gzip/deflate/br/zstd; text, else base64; capped at body_limit), trailers, timings, TLS, error, WebSocket messages.",
		func(ctx context.Context, in getIn) (mcpSession, error) {
			ss, err := b.get(session.ID(in.ID))
			if err != nil {
				return mcpSession{}, err
			}
			return mcpSessionOf(ss, clampLimit(in.BodyLimit, mcpDefaultBody, mcpMaxBody)), nil
		})
	tool(s, b, "search_bodies", "Find sessions whose decoded request or response body contains the text, newest first.",
		func(ctx context.Context, in searchIn) (listOut, error) {
			if in.Text == "" {
				return listOut{}, errors.New("text is empty")
			}
			expr := "body:" + quoteFilterValue(in.Text)
			if in.Filter != "" {
				expr = "(" + in.Filter + ") " + expr
			}
			return listPage(b, expr, 0, in.Limit, true)
		})
	tool(s, b, "get_frames", "The HTTP/2 or HTTP/3 frames of a session's stream, both legs (client and upstream), at most 2000.",
		func(ctx context.Context, in idIn) (framesOut, error) {
			fs, err := b.frames(session.ID(in.ID))
			if err != nil {
				return framesOut{}, err
			}
			out := framesOut{Frames: fs}
			if out.Frames == nil {
				out.Frames = []session.Frame{}
			}
			if len(fs) > 2000 {
				out.Frames, out.Omitted = fs[:2000], len(fs)-2000
			}
			return out, nil
		})
	tool(s, b, "diff_sessions", "Compare two sessions: request line, headers (added/removed/changed), bodies (JSON-aware with paths like $.items[3].price, text by lines, binary by hash), with volatile fields (dates, request ids, tokens) marked ignored.",
		func(ctx context.Context, in diffIn) (*diff.Exchange, error) {
			if b.api != nil && b.redactor() == nil {
				var out diff.Exchange
				err := b.api.do("GET", fmt.Sprintf("/api/v1/diff?a=%d&b=%d", in.A, in.B), nil, &out)
				return &out, err
			}
			sa, err := b.get(session.ID(in.A))
			if err != nil {
				return nil, err
			}
			sb, err := b.get(session.ID(in.B))
			if err != nil {
				return nil, err
			}
			ig, err := diff.LoadIgnore(b.dataDir)
			if err != nil {
				return nil, err
			}
			return diff.Exchanges(sa, sb, ig), nil
		})
	tool(s, b, "request_as_code", "A session's request as a runnable snippet: lang one of "+strings.Join(codegen.Langs, ", ")+".",
		func(ctx context.Context, in codeIn) (codeOut, error) {
			ss, err := b.get(session.ID(in.ID))
			if err != nil {
				return codeOut{}, err
			}
			code, err := codegen.Generate(in.Lang, &ss.Request)
			return codeOut{Lang: in.Lang, Code: code}, err
		})
	tool(s, b, "store_stats", "The store's counters: sessions, bytes, file size, dropped sessions, last error.",
		func(ctx context.Context, in struct{}) (store.Stats, error) { return b.stats() })
	tool(s, b, "export_har", "HAR 1.2 of the matching sessions (newest 1000 at most), capped at max_bytes.",
		func(ctx context.Context, in harIn) (harOut, error) { return exportHAR(b, in) })
	tool(s, b, "list_breakpoints", "The breakpoints set on the running instance.",
		func(ctx context.Context, in struct{}) (breakpointsOut, error) {
			api, err := b.live()
			if err != nil {
				return breakpointsOut{}, err
			}
			var out breakpointsOut
			err = api.do("GET", "/api/v1/breakpoints", nil, &out)
			return out, err
		})
	tool(s, b, "list_paused", "Sessions held at a breakpoint right now, with their phase (request or response), headers and body.",
		func(ctx context.Context, in struct{}) (pausedOut, error) {
			api, err := b.live()
			if err != nil {
				return pausedOut{}, err
			}
			var out pausedOut
			if err := api.do("GET", "/api/v1/paused", nil, &out.Paused); err != nil {
				return out, err
			}
			if r := b.redactor(); r != nil {
				for i := range out.Paused {
					maskPaused(r, &out.Paused[i])
				}
			}
			if out.Paused == nil {
				out.Paused = []breakpoint.Paused{}
			}
			return out, nil
		})
	tool(s, b, "get_network_profile", "The network conditions the instance emulates (bandwidth, latency, offline, hosts) and the presets.",
		func(ctx context.Context, in struct{}) (networkProfileBody, error) {
			api, err := b.live()
			if err != nil {
				return networkProfileBody{}, err
			}
			var out networkProfileBody
			err = api.do("GET", "/api/v1/network-profile", nil, &out)
			return out, err
		})
	tool(s, b, "list_rules", "The rules (map remote, map local, auto-respond, header rewrite, throttle) of the running instance.",
		func(ctx context.Context, in struct{}) (map[string]any, error) {
			api, err := b.live()
			if err != nil {
				return nil, err
			}
			var out map[string]any
			err = api.do("GET", "/api/v1/rules", nil, &out)
			return out, err
		})
}

type breakpointsOut struct {
	Breakpoints []breakpoint.Breakpoint `json:"breakpoints"`
	Timeout     string                  `json:"timeout,omitempty"`
}

type pausedOut struct {
	Paused []breakpoint.Paused `json:"paused"`
}

type addBreakpointIn struct {
	Filter string `json:"filter" jsonschema:"filter expression selecting the requests to hold, e.g. 'host:api.example.com path:/login'"`
	Phase  string `json:"phase,omitempty" jsonschema:"request (default), response, or both"`
}

type resumeIn struct {
	ID         uint64      `json:"id" jsonschema:"paused session id"`
	Method     string      `json:"method,omitempty" jsonschema:"request phase: new method"`
	URL        string      `json:"url,omitempty" jsonschema:"request phase: new URL"`
	Status     int         `json:"status,omitempty" jsonschema:"response phase: new status code"`
	Header     http.Header `json:"header,omitempty" jsonschema:"replacement headers (the whole set)"`
	Body       *string     `json:"body,omitempty" jsonschema:"replacement body as text"`
	BodyBase64 *string     `json:"body_base64,omitempty" jsonschema:"replacement body as base64"`
}

type respondIn struct {
	ID     uint64      `json:"id" jsonschema:"paused session id"`
	Status int         `json:"status" jsonschema:"status code of the answer"`
	Header http.Header `json:"header,omitempty"`
	Body   string      `json:"body,omitempty"`
}

type replayIn struct {
	IDs      []uint64    `json:"ids" jsonschema:"session ids to send again"`
	Count    int         `json:"count,omitempty" jsonschema:"times each (default 1)"`
	Parallel int         `json:"parallel,omitempty" jsonschema:"requests in flight at once (default 1)"`
	Method   string      `json:"method,omitempty" jsonschema:"edit: method"`
	URL      string      `json:"url,omitempty" jsonschema:"edit: URL"`
	Header   http.Header `json:"header,omitempty" jsonschema:"edit: headers to set (replacing those names)"`
	Body     *string     `json:"body,omitempty" jsonschema:"edit: body"`
}

type sendIn struct {
	Method string      `json:"method,omitempty" jsonschema:"default GET"`
	URL    string      `json:"url" jsonschema:"absolute http or https URL"`
	Header http.Header `json:"header,omitempty"`
	Body   string      `json:"body,omitempty"`
}

type ruleIn struct {
	Rule map[string]any `json:"rule" jsonschema:"one rule as the control API takes it (see list_rules for the shape)"`
}

type okOut struct {
	OK     bool   `json:"ok"`
	ID     int64  `json:"id,omitempty"`
	Detail string `json:"detail,omitempty"`
}

func addWriteTools(s *mcp.Server, b *mcpBackend) {
	tool(s, b, "add_breakpoint", "Hold matching requests (phase request) or responses (phase response) until resumed, answered or aborted. Returns the breakpoint id.",
		func(ctx context.Context, in addBreakpointIn) (okOut, error) {
			api, err := b.live()
			if err != nil {
				return okOut{}, err
			}
			if in.Phase == "" {
				in.Phase = string(breakpoint.PhaseRequest)
			}
			var out struct {
				ID int64 `json:"id"`
			}
			if err := api.call("POST", "/api/v1/breakpoints", map[string]any{"filter": in.Filter, "phase": in.Phase, "enabled": true}, &out); err != nil {
				return okOut{}, err
			}
			return okOut{OK: true, ID: out.ID}, nil
		})
	tool(s, b, "remove_breakpoint", "Remove a breakpoint by id.",
		func(ctx context.Context, in idIn) (okOut, error) {
			return liveCall(b, "DELETE", "/api/v1/breakpoints/"+strconv.FormatUint(in.ID, 10), nil)
		})
	tool(s, b, "resume", "Continue a paused session, optionally with edits (request phase: method, url, header, body; response phase: status, header, body). The edited message goes on the wire.",
		func(ctx context.Context, in resumeIn) (okOut, error) {
			e := breakpoint.Edits{Method: in.Method, URL: in.URL, Status: in.Status, Header: in.Header, Body: in.Body, BodyBase64: in.BodyBase64}
			return liveCall(b, "POST", "/api/v1/sessions/"+strconv.FormatUint(in.ID, 10)+"/resume", e)
		})
	tool(s, b, "respond", "Answer a paused request with this response instead of sending it to the origin.",
		func(ctx context.Context, in respondIn) (okOut, error) {
			a := breakpoint.Answer{Status: in.Status, Header: in.Header, Body: in.Body}
			return liveCall(b, "POST", "/api/v1/sessions/"+strconv.FormatUint(in.ID, 10)+"/respond", a)
		})
	tool(s, b, "abort", "End a paused session: the client sees an error.",
		func(ctx context.Context, in idIn) (okOut, error) {
			return liveCall(b, "POST", "/api/v1/sessions/"+strconv.FormatUint(in.ID, 10)+"/abort", nil)
		})
	tool(s, b, "replay", "Send stored requests again (optionally edited, count times); each result is a new session linked to its original. Returns the new session ids.",
		func(ctx context.Context, in replayIn) (map[string]any, error) {
			api, err := b.live()
			if err != nil {
				return nil, err
			}
			req := map[string]any{"ids": in.IDs}
			if in.Count > 0 {
				req["count"] = in.Count
			}
			if in.Parallel > 0 {
				req["parallel"] = in.Parallel
			}
			edits := map[string]any{}
			if in.Method != "" {
				edits["method"] = in.Method
			}
			if in.URL != "" {
				edits["url"] = in.URL
			}
			if len(in.Header) > 0 {
				edits["header"] = in.Header
			}
			if in.Body != nil {
				edits["body"] = *in.Body
			}
			if len(edits) > 0 {
				req["edits"] = edits
			}
			var out map[string]any
			err = api.call("POST", "/api/v1/replay", req, &out)
			return out, err
		})
	tool(s, b, "send", "Compose and send a new request through the engine; it is recorded as a session. Returns the session summary.",
		func(ctx context.Context, in sendIn) (session.Summary, error) {
			api, err := b.live()
			if err != nil {
				return session.Summary{}, err
			}
			var out session.Summary
			err = api.call("POST", "/api/v1/send", in, &out)
			return out, err
		})
	tool(s, b, "add_rule", "Add a rule (map remote, map local, auto-respond, header rewrite, throttle). Returns its id.",
		func(ctx context.Context, in ruleIn) (okOut, error) {
			api, err := b.live()
			if err != nil {
				return okOut{}, err
			}
			var out struct {
				ID int64 `json:"id"`
			}
			if err := api.call("POST", "/api/v1/rules", in.Rule, &out); err != nil {
				return okOut{}, err
			}
			return okOut{OK: true, ID: out.ID}, nil
		})
	tool(s, b, "set_network_profile", "Emulate network conditions: a preset (3G, Slow 3G, Slow 4G, 4G, Lossy Wi-Fi, Offline), a spec 'bw:KBPS,latency:MS[,hosts:GLOB|GLOB][,url:REGEX]', or 'none'.",
		func(ctx context.Context, in struct {
			Spec string `json:"spec" jsonschema:"preset name, bw:KBPS,latency:MS, or none"`
		}) (networkProfileBody, error) {
			api, err := b.live()
			if err != nil {
				return networkProfileBody{}, err
			}
			var out networkProfileBody
			err = api.call("PUT", "/api/v1/network-profile", networkProfileBody{Spec: in.Spec}, &out)
			return out, err
		})
	tool(s, b, "remove_rule", "Remove a rule by id.",
		func(ctx context.Context, in idIn) (okOut, error) {
			return liveCall(b, "DELETE", "/api/v1/rules/"+strconv.FormatUint(in.ID, 10), nil)
		})
}

// liveCall is a control API call whose answer only says it worked.
func liveCall(b *mcpBackend, method, path string, in any) (okOut, error) {
	api, err := b.live()
	if err != nil {
		return okOut{}, err
	}
	var raw json.RawMessage
	if err := api.call(method, path, in, &raw); err != nil {
		return okOut{}, err
	}
	return okOut{OK: true, Detail: capString(string(raw), 500)}, nil
}

func addResources(s *mcp.Server, b *mcpBackend) {
	s.AddResource(&mcp.Resource{URI: "inspector://sessions/recent", Name: "recent-sessions", Title: "The 50 most recent sessions", MIMEType: "application/json"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			sums, err := b.list("", 0, mcpDefaultList, true)
			if err != nil {
				return nil, err
			}
			js, _ := json.Marshal(sums)
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(js)}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "inspector://sessions/{id}", Name: "session", Title: "One session in full (bodies capped at 64 KiB)", MIMEType: "application/json"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			idStr := strings.TrimPrefix(req.Params.URI, "inspector://sessions/")
			n, err := strconv.ParseUint(idStr, 10, 64)
			if err != nil || n == 0 {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			ss, err := b.get(session.ID(n))
			if errors.Is(err, store.ErrNotFound) {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			if err != nil {
				return nil, err
			}
			js, _ := json.Marshal(mcpSessionOf(ss, mcpDefaultBody))
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(js)}}}, nil
		})
}

// mcpSessionOf is the agent's view of a session, bodies decoded and capped at limit.
func mcpSessionOf(ss *session.Session, limit int) mcpSession {
	out := mcpSession{
		ID: ss.ID, ReplayOf: ss.ReplayOf, Started: ss.Started,
		Method: ss.Request.Method, URL: ss.Request.URL,
		ClientProto: ss.Client.Proto, UpstreamAddr: ss.Upstream.Addr, UpstreamProt: ss.Upstream.Proto,
		RequestHead: nonNilHeader(ss.Request.Header), RequestBody: mcpBodyOf(ss.Request.Header, ss.Request.Body, limit),
		Timings: ss.Timings, TLS: ss.Client.TLS, Flags: ss.Flags, Mark: ss.Mark, Comment: ss.Comment,
	}
	out.DurationMS = float64(ss.Duration().Microseconds()) / 1000
	if r := ss.Response; r != nil {
		out.Status, out.ResponseHead, out.Trailers = r.Status, r.Header, r.Trailer
		rb := mcpBodyOf(r.Header, r.Body, limit)
		out.ResponseBody = &rb
	}
	if ss.Error != nil {
		out.Error = ss.Error.Error()
	}
	const maxMsgs = 200
	out.Messages = ss.Messages
	out.MessagesSeen = ss.MessagesSeen
	if len(out.Messages) > maxMsgs {
		out.Messages, out.MessagesCut = out.Messages[len(out.Messages)-maxMsgs:], len(ss.Messages)-maxMsgs
	}
	return out
}

func mcpBodyOf(h http.Header, b session.Body, limit int) mcpBody {
	out := mcpBody{Size: b.Size}
	data := b.Data
	if dec, enc, err := decodeForAgent(h, data, limit); err == nil && enc != "" {
		data, out.Encoding = dec, enc
	} else if err != nil {
		out.Note = "could not decode " + strings.Join(h.Values("Content-Encoding"), ", ") + ": " + err.Error() + "; raw bytes below"
	}
	if len(data) > limit {
		data, out.Truncated = data[:limit], true
	}
	if b.Truncated || b.Size > int64(len(b.Data)) && b.Spilled == "" && out.Encoding == "" {
		out.Note = strings.TrimSpace(out.Note + " capture kept only part of this body")
	}
	if utf8.Valid(data) && !bytes.ContainsRune(data, 0) {
		out.Text = string(data)
	} else {
		out.Base64 = base64.StdEncoding.EncodeToString(data)
	}
	return out
}

// decodeForAgent undoes the content coding of a body, up to limit bytes (the one place the
// MCP tools decode, so it follows the engine's decoder).
func decodeForAgent(h http.Header, data []byte, limit int) ([]byte, string, error) {
	out, encs, _, err := content.Decode(h, data, limit)
	return out, strings.Join(encs, ", "), err
}

func exportHAR(b *mcpBackend, in harIn) (harOut, error) {
	maxBytes := clampLimit(in.MaxBytes, mcpDefaultHAR, mcpMaxHAR)
	sums, err := b.list(in.Filter, 0, mcpMaxHAREntries+1, true)
	if err != nil {
		return harOut{}, err
	}
	out := harOut{}
	if len(sums) > mcpMaxHAREntries {
		sums = sums[:mcpMaxHAREntries]
		out.Note = fmt.Sprintf("only the newest %d matching sessions; narrow the filter or use `inspector har export`", mcpMaxHAREntries)
	}
	var buf cappedBuffer
	buf.max = maxBytes
	hw, err := har.NewWriter(&buf, version)
	if err != nil {
		return harOut{}, err
	}
	// Oldest first, as HAR readers expect.
	for i := len(sums) - 1; i >= 0 && !buf.full; i-- {
		ss, err := b.get(sums[i].ID)
		if errors.Is(err, store.ErrNotFound) {
			continue // evicted meanwhile
		}
		if err != nil {
			return harOut{}, err
		}
		if err := hw.Add(ss); err != nil && !buf.full {
			return harOut{}, err
		}
		out.Sessions++
	}
	if !buf.full {
		if err := hw.Close(); err != nil && !buf.full {
			return harOut{}, err
		}
	}
	out.HAR, out.Truncated = buf.String(), buf.full
	if buf.full {
		out.Note = strings.TrimSpace(fmt.Sprintf("cut at %d bytes (not valid JSON past the cut); ask for fewer sessions or a larger max_bytes. %s", maxBytes, out.Note))
	}
	return out, nil
}

// cappedBuffer keeps the first max bytes written and reports full after that; writes past
// the cap fail so writers stop early.
type cappedBuffer struct {
	bytes.Buffer
	max  int
	full bool
}

var errCapped = errors.New("output cap reached")

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if c.full {
		return 0, errCapped
	}
	if room := c.max - c.Len(); len(p) > room {
		c.Buffer.Write(p[:room])
		c.full = true
		return room, errCapped
	}
	return c.Buffer.Write(p)
}

func capString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// quoteFilterValue quotes a value for the filter language when it has spaces, quotes or
// parentheses.
func quoteFilterValue(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"()\\") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// mcpActivity is the running instance's log of MCP tool calls, newest last, for the window
// and GET /api/v1/mcp/activity.
type mcpActivity struct {
	mu      sync.Mutex
	entries []mcpActivityEntry
}

type mcpActivityEntry struct {
	Time   time.Time `json:"time"`
	Client string    `json:"client"`
	Tool   string    `json:"tool"`
	Detail string    `json:"detail,omitempty"`
}

const mcpActivityKeep = 200

func (a *mcpActivity) add(client, tool, detail string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.entries = append(a.entries, mcpActivityEntry{Time: time.Now(), Client: client, Tool: tool, Detail: detail})
	if len(a.entries) > mcpActivityKeep {
		a.entries = append(a.entries[:0:0], a.entries[len(a.entries)-mcpActivityKeep:]...)
	}
}

func (a *mcpActivity) list() []mcpActivityEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]mcpActivityEntry{}, a.entries...)
}

// runMCP is `inspector mcp`: MCP on stdin/stdout until stdin closes.
func runMCP(args []string) error {
	fs := newFlagSet("mcp")
	dataDir := dataDirFlag(fs)
	allowWrites := fs.Bool("allow-writes", false, "enable the tools that change anything: breakpoints, resume/respond/abort, replay, send, rules")
	noRedact := fs.Bool("no-redact", false, "answer with secrets unmasked (masking, on by default, follows DATA-DIR/"+redact.FileName+")")
	dir, err := parseNoArgsDir(fs, args, dataDir)
	if err != nil {
		return err
	}
	src, err := openSource(dir)
	if err != nil {
		return err
	}
	defer src.Close()
	b := &mcpBackend{st: src.st, api: src.api, dataDir: dir}
	if !*noRedact {
		rs, err := openRedaction(dir)
		if err != nil {
			return err
		}
		if rs.MCP() {
			red, err := rs.Redactor(nil, redact.Options{})
			if err != nil {
				return err
			}
			b.masker = func() *redact.Redactor { return red }
		} else {
			fmt.Fprintln(stderr, "inspector mcp: masking of secrets is off ("+redact.FileName+")")
		}
	}
	if b.api != nil {
		// Tell the instance what the agent does, so its window can show it.
		b.activity = func(client, tool, detail string) {
			var ignored json.RawMessage
			b.api.call("POST", "/api/v1/mcp/activity", mcpActivityEntry{Client: client, Tool: tool, Detail: detail}, &ignored)
		}
	}
	if *allowWrites && b.api == nil {
		fmt.Fprintln(stderr, "inspector mcp: no running instance: serving the store read-only; write tools will say so")
	}
	return newMCPServer(b, *allowWrites).Run(context.Background(), newDrainStdio(os.Stdin, os.Stdout))
}

// mcpHandlers are the running instance's MCP routes on the control API: streamable HTTP at
// /api/v1/mcp (tools served from the instance's own control API, so both ways in behave
// the same) and the activity log. self connects lazily, once control.json exists.
func mcpHandlers(dataDir string, writes *atomic.Bool, masker func() *redact.Redactor, act *mcpActivity) map[string]http.Handler {
	var once sync.Once
	var ro, rw *mcp.Server
	var initErr error
	// get picks the server of each new MCP session: the read-write one while writes is on
	// (--mcp-writes, the window's switch), else the read-only one. Sessions keep the
	// server they started with.
	get := func(*http.Request) *mcp.Server {
		once.Do(func() {
			api, err := newControlClient(dataDir)
			if err != nil {
				initErr = err
				return
			}
			b := &mcpBackend{api: api, activity: act.add, masker: masker, dataDir: dataDir}
			ro, rw = newMCPServer(b, false), newMCPServer(b, true)
		})
		if ro == nil {
			return nil
		}
		if writes.Load() {
			return rw
		}
		return ro
	}
	h := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{JSONResponse: true})
	return map[string]http.Handler{
		"/api/v1/mcp": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if get(r) == nil {
				writeJSONError(w, http.StatusServiceUnavailable, "MCP: "+fmt.Sprint(initErr))
				return
			}
			h.ServeHTTP(w, r)
		}),
		"GET /api/v1/mcp/activity": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, map[string]any{"activity": act.list()})
		}),
		"POST /api/v1/mcp/activity": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var e mcpActivityEntry
			if !readJSON(w, r, &e, false) {
				return
			}
			act.add(capString(e.Client, 100), capString(e.Tool, 100), capString(e.Detail, 200))
			writeJSON(w, map[string]bool{"ok": true})
		}),
	}
}

// maskPaused masks a session held at a breakpoint, as the MCP answer shows it.
func maskPaused(r *redact.Redactor, p *breakpoint.Paused) {
	h := p.Header.Clone()
	if p.Decoded != "" {
		h.Del("Content-Encoding") // the body is shown decoded already
	}
	s := &session.Session{Request: session.Request{Method: p.Method, URL: p.URL, Header: h, Body: session.Body{Data: p.Body}}}
	if p.Phase == breakpoint.PhaseResponse {
		s.Request.Header, s.Request.Body = nil, session.Body{}
		s.Response = &session.Response{Status: p.Status, Header: h, Body: session.Body{Data: p.Body}}
	}
	m, _ := r.Session(s)
	p.URL = m.Request.URL
	mh, body := m.Request.Header, m.Request.Body.Data
	if m.Response != nil {
		mh, body = m.Response.Header, m.Response.Body.Data
	}
	if p.Decoded != "" {
		mh["Content-Encoding"] = p.Header["Content-Encoding"]
	}
	p.Header, p.Body = mh, body
}

// nonNilHeader is h, or an empty header for a session that has none (one made by send, or
// imported): the output schema wants an object, never null.
func nonNilHeader(h http.Header) http.Header {
	if h == nil {
		return http.Header{}
	}
	return h
}
