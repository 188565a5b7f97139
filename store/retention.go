package store

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
)

// bKept holds the ids of the sessions marked Keep (value empty): retention skips them.
var bKept = []byte("kept")

// Eviction is what retention removed in one commit.
type Eviction struct {
	Count  uint64    `json:"count"`
	Reason string    `json:"reason"` // "to stay under 4 GiB", "to stay under 1,000,000 sessions", "older than 30 days"
	At     time.Time `json:"at"`
}

// Message is the sentence the window's status bar shows: "12,000 old sessions removed
// to stay under 4 GiB".
func (e Eviction) Message() string {
	word := "sessions"
	if e.Count == 1 {
		word = "session"
	}
	return Thousands(int64(e.Count)) + " old " + word + " removed " + e.Reason
}

// retention counts evictions. evict (inside a write transaction, under ixMu) notes what
// it removed; writeTx settles it once the transaction is over: counted when it
// committed, forgotten when it rolled back.
type retention struct {
	pending       uint64
	pendingReason string
	evicted       atomic.Uint64
	last          atomic.Pointer[Eviction]
}

func (r *retention) note(n uint64, reason string) {
	r.pending += n
	if r.pendingReason == "" {
		r.pendingReason = reason
	}
}

func (r *retention) settle(committed bool) {
	if committed && r.pending > 0 {
		r.evicted.Add(r.pending)
		r.last.Store(&Eviction{Count: r.pending, Reason: r.pendingReason, At: time.Now()})
	}
	r.pending, r.pendingReason = 0, ""
}

type policy struct {
	cutoff int64 // UnixNano: sessions started before are old (0: no age limit)
}

func (s *Store) retentionPolicy() policy {
	if s.opts.MaxAge <= 0 {
		return policy{}
	}
	return policy{cutoff: time.Now().Add(-s.opts.MaxAge).UnixNano()}
}

// evictReason says which limit an eviction keeps.
func (s *Store) evictReason(over bool, count uint64, total int64) string {
	switch {
	case over && count > uint64(s.opts.MaxSessions):
		return "to stay under " + Thousands(int64(s.opts.MaxSessions)) + " sessions"
	case over:
		return "to stay under " + FormatSize(s.opts.MaxBytes)
	}
	return "older than " + FormatAge(s.opts.MaxAge)
}

// summaryStarted is the start time (UnixNano) recorded in a summary record.
func summaryStarted(v []byte) int64 {
	r := recReader{b: v[1:]}
	r.uvarint()
	return r.varint()
}

// Limits are the retention limits in force.
type Limits struct {
	MaxSessions int           `json:"max_sessions"`
	MaxBytes    int64         `json:"max_bytes"`
	MaxAge      time.Duration `json:"max_age,omitempty"`
}

// Limits returns the retention limits in force.
func (s *Store) Limits() Limits {
	s.ixMu.Lock()
	defer s.ixMu.Unlock()
	return Limits{MaxSessions: s.opts.MaxSessions, MaxBytes: s.opts.MaxBytes, MaxAge: s.opts.MaxAge}
}

// SetLimits changes the retention limits (zero fields: the defaults, no age limit) and
// applies them at once; it returns what that removed.
func (s *Store) SetLimits(l Limits) (uint64, error) {
	if l.MaxSessions <= 0 {
		l.MaxSessions = defaultMaxSessions
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = defaultMaxBytes
	}
	s.ixMu.Lock() // evict reads the limits inside writeTx, under ixMu
	s.opts.MaxSessions, s.opts.MaxBytes, s.opts.MaxAge = l.MaxSessions, l.MaxBytes, max(l.MaxAge, 0)
	s.ixMu.Unlock()
	if s.readOnly {
		return 0, nil
	}
	return s.Enforce()
}

// Enforce applies the retention limits now (the age limit passes with time, not only at
// a commit) and returns what it removed.
func (s *Store) Enforce() (uint64, error) {
	before := s.ret.evicted.Load()
	for {
		more := false
		err := s.update(func(b *buckets, count uint64, total int64) (uint64, int64, error) {
			var err error
			count, total, more, err = s.evict(b, count, total)
			return count, total, err
		})
		if err != nil {
			return s.ret.evicted.Load() - before, err
		}
		if !more {
			return s.ret.evicted.Load() - before, nil
		}
	}
}

