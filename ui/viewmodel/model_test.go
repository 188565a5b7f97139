package viewmodel

import (
	"slices"
	"strings"
	"testing"
	"time"

	"inspector/engine/session"
)

func sum(id session.ID, host string, status int) session.Summary {
	return session.Summary{
		ID: id, Method: "GET", Host: host, Path: "/p", URL: "https://" + host + "/p",
		Status: status, ClientProto: session.HTTP2, UpstreamProto: session.HTTP1,
		Started:    time.Date(2026, 1, 1, 0, 0, int(id), 0, time.UTC),
		DurationMS: float64(100 - id), RespBytes: int64(id) * 10,
	}
}

func ids(m *Model) []session.ID { return m.VisibleIDs() }

func TestUpsertAppendsInOrder(t *testing.T) {
	m := New(0)
	ch := m.Upsert([]session.Summary{sum(1, "a", 200), sum(2, "b", 404)})
	if ch.Added != 2 || ch.Reset {
		t.Fatalf("change = %+v, want 2 added without reset", ch)
	}
	ch = m.Upsert([]session.Summary{sum(3, "a", 500)})
	if ch.Reset {
		t.Fatalf("appending a newer row rebuilt the index: %+v", ch)
	}
	if got := ids(m); !slices.Equal(got, []session.ID{1, 2, 3}) {
		t.Fatalf("ids = %v", got)
	}
	// An out-of-order id is inserted in place.
	m.Upsert([]session.Summary{sum(0, "z", 200)})
	if got := ids(m); !slices.Equal(got, []session.ID{0, 1, 2, 3}) {
		t.Fatalf("ids after late insert = %v", got)
	}
}

func TestUpdateInFlightRow(t *testing.T) {
	m := New(0)
	s := sum(7, "a", 0)
	s.InFlight = true
	m.Upsert([]session.Summary{s})
	if c := StatusClass(m.At(0)); c != ClassInFlight {
		t.Fatalf("class = %v, want in flight", c)
	}
	s.InFlight, s.Status = false, 503
	ch := m.Upsert([]session.Summary{s})
	if ch.Updated != 1 || ch.Added != 0 || m.Len() != 1 {
		t.Fatalf("change = %+v len %d", ch, m.Len())
	}
	if m.At(0).Status != 503 || StatusClass(m.At(0)) != ClassServer {
		t.Fatalf("row not updated: %+v", m.At(0))
	}
}

func TestFilter(t *testing.T) {
	m := New(0)
	m.Upsert([]session.Summary{sum(1, "a.com", 200), sum(2, "b.com", 404), sum(3, "a.com", 500)})
	m.SetFilter(func(s *session.Summary) bool { return s.Host == "a.com" })
	if got := ids(m); !slices.Equal(got, []session.ID{1, 3}) {
		t.Fatalf("filtered = %v", got)
	}
	// New rows obey the filter.
	m.Upsert([]session.Summary{sum(4, "b.com", 200), sum(5, "a.com", 200)})
	if got := ids(m); !slices.Equal(got, []session.ID{1, 3, 5}) {
		t.Fatalf("after upsert = %v", got)
	}
	// An update that makes a row match brings it in, in order.
	m.Upsert([]session.Summary{sum(2, "a.com", 200)})
	if got := ids(m); !slices.Equal(got, []session.ID{1, 2, 3, 5}) {
		t.Fatalf("after update = %v", got)
	}
	if m.Total() != 5 {
		t.Fatalf("total = %d", m.Total())
	}
	m.SetFilter(nil)
	if m.Len() != 5 {
		t.Fatalf("unfiltered len = %d", m.Len())
	}
}

func TestSort(t *testing.T) {
	m := New(0)
	m.Upsert([]session.Summary{sum(1, "c", 200), sum(2, "a", 404), sum(3, "b", 500), sum(4, "a", 200)})
	m.SortBy(ColHost, false)
	if got := ids(m); !slices.Equal(got, []session.ID{2, 4, 3, 1}) {
		t.Fatalf("by host = %v", got)
	}
	m.SortBy(ColHost, true)
	if got := ids(m); !slices.Equal(got, []session.ID{1, 3, 4, 2}) {
		t.Fatalf("by host desc = %v", got)
	}
	m.SortBy(ColDuration, false) // duration = 100-id
	if got := ids(m); !slices.Equal(got, []session.ID{4, 3, 2, 1}) {
		t.Fatalf("by duration = %v", got)
	}
	// Newest first: new rows appear at the top without a rebuild.
	m.SortBy(ColID, true)
	ch := m.Upsert([]session.Summary{sum(5, "a", 200)})
	if ch.Reset {
		t.Fatalf("append in newest-first rebuilt: %+v", ch)
	}
	if got := ids(m); !slices.Equal(got, []session.ID{5, 4, 3, 2, 1}) {
		t.Fatalf("newest first = %v", got)
	}
	if i := m.IndexOf(4); i != 1 {
		t.Fatalf("IndexOf(4) = %d", i)
	}
	// A sort-key change of a visible row moves it.
	m.SortBy(ColStatus, false)
	m.Upsert([]session.Summary{sum(3, "b", 100)})
	if m.At(0).ID != 3 {
		t.Fatalf("first by status = %d", m.At(0).ID)
	}
}

