package session

import (
	"net/http"
	"strings"
)

// Codings returns the Content-Encoding codings of h in the order they were applied,
// lower-cased, without "identity". Decoding them is content's job (br and zstd
// need modules outside the standard library).
func Codings(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Content-Encoding") {
		for _, e := range strings.Split(v, ",") {
			if e = strings.ToLower(strings.TrimSpace(e)); e != "" && e != "identity" {
				out = append(out, e)
			}
		}
	}
	return out
}