// PlanEviction says how many sessions the limits l (zero fields: the defaults) would
// remove from the store as it is now, sessions marked Keep aside (PlanEvictionDetail).
func (s *Store) PlanEviction(l Limits) (uint64, error) {
	p, err := s.PlanEvictionDetail(l)
	return p.Count, err
}

// SetKeep marks a stored session Keep (on) or not: a kept session is never evicted.
func (s *Store) SetKeep(id session.ID, on bool) error {
	return s.update(func(b *buckets, count uint64, total int64) (uint64, int64, error) {
		ss, err := loadSession(b.meta.Tx(), id)
		if err != nil {
			return 0, 0, err
		}
		kept, err := b.meta.Tx().CreateBucketIfNotExists(bKept)
		if err != nil {
			return 0, 0, err
		}
		if on {
			ss.Flags |= session.FlagKept
			err = kept.Put(idKey(id), nil)
		} else {
			ss.Flags &^= session.FlagKept
			err = kept.Delete(idKey(id))
		}
		if err != nil {
			return 0, 0, err
		}
		old, _, err := deleteSession(b, id)
		if err != nil {
			return 0, 0, err
		}
		n, err := putSession(b, ss)
		return count, total - old + n, err
	})
}

// Kept returns the ids of the sessions marked Keep, oldest first.
func (s *Store) Kept() ([]session.ID, error) {
	var ids []session.ID
	err := s.view(func(tx *bolt.Tx) error {
		kept := tx.Bucket(bKept)
		if kept == nil {
			return nil
		}
		sums := tx.Bucket(bSummaries)
		return kept.ForEach(func(k, _ []byte) error {
			if sums.Get(k) != nil {
				ids = append(ids, keyID(k))
			}
			return nil
		})
	})
	return ids, err
}

// Thousands writes n with comma separators: 12,000.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := ""
	if n < 0 {
		neg, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return neg + s
}

// FormatSize writes a byte limit the way people set it: 4 GiB, 500 MiB.
func FormatSize(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size {
			if n%u.size == 0 {
				return strconv.FormatInt(n/u.size, 10) + " " + u.unit
			}
			return strconv.FormatFloat(float64(n)/float64(u.size), 'f', 1, 64) + " " + u.unit
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// FormatAge writes an age limit: 30 days, 12 hours, 90 minutes.
func FormatAge(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return plural(int64(d/(24*time.Hour)), "day")
	case d >= time.Hour && d%time.Hour == 0:
		return plural(int64(d/time.Hour), "hour")
	case d >= time.Minute && d%time.Minute == 0:
		return plural(int64(d/time.Minute), "minute")
	}
	return d.String()
}

func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// ParseSize reads a byte limit: 4GiB, 500MB, 1.5G, 123456.
func ParseSize(v string) (int64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
		{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}}
	s := strings.ToUpper(strings.TrimSpace(v))
	mult := 1.0
	for _, u := range units {
		if len(s) > len(u.suffix) && s[len(s)-len(u.suffix):] == u.suffix {
			s, mult = strings.TrimSpace(s[:len(s)-len(u.suffix)]), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || f*mult > 1<<62 {
		return 0, fmt.Errorf("size %q: want a positive number of bytes, e.g. 4GiB, 500MB", v)
	}
	return int64(f * mult), nil
}

// ParseAge reads an age limit: 30d, 12h, 90m, 1h30m.
func ParseAge(v string) (time.Duration, error) {
	s := strings.TrimSpace(v)
	if n := len(s); n > 1 && (s[n-1] == 'd' || s[n-1] == 'D') {
		days, err := strconv.ParseFloat(s[:n-1], 64)
		if err == nil && days > 0 {
			return time.Duration(days * float64(24*time.Hour)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("age %q: want a positive duration, e.g. 30d, 12h, 90m", v)
	}
	return d, nil
}
