package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	"inspector/codegen"
	"inspector/contract"
	"inspector/diff"
	"inspector/engine/session"
	"inspector/store"
)

func init() {
	register("diff", "compare two sessions, or two recordings with --recording", runDiff)
}

// errDiffer makes `inspector diff` exit with status 1 when the two sides differ.
var errDiffer = errors.New("they differ")

// recordingResult is the JSON form of a recording diff (CLI --json and the control API).
type recordingResult struct {
	Equal       bool   `json:"equal"`
	SummaryLine string `json:"summary_line"`
	*diff.Recording
}

// recordingRequest is the body of POST /api/v1/diff/recording.
type recordingRequest struct {
	A            string  `json:"a"`
	B            string  `json:"b"`
	SlowerFactor float64 `json:"slower_factor,omitempty"`
	SlowerMinMS  float64 `json:"slower_min_ms,omitempty"`
}

func runDiff(args []string) error {
	fs := newFlagSet("diff")
	dataDir := dataDirFlag(fs)
	asJSON := fs.Bool("json", false, "the comparison as JSON")
	recording := fs.Bool("recording", false, "compare two recordings: HAR files, data directories, or filter:EXPR / ids:N-M of the current store")
	factor := fs.Float64("slower-factor", 2, "with --recording: a call is slower when it took more than this many times as long")
	minMS := fs.Float64("slower-min-ms", 100, "with --recording: … and at least this many milliseconds more")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("diff takes two session ids, or --recording and two recordings")
	}
	if *factor < 1 || *minMS < 0 {
		return usagef("diff: --slower-factor must be at least 1 and --slower-min-ms not negative")
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	ig, err := diff.LoadIgnore(dir)
	if err != nil {
		return err
	}
	if *recording {
		req := recordingRequest{A: fs.Arg(0), B: fs.Arg(1), SlowerFactor: *factor, SlowerMinMS: *minMS}
		for _, spec := range []*string{&req.A, &req.B} {
			if diff.IsCurrentStore(*spec) {
				if _, err := diff.StoreQuery(*spec); err != nil {
					return usagef("diff: %v", err)
				}
			} else if abs, err := filepath.Abs(*spec); err == nil {
				*spec = abs // the running instance may resolve it, from another directory
			}
		}
		res, err := diffRecordings(dir, req, ig)
		if err != nil {
			return err
		}
		return report(*asJSON, res, res.WriteText, res.Equal)
	}
	ids, err := parseSessionIDs("diff", fs.Args())
	if err != nil {
		return err
	}
	ss, err := getSessions(dir, ids)
	if err != nil {
		return err
	}
	e := diff.Exchanges(ss[0], ss[1], ig)
	return report(*asJSON, e, e.WriteText, e.Equal)
}

// report prints a comparison as JSON or text; errDiffer when the sides differ.
func report(asJSON bool, v any, text func(io.Writer) error, equal bool) error {
	var err error
	if asJSON {
		err = writeJSONLine(stdout, v)
	} else {
		err = text(stdout)
	}
	if err == nil && !equal {
		err = errDiffer
	}
	return err
}

