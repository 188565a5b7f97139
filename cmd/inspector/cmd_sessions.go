package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"inspector/internal/textual"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"inspector/engine/session"
	"inspector/filter"
	"inspector/redact"
	"inspector/store"
	"inspector/store/archive"
	"inspector/store/har"
)

func init() {
	register("sessions", "list stored sessions", runSessions)
	register("show", "show one session in full", runShow)
	register("har export", "write sessions as HAR 1.2", runHARExport)
	register("har import", "add the sessions of a HAR file", runHARImport)
}

// cliLockTimeout is how long a subcommand waits for the store before concluding that a
// running instance holds it and using the control API instead.
const cliLockTimeout = 300 * time.Millisecond

// source is where a read subcommand gets sessions: the store file directly, or a running
// instance's control API. Exactly one of st and api is set, or neither for a data
// directory without a store yet (empty).
type source struct {
	st  *store.Store
	api *controlClient
}

func (s *source) Close() {
	if s.st != nil {
		s.st.Close()
	}
}

// openSource opens the store read-only; when a running instance holds it, it connects to
// that instance's control API instead.
func openSource(dataDir string) (*source, error) {
	st, err := store.Open(filepath.Join(dataDir, "sessions.db"), store.Options{ReadOnly: true, LockTimeout: cliLockTimeout})
	switch {
	case err == nil:
		return &source{st: st}, nil
	case errors.Is(err, os.ErrNotExist):
		return &source{}, nil
	case errors.Is(err, store.ErrLocked):
		api, cerr := newControlClient(dataDir)
		if cerr != nil {
			return nil, fmt.Errorf("%w, but its control API is not available: %v", err, cerr)
		}
		return &source{api: api}, nil
	case errors.Is(err, store.ErrCorrupt):
		return nil, fmt.Errorf("%w (start Inspector with --reset-store to move it aside and begin a new one)", err)
	default:
		return nil, err
	}
}

func parseFilterFlag(expr string) (*filter.Expr, error) {
	if expr == "" {
		return nil, nil
	}
	f, err := filter.Parse(expr)
	if err != nil {
		return nil, usagef("--filter: %v", err)
	}
	return f, nil
}

func runSessions(args []string) error {
	fs := newFlagSet("sessions")
	dataDir := dataDirFlag(fs)
	filterExpr := fs.String("filter", "", "only sessions matching this filter expression")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	limit := fs.Int("limit", 0, "at most N sessions (the oldest N matching; 0: all)")
	after := fs.Uint64("after", 0, "only sessions with an id above ID (paging)")
	contractFlag(fs)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *limit < 0 {
		return usagef("--limit must not be negative")
	}
	f, err := parseFilterFlag(*filterExpr)
	if err != nil {
		return err
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	src, err := openSource(dir)
	if err != nil {
		return err
	}
	defer src.Close()
	if src.st != nil && f != nil && f.TextClauses() != nil {
		if st := src.st.IndexStatus(); st.Building {
			fmt.Fprintf(stderr, "%s: sessions not indexed yet are searched one by one (slower)\n", st)
		}
	}

	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	emit := func(s *session.Summary) error {
		if *asJSON {
			return enc.Encode(s)
		}
		_, err := fmt.Fprintln(stdout, formatSessionLine(*s))
		return err
	}
	q := store.Query{Filter: f, After: session.ID(*after), Limit: *limit}
	const page = 1000
	for sent := 0; ; {
		pq := q
		pq.Limit = page
		if q.Limit > 0 {
			pq.Limit = min(page, q.Limit-sent)
		}
		if pq.Limit == 0 {
			return nil
		}
		var sums []session.Summary
		switch {
		case src.st != nil:
			sums, err = src.st.List(pq)
		case src.api != nil:
			sums, err = src.api.sessions(*filterExpr, pq.After, pq.Limit)
		}
		if err != nil {
			return err
		}
		for i := range sums {
			if err := emit(&sums[i]); err != nil {
				return err
			}
		}
		sent += len(sums)
		if len(sums) < pq.Limit {
			return nil
		}
		q.After = sums[len(sums)-1].ID
	}
}

// shortProto gives the short protocol names of the session line.
func shortProto(p string) string {
	switch p {
	case session.HTTP1:
		return "h1"
	case "":
		return "-"
	}
	return p
}

// formatBytes prints a byte count the way the session line does: 512B, 1.2kB, 3.4MB.
func formatBytes(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10) + "B"
	case n < 1000*1000:
		return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + "kB"
	case n < 1000*1000*1000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "MB"
	}
	return strconv.FormatFloat(float64(n)/1e9, 'f', 1, 64) + "GB"
}

