package engine

import (
	"fmt"
	"net"
	"path"
	"strings"
)

// checkGlob validates a host glob (path.Match syntax, e.g. "*.example.com").
func checkGlob(g string) error {
	if strings.TrimSpace(g) == "" {
		return fmt.Errorf("empty host pattern")
	}
	if _, err := path.Match(g, ""); err != nil {
		return fmt.Errorf("bad host pattern %q: %v", g, err)
	}
	return nil
}

// matchAny reports whether host (no port) matches one of globs, case-insensitively.
// "*.example.com" also matches "example.com" itself, as users mean it.
func matchAny(globs []string, host string) bool {
	if len(globs) == 0 {
		return false
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, g := range globs {
		g = strings.ToLower(g)
		if ok, _ := path.Match(g, host); ok {
			return true
		}
		if rest, ok := strings.CutPrefix(g, "*."); ok && rest == host {
			return true
		}
	}
	return false
}

// SplitGlobs splits a comma list of host globs as given on the command line.
func SplitGlobs(list string) []string {
	var out []string
	for _, g := range strings.Split(list, ",") {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}
