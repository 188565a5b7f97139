package codegen

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// String literal writers, one per language family. Each takes any string (or bytes) and
// returns a literal that the language's lexer reads back as exactly that value, and that
// nothing inside can end early. They escape more than they must (every control and
// non-printable character, and for the strictest lexers everything outside ASCII) so a
// snippet survives copy and paste and reads the same in any editor.

// escapeRunes writes s between quote characters q, escaping backslash and q, the named
// control characters, and every rune that esc (non-nil) asks for with esc's text.
func escapeRunes(s string, q byte, esc func(r rune) string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteByte(q)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		default:
			if e := esc(r); e != "" {
				b.WriteString(e)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte(q)
	return b.String()
}

// printable: a rune that may appear literally in source text.
func printable(r rune) bool {
	return r >= 0x20 && r != 0x7f && r != utf8.RuneError && unicode.IsPrint(r) && r != 0x2028 && r != 0x2029 && r != 0x85
}

// pyStr is a Python str literal ('…'); non-printable runes as \x, \u or \U escapes.
func pyStr(s string) string {
	return escapeRunes(s, '\'', func(r rune) string {
		switch {
		case printable(r):
			return ""
		case r < 0x100:
			return fmt.Sprintf(`\x%02x`, r)
		case r < 0x10000:
			return fmt.Sprintf(`\u%04x`, r)
		}
		return fmt.Sprintf(`\U%08x`, r)
	})
}

// pyBytes is a Python bytes literal (b'…'): printable ASCII as is, every other byte \xNN.
func pyBytes(d []byte) string { return "b" + asciiBytes(d, '\'', hexEscape) }

// asciiBytes writes d byte by byte between quotes q: printable ASCII as is (backslash and
// q escaped), every other byte as esc writes it.
func asciiBytes(d []byte, q byte, esc func(c byte) string) string {
	var b strings.Builder
	b.WriteByte(q)
	for _, c := range d {
		switch {
		case c == '\\' || c == q:
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			b.WriteString(esc(c))
		}
	}
	b.WriteByte(q)
	return b.String()
}

// hexEscape is \xNN.
func hexEscape(c byte) string { return fmt.Sprintf(`\x%02x`, c) }

// utf16Escape writes r as \uXXXX, or a surrogate pair of them.
func utf16Escape(r rune) string {
	if r >= 0x10000 {
		r -= 0x10000
		return fmt.Sprintf(`\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// jsStr is a JavaScript string literal ('…') in ASCII: everything else as \u escapes.
func jsStr(s string) string {
	return escapeRunes(s, '\'', func(r rune) string {
		if r >= 0x20 && r < 0x7f {
			return ""
		}
		return utf16Escape(r)
	})
}

// jsByteStr is a JavaScript string whose character codes are the bytes of d (a
// ByteString, as Headers and node:http take header values: they send each code as one
// byte).
func jsByteStr(d string) string { return asciiBytes([]byte(d), '\'', hexEscape) }

// javaStr is a Java string literal ("…"), ASCII: control characters as octal escapes
// (never \u: Java turns \u escapes into characters before it reads literals, so \u000a
// would end the line), everything above ASCII as \u escapes.
func javaStr(s string) string {
	return escapeRunes(s, '"', func(r rune) string {
		switch {
		case r >= 0x20 && r < 0x7f:
			return ""
		case r < 0x80:
			return fmt.Sprintf(`\%03o`, r)
		}
		return utf16Escape(r)
	})
}

// javaByteStr is a Java string whose chars are the bytes of d (ISO-8859-1), the form
// HttpClient takes header values in; control characters as octal escapes (see javaStr).
func javaByteStr(d string) string {
	return asciiBytes([]byte(d), '"', func(c byte) string {
		if c < 0x80 {
			return fmt.Sprintf(`\%03o`, c)
		}
		return fmt.Sprintf(`\u%04x`, c)
	})
}

// csStr is a C# regular string literal ("…"), ASCII, everything else as \u escapes (never
// \x, whose length is variable).
func csStr(s string) string {
	return escapeRunes(s, '"', func(r rune) string {
		if r >= 0x20 && r < 0x7f {
			return ""
		}
		return utf16Escape(r)
	})
}

// csByteStr is a C# string whose chars are the bytes of d (Latin-1).
func csByteStr(d string) string {
	return asciiBytes([]byte(d), '"', func(c byte) string { return fmt.Sprintf(`\u%04x`, c) })
}

// phpStr is a PHP single-quoted string: only \\ and \' are escapes there, and bytes
// stand for themselves, so any byte string fits. Nothing is interpolated.
func phpStr(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// rustStr is a Rust string literal ("…"); non-printable runes as \u{…}.
func rustStr(s string) string {
	return escapeRunes(s, '"', func(r rune) string {
		if printable(r) {
			return ""
		}
		return fmt.Sprintf(`\u{%x}`, r)
	})
}

// rustBytes is a Rust byte string literal (b"…"), printable ASCII as is, other bytes \xNN.
func rustBytes(d []byte) string { return "b" + asciiBytes(d, '"', hexEscape) }

// psStr is a PowerShell single-quoted string. PowerShell takes the typographic single
// quotes (U+2018–U+201B) as quotes too; each quote of any kind is doubled, which is the
// only escape inside single quotes. Nothing is interpolated.
func psStr(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		if r == '\'' || r >= 0x2018 && r <= 0x201b {
			b.WriteRune(r)
		}
		b.WriteRune(r)
	}
	b.WriteByte('\'')
	return b.String()
}
