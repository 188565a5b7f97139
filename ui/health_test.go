package ui

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"inspector/engine/session"
	"inspector/store"
)

// TestHealthBannerWhileTheStoreIsDamaged damages a real store under the running window:
// the banner names the damage and --reset-store.
func TestHealthBannerWhileTheStoreIsDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := 0; i < 20; i++ {
		s := mkSession(0, "a.example", "/x", 200, "text/plain", strings.Repeat("b", 3000))
		s.ID = st.NextID()
		st.Put(s)
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	posts := make(chan func(), 16)
	u, _ := newTestUI(t, Deps{Store: st, Post: func(f func()) { posts <- f }})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	u.Start(ctx)
	(<-posts)() // the current health: healthy
	if u.health.Text() != "" {
		t.Fatalf("banner on a healthy store: %q", u.health.Text())
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	ps := int64(max(16<<10, os.Getpagesize()))
	if _, err := f.WriteAt(make([]byte, fi.Size()-2*ps), 2*ps); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st.Put(mkSession(st.NextID(), "a.example", "/y", 200, "text/plain", "z"))
	if err := st.Flush(); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Flush on a damaged file: %v", err)
	}
	for u.health.Text() == "" {
		select {
		case f := <-posts:
			f()
		case <-time.After(10 * time.Second):
			t.Fatal("no banner after the store failed")
		}
	}
	if got := u.health.Text(); !strings.HasPrefix(got, "Sessions are not being stored") || !strings.Contains(got, "damaged") || !strings.Contains(got, "--reset-store") {
		t.Fatalf("banner = %q", got)
	}
}

func TestHealthBannerRecoveryNoticeAndPlurals(t *testing.T) {
	u, _ := newTestUI(t, Deps{})
	u.health.set(store.Health{Healthy: false, LastError: "write sessions.db: no space left on device", Lost: 1})
	if got := u.health.Text(); got != "Sessions are not being stored: write sessions.db: no space left on device (so far 1 session not stored, 0 sessions without bodies)" {
		t.Fatalf("banner = %q", got)
	}
	u.health.set(store.Health{Healthy: true, Lost: 3, BodiesLost: 1})
	if u.health.Text() != "" {
		t.Fatal("the banner stays after recovery")
	}
	if got := u.status.Note(); got != "Sessions are stored again; while the store failed 3 sessions were not stored, 1 session was stored without their bodies" {
		t.Fatalf("recovery notice = %q", got)
	}
	if plural(uint64(1), "session may be missing", "sessions may be missing") != "1 session may be missing" || plural(2, "body", "bodies") != "2 bodies" {
		t.Fatal("plural")
	}
}

// TestImportHARStreamsAllOrNone: the window's import goes through har.Decode and
// ImportStream (Read, which holds the whole file, is never called), and a bad entry after
// good ones leaves nothing imported.
func TestImportHARStreamsAllOrNone(t *testing.T) {
	src := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: src, HAR: StoreHAR("test")})
	var buf bytes.Buffer
	if _, err := u.ExportHAR(&buf, ScopeAll); err != nil {
		t.Fatal(err)
	}
	codec := StoreHAR("test")
	codec.Read = func(io.Reader) ([]*session.Session, error) {
		t.Error("the import read the whole file (HAR.Read)")
		return nil, errors.New("not streamed")
	}
	dst := openStore(t)
	v, _ := newTestUI(t, Deps{Store: dst, HAR: codec})
	var doc map[string]map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	entries := doc["log"]["entries"].([]any)
	doc["log"]["entries"] = append(entries[:2:2], map[string]any{"request": 5})
	bad, _ := json.Marshal(doc)
	if _, err := v.ImportHAR(bytes.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "import failed") {
		t.Fatalf("bad third entry: %v", err)
	}
	if c, _ := dst.Count(nil); c != 0 || v.model.Len() != 0 {
		t.Fatalf("a failed import left %d stored, %d rows", c, v.model.Len())
	}
	n, err := v.ImportHAR(bytes.NewReader(buf.Bytes()))
	if err != nil || n != 4 || v.model.Len() != 4 {
		t.Fatalf("import: n=%d err=%v rows=%d", n, err, v.model.Len())
	}
	if !v.model.At(0).Flags.Has(session.FlagImported) {
		t.Fatal("imported rows are not marked")
	}
}

