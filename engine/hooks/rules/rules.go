// Package rules implements the traffic rules of Inspector as engine hooks:
//
//   - map_remote: send matching requests to another origin (scheme, host, port, and
//     optionally the path). The Host header follows the new target.
//   - map_local: answer matching requests from a local file, or from a directory (the
//     request path is looked up under it, never outside it), or from a body kept in the
//     rule itself (no file). A missing file is a 404.
//   - auto_respond: answer matching requests with a canned status, headers and body.
//   - header: set, add or remove a header on matching requests or responses.
//   - throttle: add latency before a matching request goes upstream and/or cap the
//     bandwidth of its request and response bodies (bytes per second).
//   - body_rewrite, url_rewrite, status_rewrite and block (rewrite.go).
//   - fingerprint: the TLS ClientHello towards the origin, mirror or go (fingerprint.go).
//
// Rules match with the filter language (filter) and apply in list order. At the
// request stage map_local and auto_respond answer the request, which ends the chain; at
// the response stage only header rules of phase "response" and throttle apply. Filters
// that look at responses (status:, type:) never match at the request stage.
//
// # Concurrency
//
// A rule list is compiled once per edit into an immutable chain and swapped atomically;
// the hooks read the current chain without locks. Manager is safe for concurrent use.
package rules

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"inspector/engine"
	"inspector/engine/hooks/bodyprobe"
	"inspector/engine/session"
	"inspector/filter"
	"inspector/internal/settings"
)

// Kind names a rule type.
type Kind string

const (
	MapRemote   Kind = "map_remote"
	MapLocal    Kind = "map_local"
	AutoRespond Kind = "auto_respond"
	Header      Kind = "header"
	Throttle    Kind = "throttle"
)

// Rule is one rule. Which fields matter depends on Kind.
type Rule struct {
	ID      int64  `json:"id"`
	Name    string `json:"name,omitempty"`
	Kind    Kind   `json:"kind"`
	Enabled bool   `json:"enabled"`
	Filter  string `json:"filter"`

	// map_remote: an absolute http(s) URL. Its scheme and host (with port) replace the
	// request's; a path other than "" or "/" replaces the request's path, and a query
	// replaces the request's query.
	Target string `json:"target,omitempty"`
	// map_local: a file, or a directory under which the request path is looked up; ""
	// answers with Body (an inline body: no file is read).
	File string `json:"file,omitempty"`
	// auto_respond (Status, Header, Body) and map_local (Header: extra headers).
	Status int         `json:"status,omitempty"`
	Header http.Header `json:"header,omitempty"`
	Body   string      `json:"body,omitempty"`
	// header: Phase "request" (default) or "response"; Op "set" (default), "add" or
	// "remove"; HeaderName and HeaderValue.
	Phase       string `json:"phase,omitempty"`
	Op          string `json:"op,omitempty"`
	HeaderName  string `json:"header_name,omitempty"`
	HeaderValue string `json:"header_value,omitempty"`
	// throttle: LatencyMS before the request goes upstream; BytesPerSec caps both bodies.
	LatencyMS   int   `json:"latency_ms,omitempty"`
	BytesPerSec int64 `json:"bytes_per_sec,omitempty"`
	// body_rewrite and url_rewrite: Pattern (RE2) and Replace ($1 expands); Phase as for
	// header (body_rewrite only). block: List of host globs and URL prefixes.
	Pattern string   `json:"pattern,omitempty"`
	Replace string   `json:"replace,omitempty"`
	List    []string `json:"list,omitempty"`
	// fingerprint: "mirror" or "go" (fingerprint.go).
	Fingerprint string `json:"fingerprint,omitempty"`
}

// compiledRule is a validated rule with its parsed parts.
type compiledRule struct {
	Rule
	expr   *filter.Expr
	target *url.URL
	rw     rewrite
}

