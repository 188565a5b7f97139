package diff

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"inspector/engine/session"
	"inspector/store"
	"inspector/store/har"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func sess(id session.ID, method, url string, status int, reqH, respH http.Header, reqBody, respBody string) *session.Session {
	s := &session.Session{ID: id, Started: t0,
		Request: session.Request{Method: method, URL: url, Header: reqH, Body: session.Body{Data: []byte(reqBody), Size: int64(len(reqBody))}},
		Timings: session.Timings{RequestHeaders: t0, ResponseDone: t0.Add(20 * time.Millisecond)}}
	if status != 0 {
		s.Response = &session.Response{Status: status, Header: respH, Body: session.Body{Data: []byte(respBody), Size: int64(len(respBody))}}
	}
	return s
}

func gz(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.String()
}

func text(e *Exchange) []byte {
	var b bytes.Buffer
	e.WriteText(&b)
	return b.Bytes()
}

func TestExchangeJSONGolden(t *testing.T) {
	a := sess(1, "GET", "https://api.example.com/items?page=1", 200, nil,
		http.Header{"Content-Type": {"application/json"}},
		"", `{"timestamp":"2026-12-01T10:00:00Z","items":[{"id":1,"price":10,"tags":["a"]},{"id":2,"price":5},{"id":3,"price":7},{"id":4,"price":9.0}],"meta":{"total":4,"next":null},"gone":true}`)
	// B: key order differs, one price changed, one element added, a type changed, a
	// member removed and one added; the body is gzipped (compared decoded).
	b := sess(2, "GET", "https://api.example.com/items?page=1", 200, nil,
		http.Header{"Content-Type": {"application/json; charset=utf-8"}, "Content-Encoding": {"gzip"}},
		"", gz(`{"meta":{"next":"p2","total":5},"items":[{"price":10,"id":1,"tags":["a","b"]},{"id":2,"price":5},{"id":3,"price":7},{"id":4,"price":12},{"id":5,"price":1}],"timestamp":"2026-12-02T11:00:00Z","new":{"x":1}}`))
	e := Exchanges(a, b, DefaultIgnore())
	golden(t, "exchange-json.golden", text(e))
	var paths []string
	for _, f := range e.Response.Body.Fields {
		paths = append(paths, string(f.Op)+" "+f.Name)
	}
	for _, want := range []string{"changed $.items[3].price", "ignored $.timestamp", "added $.items[4]", "added $.items[0].tags[1]", "removed $.gone", "changed $.meta.next", "added $.new"} {
		if !strings.Contains(strings.Join(paths, "\n"), want) {
			t.Errorf("missing %q in %q", want, paths)
		}
	}
	if e.Equal {
		t.Error("the bodies differ")
	}
	// key order alone is no difference; 9.0 equals 9
	a2 := sess(3, "GET", "https://h/", 200, nil, http.Header{"Content-Type": {"application/json"}}, "", `{"a":1,"b":[1,2],"c":9.0}`)
	b2 := sess(4, "GET", "https://h/", 200, nil, http.Header{"Content-Type": {"application/json"}}, "", `{"c":9,"b":[1,2],"a":1}`)
	if e := Exchanges(a2, b2, nil); !e.Equal || !e.Response.Body.Equal {
		t.Errorf("reordered keys reported as a change: %s", text(e))
	}
}

func TestExchangeTextGolden(t *testing.T) {
	lines := func(n int, change map[int]string, extra ...string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			if c, ok := change[i]; ok {
				if c != "" {
					b.WriteString(c + "\n")
				}
				continue
			}
			fmt.Fprintf(&b, "line %d\n", i)
		}
		for _, e := range extra {
			b.WriteString(e + "\n")
		}
		return b.String()
	}
	ct := http.Header{"Content-Type": {"text/plain"}}
	a := sess(1, "POST", "https://h/upload", 201, ct, ct, lines(12, nil), "created")
	b := sess(2, "POST", "https://h/upload", 201, ct, ct, lines(12, map[int]string{3: "line three", 7: ""}, "line 13"), "created")
	e := Exchanges(a, b, nil)
	golden(t, "exchange-text.golden", text(e))
	var ops []string
	for _, l := range e.Request.Body.Lines {
		if l.Op != OpEqual {
			ops = append(ops, fmt.Sprintf("%s %d/%d %s", l.Op, l.LineA, l.LineB, l.Text))
		}
	}
	want := "removed 3/0 line 3|added 0/3 line three|removed 7/0 line 7|added 0/12 line 13"
	if strings.Join(ops, "|") != want {
		t.Errorf("line ops %q\nwant %q", strings.Join(ops, "|"), want)
	}
}

