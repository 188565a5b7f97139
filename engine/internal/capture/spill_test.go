package capture

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"inspector/engine/session"
)

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// spillBody captures body (limit 64 KiB in memory, the rest spilled into dir as
// id-response.body), relays it whole and returns the capture's result.
func spillBody(t *testing.T, dir string, id int, body []byte) (c *Body, relayed []byte) {
	t.Helper()
	c = New(io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil,
		Options{Limit: 64 << 10, SpillDir: dir, SpillLimit: 1 << 30, ID: session.ID(id), Part: "response"})
	var out bytes.Buffer
	if _, err := io.Copy(&out, c); err != nil {
		t.Fatal(err)
	}
	return c, out.Bytes()
}

// TestSpillNeverWaitsOnAStalledDisk: the spill file is a FIFO nobody reads, so opening
// it for writing hangs like an open on a frozen filesystem. The relay still gets every
// byte; the body keeps what is in memory and says "disk stalled"; once the disk answers
// again the abandoned file is removed and later bodies spill whole.
func TestSpillNeverWaitsOnAStalledDisk(t *testing.T) {
	old := stallAfter
	stallAfter = 300 * time.Millisecond
	t.Cleanup(func() { stallAfter = old })
	dir := t.TempDir()
	fifo := filepath.Join(dir, "1-response.body")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	body := pattern(3 << 20)

	c, relayed := spillBody(t, dir, 1, body)
	if !bytes.Equal(relayed, body) {
		t.Fatal("the relay did not get the body as it was")
	}
	b, _, _, err := c.Result() // waits about stallAfter, then gives up
	if err != nil || !b.Truncated || b.NotCaptured != ReasonDiskStalled || b.Spilled != "" || b.Size != int64(len(body)) || !bytes.Equal(b.Data, body[:64<<10]) {
		t.Fatalf("stalled spill: truncated %v why %q spilled %q size %d kept %d, %v", b.Truncated, b.NotCaptured, b.Spilled, b.Size, len(b.Data), err)
	}

	// While the stall lasts, a new body gives its spill up at once (no wait in Result).
	big := pattern(10 << 20)
	c, relayed = spillBody(t, dir, 2, big)
	start := time.Now()
	b, _, _, _ = c.Result()
	if !bytes.Equal(relayed, big) || !b.Truncated || b.NotCaptured != ReasonDiskStalled || len(b.Data) != 64<<10 {
		t.Fatalf("body during the stall: truncated %v why %q kept %d", b.Truncated, b.NotCaptured, len(b.Data))
	}
	t.Logf("Result during the stall took %v", time.Since(start))

	// The disk answers again: the first writer opens the FIFO, writes, and removes it.
	r, err := os.OpenFile(fifo, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, r)
	t.Cleanup(func() { r.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Lstat(fifo); os.IsNotExist(err) && spillQueued.Load() == 0 && !disk.stalled() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the abandoned spill was not removed (queued %d)", spillQueued.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, _ = spillBody(t, dir, 3, body)
	b, _, _, _ = c.Result()
	if b.Truncated || b.NotCaptured != "" || b.Spilled == "" {
		t.Fatalf("after the stall: truncated %v why %q spilled %q", b.Truncated, b.NotCaptured, b.Spilled)
	}
	got, err := os.ReadFile(b.Spilled)
	if err != nil || !bytes.Equal(got, body[64<<10:]) {
		t.Fatalf("spill file: %d bytes, %v", len(got), err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Fatalf("spill dir holds %d files, want the one spilled", len(left))
	}
}
