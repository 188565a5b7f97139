// Package appenv runs before Fyne's packages initialise (the Go spec initialises packages
// in import-path order when their dependencies allow; "appenv" sorts before "fyne.io").
//
// Fyne reads the user's locale at init and logs an error for the POSIX locale ("C",
// "C.UTF-8", "POSIX"), which every command of the binary would then print. For that locale
// only, appenv presents "en_US.UTF-8" to Fyne's init; Restore puts the environment back as
// it was so child processes (update-ca-certificates, certutil, gsettings) see the user's
// real locale. It is its own tiny module so that its import path can sort first.
//
// It also adds "http2xconnect=1" to GODEBUG (unless GODEBUG already sets http2xconnect):
// golang.org/x/net/http2 reads GODEBUG once, in its init, and only then lets its server
// advertise and accept RFC 8441 extended CONNECT, which the engine needs to relay
// WebSockets over HTTP/2. "appenv" sorts before "golang.org/x/net/http2" and depends only
// on os and strings, so it initialises first. Restore puts GODEBUG back too. Tests of
// packages that need extended CONNECT import appenv for the same effect.
package appenv

import (
	"os"
	"strings"
)

type saved struct {
	key   string
	value string
	had   bool
}

var restore []saved

func init() {
	if g, had := os.LookupEnv("GODEBUG"); !strings.Contains(g, "http2xconnect=") {
		restore = append(restore, saved{"GODEBUG", g, had})
		if g != "" {
			g += ","
		}
		os.Setenv("GODEBUG", g+"http2xconnect=1")
	}
	locale := len(restore)
	for _, k := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		v, ok := os.LookupEnv(k)
		if !ok || v == "" {
			continue
		}
		base, _, _ := strings.Cut(v, ".")
		if base == "C" || base == "POSIX" {
			restore = append(restore, saved{k, v, ok})
			os.Setenv(k, "en_US.UTF-8")
		}
		return // the first set variable is the one that counts
	}
	if len(restore) == locale {
		if _, ok := os.LookupEnv("LANG"); !ok {
			restore = append(restore, saved{"LANG", "", false})
			os.Setenv("LANG", "en_US.UTF-8")
		}
	}
}

// Restore puts back the variables init changed. Call it first thing in main.
func Restore() {
	for _, s := range restore {
		if s.had {
			os.Setenv(s.key, s.value)
		} else {
			os.Unsetenv(s.key)
		}
	}
	restore = nil
}
