package textual

import "testing"

func TestIsText(t *testing.T) {
	for in, want := range map[string]bool{"": true, "a\tb\r\nc ü ✓": true, "nul\x00": false, "del\x7f": false, "\xff": false, "esc\x1b[0m": false} {
		if IsText([]byte(in)) != want {
			t.Errorf("IsText(%q) = %v", in, !want)
		}
	}
}

func TestLooksText(t *testing.T) {
	long := make([]byte, SniffLen+10)
	for i := range long {
		long[i] = 'a'
	}
	copy(long[SniffLen-1:], "ü") // a rune cut where the sniff window ends
	cases := []struct {
		in   []byte
		want bool
	}{
		{[]byte("plain\ftext\n"), true},
		{[]byte("nul\x00"), false},
		{long, true},
		{append([]byte("short"), 0xc3), false}, // a short body ending in a lone lead byte is not text
		{append(long[:SniffLen-1:SniffLen-1], 0x00), false},
	}
	for i, c := range cases {
		if LooksText(c.in) != c.want {
			t.Errorf("case %d: LooksText = %v", i, !c.want)
		}
	}
	if !IsText([]byte("form\ffeed")) {
		t.Error("form feed is text for both rules")
	}
	if IsText(long[:SniffLen]) || !LooksText(long[:SniffLen]) {
		t.Error("a rune cut at the end: not text as a whole, text as a sniffed prefix")
	}
}
