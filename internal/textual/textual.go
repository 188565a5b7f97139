// Package textual decides whether bytes read as text, the one rule copy as code and the
// diff share.
package textual

import "unicode/utf8"

// IsText reports whether d is valid UTF-8 without control characters other than tab, CR
// and LF.
func IsText(d []byte) bool {
	if !utf8.Valid(d) {
		return false
	}
	for _, c := range d {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return false
		}
	}
	return true
}