func TestEvictionKeepsNewestAndInFlight(t *testing.T) {
	m := New(10)
	var rows []session.Summary
	for i := 1; i <= 10; i++ {
		rows = append(rows, sum(session.ID(i), "h", 200))
	}
	rows[0].InFlight = true // id 1 stays
	m.Upsert(rows)
	m.Select(2) // the selection stays too
	ch := m.Upsert([]session.Summary{sum(11, "h", 200)})
	if ch.Evicted == 0 || !ch.Reset {
		t.Fatalf("change = %+v, want eviction", ch)
	}
	if m.Total() > 10 {
		t.Fatalf("total %d > max", m.Total())
	}
	if _, ok := m.Get(1); !ok {
		t.Fatal("in-flight row evicted")
	}
	if _, ok := m.Get(2); !ok {
		t.Fatal("selected row evicted")
	}
	if _, ok := m.Get(3); ok {
		t.Fatal("oldest complete row kept")
	}
	if _, ok := m.Get(11); !ok {
		t.Fatal("newest row missing")
	}
	if m.Evicted() != uint64(ch.Evicted) {
		t.Fatalf("Evicted() = %d, want %d", m.Evicted(), ch.Evicted)
	}
}

func TestReplaceResync(t *testing.T) {
	m := New(0)
	m.Upsert([]session.Summary{sum(1, "a", 200), sum(2, "a", 200)})
	m.Select(2)
	inflight := sum(9, "x", 0)
	inflight.InFlight = true
	ch := m.Replace([]session.Summary{sum(5, "s", 200), sum(4, "s", 200), inflight, sum(5, "s", 201)})
	if !ch.Reset || ch.Added != 3 {
		t.Fatalf("change = %+v", ch)
	}
	if got := ids(m); !slices.Equal(got, []session.ID{4, 5, 9}) {
		t.Fatalf("ids = %v", got)
	}
	if r, _ := m.Get(5); r.Status != 201 {
		t.Fatalf("duplicate did not keep the last: %d", r.Status)
	}
	if m.IndexOf(2) != -1 {
		t.Fatal("old row still visible")
	}
}

func TestSelectionStep(t *testing.T) {
	m := New(0)
	if m.Step(1) != -1 {
		t.Fatal("step on empty model")
	}
	m.Upsert([]session.Summary{sum(1, "a", 200), sum(2, "b", 200), sum(3, "a", 200)})
	if i := m.Step(1); i != 0 {
		t.Fatalf("first step = %d", i)
	}
	m.Step(1)
	if id, _ := m.Selected(); id != 2 {
		t.Fatalf("selected %d", id)
	}
	m.Step(5)
	if id, _ := m.Selected(); id != 3 {
		t.Fatalf("clamped selection %d", id)
	}
	// Filtering out the selection keeps it, stepping restarts from the edge.
	m.SetFilter(func(s *session.Summary) bool { return s.Host == "b" })
	if id, ok := m.Selected(); !ok || id != 3 {
		t.Fatal("selection lost on filter")
	}
	if i := m.Step(-1); i != 0 || m.At(i).ID != 2 {
		t.Fatalf("step into filtered view = %d", i)
	}
	m.Delete(2)
	if _, ok := m.Selected(); ok {
		t.Fatal("deleted row still selected")
	}
}

func TestCellText(t *testing.T) {
	s := sum(42, "example.com", 200)
	s.ContentType = "application/json; charset=utf-8"
	s.RespBytes = 1234
	s.DurationMS = 35
	cases := map[Column]string{
		ColID: "42", ColStatus: "200", ColProto: "h2→h1", ColType: "application/json",
		ColRespSize: "1.2kB", ColDuration: "35ms", ColHost: "example.com",
	}
	for c, want := range cases {
		if got := CellText(&s, c); got != want {
			t.Errorf("%s = %q, want %q", Columns[c].Title, got, want)
		}
	}
	e := sum(1, "x", 0)
	e.Error = "upstream dial: refused"
	if CellText(&e, ColStatus) != "ERR" || StatusClass(&e) != ClassError {
		t.Error("error row not marked")
	}
	h := sum(2, "x", 0)
	h.Flags = session.FlagHandshakeFailed
	if !strings.Contains(CellText(&h, ColStatus), "TLS") || StatusClass(&h) != ClassError {
		t.Error("failed handshake not marked")
	}
	for i, c := range Columns {
		if got, ok := ColumnByKey(c.Key); !ok || got != Column(i) {
			t.Errorf("ColumnByKey(%q) = %v %v", c.Key, got, ok)
		}
	}
}

func BenchmarkUpsertAppend(b *testing.B) {
	m := New(100_000)
	id := session.ID(0)
	batch := make([]session.Summary, 100)
	for b.Loop() {
		for i := range batch {
			id++
			batch[i] = sum(id, "h", 200)
		}
		m.Upsert(batch)
	}
}

// TestHostKeySeparatesPorts: two services on one host are two hosts in the tree; the
// scheme's default port and user info are not part of the key.
func TestHostKeySeparatesPorts(t *testing.T) {
	for url, want := range map[string]string{
		"http://localhost:3000/a":    "localhost:3000",
		"http://localhost:8080/?q=1": "localhost:8080",
		"http://localhost/":          "localhost",
		"http://localhost:80/":       "localhost",
		"https://api.example:443/x":  "api.example",
		"https://api.example:8443/x": "api.example:8443",
		"https://u:p@api.example/x":  "api.example",
		"http://[::1]:9000/":         "[::1]:9000",
		"https://[2001:db8::1]/":     "2001:db8::1",
		"api.example:443":            "api.example",
	} {
		s := (&session.Session{Request: session.Request{URL: url}}).Summarize()
		if got := HostKey(&s); got != want {
			t.Errorf("%s: host key %q, want %q", url, got, want)
		}
	}
}