func parseSessionIDs(cmd string, args []string) ([]session.ID, error) {
	var ids []session.ID
	for _, a := range args {
		id, err := parseSessionID(cmd, a)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// getSessions reads sessions from the data directory's store, or the running instance.
func getSessions(dir string, ids []session.ID) ([]*session.Session, error) {
	src, err := openSource(dir)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	out := make([]*session.Session, len(ids))
	for i, id := range ids {
		if out[i], err = src.get(id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// get reads one session from the store or the running instance.
func (s *source) get(id session.ID) (*session.Session, error) {
	switch {
	case s.st != nil:
		return s.st.Get(id)
	case s.api != nil:
		return s.api.session(id)
	}
	return nil, fmt.Errorf("session %d: %w", id, store.ErrNotFound)
}

// diffRecordings loads both recordings and compares them. filter: and ids: recordings
// read the data directory's store, or go through the running instance's control API
// when it holds the store.
func diffRecordings(dir string, req recordingRequest, ig *diff.IgnoreConfig) (*recordingResult, error) {
	var cur diff.Eacher
	if diff.IsCurrentStore(req.A) || diff.IsCurrentStore(req.B) {
		src, err := openSource(dir)
		if err != nil {
			return nil, err
		}
		defer src.Close()
		switch {
		case src.api != nil:
			var res recordingResult
			b, _ := json.Marshal(req)
			if err := src.api.do("POST", "/api/v1/diff/recording", strings.NewReader(string(b)), &res); err != nil {
				return nil, err
			}
			return &res, nil
		case src.st != nil:
			cur = src.st
		default:
			return nil, fmt.Errorf("diff: no sessions stored in %s yet", dir)
		}
	}
	return compareRecordings(cur, req, ig)
}

func compareRecordings(cur diff.Eacher, req recordingRequest, ig *diff.IgnoreConfig) (*recordingResult, error) {
	ca, cb := contract.NewInferrer(), contract.NewInferrer()
	a, err := diff.LoadRecordingFunc(req.A, cur, ca.Add)
	if err != nil {
		return nil, err
	}
	b, err := diff.LoadRecordingFunc(req.B, cur, cb.Add)
	if err != nil {
		return nil, err
	}
	r := diff.Recordings(req.A, a, req.B, b, diff.Options{SlowerFactor: req.SlowerFactor, SlowerMinMS: req.SlowerMinMS, Ignore: ig})
	r.ContractDrift = contract.CompareDocuments(ca.Document(contract.Options{}), cb.Document(contract.Options{}))
	return &recordingResult{Equal: r.Equal(), SummaryLine: r.SummaryLine(), Recording: r}, nil
}

func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// showAsFlag takes "--as LANG" (or --as=LANG, -as) out of show's arguments.
func showAsFlag(args []string) (lang string, rest []string, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--as" || a == "-as":
			if i+1 < len(args) {
				return args[i+1], append(append([]string{}, args[:i]...), args[i+2:]...), true
			}
			return "", args, true
		case strings.HasPrefix(a, "--as=") || strings.HasPrefix(a, "-as="):
			_, v, _ := strings.Cut(a, "=")
			return v, append(append([]string{}, args[:i]...), args[i+1:]...), true
		}
	}
	return "", args, false
}

// runShowAs is `inspector show ID… --as LANG`: the requests as code, in order.
func runShowAs(lang string, args []string) error {
	fs := newFlagSet("show")
	dataDir := dataDirFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if lang == "" {
		return usagef("show --as needs a language: %s", strings.Join(codegen.Langs, " "))
	}
	if _, err := codegen.Generate(lang, &session.Request{}); err != nil {
		return usagef("show --as: %v", err)
	}
	if fs.NArg() == 0 {
		return usagef("show --as takes one or more session ids")
	}
	ids, err := parseSessionIDs("show", fs.Args())
	if err != nil {
		return err
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	ss, err := getSessions(dir, ids)
	if err != nil {
		return err
	}
	reqs := make([]*session.Request, len(ss))
	for i, s := range ss {
		reqs[i] = &s.Request
	}
	code, err := codegen.GenerateMany(lang, reqs)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, code)
	return err
}

// mountDiffRoutes adds the diff and code routes to the control API:
//
//	GET  /api/v1/diff?a=ID&b=ID                 exchange diff (diff.Exchange)
//	POST /api/v1/diff/recording                 recording diff; body {"a": SPEC, "b": SPEC}
//	GET  /api/v1/sessions/{id}/code?lang=LANG   the request as code (text/plain)
//
// A recording SPEC is filter:EXPR or ids:N-M of this instance's store, or a HAR file or
// data directory on this machine.
func mountDiffRoutes(mux *http.ServeMux, st *store.Store, dataDir string) {
	ids := func(w http.ResponseWriter, r *http.Request, names ...string) ([]session.ID, bool) {
		var out []session.ID
		for _, n := range names {
			v, err := strconv.ParseUint(strings.TrimPrefix(r.URL.Query().Get(n), "#"), 10, 64)
			if err != nil || v == 0 {
				writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("%s: %q is not a session id", n, r.URL.Query().Get(n)))
				return nil, false
			}
			out = append(out, session.ID(v))
		}
		return out, true
	}
	get := func(w http.ResponseWriter, id session.ID) (*session.Session, bool) {
		s, err := st.Get(id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			writeJSONError(w, http.StatusNotFound, err.Error())
		case err != nil:
			writeJSONError(w, http.StatusInternalServerError, err.Error())
		default:
			return s, true
		}
		return nil, false
	}
	mux.HandleFunc("GET /api/v1/diff", func(w http.ResponseWriter, r *http.Request) {
		ab, ok := ids(w, r, "a", "b")
		if !ok {
			return
		}
		ig, err := diff.LoadIgnore(dataDir)
		if err != nil {
			writeJSONError(w, http.StatusInternalServerError, err.Error())
			return
		}
		sa, ok := get(w, ab[0])
		if !ok {
			return
		}
		sb, ok := get(w, ab[1])
		if !ok {
			return
		}
		writeJSON(w, diff.Exchanges(sa, sb, ig))
	})
	mux.HandleFunc("POST /api/v1/diff/recording", func(w http.ResponseWriter, r *http.Request) {
		var req recordingRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil || req.A == "" || req.B == "" {
			writeJSONError(w, http.StatusBadRequest, `body: want {"a": SPEC, "b": SPEC}`+errSuffix(err))
			return
		}
		if req.SlowerFactor < 0 || req.SlowerMinMS < 0 {
			writeJSONError(w, http.StatusBadRequest, "slower_factor and slower_min_ms must not be negative")
			return
		}
		ig, err := diff.LoadIgnore(dataDir)
		if err != nil {
			writeJSONError(w, http.StatusInternalServerError, err.Error())
			return
		}
		res, err := compareRecordings(st, req, ig)
		if err != nil {
			writeJSONError(w, http.StatusBadRequest, err.Error())
			return
		}
		writeJSON(w, res)
	})
	mux.HandleFunc("GET /api/v1/sessions/{id}/code", func(w http.ResponseWriter, r *http.Request) {
		n, ok := pathID(w, r)
		if !ok {
			return
		}
		lang := r.URL.Query().Get("lang")
		if lang == "" {
			lang = "curl"
		}
		s, ok := get(w, session.ID(n))
		if !ok {
			return
		}
		code, err := codegen.Generate(lang, &s.Request)
		if err != nil {
			writeJSONError(w, http.StatusBadRequest, err.Error())
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, code)
	})
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}