// compile checks the rule and returns it compiled.
func (r Rule) compile() (*compiledRule, error) {
	name := r.Name
	if name == "" {
		name = string(r.Kind)
	}
	fail := func(format string, args ...any) (*compiledRule, error) {
		return nil, fmt.Errorf("rule %q: "+format, append([]any{name}, args...)...)
	}
	if strings.TrimSpace(r.Filter) == "" && !r.emptyFilterAllowed() {
		return fail("empty filter")
	}
	expr, err := filter.Parse(r.Filter)
	if err != nil {
		return fail("%v", err)
	}
	c := &compiledRule{Rule: r, expr: expr}
	if err := settings.Header(r.Header); err != nil {
		return fail("%v", err)
	}
	switch r.Kind {
	case MapRemote:
		u, err := url.Parse(r.Target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fail("target %q: want an absolute http or https URL", r.Target)
		}
		c.target = u
	case MapLocal:
		if r.File != "" && !filepath.IsAbs(r.File) {
			return fail("file %q: want an absolute path", r.File)
		}
		if r.File != "" && r.Body != "" {
			return fail("a file and an inline body: keep one")
		}
		if r.Status != 0 && (r.Status < 100 || r.Status > 999) {
			return fail("status %d out of range", r.Status)
		}
	case AutoRespond:
		if r.Status < 100 || r.Status > 999 {
			return fail("status %d out of range", r.Status)
		}
	case Header:
		switch r.Phase {
		case "", "request", "response":
		default:
			return fail("phase %q: want request or response", r.Phase)
		}
		switch r.Op {
		case "", "set", "add", "remove":
		default:
			return fail("op %q: want set, add or remove", r.Op)
		}
		if !httpguts.ValidHeaderFieldName(r.HeaderName) {
			return fail("header name %q is invalid", r.HeaderName)
		}
		if strings.ContainsAny(r.HeaderValue, "\r\n\x00") {
			return fail("header value has a line break or NUL")
		}
	case Throttle:
		if r.LatencyMS < 0 || r.BytesPerSec < 0 || (r.LatencyMS == 0 && r.BytesPerSec == 0) {
			return fail("want a positive latency_ms and/or bytes_per_sec")
		}
	case BodyRewrite, URLRewrite, StatusRewrite, Block:
		return c.compileRewrite(fail)
	case FingerprintKind:
		return c.compileFingerprint(fail)
	default:
		return fail("unknown kind %q (map_remote, map_local, auto_respond, header, throttle, body_rewrite, url_rewrite, status_rewrite, block, fingerprint)", r.Kind)
	}
	return c, nil
}

// Validate checks a rule.
func (r Rule) Validate() error { _, err := r.compile(); return err }

type chain struct{ rules []*compiledRule }

type fileFormat struct {
	Rules []Rule `json:"rules"`
}

var spec = settings.Spec[fileFormat, Rule, *chain]{
	Name:     "rule",
	Items:    func(f *fileFormat) *[]Rule { return &f.Rules },
	ID:       func(r *Rule) *int64 { return &r.ID },
	Validate: Rule.Validate,
	Compile: func(f *fileFormat) (*chain, error) {
		ch := &chain{}
		for _, r := range f.Rules {
			if !r.Enabled {
				continue
			}
			c, err := r.compile()
			if err != nil {
				return nil, err
			}
			ch.rules = append(ch.rules, c)
		}
		return ch, nil
	},
}

// Manager holds the rule list, its compiled chain and where it is saved.
type Manager struct {
	set     *settings.Set[fileFormat, Rule, *chain]
	folders *folders
}

// New loads the rules from path (JSON, e.g. DATA_DIR/rules.json; missing means none). An
// empty path keeps them in memory. A file that does not parse or validate is an error
// naming the file and the position; it is never overwritten. The folder of path is the
// data directory: map_local never serves a file in it, and the folders map_local may
// serve from are kept there (map-local-folders.json, see AllowFolder).
func New(path string) (*Manager, error) {
	set, err := settings.Open(path, spec)
	if err != nil {
		return nil, err
	}
	dataDir := ""
	if path != "" {
		if abs, err := filepath.Abs(path); err == nil {
			dataDir = filepath.Dir(abs)
		}
	}
	return &Manager{set: set, folders: newFolders(dataDir)}, nil
}

// Warning is what loading the rules file recovered from (an empty file, as a power loss
// leaves it), or "".
func (m *Manager) Warning() string { return m.set.Warning() }

// Rules returns a copy of the rule list.
func (m *Manager) Rules() []Rule { return m.set.Items() }

