package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"inspector/engine/session"
	"inspector/internal/atomicfile"
	"inspector/store"
)

func init() {
	register("sessions keep", "mark sessions Keep so retention never removes them (--off: unmark)", runSessionsKeep)
}

// retentionFile holds the retention limits the user set (Settings, or saved from flags).
const retentionFile = "retention.json"

// retentionDoc is retention.json: sizes and ages as people write them.
type retentionDoc struct {
	MaxSessions int    `json:"max_sessions,omitempty"`
	MaxSize     string `json:"max_size,omitempty"` // "4GiB"
	MaxAge      string `json:"max_age,omitempty"`  // "30d"
}

func (d retentionDoc) limits(path string) (store.Limits, error) {
	var l store.Limits
	var err error
	if d.MaxSessions < 0 {
		return l, fmt.Errorf("%s: max_sessions must not be negative", path)
	}
	l.MaxSessions = d.MaxSessions
	if d.MaxSize != "" {
		if l.MaxBytes, err = store.ParseSize(d.MaxSize); err != nil {
			return l, fmt.Errorf("%s: max_size: %w", path, err)
		}
	}
	if d.MaxAge != "" {
		if l.MaxAge, err = store.ParseAge(d.MaxAge); err != nil {
			return l, fmt.Errorf("%s: max_age: %w", path, err)
		}
	}
	return l, nil
}

