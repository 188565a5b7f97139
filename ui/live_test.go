package ui

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"

	"inspector/engine/session"
	"inspector/ui/viewmodel"
)

// TestLiveTrafficThroughRealEngine runs a real engine on 127.0.0.1:0 and a real origin,
// pumps the engine's events with viewmodel.Pump and applies the batches on the test
// goroutine (standing in for fyne.Do), then checks the row and the detail pane.
func TestLiveTrafficThroughRealEngine(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Origin", "yes")
		fmt.Fprint(w, `{"hello":"world"}`)
	}))
	defer origin.Close()

	eng, sub := startTestEngine(t)

	st := openStore(t)
	u, _ := newTestUI(t, Deps{Store: st, Engine: eng})
	if !strings.Contains(u.status.Text(), "Listening on "+eng.Addr()) {
		t.Fatalf("status = %q", u.status.Text())
	}

	batches := make(chan viewmodel.Batch, 64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &viewmodel.Pump{Events: sub.C, Flush: func(b viewmodel.Batch) { batches <- b }}
	go p.Run(ctx)

	proxyURL, _ := url.Parse("http://" + eng.Addr())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	resp, err := client.Get(origin.URL + "/api/hello?x=1")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	var id session.ID
	for id == 0 {
		select {
		case b := <-batches:
			u.ApplyBatch(b)
			for _, s := range b.Completed {
				id = s.ID
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no completed session from the engine")
		}
	}
	r, ok := u.model.Get(id)
	if !ok || r.Status != 200 || r.InFlight || r.Path != "/api/hello?x=1" {
		t.Fatalf("row = %+v", r)
	}
	i := u.model.IndexOf(id)
	u.list.click(i, 0)
	if got := u.detail.resp.headers.text; !strings.Contains(got, "X-Origin: yes") {
		t.Fatalf("response headers = %q", got)
	}
	if got := u.detail.resp.body.text.Text(); !strings.Contains(got, "\"hello\": \"world\"") {
		t.Fatalf("body = %q", got)
	}
	u.ToggleCapture()
	if eng.Capturing() || !strings.Contains(u.status.Text(), "capture OFF") || !strings.Contains(u.tools.capture.Tip(), "Resume capture") {
		t.Fatalf("capture toggle: engine %v, status %q", eng.Capturing(), u.status.Text())
	}
}

// manyRows returns n synthetic summaries sharing their strings.
func manyRows(n int) []session.Summary {
	rows := make([]session.Summary, n)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		rows[i] = session.Summary{
			ID: session.ID(i + 1), Started: t0, Method: "GET", URL: "https://h.example/p", Host: "h.example",
			Path: "/p", Status: 200 + i%4*100, ClientProto: session.HTTP2, UpstreamProto: session.HTTP1,
			DurationMS: float64(i % 1000),
		}
	}
	return rows
}

// TestLargeListCreatesOnlyVisibleCells loads 200,000 rows and scrolls through them: the
// table creates cells for the visible area only.
func TestLargeListCreatesOnlyVisibleCells(t *testing.T) {
	u, w := newTestUI(t, Deps{MaxRows: 200_000})
	u.changed(u.model.Replace(manyRows(200_000)))
	w.Canvas().Refresh(w.Content())
	created := u.list.created
	if created == 0 {
		t.Fatal("no cells created: the table was not laid out")
	}
	for _, row := range []int{1000, 100_000, 199_999, 0} {
		u.list.scrollTo(row)
	}
	if u.list.created > 2000 {
		t.Fatalf("%d cells created for 200,000 rows", u.list.created)
	}
	t.Logf("cells created: %d after layout, %d after scrolling", created, u.list.created)
}

// BenchmarkScrollMillionRows measures scrolling a 1,000,000-row list to a random spot.
func BenchmarkScrollMillionRows(b *testing.B) {
	u, w := newTestUI(b, Deps{MaxRows: 1_000_000})
	u.changed(u.model.Replace(manyRows(1_000_000)))
	w.Canvas().Refresh(w.Content())
	row, start := 0, u.list.created
	for b.Loop() {
		row = (row + 377_777) % 1_000_000
		u.list.scrollTo(row)
	}
	b.ReportMetric(float64(u.list.created-start)/float64(b.N), "cells-created/op")
}

// BenchmarkApplyBatch measures applying a 100-session live batch to a 100,000-row list.
func BenchmarkApplyBatch(b *testing.B) {
	u, _ := newTestUI(b, Deps{MaxRows: 200_000})
	u.changed(u.model.Replace(manyRows(100_000)))
	next := session.ID(100_001)
	batch := viewmodel.Batch{Rows: make([]session.Summary, 100)}
	for b.Loop() {
		for i := range batch.Rows {
			batch.Rows[i] = session.Summary{ID: next, Host: "n.example", Status: 200}
			next++
		}
		u.ApplyBatch(batch)
	}
}

// TestRowUpdatedWhileTheNextBegins: a session completing in the same batch as the next
// one begins (follow newest on, the list still fitting the window, so nothing scrolls)
// shows its final status, not its in-flight cells.
func TestRowUpdatedWhileTheNextBegins(t *testing.T) {
	u, w := newTestUI(t, Deps{})
	w.Canvas().Refresh(w.Content())
	begin := session.Summary{ID: 1, Method: "GET", Host: "a.example", Path: "/x", InFlight: true}
	u.ApplyBatch(viewmodel.Batch{Rows: []session.Summary{begin}})
	w.Canvas().Refresh(w.Content()) // the in-flight row is drawn
	done := begin
	done.InFlight, done.Status = false, 502
	u.ApplyBatch(viewmodel.Batch{Rows: []session.Summary{done, {ID: 2, Method: "GET", Host: "a.example", Path: "/y", InFlight: true}}})
	// The texts of the cells the list has drawn, found through the widget renderers.
	shown := map[string]bool{}
	walkDrawn(u.list.list, func(o fyne.CanvasObject) {
		if tx, ok := o.(*canvas.Text); ok {
			shown[tx.Text] = true
		}
	})
	if !shown["502"] {
		t.Fatalf("row 1's status is not shown after it completed; cells show %v", shown)
	}
}
