package main

import (
	"path/filepath"
	"strings"
	"testing"

	"inspector/engine/session"
	"inspector/store"
)

// TestHARExportSAZRoundTrip: `har export --saz` writes a Fiddler archive that `import`
// reads back to the same requests, statuses and bodies; a session without a response is
// left out and said; with --share the token is masked in the archive (read back through
// import), while the store keeps it.
func TestHARExportSAZRoundTrip(t *testing.T) {
	// Not parallel: runCLI swaps the process's stdout and stderr.
	src := t.TempDir()
	st, err := store.Open(filepath.Join(src, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const token = "tok-81f3a9c2d4e5b6a7"
	mk := func(method, url string, status int, body string) *session.Session {
		s := &session.Session{ID: st.NextID(), Request: session.Request{Method: method, URL: url, Proto: "HTTP/1.1",
			Header: map[string][]string{"Authorization": {"Bearer " + token}}}}
		if method == "POST" {
			s.Request.Body = session.Body{Data: []byte(`{"q":1}`), Size: 7}
		}
		if status > 0 {
			s.Response = &session.Response{Status: status, Header: map[string][]string{"Content-Type": {"text/plain"}},
				Body: session.Body{Data: []byte(body), Size: int64(len(body))}}
		}
		st.Put(s)
		return s
	}
	mk("GET", "https://a.example/one?x=1", 200, "first body")
	mk("POST", "http://b.example/two", 404, "not here")
	mk("GET", "https://c.example/failed", 0, "")
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	st.Close()

	out := filepath.Join(t.TempDir(), "capture.saz")
	code, _, errOut := runCLI(t, "har", "export", "--data-dir="+src, "--saz", "-o", out)
	if code != 0 || !strings.Contains(errOut, "2 sessions written as .saz (1 without a response left out)") {
		t.Fatalf("export: %d %q", code, errOut)
	}
	dst := t.TempDir()
	if code, o, e := runCLI(t, "import", "--data-dir="+dst, out); code != 0 || !strings.Contains(o, "imported 2 sessions") {
		t.Fatalf("import: %d %q %q", code, o, e)
	}
	back := readAll(t, dst)
	if len(back) != 2 {
		t.Fatalf("%d sessions back", len(back))
	}
	for i, want := range []struct {
		method, url string
		status      int
		body        string
	}{{"GET", "https://a.example/one?x=1", 200, "first body"}, {"POST", "http://b.example/two", 404, "not here"}} {
		s := back[i]
		if s.Request.Method != want.method || s.Request.URL != want.url || s.Response == nil || s.Response.Status != want.status ||
			string(s.Response.Body.Data) != want.body || s.Request.Header.Get("Authorization") != "Bearer "+token {
			t.Errorf("entry %d: %s %s %+v", i+1, s.Request.Method, s.Request.URL, s.Response)
		}
	}
	if got := string(back[1].Request.Body.Data); got != `{"q":1}` {
		t.Errorf("request body %q", got)
	}

	// For sharing: the token is masked in the archive.
	shared := filepath.Join(t.TempDir(), "shared.saz")
	if code, _, e := runCLI(t, "har", "export", "--data-dir="+src, "--saz", "--share", "-o", shared); code != 0 || !strings.Contains(e, "secrets masked") {
		t.Fatalf("shared export: %d %q", code, e)
	}
	dst2 := t.TempDir()
	if code, _, e := runCLI(t, "import", "--data-dir="+dst2, shared); code != 0 {
		t.Fatalf("import shared: %d %q", code, e)
	}
	for _, s := range readAll(t, dst2) {
		if a := s.Request.Header.Get("Authorization"); strings.Contains(a, token) || !strings.Contains(a, "REDACTED-") {
			t.Errorf("shared archive's Authorization %q", a)
		}
	}
	if orig := readAll(t, src); orig[0].Request.Header.Get("Authorization") != "Bearer "+token {
		t.Error("the store lost the original")
	}
}

func readAll(t *testing.T, dir string) []*session.Session {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out []*session.Session
	if err := st.Each(store.Query{}, func(s *session.Session) error { out = append(out, s); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}