// Replace sets the whole list. Rules without an id get a new one. Nothing changes when any
// rule is invalid or the list cannot be saved. It returns the stored list. A map_local
// rule that is new or names another file than before must name a file under an allowed
// folder (Folders) outside the data directory; rules kept as they were are not
// rechecked here (serving checks every file).
func (m *Manager) Replace(rs []Rule) ([]Rule, error) {
	if err := m.checkFiles(rs, false); err != nil {
		return nil, err
	}
	return m.set.Replace(rs)
}

// ReplaceAllowingFolders is Replace for the window, where the user edits the rules: the
// folder of a map_local file the user entered there (the file's folder, or the folder
// itself) is allowed first. The data directory is refused all the same.
func (m *Manager) ReplaceAllowingFolders(rs []Rule) ([]Rule, error) {
	if err := m.checkFiles(rs, true); err != nil {
		return nil, err
	}
	return m.set.Replace(rs)
}

// checkFiles checks the files of the map_local rules of rs that are new or changed; with
// allow, the folder of a file outside every allowed folder is allowed.
func (m *Manager) checkFiles(rs []Rule, allow bool) error {
	old := map[int64]string{}
	for _, r := range m.set.Items() {
		if r.Kind == MapLocal {
			old[r.ID] = r.File
		}
	}
	for _, r := range rs {
		if r.Kind != MapLocal || r.File == "" || !filepath.IsAbs(r.File) {
			continue // compile reports what is wrong with it
		}
		if f, ok := old[r.ID]; ok && r.ID != 0 && f == r.File {
			continue
		}
		err := m.folders.check(r.File)
		if allow && errors.Is(err, ErrNotInFolder) {
			dir := r.File
			if fi, serr := os.Stat(dir); serr != nil || !fi.IsDir() {
				dir = filepath.Dir(dir)
			}
			if err = m.folders.allow(dir); err == nil {
				err = m.folders.check(r.File)
			}
		}
		if err != nil {
			return fmt.Errorf("rule %q: %w", r.nameOr(), err)
		}
	}
	return nil
}

func (r Rule) nameOr() string {
	if r.Name != "" {
		return r.Name
	}
	return string(r.Kind)
}

// Folders lists the folders map_local rules may serve files from.
func (m *Manager) Folders() []string { return m.folders.list() }

// AllowFolder lets map_local rules serve files under dir (an absolute path of an existing
// folder outside the data directory). Only the user calls it: the window's Rules form
// and `inspector rules allow-folder`; the control API and MCP cannot.
func (m *Manager) AllowFolder(dir string) error { return m.folders.allow(dir) }

// RemoveFolder takes dir off the allowed folders.
func (m *Manager) RemoveFolder(dir string) error { return m.folders.remove(dir) }

// Add appends a rule (its id is ignored) and returns its new id. A map_local rule's file
// must be under an allowed folder, outside the data directory.
func (m *Manager) Add(r Rule) (int64, error) {
	r.ID = 0
	if err := m.checkFiles([]Rule{r}, false); err != nil {
		return 0, err
	}
	return m.set.Add(r)
}

// Remove deletes a rule; an unknown id is an error.
func (m *Manager) Remove(id int64) error { return m.set.Remove(id) }

// OnChange registers f to be called after the rule list changed (on the goroutine that
// changed it, never under a lock; f must not block).
func (m *Manager) OnChange(f func()) { m.set.OnChange(f) }

// Install registers the rule hooks on e.
func (m *Manager) Install(e *engine.Engine) {
	e.AddRequestHook(engine.RequestHookFunc(m.OnRequest))
	e.AddResponseHook(engine.ResponseHookFunc(m.OnResponse))
}

// matcher evaluates expressions on one session, summarizing it once; a rule that
// changes the request (map_remote) calls reset.
type matcher struct {
	s   *session.Session
	sum *session.Summary
}

func (mt *matcher) match(e *filter.Expr) bool {
	if e.NeedsSession() {
		return e.Match(mt.s)
	}
	if mt.sum == nil {
		sum := mt.s.Summarize()
		mt.sum = &sum
	}
	return e.MatchSummary(mt.sum)
}

