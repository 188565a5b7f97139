package viewmodel

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"inspector/filter"
)

// BenchmarkPagesMillion measures the paged list over a real store of 1,000,000 sessions
// (imported in big transactions once per run): building the page index, and jumping to
// random rows with a screenful (40 rows) that must all be present before the jump counts
// as done. The jumps report the page fetches each one cost.
func BenchmarkPagesMillion(b *testing.B) {
	const n = 1_000_000
	start := time.Now()
	st := fillStore(b, filepath.Join(b.TempDir(), "sessions.db"), n)
	defer st.Close()
	b.Logf("built a %d-session store in %v", n, time.Since(start).Round(time.Millisecond))

	b.Run("index", func(b *testing.B) {
		for range b.N {
			p, err := BuildPages(context.Background(), st, nil, 0, 0, 0)
			if err != nil || p.Len() != n {
				b.Fatalf("Len %d, %v", p.Len(), err)
			}
		}
	})
	f, err := filter.Parse("status:404")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("index-filtered", func(b *testing.B) {
		for range b.N {
			p, err := BuildPages(context.Background(), st, f, 0, 0, 0)
			if err != nil || p.Len() != n/10 {
				b.Fatalf("Len %d, %v", p.Len(), err)
			}
		}
	})
	b.Run("extend-20k", func(b *testing.B) {
		// The held window moved up by 20,000 rows (an eviction at the default 200,000).
		base, err := BuildPages(context.Background(), st, nil, n-200_000, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			p, err := base.Extend(context.Background(), n-180_000)
			if err != nil || p.Len() != n-180_000 {
				b.Fatalf("Len %d, %v", p.Len(), err)
			}
		}
	})
	jump := func(b *testing.B, f *filter.Expr) {
		p, err := BuildPages(context.Background(), st, f, 0, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		arrived := notifier(p)
		rng := rand.New(rand.NewPCG(1, 2))
		const screen = 40
		b.ResetTimer()
		for range b.N {
			top := rng.IntN(p.Len() - screen)
			for i := top; i < top+screen; i++ {
				for p.At(i) == nil {
					if err := p.Err(); err != nil {
						b.Fatal(err)
					}
					<-arrived
				}
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(p.Fetches())/float64(b.N), "fetches/jump")
	}
	b.Run("jump", func(b *testing.B) { jump(b, nil) })
	b.Run("jump-filtered", func(b *testing.B) { jump(b, f) })
}