// TestStatusSaysOneSessionMayBeMissing: a store whose last writer did not close cleanly
// with one id handed out but not committed says "1 session may be missing" (it said
// "1 sessions").
func TestStatusSaysOneSessionMayBeMissing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.db")
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := mkSession(st.NextID(), "a.example", "/x", 200, "text/plain", "ok")
	st.NextID() // handed out, never committed: the crash lost it
	st.Put(s)
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path) // the file as a crash leaves it: not closed cleanly
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	crashed := filepath.Join(t.TempDir(), "sessions.db")
	if err := os.WriteFile(crashed, b, 0o600); err != nil {
		t.Fatal(err)
	}
	re, err := store.Open(crashed, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	if m := re.Stats().Missing; m != 1 {
		t.Fatalf("missing = %d, want 1", m)
	}
	u, _ := newTestUI(t, Deps{Store: re})
	u.status.update()
	if got := u.status.Text(); !strings.Contains(got, "1 session may be missing") || !strings.Contains(got, "· 1 session ·") {
		t.Fatalf("status = %q", got)
	}
}

// TestImportFileRunsInTheBackground: File ▸ Import streams the file off the UI goroutine
// and lists the sessions when it is done; a missing file is an error at once.
func TestImportFileRunsInTheBackground(t *testing.T) {
	src := openStore(t, sampleSessions()...)
	u, _ := newTestUI(t, Deps{Store: src, HAR: StoreHAR("test")})
	var buf bytes.Buffer
	if _, err := u.ExportHAR(&buf, ScopeAll); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "in.har")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	posts := make(chan func(), 16)
	v, w := newTestUI(t, Deps{Store: openStore(t), HAR: StoreHAR("test"), Post: func(f func()) { posts <- f }})
	v.importFile(path)
	if w.Canvas().Overlays().Top() == nil {
		t.Fatal("no progress while importing")
	}
	(<-posts)()
	if v.model.Len() != 4 || v.status.Note() != "Imported 4 sessions from in.har" {
		t.Fatalf("after import: %d rows, note %q", v.model.Len(), v.status.Note())
	}
	v.importFile(filepath.Join(t.TempDir(), "missing.har"))
	if v.model.Len() != 4 {
		t.Fatal("a missing file changed the list")
	}
}

// TestImportHARSpillsLargeBodies: the window's import decodes a body over 1 MiB into a
// spill folder under the data directory (as `inspector har import` does, so a 250 MiB body
// is never held in memory), the store gets it byte-exact, and the folder is gone after.
func TestImportHARSpillsLargeBodies(t *testing.T) {
	body := make([]byte, 3<<20+17)
	for i := range body {
		body[i] = byte(i*7 + i/251)
	}
	doc := map[string]any{"log": map[string]any{"version": "1.2", "creator": map[string]any{"name": "t", "version": "1"},
		"entries": []any{map[string]any{
			"startedDateTime": "2026-12-04T00:00:00Z", "time": 1,
			"request": map[string]any{"method": "GET", "url": "https://big.example/blob", "httpVersion": "HTTP/1.1",
				"headers": []any{}, "queryString": []any{}, "cookies": []any{}, "headersSize": -1, "bodySize": 0},
			"response": map[string]any{"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
				"headers": []any{map[string]any{"name": "Content-Type", "value": "application/octet-stream"}}, "cookies": []any{},
				"content": map[string]any{"size": len(body), "mimeType": "application/octet-stream", "encoding": "base64",
					"text": base64.StdEncoding.EncodeToString(body)},
				"redirectURL": "", "headersSize": -1, "bodySize": len(body)},
			"cache": map[string]any{}, "timings": map[string]any{"send": 0, "wait": 1, "receive": 0}}}}}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	codec := StoreHAR("test")
	decode := codec.Decode
	var spillDir string
	codec.Decode = func(r io.Reader, spill string, fn func(*session.Session) error) error {
		spillDir = spill
		return decode(r, spill, func(s *session.Session) error {
			if s.Response.Body.Spilled == "" {
				t.Error("a 3 MiB body was not spilled")
			} else if !strings.HasPrefix(s.Response.Body.Spilled, spill) {
				t.Errorf("spilled to %q, not under %q", s.Response.Body.Spilled, spill)
			}
			return fn(s)
		})
	}
	st := openStore(t)
	u, _ := newTestUI(t, Deps{Store: st, HAR: codec, DataDir: dataDir})
	n, err := u.ImportHAR(bytes.NewReader(raw))
	if err != nil || n != 1 {
		t.Fatalf("import: n=%d err=%v", n, err)
	}
	if spillDir == "" || filepath.Dir(spillDir) != dataDir {
		t.Fatalf("spill folder %q, want one under %q", spillDir, dataDir)
	}
	if _, err := os.Stat(spillDir); !os.IsNotExist(err) {
		t.Errorf("spill folder left behind: %v", err)
	}
	var id session.ID
	if err := st.Each(store.Query{}, func(s *session.Session) error { id = s.ID; return nil }); err != nil || id == 0 {
		t.Fatalf("no stored session: %v", err)
	}
	rc, err := st.OpenBody(id, store.PartResponse)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read back %d bytes (%v), want %d byte-exact", len(got), err, len(body))
	}
}