// loadRetention reads DATA-DIR/retention.json (missing: the defaults).
func loadRetention(dataDir string) (store.Limits, error) {
	path := filepath.Join(dataDir, retentionFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return store.Limits{}, nil
	}
	if err != nil {
		return store.Limits{}, err
	}
	var d retentionDoc
	if len(strings.TrimSpace(string(b))) > 0 {
		if err := json.Unmarshal(b, &d); err != nil {
			return store.Limits{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	return d.limits(path)
}

// saveRetention writes DATA-DIR/retention.json.
func saveRetention(dataDir string, l store.Limits) error {
	d := retentionDoc{MaxSessions: l.MaxSessions}
	if l.MaxBytes > 0 {
		d.MaxSize = strings.ReplaceAll(store.FormatSize(l.MaxBytes), " ", "")
	}
	if l.MaxAge > 0 {
		d.MaxAge = l.MaxAge.String()
		if l.MaxAge%(24*60*60*1e9) == 0 {
			d.MaxAge = strconv.FormatInt(int64(l.MaxAge/(24*60*60*1e9)), 10) + "d"
		}
	}
	b, _ := json.MarshalIndent(d, "", "  ")
	return atomicfile.WriteFile(filepath.Join(dataDir, retentionFile), append(b, '\n'), 0o600)
}

// retentionFlags registers --max-sessions, --max-size and --max-age; the getter merges
// them over DATA-DIR/retention.json.
func retentionFlags(fs *flag.FlagSet) func(dataDir string) (store.Limits, error) {
	n := fs.Int("max-sessions", 0, "retention: keep at most N sessions, the oldest go first (default: retention.json, else 1,000,000)")
	size := fs.String("max-size", "", "retention: keep at most `SIZE` of sessions, e.g. 4GiB, 500MB (default: retention.json, else 4GiB)")
	age := fs.String("max-age", "", "retention: remove sessions older than `AGE`, e.g. 30d, 12h (default: retention.json, else none)")
	return func(dataDir string) (store.Limits, error) {
		l, err := loadRetention(dataDir)
		if err != nil {
			return l, err
		}
		if *n < 0 {
			return l, usagef("--max-sessions must not be negative")
		}
		if *n > 0 {
			l.MaxSessions = *n
		}
		if *size != "" {
			if l.MaxBytes, err = store.ParseSize(*size); err != nil {
				return l, usagef("--max-size: %v", err)
			}
		}
		if *age != "" {
			if l.MaxAge, err = store.ParseAge(*age); err != nil {
				return l, usagef("--max-age: %v", err)
			}
		}
		return l, nil
	}
}

// importResult is what an import did: the ids added, and what retention removed to make
// room (Evicted, of which OwnEvicted were sessions of this import).
type importResult struct {
	IDs        []session.ID `json:"ids"`
	Evicted    uint64       `json:"evicted,omitempty"`
	Reason     string       `json:"evicted_reason,omitempty"`
	OwnEvicted int          `json:"imported_evicted,omitempty"`
}

// importInto runs an import into st and reports the eviction it caused.
func importInto(st *store.Store, read func(add func(*session.Session) error) error) (importResult, error) {
	before := st.Stats().Evicted
	ids, err := st.ImportStream(read)
	if err != nil {
		return importResult{}, err
	}
	res := importResult{IDs: ids}
	after := st.Stats()
	if after.Evicted > before {
		res.Evicted = after.Evicted - before
		if after.LastEviction != nil {
			res.Reason = after.LastEviction.Reason
		}
		// How many of this import's ids are still stored, a page at a time.
		kept, after := 0, ids[0]-1
		for {
			page, err := st.List(store.Query{After: after, Before: ids[len(ids)-1] + 1, Limit: 10000})
			if err != nil || len(page) == 0 {
				break
			}
			kept += len(page)
			after = page[len(page)-1].ID
		}
		res.OwnEvicted = len(ids) - kept
	}
	return res, nil
}

// message is the import's line for people.
func (r importResult) message() string {
	if len(r.IDs) == 0 {
		return "imported 0 sessions"
	}
	msg := fmt.Sprintf("imported %d sessions (#%d–#%d)", len(r.IDs), r.IDs[0], r.IDs[len(r.IDs)-1])
	if r.Evicted > 0 {
		msg += "; " + store.Eviction{Count: r.Evicted, Reason: r.Reason}.Message()
		if r.OwnEvicted > 0 {
			msg += fmt.Sprintf(", %d of them from this import", r.OwnEvicted)
		}
	}
	return msg
}

func runSessionsKeep(args []string) error {
	fs := newFlagSet("sessions keep")
	dataDir := dataDirFlag(fs)
	off := fs.Bool("off", false, "remove the Keep mark instead")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("sessions keep takes session ids")
	}
	var ids []session.ID
	for _, a := range fs.Args() {
		id, err := parseSessionID("sessions keep", a)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	dir, err := dataDir()
	if err != nil {
		return err
	}
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{LockTimeout: cliLockTimeout})
	switch {
	case err == nil:
		defer st.Close()
		for _, id := range ids {
			if err := st.SetKeep(id, !*off); err != nil {
				return err
			}
		}
	case errors.Is(err, store.ErrLocked):
		api, cerr := newControlClient(dir)
		if cerr != nil {
			return fmt.Errorf("%w, but its control API is not available: %v", err, cerr)
		}
		for _, id := range ids {
			var out map[string]any
			if err := api.call("POST", "/api/v1/sessions/"+strconv.FormatUint(uint64(id), 10)+"/keep", map[string]bool{"keep": !*off}, &out); err != nil {
				return fmt.Errorf("session %d: %w", id, err)
			}
		}
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("session %d: %w", ids[0], store.ErrNotFound)
	default:
		return err
	}
	word := "kept"
	if *off {
		word = "no longer kept"
	}
	for _, id := range ids {
		fmt.Fprintf(stdout, "#%d %s\n", id, word)
	}
	return nil
}

// keepHandler is POST /api/v1/sessions/{id}/keep {"keep": true|false}.
func keepHandler(st *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
		if err != nil || id == 0 {
			writeJSONError(w, http.StatusBadRequest, "bad session id")
			return
		}
		var in struct {
			Keep *bool `json:"keep"`
		}
		if !readJSON(w, r, &in, false) {
			return
		}
		if in.Keep == nil {
			writeJSONError(w, http.StatusBadRequest, `want {"keep": true} or {"keep": false}`)
			return
		}
		if err := st.SetKeep(session.ID(id), *in.Keep); err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, store.ErrNotFound) {
				code = http.StatusNotFound
			}
			writeJSONError(w, code, err.Error())
			return
		}
		writeJSON(w, map[string]any{"id": id, "keep": *in.Keep})
	})
}

// everyMinute runs f every minute until the returned stop is called.
func everyMinute(f func()) (stop func() error) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f()
			}
		}
	}()
	var once sync.Once
	return func() error { once.Do(func() { close(done) }); return nil }
}
