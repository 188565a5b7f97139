package main

import (
	"context"
	"sync"
	"sync/atomic"

	"inspector/contract"
	"inspector/engine"
	"inspector/engine/session"
	"inspector/store"
)

// contractFeed keeps the API contract inferred from the traffic for the window's Tools ▸
// API contract. It starts on first use, so a user who never opens it pays nothing: it
// subscribes to completed sessions, notes the newest stored id, reads the stored sessions
// up to it in the background (get returns nil until then), and folds in every later
// session as it completes. A session that was still in flight, with an id below a newer
// one already stored, when the feed started is missed.
type contractFeed struct {
	ctx   context.Context
	st    *store.Store
	e     *engine.Engine
	once  sync.Once
	ready atomic.Pointer[contract.Inferrer]
}

func newContractFeed(ctx context.Context, inst *instance) func() *contract.Inferrer {
	f := &contractFeed{ctx: ctx, st: inst.store, e: inst.engine}
	return f.get
}

func (f *contractFeed) get() *contract.Inferrer {
	f.once.Do(func() { go f.run() })
	return f.ready.Load()
}

func (f *contractFeed) run() {
	in := contract.NewInferrer()
	var sub *engine.Subscription
	if f.e != nil {
		sub = f.e.Subscribe(4096, engine.EventComplete)
		defer sub.Close()
	}
	var last session.ID
	if f.st != nil {
		if newest, err := f.st.List(store.Query{Newest: true, Limit: 1}); err == nil && len(newest) == 1 {
			last = newest[0].ID
		}
	}
	// Live sessions newer than the last stored one go in while the store is read.
	done := make(chan struct{})
	if sub != nil {
		go func() {
			defer close(done)
			for {
				select {
				case <-f.ctx.Done():
					return
				case ev := <-sub.C:
					if ev.Session != nil && ev.Session.ID > last {
						in.Add(ev.Session)
					}
				}
			}
		}()
	} else {
		close(done)
	}
	if f.st != nil && last > 0 {
		_ = f.st.Each(store.Query{Before: last + 1}, func(s *session.Session) error {
			if f.ctx.Err() != nil {
				return f.ctx.Err()
			}
			in.Add(s)
			return nil
		})
	}
	f.ready.Store(in)
	<-done
}
