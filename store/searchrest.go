package store

import (
	"context"
	"errors"

	"inspector/engine/session"
	"inspector/filter"
)

// SearchRest finds the sessions f matches only past the body index: body: and text:
// read the first filter.MaxSearchBody bytes of each body (the index holds as much), and
// SearchRest evaluates f on whole bodies (filter.Expr.MatchWhole) for the sessions whose
// text goes past that bound (filter.PastSearchBound). skip leaves out ids the caller has
// already matched (nil: none). It walks newest first, loading one session at a time, and
// returns the matches in that order, at most limit of them (0: no limit). progress, when
// not nil, is called after each page of summaries with the sessions read so far. It gives
// up with ctx.Err() once ctx is done.
func (s *Store) SearchRest(ctx context.Context, f *filter.Expr, skip func(session.ID) bool, limit int, progress func(read int)) ([]session.Summary, error) {
	if f == nil || !f.NeedsSession() {
		return nil, nil // no body: or text: term: the list's answer is exact
	}
	const page = 256
	var out []session.Summary
	q := Query{Newest: true, Limit: page}
	read := 0
	for {
		sums, err := s.ListContext(ctx, q)
		if err != nil {
			return out, err
		}
		for _, sum := range sums {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			read++
			if skip != nil && skip(sum.ID) {
				continue
			}
			if sum.ReqBytes == 0 && sum.RespBytes == 0 && sum.Flags&session.FlagWebSocket == 0 {
				continue // no body and no messages: nothing past the bound
			}
			ss, err := s.Get(sum.ID)
			if errors.Is(err, ErrNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				return out, err
			}
			if filter.PastSearchBound(ss) && f.MatchWhole(ss) {
				out = append(out, sum)
				if limit > 0 && len(out) >= limit {
					return out, nil
				}
			}
		}
		if progress != nil {
			progress(read)
		}
		if len(sums) < page {
			return out, nil
		}
		q.Before = sums[len(sums)-1].ID
	}
}
