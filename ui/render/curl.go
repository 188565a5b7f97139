package render

import (
	"inspector/codegen"
	"inspector/engine/session"
)

// Curl renders the request as a curl command line for POSIX shells (sh, bash, zsh); see
// codegen for the quoting rules and the other languages.
func Curl(r *session.Request) string {
	s, _ := codegen.Generate("curl", r)
	return s[:len(s)-1] // without the final newline
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
