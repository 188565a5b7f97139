package ui

import (
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"

	"inspector/engine/session"
	"inspector/store"
)

// TestKeepMarkAndEvictionInStatusBar: the context menu's Keep marks the session in the
// store, and the status bar says what retention removed, in its words.
func TestKeepMarkAndEvictionInStatusBar(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "sessions.db"), store.Options{MaxSessions: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	put := func(s *session.Session) session.ID {
		s.ID = st.NextID()
		st.Put(s)
		if err := st.Flush(); err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	first := put(mkSession(0, "a.example", "/keep-me", 200, "text/plain", "x"))
	u, _ := newTestUI(t, Deps{Store: st})
	u.SelectID(first)
	menu := u.contextMenu()
	var keep func()
	for _, it := range menu.Items {
		if strings.HasPrefix(it.Label, "Keep") {
			if it.Disabled {
				t.Fatal("Keep is disabled with a store that keeps")
			}
			keep = it.Action
		}
	}
	if keep == nil {
		t.Fatal("no Keep item in the context menu")
	}
	keep()
	if s, err := st.Get(first); err != nil || !s.Flags.Has(session.FlagKept) {
		t.Fatalf("after Keep: %v %+v", err, s)
	}
	if !strings.Contains(u.status.Note(), "1 session kept") {
		t.Errorf("note %q", u.status.Note())
	}
	for _, it := range u.contextMenu().Items {
		if it.Label == "Don't keep" {
			goto offered
		}
	}
	t.Error("a kept session's menu does not offer Don't keep")
offered:
	for i := range 5 {
		put(mkSession(0, "b.example", "/p"+string(rune('a'+i)), 200, "text/plain", "y"))
	}
	if _, err := st.Get(first); err != nil {
		t.Fatalf("the kept session was evicted: %v", err)
	}
	u.status.update()
	if got := u.status.Text(); !strings.Contains(got, "3 old sessions removed to stay under 3 sessions") {
		t.Fatalf("status bar %q", got)
	}
}

// TestExportForSharing: File ▸ Export for sharing… previews what will be masked, and the
// HAR it writes holds none of the secrets; the store keeps them.
func TestExportForSharing(t *testing.T) {
	s := mkSession(0, "api.example", "/login", 200, "application/json", `{"access_token":"tok-9f8e7d6c5b4a3210"}`)
	s.Request.Header.Set("Authorization", "Bearer tok-9f8e7d6c5b4a3210")
	s.Request.Header.Set("Cookie", "sid=cookie-77665544")
	st := openStore(t, s)
	u, w := newTestUI(t, Deps{Store: st, HAR: StoreHAR("test"), DataDir: t.TempDir()})
	menuItem(t, editMenu(t, w, "File"), "Export for sharing").Action()
	if u.sharePreviewText == nil {
		t.Fatal("no preview")
	}
	prev := u.sharePreviewText()
	// Authorization sorts before Cookie: the token is the first secret, REDACTED-1.
	if !strings.Contains(prev, "request header Authorization → REDACTED-1") || !strings.Contains(prev, "response body $.access_token → REDACTED-1") ||
		strings.Contains(prev, "tok-9f8e7d6c5b4a3210") || strings.Contains(prev, "cookie-77665544") {
		t.Fatalf("preview:\n%s", prev)
	}
	var buf strings.Builder
	n, err := u.ExportSharedIDs(&buf, []session.ID{s.ID}, nil)
	if err != nil || n != 1 {
		t.Fatal(n, err)
	}
	if strings.Contains(buf.String(), "tok-9f8e7d6c5b4a3210") || strings.Contains(buf.String(), "cookie-77665544") || !strings.Contains(buf.String(), "REDACTED-1") {
		t.Fatalf("shared HAR:\n%s", buf.String())
	}
	if orig, _ := st.Get(s.ID); orig.Request.Header.Get("Authorization") != "Bearer tok-9f8e7d6c5b4a3210" {
		t.Error("the store lost the original")
	}
}

// TestCopyAsMasked: "Copy as, secrets masked" puts a snippet without the secrets on the
// clipboard; plain "Copy as" keeps them.
func TestCopyAsMasked(t *testing.T) {
	s := mkSession(0, "api.example", "/me", 200, "application/json", `{}`)
	s.Request.Header.Set("Authorization", "Bearer tok-5566778899aabb")
	st := openStore(t, s)
	u, _ := newTestUI(t, Deps{Store: st})
	u.SelectID(s.ID)
	var masked *fyne.MenuItem
	for _, it := range u.contextMenu().Items {
		if it.Label == "Copy as, secrets masked" {
			masked = it
		}
	}
	if masked == nil || masked.ChildMenu == nil || len(masked.ChildMenu.Items) == 0 {
		t.Fatal("no masked copy-as item")
	}
	masked.ChildMenu.Items[0].Action()
	got := u.app.Clipboard().Content()
	if strings.Contains(got, "tok-5566778899aabb") || !strings.Contains(got, "REDACTED-1") {
		t.Fatalf("masked snippet:\n%s", got)
	}
	if err := CopyAs(u.app, "curl", u.selectedRequests()); err != nil || !strings.Contains(u.app.Clipboard().Content(), "tok-5566778899aabb") {
		t.Fatalf("plain copy: %v", err)
	}
}

// TestSaveCaptureAs: File ▸ Save capture as… writes a standalone store that opens with
// the same sessions.
func TestSaveCaptureAs(t *testing.T) {
	st := openStore(t, sampleSessions()...)
	u, w := newTestUI(t, Deps{Store: st})
	if it := menuItem(t, editMenu(t, w, "File"), "Save capture as"); it.Disabled {
		t.Fatal("Save capture as is disabled with a store")
	}
	path := filepath.Join(t.TempDir(), "capture.db")
	if err := u.SaveCapture(st, path); err != nil {
		t.Fatal(err)
	}
	c, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.Stats().Sessions; got != 4 {
		t.Fatalf("the saved capture holds %d sessions, want 4", got)
	}
	if err := u.SaveCapture(st, filepath.Join(t.TempDir(), "no-dir", "x.db")); err == nil {
		t.Error("saving into a missing folder succeeded")
	}
}

// TestCopyAsMaskedSelection: "Export for sharing" of a selection as code: the masked copy
// of several sessions masks every secret in all of them, and one secret gets one
// placeholder across the whole selection, so a reader can follow a token from request to
// request.
func TestCopyAsMaskedSelection(t *testing.T) {
	a := mkSession(0, "api.example", "/login", 200, "application/json", `{}`)
	a.Request.Header.Set("Authorization", "Bearer tok-aa11bb22cc33dd44")
	b := mkSession(0, "api.example", "/me", 200, "application/json", `{}`)
	b.Request.Header.Set("Authorization", "Bearer tok-aa11bb22cc33dd44")
	b.Request.Header.Set("Cookie", "sid=cookie-99887766")
	c := mkSession(0, "api.example", "/other", 200, "application/json", `{}`)
	c.Request.Header.Set("Authorization", "Bearer tok-ffeeddccbbaa0099")
	st := openStore(t, a, b, c)
	u, _ := newTestUI(t, Deps{Store: st})
	u.SelectAll()
	if n := len(u.SelectedIDs()); n != 3 {
		t.Fatalf("%d selected, want 3", n)
	}
	var masked *fyne.MenuItem
	for _, it := range u.contextMenu().Items {
		if it.Label == "Copy as, secrets masked" {
			masked = it
		}
	}
	if masked == nil || masked.ChildMenu == nil || len(masked.ChildMenu.Items) == 0 {
		t.Fatal("no masked copy-as item")
	}
	masked.ChildMenu.Items[0].Action()
	got := u.app.Clipboard().Content()
	for _, secret := range []string{"tok-aa11bb22cc33dd44", "cookie-99887766", "tok-ffeeddccbbaa0099"} {
		if strings.Contains(got, secret) {
			t.Errorf("the masked copy holds %q:\n%s", secret, got)
		}
	}
	for _, path := range []string{"/login", "/me", "/other"} {
		if !strings.Contains(got, path) {
			t.Errorf("the masked copy lacks the request to %s:\n%s", path, got)
		}
	}
	// The shared token is one placeholder in both requests; the other token another.
	if n := strings.Count(got, "REDACTED-1"); n < 2 {
		t.Errorf("the shared token's placeholder appears %d times, want 2 or more:\n%s", n, got)
	}
	if !strings.Contains(got, "REDACTED-2") {
		t.Errorf("the second token has no placeholder of its own:\n%s", got)
	}
}
