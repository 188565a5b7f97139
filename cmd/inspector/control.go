package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"inspector/engine/session"
	"inspector/filter"
	"inspector/internal/atomicfile"
	"inspector/store"
)

// controlFile is the name of the control API's descriptor in the data directory.
const controlFile = "control.json"

// controlInfo is the content of DATA_DIR/control.json.
type controlInfo struct {
	URL   string `json:"url"`
	Token string `json:"token"`
	Proxy string `json:"proxy,omitempty"`
	PID   int    `json:"pid,omitempty"` // the instance's process, so `proxy on` can tie the system proxy to its life
}

// maxImportBytes bounds a HAR upload to POST /api/v1/har.
const maxImportBytes = 1 << 30

// startControl starts the control API of a running instance on 127.0.0.1:0 with a fresh
// random bearer token, and writes DATA_DIR/control.json (0600) describing it. It serves
//
//	GET  /api/v1/sessions?filter=EXPR&after=ID&limit=N[&newest=1]   JSON array of summaries, oldest (or newest) first
//	GET  /api/v1/sessions/{id}                           one session.Session in full
//	GET  /api/v1/sessions/{id}/content                   its decoded views (content)
//	GET  /api/v1/stats                                   store.Stats
//	POST /api/v1/har                                     HAR import (body: the HAR file); {"ids": […], "evicted": N, …}
//	POST /api/v1/sessions/{id}/keep                      {"keep": true|false}: the Keep mark (never evicted)
//
// and every pattern of extra (net/http ServeMux patterns, e.g. "POST /api/v1/replay"),
// all behind the same authentication: "Authorization: Bearer TOKEN", else 401. Requests
// whose Host is not the loopback address are refused (403) to defeat DNS rebinding.
//
// It returns the listener's address (host:port) for the engine's reserved addresses, and
// stop, which removes control.json (if it is still ours) and shuts the server down; it
// is idempotent.
// Handlers run concurrently; st must stay open until stop returns.
func startControl(dataDir, proxyAddr string, st *store.Store, extra map[string]http.Handler) (addr string, stop func() error, err error) {
	if st == nil {
		return "", nil, errors.New("control API needs a store")
	}
	tok := make([]byte, 32)
	if _, err := rand.Read(tok); err != nil {
		return "", nil, err
	}
	token := hex.EncodeToString(tok)

	mux := http.NewServeMux()
	c := &controlServer{st: st}
	mux.HandleFunc("GET /api/v1/sessions", c.listSessions)
	mux.HandleFunc("GET /api/v1/sessions/{id}", c.getSession)
	mux.HandleFunc("GET /api/v1/stats", c.stats)
	mux.Handle(framesPattern, framesHandler(st))
	mux.Handle(contentPattern, contentHandler(st, instanceProtos)) // content_api.go
	mux.HandleFunc("POST /api/v1/har", c.importHAR)
	mux.Handle("POST /api/v1/sessions/{id}/keep", keepHandler(st))
	mountDiffRoutes(mux, st, dataDir)
	for pattern, h := range extra {
		if err := handleSafely(mux, pattern, h); err != nil {
			return "", nil, err
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("control API: %w", err)
	}
	addr = ln.Addr().String()
	info := controlInfo{URL: "http://" + addr, Token: token, Proxy: proxyAddr, PID: os.Getpid()}
	path := filepath.Join(dataDir, controlFile)
	if err := writeControlFile(path, info); err != nil {
		ln.Close()
		return "", nil, err
	}
	srv := &http.Server{
		Handler:           authorize(token, addr, mux),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	var once sync.Once
	var stopErr error
	stop = func() error {
		once.Do(func() { stopErr = shutdownControl(srv, served, path, token) })
		return stopErr
	}
	return addr, stop, nil
}

// shutdownControl removes control.json if it still describes this instance, then shuts
// the server down (waiting up to 5 s for requests in progress).
func shutdownControl(srv *http.Server, served chan error, path, token string) error {
	{
		var errs []error
		// Remove the file only if it still describes this instance.
		if b, err := os.ReadFile(path); err == nil {
			var cur controlInfo
			if json.Unmarshal(b, &cur) == nil && cur.Token == token {
				if err := os.Remove(path); err != nil {
					errs = append(errs, err)
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
}

// handleSafely mounts h, turning ServeMux's panic on a bad or conflicting pattern into an
// error.
func handleSafely(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("control API: pattern %q: %v", pattern, r)
		}
	}()
	if h == nil {
		return fmt.Errorf("control API: pattern %q: nil handler", pattern)
	}
	mux.Handle(pattern, h)
	return nil
}

// writeControlFile writes path with mode 0600 atomically (a temporary file renamed), so a
// reader never sees half a file.
func writeControlFile(path string, info controlInfo) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("control API: %w", err)
	}
	return nil
}

// authorize checks the bearer token (in constant time) and the Host header.
func authorize(token, addr string, next http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	_, port, _ := net.SplitHostPort(addr)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != addr && r.Host != "localhost:"+port {
			writeJSONError(w, http.StatusForbidden, "control API: host "+strconv.Quote(r.Host)+" refused")
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="inspector"`)
			writeJSONError(w, http.StatusUnauthorized, "missing or wrong bearer token (see control.json)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

type controlServer struct {
	st *store.Store
}

// apiError is the body of every error response.
type apiError struct {
	Error string `json:"error"`
}

func writeJSONError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(apiError{msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// listQuery parses ?filter=&after=&limit= into a store query.
func listQuery(v url.Values) (store.Query, error) {
	var q store.Query
	if s := v.Get("filter"); s != "" {
		f, err := filter.Parse(s)
		if err != nil {
			return q, err
		}
		q.Filter = f
	}
	if s := v.Get("after"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return q, fmt.Errorf("after: %q is not a session id", s)
		}
		q.After = session.ID(n)
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return q, fmt.Errorf("limit: %q is not a count", s)
		}
		q.Limit = n
	}
	switch v.Get("newest") {
	case "", "0", "false":
	case "1", "true":
		q.Newest = true
	default:
		return q, fmt.Errorf("newest: %q is not 1 or 0", v.Get("newest"))
	}
	return q, nil
}

// listSessions streams the matching summaries as one JSON array, reading the store in
// pages so a large result is never held at once.
func (c *controlServer) listSessions(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r.URL.Query())
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	if q.Filter != nil && q.Filter.TextClauses() != nil {
		// The JSON array stays as it is; a header says the body index is still building
		// (results are complete, only slower).
		if st := c.st.IndexStatus(); st.Building {
			w.Header().Set("X-Inspector-Index", st.String())
		}
	}
	const page = 1000
	limit, sent := q.Limit, 0
	for first := true; ; first = false {
		pq := q
		pq.Limit = page
		if limit > 0 {
			pq.Limit = min(page, limit-sent)
		}
		var sums []session.Summary
		if pq.Limit > 0 {
			if sums, err = c.st.List(pq); err != nil {
				if first {
					writeJSONError(w, http.StatusInternalServerError, err.Error())
					return
				}
				panic(http.ErrAbortHandler) // the client sees a truncated document
			}
		}
		if first {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "[")
		}
		for i := range sums {
			b, _ := json.Marshal(&sums[i])
			if sent > 0 {
				io.WriteString(w, ",")
			}
			w.Write(b)
			sent++
		}
		if len(sums) < pq.Limit || pq.Limit == 0 {
			break
		}
		if q.Newest {
			q.Before = sums[len(sums)-1].ID
		} else {
			q.After = sums[len(sums)-1].ID
		}
	}
	io.WriteString(w, "]\n")
}

func (c *controlServer) getSession(w http.ResponseWriter, r *http.Request) {
	if ss, ok := pathSession(w, r, c.st); ok {
		writeJSON(w, ss)
	}
}

func (c *controlServer) stats(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, c.st.Stats())
}

// importHAR adds the sessions of the HAR document in the body, all or none.
func (c *controlServer) importHAR(w http.ResponseWriter, r *http.Request) {
	res, err := importHARInto(c.st, http.MaxBytesReader(w, r.Body, maxImportBytes))
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, res)
}

// controlClient calls a running instance's control API, as described by its
// control.json. It is safe for concurrent use.
type controlClient struct {
	base  string
	token string
	hc    *http.Client
}

// errNoInstance: no control.json (no running instance).
var errNoInstance = errors.New("no running Inspector instance (no control.json)")

// newControlClient reads DATA_DIR/control.json.
func newControlClient(dataDir string) (*controlClient, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, controlFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNoInstance
	}
	if err != nil {
		return nil, err
	}
	var info controlInfo
	if err := json.Unmarshal(b, &info); err != nil || info.URL == "" || info.Token == "" {
		return nil, fmt.Errorf("%s is not a valid control file", filepath.Join(dataDir, controlFile))
	}
	return &controlClient{
		base:  strings.TrimSuffix(info.URL, "/"),
		token: info.Token,
		// Never through a proxy: HTTP_PROXY may well point at Inspector itself.
		hc: &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 0},
	}, nil
}

// do sends a request and decodes a JSON answer into out; an error status becomes an
// error carrying the API's message (a *controlError).
func (c *controlClient) do(method, path string, body io.Reader, out any) error {
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("running instance unreachable: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e apiError
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		return &controlError{Status: resp.StatusCode, Msg: e.Error}
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("control API answer: %w", err)
	}
	return nil
}

// controlError is a non-200 answer of the control API.
type controlError struct {
	Status int
	Msg    string
}

func (e *controlError) Error() string {
	return fmt.Sprintf("running instance: %s (HTTP %d)", e.Msg, e.Status)
}

func (c *controlClient) sessions(filterExpr string, after session.ID, limit int) ([]session.Summary, error) {
	return c.sessionsQuery(filterExpr, after, limit, false)
}

func (c *controlClient) session(id session.ID) (*session.Session, error) {
	var s session.Session
	if err := c.do("GET", "/api/v1/sessions/"+strconv.FormatUint(uint64(id), 10), nil, &s); err != nil {
		var ce *controlError
		if errors.As(err, &ce) && ce.Status == http.StatusNotFound {
			return nil, fmt.Errorf("session %d: %w", id, store.ErrNotFound)
		}
		return nil, err
	}
	return &s, nil
}

func (c *controlClient) stats() (store.Stats, error) {
	var st store.Stats
	return st, c.do("GET", "/api/v1/stats", nil, &st)
}

func (c *controlClient) importHAR(r io.Reader) (importResult, error) {
	var out importResult
	return out, c.do("POST", "/api/v1/har", r, &out)
}

// call is do with a JSON request body (in may be nil).
func (c *controlClient) call(method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = strings.NewReader(string(b))
	}
	return c.do(method, path, body, out)
}

// sessionsQuery is sessions with the order chosen: newest first when newest.
func (c *controlClient) sessionsQuery(filterExpr string, after session.ID, limit int, newest bool) ([]session.Summary, error) {
	v := url.Values{}
	if filterExpr != "" {
		v.Set("filter", filterExpr)
	}
	if after != 0 {
		v.Set("after", strconv.FormatUint(uint64(after), 10))
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if newest {
		v.Set("newest", "1")
	}
	var out []session.Summary
	return out, c.do("GET", "/api/v1/sessions?"+v.Encode(), nil, &out)
}
