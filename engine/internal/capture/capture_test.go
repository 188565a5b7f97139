package capture

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

// TestCaptureBodySizes: the captured bytes are the body's first min(limit, length) bytes
// whatever the announced length says (right, unknown, too small, too large, absurd), and
// the buffer never exceeds the cap.
func TestCaptureBodySizes(t *testing.T) {
	body := make([]byte, 300<<10)
	for i := range body {
		body[i] = byte(i * 7)
	}
	for _, tc := range []struct {
		name         string
		n, announced int64
		limit        int64
	}{
		{"exact", 300 << 10, 300 << 10, 1 << 20},
		{"unknown", 300 << 10, -1, 1 << 20},
		{"announced too small", 300 << 10, 1000, 1 << 20},
		{"announced too large", 5000, 1 << 20, 1 << 20},
		{"absurd announcement", 5000, 1 << 40, 64 << 10},
		{"over the cap", 300 << 10, 300 << 10, 100 << 10},
		{"unknown over the cap", 300 << 10, -1, 100 << 10},
		{"tiny", 52, 52, 1 << 20},
		{"empty", 0, 0, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := io.NopCloser(iotest.HalfReader(bytes.NewReader(body[:tc.n])))
			c := newBody(src, tc.announced, tc.limit, nil)
			out, err := io.ReadAll(c)
			if err != nil || !bytes.Equal(out, body[:tc.n]) {
				t.Fatalf("relayed %d bytes, %v", len(out), err)
			}
			b, _, _, err := c.Result()
			want := body[:min(tc.n, tc.limit)]
			if err != nil || !bytes.Equal(b.Data, want) || b.Size != tc.n || b.Truncated != (tc.n > tc.limit) {
				t.Errorf("captured %d bytes (size %d, truncated %v), want %d; %v", len(b.Data), b.Size, b.Truncated, len(want), err)
			}
			if int64(cap(c.buf)) > tc.limit {
				t.Errorf("buffer capacity %d over the cap %d", cap(c.buf), tc.limit)
			}
			if tc.announced == tc.n && tc.n > 0 && tc.n <= tc.limit && cap(c.buf) != len(want) {
				t.Errorf("announced length %d: buffer capacity %d", tc.n, cap(c.buf))
			}
		})
	}
}
