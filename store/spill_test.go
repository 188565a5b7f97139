package store

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"inspector/engine/session"
)

func TestSpilledBodyMovesIntoTheStore(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(filepath.Join(dir, "sessions.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	full := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16*10) // 2 MB
	spill := filepath.Join(dir, "1-response.body")
	if err := os.WriteFile(spill, full[1000:], 0o600); err != nil {
		t.Fatal(err)
	}
	ss := &session.Session{
		ID: st.NextID(), Started: time.Now(),
		Request:  session.Request{Method: "GET", URL: "https://example.test/big"},
		Response: &session.Response{Status: 200, Body: session.Body{Data: full[:1000], Size: int64(len(full)), Spilled: spill}},
	}
	if !st.Put(ss) {
		t.Fatal("Put refused")
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(spill); !os.IsNotExist(err) {
		t.Errorf("spill file left after commit: %v", err)
	}
	got, err := st.Get(ss.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Response.Body.Data, full) || got.Response.Body.Spilled != SpilledInStore {
		t.Errorf("Get: %d bytes, spilled %q", len(got.Response.Body.Data), got.Response.Body.Spilled)
	}
	r, err := st.OpenBody(ss.ID, PartResponse)
	if err != nil {
		t.Fatal(err)
	}
	streamed, _ := io.ReadAll(r)
	r.Close()
	if !bytes.Equal(streamed, full) {
		t.Errorf("OpenBody: %d bytes", len(streamed))
	}
}