func TestExchangeHeadersGolden(t *testing.T) {
	a := sess(1, "GET", "https://h/a", 200,
		http.Header{"Accept": {"*/*"}, "X-Old": {"1"}, "Cookie": {"a=1"}, "X-Multi": {"x", "y"}, "x-case": {"same"}},
		http.Header{"Date": {"Mon, 30 Nov 2026 10:00:00 GMT"}, "X-Request-Id": {"abc"}, "Cache-Control": {"no-cache"}, "Vary": {"Accept", "Origin"}},
		"", "")
	b := sess(2, "PUT", "https://h/b", 404,
		http.Header{"Accept": {"application/json"}, "X-New": {"2"}, "Cookie": {"a=2"}, "X-Multi": {"y", "x"}, "X-Case": {"same"}},
		http.Header{"Date": {"Tue, 01 Dec 2026 10:00:00 GMT"}, "X-Request-Id": {"def"}, "Cache-Control": {"max-age=60"}, "Vary": {"Origin", "Accept"}},
		"", "")
	e := Exchanges(a, b, DefaultIgnore())
	golden(t, "exchange-headers.golden", text(e))
	ops := map[string]Op{}
	for _, f := range append(e.Request.Headers, e.Response.Headers...) {
		ops[strings.ToLower(f.Name)] = f.Op
	}
	for name, want := range map[string]Op{"accept": OpChanged, "x-old": OpRemoved, "x-new": OpAdded, "cookie": OpIgnored,
		"x-multi": OpEqual, "x-case": OpEqual, "date": OpIgnored, "x-request-id": OpIgnored, "cache-control": OpChanged, "vary": OpEqual} {
		if ops[name] != want {
			t.Errorf("%s: %s, want %s", name, ops[name], want)
		}
	}
	// method, url, Accept, X-New, X-Old, status, Cache-Control; Cookie, Date, X-Request-Id
	if e.Changes != 7 || e.Ignored != 3 {
		t.Errorf("changes %d ignored %d, want 7 and 3", e.Changes, e.Ignored)
	}
}

func TestExchangeBinaryAndDecodeFailure(t *testing.T) {
	oct := http.Header{"Content-Type": {"application/octet-stream"}}
	a := sess(1, "GET", "https://h/bin", 200, nil, oct, "", "\x00\x01\x02")
	b := sess(2, "GET", "https://h/bin", 200, nil, oct, "", "\x00\x01\x03\x04")
	e := Exchanges(a, b, nil)
	if body := e.Response.Body; body.Kind != BodyBinary || body.Equal || body.SizeA != 3 || body.SizeB != 4 || body.SHA256A == body.SHA256B {
		t.Fatalf("binary: %+v", body)
	}
	// a body whose gzip is damaged is compared as captured, with a note
	bad := sess(3, "GET", "https://h/bin", 200, nil, http.Header{"Content-Encoding": {"gzip"}}, "", "not gzip")
	e = Exchanges(bad, bad, nil)
	if !e.Equal || len(e.Response.Body.Notes) != 2 {
		t.Fatalf("damaged gzip: equal %v notes %q", e.Equal, e.Response.Body.Notes)
	}
}

