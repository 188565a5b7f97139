package textual

import "testing"

func TestIsText(t *testing.T) {
	for in, want := range map[string]bool{"": true, "a\tb\r\nc ü ✓": true, "nul\x00": false, "del\x7f": false, "\xff": false, "esc\x1b[0m": false} {
		if IsText([]byte(in)) != want {
			t.Errorf("IsText(%q) = %v", in, !want)
		}
	}
}
