package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"inspector/engine/session"
	"inspector/store"
)

// runCLI runs the command in-process and returns its exit status and output.
func runCLI(t *testing.T, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	oldOut, oldErr := stdout, stderr
	stdout, stderr = &o, &e
	defer func() { stdout, stderr = oldOut, oldErr }()
	code = run(args)
	return code, o.String(), e.String()
}

func mkSession(id session.ID, status int, respBody []byte) *session.Session {
	t0 := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC).Add(time.Duration(id) * time.Second)
	s := &session.Session{
		ID: id, Started: t0,
		Client:   session.Conn{Addr: "127.0.0.1:40000", Proto: session.HTTP2, TLS: &session.TLSInfo{Version: "TLS 1.3", CipherSuite: "TLS_AES_128_GCM_SHA256", ServerName: "example.com"}},
		Upstream: session.Conn{Addr: "127.0.0.1:443", Proto: session.HTTP1},
		Request: session.Request{Method: "GET", URL: fmt.Sprintf("https://example.com/item/%d", id), Proto: "HTTP/2.0",
			Header: http.Header{"Accept": {"application/json"}}},
		Response: &session.Response{Status: status, Proto: "HTTP/1.1", Header: http.Header{"Content-Type": {"application/json"}},
			Body: session.Body{Data: respBody, Size: int64(len(respBody))}},
		Timings: session.Timings{ClientConnected: t0, RequestHeaders: t0, ResponseDone: t0.Add(35 * time.Millisecond)},
	}
	return s
}

// fillStore creates DATA_DIR/sessions.db with sessions of the given statuses (ids 1..n)
// and returns the data dir.
func fillStore(t *testing.T, statuses ...int) string {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, code := range statuses {
		body := []byte(fmt.Sprintf(`{"n":%d}`, i))
		if i == 1 {
			body = []byte{0x1f, 0x8b, 0, 1, 2, 0xff} // binary
		}
		st.Put(mkSession(st.NextID(), code, body))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestFormatSessionLine(t *testing.T) {
	cases := []struct {
		s    session.Summary
		want string
	}{
		{session.Summary{ID: 42, Status: 200, Method: "GET", URL: "https://example.com/api", ClientProto: session.HTTP2,
			UpstreamProto: session.HTTP1, RespBytes: 1200, DurationMS: 35}, "#42 200 GET https://example.com/api h2→h1 1.2kB 35ms"},
		{session.Summary{ID: 7, Method: "POST", URL: "http://a.test/x", ClientProto: session.HTTP1, RespBytes: 0, DurationMS: 1.25,
			Error: "upstream dial: connection refused"}, "#7 --- POST http://a.test/x h1→- 0B 1.2ms error: upstream dial: connection refused"},
		{session.Summary{ID: 8, Status: 304, Method: "GET", URL: "https://b.test/", ClientProto: session.HTTP3, UpstreamProto: session.HTTP2,
			RespBytes: 3_400_000, DurationMS: 1500, ReplayOf: 3, Flags: session.FlagImported}, "#8 304 GET https://b.test/ h3→h2 3.4MB 1.5s replay of #3 (imported)"},
	}
	for _, c := range cases {
		if got := formatSessionLine(c.s); got != c.want {
			t.Errorf("formatSessionLine = %q\n                 want %q", got, c.want)
		}
	}
}

func TestSessionsAndShowDirect(t *testing.T) {
	dir := fillStore(t, 200, 404, 500, 201, 403, 200)
	dd := "--data-dir=" + dir

	code, out, errOut := runCLI(t, "sessions", dd)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 6 || !strings.HasPrefix(lines[0], "#1 200 GET https://example.com/item/1 h2→h1 ") || !strings.HasPrefix(lines[5], "#6 ") {
		t.Fatalf("sessions: code %d, stderr %q, out:\n%s", code, errOut, out)
	}

	code, out, _ = runCLI(t, "sessions", dd, "--json", "--filter", "status:4xx")
	var got []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("--json line %q: %v", l, err)
		}
		got = append(got, m)
	}
	if code != 0 || len(got) != 2 || got[0]["status"] != 404.0 || got[1]["status"] != 403.0 {
		t.Fatalf("status:4xx gave %v", got)
	}
	for _, k := range []string{"id", "started", "method", "url", "status", "client_proto", "upstream_proto", "req_bytes",
		"resp_bytes", "duration_ms", "error", "replay_of", "tls"} {
		if _, ok := got[0][k]; !ok {
			t.Errorf("--json lacks %q: %v", k, got[0])
		}
	}
	if _, err := time.Parse(time.RFC3339Nano, got[0]["started"].(string)); err != nil {
		t.Errorf("started: %v", err)
	}

	if code, out, _ = runCLI(t, "sessions", dd, "--limit", "2", "--after", "3"); code != 0 || strings.Count(out, "\n") != 2 || !strings.HasPrefix(out, "#4 ") {
		t.Fatalf("--limit 2 --after 3: %d %q", code, out)
	}
	code, out, errOut = runCLI(t, "sessions", dd, "--filter", "stauts:4xx")
	if code != 2 || out != "" || !strings.Contains(errOut, "filter") || !strings.Contains(errOut, "at 1") {
		t.Fatalf("invalid filter: code %d, out %q, stderr %q", code, out, errOut)
	}
	if code, _, _ = runCLI(t, "sessions", dd, "extra"); code != 2 {
		t.Fatalf("sessions with an argument: code %d", code)
	}
	if code, out, errOut = runCLI(t, "sessions", "--data-dir="+t.TempDir()); code != 0 || out != "" {
		t.Fatalf("sessions on an empty data dir: %d %q %q", code, out, errOut)
	}

	code, out, errOut = runCLI(t, "show", "2", dd)
	for _, want := range []string{"Session #2", "> GET https://example.com/item/2 HTTP/2.0", "> Accept: application/json",
		"< HTTP/1.1 404", "< Content-Type: application/json", "base64]\nH4sAAQL/", "TLS 1.3", "response done", "+35ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("show 2 lacks %q", want)
		}
	}
	if code != 0 || t.Failed() {
		t.Fatalf("show 2: code %d stderr %q\n%s", code, errOut, out)
	}
	if _, out, _ = runCLI(t, "show", dd, "3"); !strings.Contains(out, "[response body: 7 bytes]\n{\"n\":2}") {
		t.Fatalf("show 3 text body:\n%s", out)
	}
	code, out, _ = runCLI(t, "show", "4", "--json", dd)
	var s session.Session
	if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil || s.ID != 4 || s.Status() != 201 || string(s.Response.Body.Data) != `{"n":3}` {
		t.Fatalf("show --json: %d %v %q", code, err, out)
	}
	if code, _, errOut = runCLI(t, "show", "999", dd); code != 1 || !strings.Contains(errOut, "no such session") {
		t.Fatalf("show 999: %d %q", code, errOut)
	}
	for _, bad := range [][]string{{"show", dd}, {"show", "abc", dd}, {"show", "1", "2", dd}} {
		if code, _, _ = runCLI(t, bad...); code != 2 {
			t.Fatalf("%v: code %d, want 2", bad, code)
		}
	}
}

