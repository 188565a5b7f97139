package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/store"
)

func TestContractFeedSeedsFromTheStoreThenFollowsTraffic(t *testing.T) {
	dir := fillStore(t, 200, 200, 200)
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o := et.StartOrigin(t, et.OriginH1TLS, nil)
	p := et.StartProxy(t, func(c *engine.Config) { c.NewID = st.NextID }, o) // as the instance wires it
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := newContractFeed(ctx, &instance{store: st, engine: p.Engine})
	deadline := time.Now().Add(10 * time.Second)
	for get() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the feed never became ready")
		}
		time.Sleep(5 * time.Millisecond) // polling for the state, with a deadline
	}
	if n := get().Stats().Sessions; n != 3 {
		t.Fatalf("seeded %d sessions, want the 3 stored", n)
	}
	resp, err := p.Client(t, et.ClientH1).Get(o.URL + "/echo")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	for get().Stats().Sessions != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("the live session never arrived: %+v", get().Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	hosts := get().Hosts()
	if len(hosts) != 2 {
		t.Errorf("hosts %v, want the stored one and the origin", hosts)
	}
}