func TestIgnoreFile(t *testing.T) {
	dir := t.TempDir()
	c, err := LoadIgnore(dir)
	if err != nil || len(c.Default.Headers) == 0 {
		t.Fatalf("defaults: %v %v", c, err)
	}
	c.Hosts = map[string]Rules{"api.example.com": {Headers: []string{"X-Build"}, JSON: []string{"$.items[*].price", `$["odd key"]`}}}
	if err := c.Save(dir); err != nil {
		t.Fatal(err)
	}
	c2, err := LoadIgnore(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := c2.For("api.example.com")
	if !m.Header("x-build") || !m.Header("X-B3-TraceId") || c2.For("other").Header("X-Build") {
		t.Error("per-host header rules")
	}
	if !m.path([]seg{{key: "items", index: -1}, {index: 7}, {key: "price", index: -1}}) || m.path([]seg{{key: "items", index: -1}, {index: 7}, {key: "name", index: -1}}) {
		t.Error("[*] paths")
	}
	if !m.path([]seg{{key: "odd key", index: -1}, {key: "x", index: -1}}) {
		t.Error("quoted keys, and everything under an ignored member")
	}
	// bad files are errors naming the problem, and are left alone
	for _, bad := range []string{`{"default":{"json":["items"]}}`, `{"default":{"json":["$.a["]}}`, `{"defualt":{}}`, `not json`, `{"hosts":{"h":{"headers":[" "]}}}`} {
		path := filepath.Join(dir, IgnoreFile)
		os.WriteFile(path, []byte(bad), 0o600)
		if _, err := LoadIgnore(dir); err == nil || !strings.Contains(err.Error(), IgnoreFile) {
			t.Errorf("%s: error %v", bad, err)
		}
		if b, _ := os.ReadFile(path); string(b) != bad {
			t.Errorf("the bad file was changed")
		}
	}
}

func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://API.example.com:443/users/42/orders/7?b=2&a=x": "https://api.example.com/users/{n}/orders/{n}?a=x&b={n}",
		"http://h:80/o/3fa85f64-5717-4562-b3fc-2c963f66afa6":    "http://h/o/{uuid}",
		"http://h/blob/deadbeef12/v2":                           "http://h/blob/{hex}/v2",
		"http://h/s/AbCdEfGh12345678xyz#frag":                   "http://h/s/{id}",
		"http://h/static/app.css?v=":                            "http://h/static/app.css?v=",
	} {
		if got := NormalizeURL(in); got != want {
			t.Errorf("NormalizeURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// recordingSessions builds a recording of n calls: users, orders and a poll, with JSON
// bodies, interleaved.
func recordingSessions(n int) []*session.Session {
	var out []*session.Session
	js := http.Header{"Content-Type": {"application/json"}, "Date": {"x"}}
	for i := 0; len(out) < n; i++ {
		id := session.ID(len(out) + 1)
		switch i % 4 {
		case 0:
			out = append(out, sess(id, "GET", fmt.Sprintf("https://api.example.com/users/%d", i), 200, nil, js, "", fmt.Sprintf(`{"id":%d,"name":"u%d","tags":["a"]}`, i, i)))
		case 1:
			out = append(out, sess(id, "POST", "https://api.example.com/orders", 201, http.Header{"Content-Type": {"application/json"}}, js, `{"item":1}`, fmt.Sprintf(`{"order":%d,"ok":true}`, i)))
		case 2:
			out = append(out, sess(id, "GET", fmt.Sprintf("https://api.example.com/poll?since=%d", i*1000), 204, nil, nil, "", ""))
		default:
			out = append(out, sess(id, "GET", "https://cdn.example.com/app.js", 200, nil, http.Header{"Content-Type": {"text/javascript"}}, "", "console.log(1)"))
		}
	}
	return out
}

func writeHAR(t testing.TB, ss []*session.Session) string {
	path := filepath.Join(t.TempDir(), "rec.har")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := har.NewWriter(f, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if err := w.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

func TestRecordingHARAgainstItself(t *testing.T) {
	path := writeHAR(t, recordingSessions(40))
	a, err := LoadRecording(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := Recordings(path, a, path, a, Options{})
	if !r.Equal() || r.Summary.Matched != 40 || len(r.Rows) != 40 {
		t.Fatalf("a HAR against itself: %s %+v", r.SummaryLine(), r.Summary)
	}
	if r.SummaryLine() != "no differences (40 calls matched)" {
		t.Errorf("summary %q", r.SummaryLine())
	}
}

func TestRecordingKnownDifferences(t *testing.T) {
	a := recordingSessions(24)
	b := recordingSessions(24)
	// changed: status, body shape, a new response header; slower: 20ms → 400ms
	b[0].Response.Status = 500
	b[4].Response.Body.Data = []byte(`{"id":4,"name":7,"tags":["a"],"extra":{}}`)
	b[7].Response.Header = http.Header{"Content-Type": {"text/javascript"}, "X-Cache": {"MISS"}}
	b[8].Timings.ResponseDone = t0.Add(400 * time.Millisecond)
	// ignored: a new Set-Cookie header is not a change
	b[12].Response.Header = http.Header{"Content-Type": {"application/json"}, "Date": {"y"}, "Set-Cookie": {"s=1"}}
	// changed: a request header gone
	a[13].Request.Header = http.Header{"Content-Type": {"application/json"}, "X-Api-Key": {"k"}}
	// missing: a poll and an order are not in B (orders are all alike: the alignment
	// reports the last as missing)
	missing := []string{"GET " + a[10].Request.URL, "POST " + a[5].Request.URL}
	b = append(b[:10:10], b[11:]...)
	b = append(b[:5:5], b[6:]...)
	// new: an extra call in B
	b = append(b, sess(99, "DELETE", "https://api.example.com/users/5", 204, nil, nil, "", ""))
	// reordered: a poll and the cdn call swap places: no difference
	b[2], b[3] = b[3], b[2]

	pa, pb := writeHAR(t, a), writeHAR(t, b)
	ca, err := LoadRecording(pa, nil)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := LoadRecording(pb, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := Recordings("A", ca, "B", cb, Options{Ignore: DefaultIgnore()})
	if got, want := r.SummaryLine(), "2 calls missing, 1 new, 4 changed, 1 slower"; got != want {
		var out bytes.Buffer
		r.WriteText(&out)
		t.Fatalf("summary %q, want %q\n%s", got, want, out.String())
	}
	for i, c := range r.Missing {
		if c.Method+" "+c.URL != missing[i] {
			t.Errorf("missing[%d] = %s %s, want %s", i, c.Method, c.URL, missing[i])
		}
	}
	if r.New[0].Method != "DELETE" {
		t.Errorf("new: %+v", r.New)
	}
	var out bytes.Buffer
	r.WriteText(&out)
	golden(t, "recording.golden", out.Bytes())
	js, _ := json.Marshal(r)
	if !bytes.Contains(js, []byte(`"missing":2`)) {
		t.Errorf("JSON summary: %s", js)
	}
}

func TestRecordingFromStores(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	for i, dir := range []string{dirA, dirB} {
		st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ss := recordingSessions(8)
		if i == 1 {
			ss = ss[:7]
		}
		if _, err := st.Import(ss); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// filter: and ids: recordings of an open store
			calls, err := LoadRecording("filter:method:POST", st)
			if err != nil || len(calls) != 2 {
				t.Fatalf("filter: %d calls, %v", len(calls), err)
			}
			calls, err = LoadRecording("ids:2-4", st)
			if err != nil || len(calls) != 3 || calls[0].ID != 2 {
				t.Fatalf("ids: %+v, %v", calls, err)
			}
			for _, bad := range []string{"ids:4-2", "ids:x", "ids:0-3", "filter:status:(", "filter:"} {
				if _, err := LoadRecording(bad, st); err == nil && bad != "filter:" {
					t.Errorf("%s: no error", bad)
				}
			}
			if _, err := LoadRecording("ids:1-2", nil); err == nil {
				t.Error("ids: without a store")
			}
		}
		st.Close()
	}
	ca, err := LoadRecording(dirA, nil)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := LoadRecording(filepath.Join(dirB, "sessions.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := Recordings(dirA, ca, dirB, cb, Options{}); r.SummaryLine() != "1 call missing, 0 new, 0 changed, 0 slower" {
		t.Errorf("stores: %s", r.SummaryLine())
	}
	for _, bad := range []string{filepath.Join(dirA, "nope.har"), t.TempDir()} {
		if _, err := LoadRecording(bad, nil); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	notHAR := filepath.Join(t.TempDir(), "x.har")
	os.WriteFile(notHAR, []byte("{"), 0o600)
	if _, err := LoadRecording(notHAR, nil); err == nil {
		t.Error("a broken HAR loads")
	}
}

// BenchmarkRecordings10k diffs two recordings of 10,000 calls each, from sessions
// (bodies parsed for their shapes) to the result.
func BenchmarkRecordings10k(b *testing.B) {
	sa, sb := recordingSessions(10000), recordingSessions(10000)
	for i := 0; i < len(sb); i += 97 {
		sb[i].Response.Status = 503
	}
	sb = append(sb[:5000:5000], sb[5100:]...)
	b.ResetTimer()
	for b.Loop() {
		r := Recordings("a", Calls(sa), "b", Calls(sb), Options{})
		if r.Summary.Missing != 100 {
			b.Fatalf("%+v", r.Summary)
		}
	}
}

func TestSideBySide(t *testing.T) {
	ct := http.Header{"Content-Type": {"text/plain"}}
	var la, lb strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&la, "line %d\n", i)
		if i == 15 {
			lb.WriteString("line fifteen\n")
			continue
		}
		fmt.Fprintf(&lb, "line %d\n", i)
	}
	a := sess(1, "GET", "https://h/", 200, http.Header{"X-Multi": {"1", "2"}}, ct, "", la.String())
	b := sess(2, "GET", "https://h/", 200, http.Header{"X-Multi": {"1"}, "X-New": {"n"}}, ct, "", lb.String())
	rows := Exchanges(a, b, nil).SideBySide()
	var got []string
	for _, r := range rows {
		if r.Section != "" {
			got = append(got, "# "+r.Section)
			continue
		}
		got = append(got, fmt.Sprintf("%s | %s | %s", r.Op, r.Left, r.Right))
	}
	want := []string{
		"# Request", "equal | method: GET | method: GET", "equal | url: https://h/ | url: https://h/",
		"# Request headers", "changed | X-Multi: 1 | X-Multi: 1", "changed | X-Multi: 2 | ", "added |  | X-New: n",
		"# Response", "equal | status: 200 OK | status: 200 OK",
		"# Response headers", "equal | Content-Type: text/plain | Content-Type: text/plain",
		"# Response body (text, 231 → 236 bytes)",
		"ignored | … 11 equal lines | … 11 equal lines",
		"equal | line 12 | line 12", "equal | line 13 | line 13", "equal | line 14 | line 14",
		"changed | line 15 | line fifteen",
		"equal | line 16 | line 16", "equal | line 17 | line 17", "equal | line 18 | line 18",
		"ignored | … 12 equal lines | … 12 equal lines",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestIgnoreAdd(t *testing.T) {
	if got := GeneralPath(`$.items[3].price`); got != `$.items[*].price` {
		t.Errorf("GeneralPath = %s", got)
	}
	if got := GeneralPath(`$["a b"][0]..id`); got != `$["a b"][*]..id` {
		t.Errorf("GeneralPath = %s", got)
	}
	c := DefaultIgnore()
	for _, tc := range []struct {
		kind, name string
		changed    bool
	}{{"header", "X-Build", true}, {"header", "x-build", false}, {"header", "Date", false}, {"json", "$.items[3].price", true},
		{"json", "$.items[5].price", false}, {"json", "$.timestamp", false}, {"json", "$.total", true}} {
		changed, err := c.Add("API.example.com", tc.kind, tc.name)
		if err != nil || changed != tc.changed {
			t.Errorf("Add(%s %s) = %v %v, want %v", tc.kind, tc.name, changed, err, tc.changed)
		}
	}
	if _, err := c.Add("h", "cookie", "x"); err == nil {
		t.Error("unknown kind")
	}
	if _, err := c.Add("h", "json", "items"); err == nil {
		t.Error("bad path")
	}
	r := c.Hosts["api.example.com"]
	if strings.Join(r.Headers, ",") != "X-Build" || strings.Join(r.JSON, ",") != "$.items[*].price,$.total" {
		t.Errorf("rules %+v", r)
	}
	// the side-by-side rows say what they show, for the window's Ignore button
	a := sess(1, "GET", "https://api.example.com/", 200, nil, http.Header{"Content-Type": {"application/json"}, "X-A": {"1"}}, "", `{"total":1}`)
	b := sess(2, "GET", "https://api.example.com/", 200, nil, http.Header{"Content-Type": {"application/json"}, "X-A": {"2"}}, "", `{"total":2}`)
	var kinds []string
	for _, row := range Exchanges(a, b, nil).SideBySide() {
		if row.Kind != "" && row.Op != OpEqual {
			kinds = append(kinds, row.Kind+" "+row.Field)
		}
	}
	if strings.Join(kinds, ",") != "header X-A,json $.total" {
		t.Errorf("row fields %q", kinds)
	}
	if e := Exchanges(a, b, c); e.Changes != 1 || e.Ignored != 1 {
		t.Errorf("after Add: %d changes %d ignored", e.Changes, e.Ignored)
	}
}