// With a running instance holding the store, sessions and show go through its control
// API and print exactly what they print from the file.
func TestSessionsAndShowThroughInstance(t *testing.T) {
	dir := fillStore(t, 200, 404, 500, 201, 403, 200)
	dd := "--data-dir=" + dir
	cmds := [][]string{
		{"sessions", dd}, {"sessions", dd, "--json"}, {"sessions", dd, "--filter", "status:4xx"},
		{"sessions", dd, "--limit", "3", "--after", "1"}, {"show", "2", dd}, {"show", "5", "--json", dd}, {"show", "99", dd},
	}
	type result struct {
		code     int
		out, err string
	}
	direct := make([]result, len(cmds))
	for i, c := range cmds {
		code, out, errOut := runCLI(t, c...)
		direct[i] = result{code, out, errOut}
	}

	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, stop, err := startControl(dir, "127.0.0.1:8080", st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for i, c := range cmds {
		code, out, errOut := runCLI(t, c...)
		if code != direct[i].code || out != direct[i].out {
			t.Errorf("%v through the instance: code %d (direct %d)\nout:\n%s\ndirect:\n%s\nstderr %q", c, code, direct[i].code, out, direct[i].out, errOut)
		}
	}
	// A stale control.json (instance gone) while the file is locked: a clear error.
	stop()
	if code, _, errOut := runCLI(t, "sessions", dd); code != 1 || !strings.Contains(errOut, "already running") {
		t.Fatalf("locked without control API: %d %q", code, errOut)
	}
}

func TestHARExportImport(t *testing.T) {
	dir := fillStore(t, 200, 404, 500, 201, 403)
	harFile := filepath.Join(t.TempDir(), "out.har")
	code, _, errOut := runCLI(t, "har", "export", "--data-dir="+dir, "-o", harFile)
	if code != 0 {
		t.Fatalf("har export: %d %q", code, errOut)
	}
	var doc struct {
		Log struct {
			Version string            `json:"version"`
			Entries []json.RawMessage `json:"entries"`
		} `json:"log"`
	}
	b, _ := os.ReadFile(harFile)
	if err := json.Unmarshal(b, &doc); err != nil || doc.Log.Version != "1.2" || len(doc.Log.Entries) != 5 {
		t.Fatalf("exported HAR: %v, version %q, %d entries", err, doc.Log.Version, len(doc.Log.Entries))
	}
	if code, _, _ = runCLI(t, "har", "export", "--data-dir="+dir, "--filter", "status:5xx", "-o", harFile); code != 0 {
		t.Fatal("filtered export failed")
	}
	b, _ = os.ReadFile(harFile)
	json.Unmarshal(b, &doc)
	if len(doc.Log.Entries) != 1 {
		t.Fatalf("status:5xx export has %d entries", len(doc.Log.Entries))
	}
	if code, _, _ = runCLI(t, "har", "export", "--data-dir="+dir); code != 2 {
		t.Fatalf("export without -o: code %d", code)
	}

	// Import into an empty data dir gives the same number of sessions.
	runCLI(t, "har", "export", "--data-dir="+dir, "-o", harFile)
	empty := t.TempDir()
	code, out, errOut := runCLI(t, "har", "import", "--data-dir="+empty, harFile)
	if code != 0 || !strings.Contains(out, "imported 5 sessions") {
		t.Fatalf("har import: %d %q %q", code, out, errOut)
	}
	_, out, _ = runCLI(t, "sessions", "--data-dir="+empty)
	if strings.Count(out, "\n") != 5 || !strings.Contains(out, "(imported)") {
		t.Fatalf("after import:\n%s", out)
	}

	// A damaged HAR fails clearly and adds nothing.
	bad := filepath.Join(t.TempDir(), "bad.har")
	os.WriteFile(bad, b[:len(b)/2], 0o600)
	code, _, errOut = runCLI(t, "har", "import", "--data-dir="+empty, bad)
	if code != 1 || !strings.Contains(errOut, "nothing was added") {
		t.Fatalf("damaged import: %d %q", code, errOut)
	}
	_, out, _ = runCLI(t, "sessions", "--data-dir="+empty)
	if strings.Count(out, "\n") != 5 {
		t.Fatalf("damaged import added sessions:\n%s", out)
	}

	// Through a running instance.
	st, err := store.Open(filepath.Join(empty, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, stop, err := startControl(empty, "", st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if code, out, errOut = runCLI(t, "har", "import", "--data-dir="+empty, harFile); code != 0 || !strings.Contains(out, "imported 5") {
		t.Fatalf("import through instance: %d %q %q", code, out, errOut)
	}
	if code, _, errOut = runCLI(t, "har", "import", "--data-dir="+empty, bad); code != 1 {
		t.Fatalf("damaged import through instance: %d %q", code, errOut)
	}
	if n := st.Stats().Sessions; n != 10 {
		t.Fatalf("store holds %d sessions, want 10", n)
	}
	if code, _, errOut = runCLI(t, "har", "export", "--data-dir="+empty, "-o", harFile); code != 0 {
		t.Fatalf("export through instance: %d %q", code, errOut)
	}
	b, _ = os.ReadFile(harFile)
	json.Unmarshal(b, &doc)
	if len(doc.Log.Entries) != 10 {
		t.Fatalf("export through instance: %d entries", len(doc.Log.Entries))
	}
}

// A WebSocket session that carried more messages than it keeps says so in show, in
// show --json and through the instance's API (issue 26).
func TestShowWebSocketMessagesSeen(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := mkSession(st.NextID(), 101, nil)
	s.Flags |= session.FlagWebSocket
	s.Messages = []session.Message{{Time: s.Started, FromClient: true, Opcode: 1, Data: []byte("hi"), Size: 2}}
	s.MessagesSeen = 12000
	st.Put(s)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	dd := "--data-dir=" + dir
	const note = "ws: 12000 WebSocket messages seen, the first 1 kept"
	check := func(how string) {
		t.Helper()
		if code, out, errOut := runCLI(t, "show", "1", dd); code != 0 || !strings.Contains(out, note) {
			t.Errorf("show %s: code %d stderr %q, lacks %q:\n%s", how, code, errOut, note, out)
		}
		code, out, _ := runCLI(t, "show", "1", "--json", dd)
		var got session.Session
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.MessagesSeen != 12000 || len(got.Messages) != 1 {
			t.Errorf("show --json %s: code %d %v, messages_seen %d, %d kept", how, code, err, got.MessagesSeen, len(got.Messages))
		}
	}
	check("from the file")
	st, err = store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, stop, err := startControl(dir, "127.0.0.1:8080", st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	check("through the instance")
}
