package ui

import (
	"bytes"
	"testing"

	"inspector/engine/session"
	"inspector/store/archive"
)

// TestExportSAZRoundTrip: File ▸ Export Fiddler .saz… is offered, and what it writes
// reads back (store/archive's reader, the one `inspector import` uses) to the same
// requests, statuses and bodies.
func TestExportSAZRoundTrip(t *testing.T) {
	ss := sampleSessions()
	st := openStore(t, ss...)
	u, w := newTestUI(t, Deps{Store: st})
	if it := menuItem(t, editMenu(t, w, "File"), "Export Fiddler .saz"); it.Disabled || it.Action == nil {
		t.Fatal("Export Fiddler .saz is not offered")
	}
	var ids []session.ID
	for _, s := range ss {
		ids = append(ids, s.ID)
	}
	var buf bytes.Buffer
	n, err := u.ExportSAZIDs(&buf, ids, nil)
	if err != nil || n != len(ss) {
		t.Fatalf("exported %d, %v", n, err)
	}
	var back []*session.Session
	if err := archive.ReadSAZ(bytes.NewReader(buf.Bytes()), int64(buf.Len()), func(s *session.Session) error { back = append(back, s); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(back) != len(ss) {
		t.Fatalf("%d sessions read back", len(back))
	}
	for i, s := range back {
		if s.Request.URL != ss[i].Request.URL || s.Response.Status != ss[i].Response.Status || !bytes.Equal(s.Response.Body.Data, ss[i].Response.Body.Data) {
			t.Errorf("entry %d: %s %d %q, want %s %d %q", i+1, s.Request.URL, s.Response.Status, s.Response.Body.Data,
				ss[i].Request.URL, ss[i].Response.Status, ss[i].Response.Body.Data)
		}
	}
}
