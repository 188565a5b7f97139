package store

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"inspector/engine/session"
	"inspector/filter"
)

// body: finds a needle in the first 256 KiB through the index; SearchRest finds the
// sessions whose needle lies past it, newest first, without the ones already matched,
// and not a session whose body does not contain it.
func TestSearchRestFindsPastTheIndexBound(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "sessions.db"), Options{})
	big := func(id session.ID, tail string) *session.Session {
		x := testSession(id, 200, 0, 0)
		d := append(bytes.Repeat([]byte("x"), filter.MaxSearchBody+4096), tail...)
		x.Response.Header.Set("Content-Type", "text/plain")
		x.Response.Body = session.Body{Data: d, Size: int64(len(d))}
		return x
	}
	early := testSession(2, 200, 0, 0)
	early.Response.Body = session.Body{Data: []byte("the NEEDLE early"), Size: 16}
	putAll(t, s, testSession(1, 200, 10, 10), early, big(3, "NEEDLE"), big(4, "other"), big(5, "needle"), testSession(6, 404, 0, 0))

	f := filter.MustParse("body:needle")
	indexed, err := s.List(Query{Filter: f, Newest: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(indexed); !reflect.DeepEqual(got, []session.ID{2}) {
		t.Fatalf("indexed body:needle = %v, want [2] (the rest lies past the index bound)", got)
	}
	matched := map[session.ID]bool{2: true}
	var reads []int
	rest, err := s.SearchRest(context.Background(), f, func(id session.ID) bool { return matched[id] }, 0, func(n int) { reads = append(reads, n) })
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(rest); !reflect.DeepEqual(got, []session.ID{5, 3}) {
		t.Fatalf("SearchRest = %v, want [5 3]", got)
	}
	if len(reads) == 0 || reads[len(reads)-1] != 6 {
		t.Fatalf("progress %v, want it to end at the 6 sessions read", reads)
	}
	// The rest of the expression applies, and a limit stops the walk.
	if rest, _ := s.SearchRest(context.Background(), filter.MustParse("body:needle status:404"), nil, 0, nil); len(rest) != 0 {
		t.Fatalf("body:needle status:404 = %v, want none", ids(rest))
	}
	if rest, _ := s.SearchRest(context.Background(), f, nil, 1, nil); !reflect.DeepEqual(ids(rest), []session.ID{5}) {
		t.Fatalf("limit 1 = %v, want [5]", ids(rest))
	}
	// A summary-only filter has nothing past the bound.
	if rest, err := s.SearchRest(context.Background(), filter.MustParse("status:200"), nil, 0, nil); err != nil || rest != nil {
		t.Fatalf("status:200 = %v, %v; want nothing", ids(rest), err)
	}
	// A cancelled search says so.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.SearchRest(ctx, f, nil, 0, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
