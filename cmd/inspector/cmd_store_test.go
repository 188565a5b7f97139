package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"inspector/engine/session"
	"inspector/store"
)

func TestStoreCompactShrinksAndKeepsSessions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.db")
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []session.ID
	for i := 0; i < 200; i++ {
		s := &session.Session{ID: st.NextID(), Started: time.Now(),
			Request:  session.Request{Method: "GET", URL: "https://example.test/x"},
			Response: &session.Response{Status: 200, Body: session.Body{Data: bytes.Repeat([]byte{'x'}, 64<<10), Size: 64 << 10}}}
		st.Put(s)
		ids = append(ids, s.ID)
	}
	st.Flush()
	st.Delete(ids[:190]...)
	st.Close()
	before, _ := os.Stat(path)

	var out bytes.Buffer
	stdout = &out
	defer func() { stdout = os.Stdout }()
	if code := run([]string{"store", "compact", "--data-dir", dir}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	after, _ := os.Stat(path)
	if after.Size() >= before.Size() || !strings.Contains(out.String(), "compacted") {
		t.Errorf("%d → %d bytes: %s", before.Size(), after.Size(), out.String())
	}
	st, err = store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, _ := st.Count(nil); n != 10 {
		t.Errorf("%d sessions after compaction, want 10", n)
	}
	if s, err := st.Get(ids[195]); err != nil || len(s.Response.Body.Data) != 64<<10 {
		t.Errorf("session after compaction: %v", err)
	}
}
