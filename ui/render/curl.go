package render

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"inspector/engine/session"
)

// Curl renders the request as a curl command line for POSIX shells (sh, bash, zsh).
//
// Every argument is single-quoted, so no header, URL or body value can run a command or
// expand anything in the shell. Bodies go through --data-raw (curl treats a leading "@" in
// --data-binary as a file to upload); a body with bytes that cannot sit in a shell
// argument (NUL, other control bytes except tab and newline, or invalid UTF-8) is piped
// from printf with octal escapes instead. NUL bytes cannot be passed in arguments at all:
// they are dropped from the method, URL and headers (a parsed HTTP message never has
// them there). A URL that does not start with a scheme is passed with --url so it can
// never be read as an option. Content-Length is left to curl.
func Curl(r *session.Request) string {
	var sb strings.Builder
	sb.WriteString("curl")
	if r.Method != "" && r.Method != http.MethodGet {
		sb.WriteString(" -X " + shellQuote(noNUL(r.Method)))
	}
	u := noNUL(r.URL)
	if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		sb.WriteString(" " + shellQuote(u))
	} else {
		sb.WriteString(" --url " + shellQuote(u))
	}
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if strings.EqualFold(k, "Content-Length") {
			continue
		}
		for _, v := range r.Header[k] {
			sb.WriteString(" -H " + shellQuote(noNUL(k+": "+v)))
		}
	}
	if d := r.Body.Data; len(d) > 0 {
		if argSafe(d) {
			sb.WriteString(" --data-raw " + shellQuote(string(d)))
		} else {
			return "printf " + printfQuote(d) + " | " + sb.String() + " --data-binary @-"
		}
	}
	return sb.String()
}

// shellQuote single-quotes s for a POSIX shell: inside single quotes nothing is special
// except the quote itself, which is written as '\”.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func noNUL(s string) string { return strings.ReplaceAll(s, "\x00", "") }

// argSafe: d can be a shell argument and reads sensibly on screen.
func argSafe(d []byte) bool {
	if !utf8.Valid(d) {
		return false
	}
	for _, c := range d {
		if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
			return false
		}
	}
	return true
}

// printfQuote writes d as a single-quoted printf format that prints exactly d: printable
// ASCII as is ('%' doubled, '\' doubled), everything else (and the quote) as \ooo.
func printfQuote(d []byte) string {
	var sb strings.Builder
	sb.WriteByte('\'')
	for _, c := range d {
		switch {
		case c == '%':
			sb.WriteString("%%")
		case c == '\\':
			sb.WriteString(`\\`)
		case c == '\'' || c < 0x20 || c >= 0x7f:
			o := strconv.FormatInt(int64(c), 8)
			sb.WriteString(`\` + strings.Repeat("0", 3-len(o)) + o)
		default:
			sb.WriteByte(c)
		}
	}
	sb.WriteByte('\'')
	return sb.String()
}

// wireProto spells a session protocol (session.HTTP1, HTTP2, HTTP3) the way a status or
// request line does; empty means HTTP/1.1.
func wireProto(p string) string {
	switch p {
	case "", session.HTTP1:
		return "HTTP/1.1"
	case session.HTTP2:
		return "HTTP/2"
	case session.HTTP3:
		return "HTTP/3"
	}
	return p
}