func (mt *matcher) reset() { mt.sum = nil }

// OnRequest applies the request-stage rules.
func (m *Manager) OnRequest(ctx context.Context, f *engine.Flow) error {
	rs := m.set.Chain().rules
	mt := matcher{s: f.Session}
	for _, c := range rs {
		if bodyprobe.Needed(c.expr) {
			mt.s = bodyprobe.Request(f.Session, f.Request.Header, &f.Request.Body)
			break
		}
	}
	for _, c := range rs {
		if !mt.match(c.expr) {
			continue
		}
		r := f.Request
		switch c.Kind {
		case MapRemote:
			u := *r.URL
			u.Scheme, u.Host = c.target.Scheme, c.target.Host
			if c.target.Path != "" && c.target.Path != "/" {
				u.Path, u.RawPath = c.target.Path, c.target.RawPath
			}
			if c.target.RawQuery != "" {
				u.RawQuery = c.target.RawQuery
			}
			r.URL = &u
			r.Host = c.target.Host
			f.Session.Request.URL = u.String()
			mt.s.Request.URL = f.Session.Request.URL // mt.s may be a bodyprobe copy
			mt.reset()
		case MapLocal:
			f.Response = m.localResponse(c, r)
			return nil
		case AutoRespond:
			f.Response = canned(c.Status, c.Header, []byte(c.Body), r)
			return nil
		case Header:
			if c.Phase == "" || c.Phase == "request" {
				editHeader(r.Header, c)
			}
		case Throttle:
			if c.LatencyMS > 0 {
				t := time.NewTimer(time.Duration(c.LatencyMS) * time.Millisecond)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				}
			}
			if c.BytesPerSec > 0 && r.Body != nil && r.Body != http.NoBody {
				r.Body = NewLimitedReader(ctx, r.Body, c.BytesPerSec)
			}
		case FingerprintKind:
			if err := c.applyFingerprint(f); err != nil {
				return err
			}
		case BodyRewrite, URLRewrite, Block:
			f.Stage = engine.StageRequestHeaders // SetBody edits the request
			answered, err := c.requestRewrite(f, &mt)
			if err != nil || answered {
				return err
			}
		}
	}
	return nil
}

// OnResponse applies the response-stage rules.
func (m *Manager) OnResponse(ctx context.Context, f *engine.Flow) error {
	mt := matcher{s: f.Session}
	for _, c := range m.set.Chain().rules {
		if (c.Kind != Header || c.Phase != "response") && c.Kind != Throttle && !c.isResponseRewrite() {
			continue
		}
		if !mt.match(c.expr) {
			continue
		}
		switch c.Kind {
		case Header:
			editHeader(f.Response.Header, c)
		case Throttle:
			if c.BytesPerSec > 0 && f.Response.Body != nil && f.Response.StatusCode != http.StatusSwitchingProtocols {
				f.Response.Body = NewLimitedReader(ctx, f.Response.Body, c.BytesPerSec)
			}
		case StatusRewrite, BodyRewrite:
			f.Stage = engine.StageResponseHeaders // SetBody edits the response
			if err := c.responseRewrite(f); err != nil {
				return err
			}
		}
	}
	return nil
}

func editHeader(h http.Header, r *compiledRule) {
	switch r.Op {
	case "remove":
		h.Del(r.HeaderName)
	case "add":
		h.Add(r.HeaderName, r.HeaderValue)
	default:
		h.Set(r.HeaderName, r.HeaderValue)
	}
}

func canned(status int, hdr http.Header, body []byte, req *http.Request) *http.Response {
	h := hdr.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Del("Transfer-Encoding")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, ContentLength: int64(len(body)),
		Body: io.NopCloser(bytes.NewReader(body)), Request: req}
}

// maxLocalFile bounds a map_local file read into memory.
const maxLocalFile = 64 << 20

