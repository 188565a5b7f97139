package engine_test

import (
	"bytes"
	"io"
	"os"
	"testing"

	"inspector/engine"
	et "inspector/engine/enginetest"
)

func TestBodiesBeyondTheCapSpillToFiles(t *testing.T) {
	et.RequireNoLeaks(t)
	spillDir := t.TempDir()
	o := et.StartOrigin(t, et.OriginH2TLS, nil)
	p := et.StartProxy(t, func(c *engine.Config) {
		c.CaptureLimit = 1024
		c.SpillDir = spillDir
		c.SpillLimit = 200 << 10
	}, o)
	c := p.Client(t, et.ClientH1)
	payload := et.RandomBytes(100 << 10)
	resp, err := c.Post(o.URL+"/echo", "application/octet-stream", bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s := p.Next(t)
	b := s.Request.Body
	if len(b.Data) != 1024 || b.Truncated || b.Spilled == "" {
		t.Fatalf("request body: %d bytes in memory, truncated %v, spilled %q", len(b.Data), b.Truncated, b.Spilled)
	}
	rest, err := os.ReadFile(b.Spilled)
	if err != nil || !bytes.Equal(append(append([]byte(nil), b.Data...), rest...), payload) {
		t.Fatalf("memory + spill file != what was sent (%v)", err)
	}

	// Beyond the spill limit the body is marked truncated; the client still gets it all.
	resp, err = c.Get(o.URL + "/bytes?n=300000")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s = p.Next(t)
	if len(got) != 300000 || !s.Response.Body.Truncated || s.Response.Body.Spilled == "" {
		t.Errorf("client got %d; session truncated %v spilled %q", len(got), s.Response.Body.Truncated, s.Response.Body.Spilled)
	}
	if fi, err := os.Stat(s.Response.Body.Spilled); err != nil || fi.Size() != 200<<10-1024 {
		t.Errorf("spill file: %v", err)
	}
}
