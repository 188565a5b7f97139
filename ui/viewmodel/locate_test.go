package viewmodel

import (
	"context"
	"path/filepath"
	"testing"

	"inspector/filter"
	"inspector/store"
)

// Locate finds a row whose page is not in memory by reading just that page.
func TestPagesLocateReadsAnUncachedPage(t *testing.T) {
	const n = 5000
	st := fillStore(t, filepath.Join(t.TempDir(), "sessions.db"), n)
	defer st.Close()
	all, err := st.List(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildPages(context.Background(), st, nil, 0, 100, 4) // 50 pages, 4 in memory
	if err != nil {
		t.Fatal(err)
	}
	id := all[7].ID // page 0: dropped from the cache by the scan
	if p.IndexOf(id) != -1 {
		t.Fatal("fixture: page 0 is cached")
	}
	before := p.Fetches()
	i, ok := p.Locate(id)
	if !ok || i != 7 || p.At(7) == nil || p.At(7).ID != id {
		t.Fatalf("Locate(#%d) = %d %v", id, i, ok)
	}
	if p.Fetches() != before+1 {
		t.Fatalf("%d page reads, want 1", p.Fetches()-before)
	}
	if i, ok := p.Locate(id); !ok || i != 7 || p.Fetches() != before+1 {
		t.Fatal("a cached row was read again")
	}
	if _, ok := p.Locate(all[n-1].ID + 10); ok {
		t.Fatal("an id above the covered range was located")
	}
	// With a filter, the index counts matching rows only.
	f, err := filter.Parse("status:404")
	if err != nil {
		t.Fatal(err)
	}
	q, err := BuildPages(context.Background(), st, f, 0, 10, 2)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for k := range all {
		if all[k].Status == 404 {
			want = append(want, k)
		}
	}
	k := want[3]
	if i, ok := q.Locate(all[k].ID); !ok || i != 3 {
		t.Fatalf("filtered Locate = %d %v, want 3", i, ok)
	}
	if _, ok := q.Locate(all[want[3]+1].ID); ok {
		t.Fatal("a row the filter excludes was located")
	}
}