// localResponse reads the mapped file. For a directory the request path is cleaned
// (so ".." cannot leave the directory) and looked up under it, with index.html for "/".
// The file is checked again as it is opened (folders.open): under an allowed folder,
// outside the data directory, after symlinks; a refused file is a 403 saying why.
func (m *Manager) localResponse(c *compiledRule, r *http.Request) *http.Response {
	if c.File == "" {
		return inlineResponse(c, r)
	}
	p := c.File
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		rel := path.Clean("/" + r.URL.Path)
		if strings.HasSuffix(r.URL.Path, "/") {
			rel = path.Join(rel, "index.html")
		}
		p = filepath.Join(c.File, filepath.FromSlash(rel))
	}
	h := c.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	fail := func(status int, format string, a ...any) *http.Response {
		h := http.Header{"Content-Type": {"text/plain; charset=utf-8"}, "X-Inspector-Rule": {c.name()}}
		return canned(status, h, []byte(fmt.Sprintf("Inspector map_local rule %q: ", c.name())+fmt.Sprintf(format, a...)+"\n"), r)
	}
	fh, fi, err := m.folders.open(p)
	switch {
	case errors.Is(err, ErrProtected) || errors.Is(err, ErrNotInFolder):
		return fail(http.StatusForbidden, "refused: %v", err)
	case err != nil && errors.Is(err, os.ErrNotExist):
		return fail(http.StatusNotFound, "no file %s", p)
	case err != nil:
		return fail(http.StatusForbidden, "refused: %v", err)
	}
	defer fh.Close()
	if fi.IsDir() {
		return fail(http.StatusNotFound, "no file %s", p)
	}
	if fi.Size() > maxLocalFile {
		return fail(http.StatusNotFound, "%s is larger than %d bytes", p, maxLocalFile)
	}
	b, err := readLimited(fh, maxLocalFile)
	if err != nil {
		return fail(http.StatusInternalServerError, "%v", err)
	}
	if h.Get("Content-Type") == "" {
		ct := mime.TypeByExtension(filepath.Ext(p))
		if ct == "" {
			ct = http.DetectContentType(b)
		}
		h.Set("Content-Type", ct)
	}
	status := c.Status
	if status == 0 {
		status = http.StatusOK
	}
	return canned(status, h, b, r)
}

// inlineResponse answers from the rule's own body: no file is read, so no folder applies.
func inlineResponse(c *compiledRule, r *http.Request) *http.Response {
	h := c.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", http.DetectContentType([]byte(c.Body)))
	}
	status := c.Status
	if status == 0 {
		status = http.StatusOK
	}
	return canned(status, h, []byte(c.Body), r)
}

func (c *compiledRule) name() string {
	if c.Name != "" {
		return c.Name
	}
	return fmt.Sprintf("%s #%d", c.Kind, c.ID)
}

// NewLimitedReader returns a reader that yields rc's bytes at no more than bytesPerSec
// (a token bucket with a burst of at most 16 KiB or one second's worth, whichever is
// smaller), waiting on timers that stop when ctx ends. Close closes rc.
func NewLimitedReader(ctx context.Context, rc io.ReadCloser, bytesPerSec int64) io.ReadCloser {
	burst := min(int64(16<<10), bytesPerSec)
	return &limitedReader{ctx: ctx, rc: rc, rate: bytesPerSec, burst: max(burst, 1)}
}

type limitedReader struct {
	ctx   context.Context
	rc    io.ReadCloser
	rate  int64
	burst int64
	start time.Time
	sent  int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.start.IsZero() {
		l.start = time.Now()
	}
	if int64(len(p)) > l.burst {
		p = p[:l.burst]
	}
	n, err := l.rc.Read(p)
	l.sent += int64(n)
	// Allowed so far: rate × elapsed + burst. Hold these bytes until they fit.
	due := l.start.Add(time.Duration(float64(l.sent-l.burst) / float64(l.rate) * float64(time.Second)))
	if d := time.Until(due); n > 0 && d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-l.ctx.Done():
			t.Stop()
			return 0, l.ctx.Err()
		}
	}
	return n, err
}

func (l *limitedReader) Close() error { return l.rc.Close() }

// Match reports the rules that would apply to s at the request stage (for the UI).
func (m *Manager) Match(s *session.Session) []Rule {
	var out []Rule
	mt := matcher{s: s}
	for _, c := range m.set.Chain().rules {
		if mt.match(c.expr) {
			out = append(out, c.Rule)
		}
	}
	return out
}
