// Package textual decides whether bytes read as text: the one rule that content kinds,
// HAR export, copy as code, the diff and the CLI share (there were four, which disagreed
// on form feed and on a rune cut at a sniff boundary).
package textual

import "unicode/utf8"

// IsText reports whether all of d is valid UTF-8 without control characters other than
// tab, CR, LF and form feed: text that can be written as a JSON string or shown without
// loss or noise.
func IsText(d []byte) bool {
	return utf8.Valid(d) && noControls(d)
}

// SniffLen is how much of a body LooksText reads.
const SniffLen = 4096

// LooksText reports whether d reads as text from its first SniffLen bytes: the IsText
// rule on that prefix, allowing one rune cut where the prefix ends (a body of text cut
// at any byte still looks like text).
func LooksText(d []byte) bool {
	if len(d) > SniffLen {
		d = d[:SniffLen]
	}
	if !utf8.Valid(d) && !ValidUTF8Prefix(d) {
		return false
	}
	return noControls(d)
}

// ValidUTF8Prefix is utf8.Valid on the first 64 KiB of b, allowing one rune cut at the
// end (where a capture or a sniff window stopped), for buffers of at least 1 KiB.
func ValidUTF8Prefix(b []byte) bool {
	if len(b) > 64<<10 {
		b = b[:64<<10]
	}
	if utf8.Valid(b) {
		return true
	}
	if len(b) < 1024 {
		return false
	}
	for i := 1; i <= 3; i++ {
		tail := b[len(b)-i:]
		if utf8.RuneStart(tail[0]) && !utf8.FullRune(tail) {
			return utf8.Valid(b[:len(b)-i])
		}
	}
	return false
}

func noControls(d []byte) bool {
	for _, c := range d {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' || c == 0x7f {
			return false
		}
	}
	return true
}