func formatMS(ms float64) string {
	switch {
	case ms >= 10000:
		return strconv.FormatFloat(ms/1000, 'f', 0, 64) + "s"
	case ms >= 1000:
		return strconv.FormatFloat(ms/1000, 'f', 1, 64) + "s"
	case ms >= 10:
		return strconv.FormatFloat(ms, 'f', 0, 64) + "ms"
	}
	return strconv.FormatFloat(ms, 'f', 1, 64) + "ms"
}

// formatSessionLine is the one-line text form of a session, shared by `inspector
// sessions` and the headless output (PRODUCT.md):
//
//	#42 200 GET https://example.com/api h2→h1 1.2kB 35ms
//
// status is "---" without a response; the protocols are client→upstream ("-" when there
// was no upstream leg); the size is the response body as on the wire. A failure, a
// replay and an import are appended.
func formatSessionLine(s session.Summary) string {
	var b strings.Builder
	b.Grow(64 + len(s.URL))
	b.WriteString("#")
	b.WriteString(strconv.FormatUint(uint64(s.ID), 10))
	b.WriteByte(' ')
	if s.Status != 0 {
		b.WriteString(strconv.Itoa(s.Status))
	} else {
		b.WriteString("---")
	}
	b.WriteByte(' ')
	b.WriteString(s.Method)
	b.WriteByte(' ')
	b.WriteString(s.URL)
	b.WriteByte(' ')
	b.WriteString(shortProto(s.ClientProto))
	b.WriteString("→")
	b.WriteString(shortProto(s.UpstreamProto))
	b.WriteByte(' ')
	b.WriteString(formatBytes(s.RespBytes))
	b.WriteByte(' ')
	b.WriteString(formatMS(s.DurationMS))
	if s.Error != "" {
		b.WriteString(" error: ")
		b.WriteString(s.Error)
	}
	if s.ReplayOf != 0 {
		b.WriteString(" replay of #")
		b.WriteString(strconv.FormatUint(uint64(s.ReplayOf), 10))
	}
	if s.Flags.Has(session.FlagImported) {
		b.WriteString(" (imported)")
	}
	return b.String()
}

// openSessionCommand parses the arguments of a command about one session (NAME [flags]
// ID, with --json described by jsonUsage) and opens where its data is: the store, or the
// running instance's control API. The caller closes src.
func openSessionCommand(name, jsonUsage string, args []string) (id session.ID, src *source, asJSON bool, err error) {
	fs := newFlagSet(name)
	dataDir := dataDirFlag(fs)
	j := fs.Bool("json", false, jsonUsage)
	if id, err = parseSessionArg(fs, args); err != nil {
		return 0, nil, false, err
	}
	dir, err := dataDir()
	if err != nil {
		return 0, nil, false, err
	}
	if src, err = openSource(dir); err != nil {
		return 0, nil, false, err
	}
	return id, src, *j, nil
}

