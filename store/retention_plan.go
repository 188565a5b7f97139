package store

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
)

// EvictionPlan is what a set of limits would remove from the store as it is now: what
// Settings shows before the user applies lower limits.
type EvictionPlan struct {
	Limits Limits     `json:"limits"` // the limits planned for, defaults filled in
	Count  uint64     `json:"count"`  // sessions that would be removed
	First  session.ID `json:"first,omitempty"`
	Last   session.ID `json:"last,omitempty"`
	Bytes  int64      `json:"bytes"`            // their stored size
	Oldest time.Time  `json:"oldest,omitzero"`  // the start of the oldest of them
	Kept   int        `json:"kept"`             // kept sessions passed over (never removed)
	Reason string     `json:"reason,omitempty"` // "to stay under 4 GiB", as the status bar says it
}

// Message is the preview's sentence: "1,200 sessions, #1–#1200, 3.4 MiB, oldest from
// 2026-01-02 15:04; kept sessions are never removed".
func (p EvictionPlan) Message() string {
	if p.Count == 0 {
		return "Nothing will be removed; kept sessions are never removed."
	}
	word := "sessions"
	if p.Count == 1 {
		word = "session"
	}
	msg := fmt.Sprintf("%s %s, #%d–#%d, %s, oldest from %s, will be removed %s; kept sessions are never removed",
		Thousands(int64(p.Count)), word, p.First, p.Last, FormatSize(p.Bytes), p.Oldest.Local().Format("2006-01-02 15:04"), p.Reason)
	if p.Kept > 0 {
		msg += fmt.Sprintf(" (%s kept passed over)", Thousands(int64(p.Kept)))
	}
	return msg + "."
}

// withDefaults fills zero limits the way SetLimits does.
func (l Limits) withDefaults() Limits {
	if l.MaxSessions <= 0 {
		l.MaxSessions = defaultMaxSessions
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = defaultMaxBytes
	}
	l.MaxAge = max(l.MaxAge, 0)
	return l
}

// PlanEvictionDetail says which sessions the limits l (zero fields: the defaults, as in
// SetLimits) would remove from the store as it is now, sessions marked Keep aside. It
// walks the same order as the eviction itself: oldest id first, while over a limit.
func (s *Store) PlanEvictionDetail(l Limits) (EvictionPlan, error) {
	l = l.withDefaults()
	p := EvictionPlan{Limits: l}
	if err := s.Flush(); err != nil && err != ErrReadOnly {
		return p, err
	}
	err := s.view(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bMeta)
		count, total := u64(meta.Get(kCount)), int64(u64(meta.Get(kBytes)))
		kept := tx.Bucket(bKept)
		var cutoff int64
		if l.MaxAge > 0 {
			cutoff = time.Now().Add(-l.MaxAge).UnixNano()
		}
		c := tx.Bucket(bSummaries).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			overCount, overBytes := count > uint64(l.MaxSessions), total > l.MaxBytes
			started := summaryStarted(v)
			old := cutoff != 0 && started < cutoff
			if !overCount && !overBytes && !old {
				break
			}
			if kept != nil && kept.Get(k[:8]) != nil {
				p.Kept++
				continue
			}
			if p.Reason == "" {
				switch {
				case overCount:
					p.Reason = "to stay under " + Thousands(int64(l.MaxSessions)) + " sessions"
				case overBytes:
					p.Reason = "to stay under " + FormatSize(l.MaxBytes)
				default:
					p.Reason = "older than " + FormatAge(l.MaxAge)
				}
			}
			id := keyID(k)
			if p.Count == 0 {
				p.First, p.Oldest = id, time.Unix(0, started)
			}
			if t := time.Unix(0, started); t.Before(p.Oldest) {
				p.Oldest = t
			}
			p.Last = id
			n := summaryStored(v)
			p.Count++
			p.Bytes += n
			count--
			total -= n
		}
		return nil
	})
	return p, err
}
