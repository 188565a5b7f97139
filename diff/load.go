package diff

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"inspector/engine/session"
	"inspector/filter"
	"inspector/store"
	"inspector/store/har"
)

// Eacher yields stored sessions in id order (*store.Store does).
type Eacher interface {
	Each(q store.Query, fn func(*session.Session) error) error
}

// ErrNeedsStore: a filter: or ids: recording with no current store to read it from.
var ErrNeedsStore = errors.New("filter: and ids: recordings need the current store")

// IsCurrentStore reports whether spec names sessions of the current store (filter:EXPR or
// ids:N-M) rather than a file or directory.
func IsCurrentStore(spec string) bool {
	return strings.HasPrefix(spec, "filter:") || strings.HasPrefix(spec, "ids:")
}

// StoreQuery parses filter:EXPR or ids:N-M (ids:N for one) into a store query.
func StoreQuery(spec string) (store.Query, error) {
	var q store.Query
	switch {
	case strings.HasPrefix(spec, "filter:"):
		f, err := filter.Parse(strings.TrimPrefix(spec, "filter:"))
		if err != nil {
			return q, fmt.Errorf("%s: %w", spec, err)
		}
		q.Filter = f
	case strings.HasPrefix(spec, "ids:"):
		lo, hi, ok := strings.Cut(strings.TrimPrefix(spec, "ids:"), "-")
		if !ok {
			hi = lo
		}
		n, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		m, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
		if err1 != nil || err2 != nil || n == 0 || m < n {
			return q, fmt.Errorf("%s: want ids:N-M with 1 <= N <= M", spec)
		}
		q.After, q.Before = session.ID(n-1), session.ID(m+1)
	default:
		return q, fmt.Errorf("%s: not filter:EXPR or ids:N-M", spec)
	}
	return q, nil
}

// CallsOf reads the calls of sessions matching q from src, one session at a time.
func CallsOf(src Eacher, q store.Query) ([]Call, error) { return callsOf(src, q, nil) }

func callsOf(src Eacher, q store.Query, also func(*session.Session)) ([]Call, error) {
	var out []Call
	err := src.Each(q, func(s *session.Session) error {
		out = append(out, CallOf(s, len(out)))
		if also != nil {
			also(s)
		}
		return nil
	})
	return out, err
}

// LoadRecording reads the recording spec names: filter:EXPR or ids:N-M of cur (which may
// be nil: then ErrNeedsStore), a HAR file, or a data directory (or its sessions.db),
// opened read-only.
func LoadRecording(spec string, cur Eacher) ([]Call, error) { return LoadRecordingFunc(spec, cur, nil) }

// LoadRecordingFunc is LoadRecording that also hands each session, in order, to also
// (when not nil), for what needs more than the calls (the contract drift).
func LoadRecordingFunc(spec string, cur Eacher, also func(*session.Session)) ([]Call, error) {
	if IsCurrentStore(spec) {
		q, err := StoreQuery(spec)
		if err != nil {
			return nil, err
		}
		if cur == nil {
			return nil, fmt.Errorf("%s: %w", spec, ErrNeedsStore)
		}
		return callsOf(cur, q, also)
	}
	fi, err := os.Stat(spec)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", spec, err)
	}
	db := spec
	if fi.IsDir() {
		db = filepath.Join(spec, "sessions.db")
		if _, err := os.Stat(db); err != nil {
			return nil, fmt.Errorf("recording %s: a directory without sessions.db is not a data directory", spec)
		}
	} else if !strings.HasSuffix(strings.ToLower(spec), ".db") {
		return loadHAR(spec, also)
	}
	st, err := store.Open(db, store.Options{ReadOnly: true, LockTimeout: 300 * time.Millisecond})
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return nil, fmt.Errorf("recording %s: %w (a running instance holds it; export a HAR or use filter:/ids: through it)", spec, err)
		}
		return nil, fmt.Errorf("recording %s: %w", spec, err)
	}
	defer st.Close()
	return callsOf(st, store.Query{}, also)
}

func loadHAR(path string, also func(*session.Session)) ([]Call, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", path, err)
	}
	defer f.Close()
	ss, err := har.Read(f)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", path, err)
	}
	if also != nil {
		for _, s := range ss {
			also(s)
		}
	}
	return Calls(ss), nil
}