func runShow(args []string) error {
	if lang, rest, ok := showAsFlag(args); ok {
		return runShowAs(lang, rest)
	}
	args, protos, err := takeProtoPath(args) // show_content.go
	if err != nil {
		return err
	}
	id, src, asJSON, err := openSessionCommand("show", "the session as JSON", args)
	if err != nil {
		return err
	}
	defer src.Close()
	var ss *session.Session
	switch {
	case src.st != nil:
		ss, err = src.st.Get(id)
	case src.api != nil:
		ss, err = src.api.session(id)
	default:
		err = fmt.Errorf("session %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	if asJSON {
		return writeShowJSON(stdout, ss, protos, src)
	}
	if err := writeSessionText(stdout, ss); err != nil {
		return err
	}
	writeContentText(stdout, ss, protos, src)
	return nil
}

// writeSessionText prints a session for people: connection legs, both messages with
// headers and bodies (text, or base64 when binary), timings, and the error.
func writeSessionText(w io.Writer, s *session.Session) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("Session #%d  %s\n", s.ID, s.Started.Format(time.RFC3339Nano))
	var notes []string
	for _, f := range []struct {
		f    session.Flags
		name string
	}{{session.FlagTunnel, "tunnel"}, {session.FlagWebSocket, "websocket"}, {session.FlagHandshakeFailed, "client handshake failed"},
		{session.FlagImported, "imported"}, {session.FlagAnswered, "answered by a rule"}} {
		if s.Flags.Has(f.f) {
			notes = append(notes, f.name)
		}
	}
	if s.ReplayOf != 0 {
		notes = append(notes, fmt.Sprintf("replay of #%d", s.ReplayOf))
	}
	if len(notes) > 0 {
		p("Notes:    %s\n", strings.Join(notes, ", "))
	}
	if s.Mark != "" || s.Comment != "" {
		p("Mark:     %s %s\n", s.Mark, s.Comment)
	}
	for _, leg := range []struct {
		name string
		c    session.Conn
	}{{"Client:  ", s.Client}, {"Upstream:", s.Upstream}} {
		if leg.c.Addr == "" && leg.c.Proto == "" {
			continue
		}
		p("%s %s %s", leg.name, leg.c.Addr, leg.c.Proto)
		if leg.c.Reused {
			p(" (reused)")
		}
		if t := leg.c.TLS; t != nil {
			p(" %s %s", t.Version, t.CipherSuite)
			if t.ServerName != "" {
				p(" sni=%s", t.ServerName)
			}
			if t.ALPN != "" {
				p(" alpn=%s", t.ALPN)
			}
			if t.Resumed {
				p(" resumed")
			}
			if len(t.Certificates) > 0 {
				p(" certs=%d", len(t.Certificates))
			}
		}
		p("\n")
	}
	if s.Error != nil {
		p("Error:    %s\n", s.Error.Error())
	}

	p("\n> %s %s %s\n", s.Request.Method, s.Request.URL, s.Request.Proto)
	writeHeader(w, "> ", s.Request.Header)
	writeBody(w, "request", s.Request.Body)
	writeHeader(w, "> trailer ", s.Request.Trailer)
	if r := s.Response; r != nil {
		p("\n< %s %d %s\n", r.Proto, r.Status, r.Reason)
		writeHeader(w, "< ", r.Header)
		writeBody(w, "response", r.Body)
		writeHeader(w, "< trailer ", r.Trailer)
	} else {
		p("\n(no response)\n")
	}
	for _, m := range s.Messages {
		dir := "<"
		if m.FromClient {
			dir = ">"
		}
		p("ws %s opcode %d %d bytes: %s\n", dir, m.Opcode, m.Size, bodyText(m.Data))
	}
	if note := s.MessagesNote(); note != "" {
		p("ws: %s\n", note)
	}

	p("\nTimings:\n")
	t := s.Timings
	start := t.ClientConnected
	if start.IsZero() {
		start = s.Started
	}
	for _, ph := range []struct {
		name string
		at   time.Time
	}{{"client connected", t.ClientConnected}, {"client TLS done", t.ClientTLSDone}, {"request headers", t.RequestHeaders},
		{"request done", t.RequestDone}, {"DNS start", t.DNSStart}, {"DNS done", t.DNSDone}, {"connect start", t.ConnectStart},
		{"connect done", t.ConnectDone}, {"upstream TLS done", t.UpstreamTLSDone}, {"request sent", t.RequestSent},
		{"first byte", t.FirstByte}, {"response done", t.ResponseDone}} {
		if !ph.at.IsZero() {
			p("  %-18s +%s\n", ph.name, formatMS(float64(ph.at.Sub(start).Microseconds())/1000))
		}
	}
	if d := s.Duration(); d > 0 {
		p("  %-18s %s\n", "total", formatMS(float64(d.Microseconds())/1000))
	}
	return nil
}

func writeHeader(w io.Writer, prefix string, h http.Header) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			fmt.Fprintf(w, "%s%s: %s\n", prefix, k, v)
		}
	}
}

func writeBody(w io.Writer, what string, b session.Body) {
	if b.Size == 0 && len(b.Data) == 0 {
		return
	}
	note := ""
	if b.Truncated || b.Size > int64(len(b.Data)) {
		note = fmt.Sprintf(", %d captured", len(b.Data))
	}
	if isText(b.Data) {
		fmt.Fprintf(w, "\n[%s body: %d bytes%s]\n%s\n", what, b.Size, note, b.Data)
		return
	}
	fmt.Fprintf(w, "\n[%s body: %d bytes%s, base64]\n%s\n", what, b.Size, note, base64.StdEncoding.EncodeToString(b.Data))
}

func bodyText(d []byte) string {
	if isText(d) {
		return string(d)
	}
	return "base64:" + base64.StdEncoding.EncodeToString(d)
}

func isText(d []byte) bool { return textual.IsText(d) }

func runHARExport(args []string) error {
	fs := newFlagSet("har export")
	dataDir := dataDirFlag(fs)
	filterExpr := fs.String("filter", "", "only sessions matching this filter expression")
	out := fs.String("o", "", "output `FILE` (required; - for stdout)")
	share := fs.Bool("share", false, "export for sharing: mask secrets (the default rules and DATA-DIR/"+redact.FileName+"); the store keeps the originals")
	preview := fs.Bool("preview", false, "with --share: list what would be masked, one line per place, and write no HAR")
	saz := fs.Bool("saz", false, "write a Fiddler .saz archive instead of HAR (sessions without a response are left out); works with --share")
	var extra []redact.Rule
	fs.Func("redact", "with --share: one more redaction `RULE` (header:NAME, param:NAME, json:PATH, regex:RE, filter:EXPR; repeatable)", func(v string) error {
		r, err := redact.ParseRule(v)
		if err == nil {
			extra = append(extra, r)
		}
		return err
	})
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if len(extra) > 0 || *preview {
		*share = true
	}
	if *out == "" && !*preview {
		return usagef("har export needs -o FILE")
	}
	f, err := parseFilterFlag(*filterExpr)
	if err != nil {
		return err
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	var red *redact.Redactor
	if *share {
		if red, err = loadRedactor(dir, extra); err != nil {
			return err
		}
	}
	src, err := openSource(dir)
	if err != nil {
		return err
	}
	defer src.Close()
	each := func(fn func(*session.Session) error) error {
		switch {
		case src.st != nil:
			return src.st.Each(store.Query{Filter: f}, fn)
		case src.api != nil:
			var after session.ID
			for {
				sums, err := src.api.sessions(*filterExpr, after, 500)
				if err != nil {
					return err
				}
				for i := range sums {
					s, err := src.api.session(sums[i].ID)
					if errors.Is(err, store.ErrNotFound) {
						continue // evicted meanwhile
					}
					if err == nil {
						err = fn(s)
					}
					if err != nil {
						return err
					}
				}
				if len(sums) < 500 {
					return nil
				}
				after = sums[len(sums)-1].ID
			}
		}
		return nil
	}
	if red != nil {
		// First pass: learn every secret, so that one revealed by a later session is
		// masked in the earlier ones too.
		if err := each(func(s *session.Session) error { red.Learn(s); return nil }); err != nil {
			return err
		}
	}
	if *preview {
		places := 0
		err := each(func(s *session.Session) error {
			_, found := red.Session(s)
			for _, fd := range found {
				places++
				ph := fd.Placeholder
				if ph == "" {
					ph = "-"
				}
				fmt.Fprintf(stdout, "#%d\t%s\t%s\t%s\t(%s)\n", s.ID, fd.Where, ph, fd.Hint, fd.Rule)
			}
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "har export: %d places would be masked, %d distinct secrets\n", places, red.Placeholders())
		return nil
	}

	// Write to a temporary file renamed at the end: no half-written HAR under FILE.
	var dst io.Writer = stdout
	var tmp *os.File
	if *out != "-" {
		tmp, err = os.CreateTemp(filepath.Dir(*out), "."+filepath.Base(*out)+".*")
		if err != nil {
			return err
		}
		defer func() {
			if tmp != nil {
				tmp.Close()
				os.Remove(tmp.Name())
			}
		}()
		dst = tmp
	}
	total := -1
	if src.st != nil {
		total, _ = src.st.Count(f)
	}
	var hw interface {
		Add(*session.Session) error
		Close() error
	}
	var sw *archive.SAZWriter
	if *saz {
		sw, err = archive.NewSAZWriter(dst, total)
		hw = sw
	} else {
		hw, err = har.NewWriter(dst, version)
	}
	if err != nil {
		return err
	}
	n := 0
	err = each(func(s *session.Session) error {
		n++
		if n%1000 == 0 {
			if total > 0 {
				fmt.Fprintf(stderr, "har export: %d/%d sessions\n", n, total)
			} else {
				fmt.Fprintf(stderr, "har export: %d sessions\n", n)
			}
		}
		if red != nil {
			s, _ = red.Session(s)
		}
		return hw.Add(s)
	})
	if err != nil {
		return err
	}
	if err := hw.Close(); err != nil {
		return err
	}
	if tmp != nil {
		if err := tmp.Close(); err != nil {
			return err
		}
		if err := os.Rename(tmp.Name(), *out); err != nil {
			return err
		}
		tmp = nil
	}
	msg := fmt.Sprintf("har export: %d sessions written", n)
	if sw != nil {
		msg = fmt.Sprintf("har export: %d sessions written as .saz", sw.Count())
		if sw.Skipped() > 0 {
			msg += fmt.Sprintf(" (%d without a response left out)", sw.Skipped())
		}
	}
	if red != nil {
		msg += fmt.Sprintf(", %d distinct secrets masked", red.Placeholders())
	}
	fmt.Fprintln(stderr, msg)
	return nil
}

// importHARInto reads a HAR document and stores its sessions, all or none, streaming:
// one entry in memory at a time, written in chunks the store rolls back on error.
// Bodies beyond 1 MiB are spilled to a folder beside the store's file as they are read
// (har.Limits.SpillDir) and written into the store in chunks, so a 250 MiB body does not
// sit in memory; the folder is removed afterwards.
func importHARInto(st *store.Store, r io.Reader) (importResult, error) {
	spill, err := os.MkdirTemp(filepath.Dir(st.Path()), "import-spill-")
	if err != nil {
		return importResult{}, fmt.Errorf("import spill folder: %w", err)
	}
	defer os.RemoveAll(spill)
	lim := har.DefaultLimits
	lim.SpillDir = spill
	return importInto(st, func(add func(*session.Session) error) error {
		_, err := har.Decode(r, lim, func(s *session.Session, _ session.ID) error { return add(s) })
		return err
	})
}

func runHARImport(args []string) error {
	fs := newFlagSet("har import")
	dataDir := dataDirFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("har import takes one FILE")
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	return runImport(dir, "har import", fs.Arg(0), importHARInto, func(api *controlClient, r io.Reader) (importResult, error) {
		return api.importHAR(r)
	})
}

// runImport opens FILE and the store (or the running instance's control API) and imports,
// all or nothing, then says what was added and what retention removed to make room.
func runImport(dir, cmd, file string, direct func(*store.Store, io.Reader) (importResult, error), viaAPI func(*controlClient, io.Reader) (importResult, error)) error {
	in, err := os.Open(file)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	lim, err := loadRetention(dir)
	if err != nil {
		return err
	}
	var res importResult
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{LockTimeout: cliLockTimeout,
		MaxSessions: lim.MaxSessions, MaxBytes: lim.MaxBytes, MaxAge: lim.MaxAge})
	switch {
	case err == nil:
		res, err = direct(st, in)
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	case errors.Is(err, store.ErrLocked):
		api, cerr := newControlClient(dir)
		if cerr != nil {
			return fmt.Errorf("%w, but its control API is not available: %v", err, cerr)
		}
		if viaAPI == nil {
			return fmt.Errorf("%w: stop it, or import from its window", err)
		}
		res, err = viaAPI(api, in)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w (nothing was added)", cmd, file, err)
	}
	fmt.Fprintln(stdout, res.message())
	if res.OwnEvicted > 0 {
		fmt.Fprintf(stderr, "%s: the store's retention limit removed %d of the imported sessions at once; raise --max-sessions or --max-size (retention.json)\n", cmd, res.OwnEvicted)
	}
	return nil
}
