package darwin

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tempName is os.CreateTemp's random part of the certificate file given to security.
var tempName = regexp.MustCompile(`inspector-ca-[0-9]+\.pem`)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the commands run")

// golden compares the exact command lines run with testdata/name, after replacing each
// variable part (a temp dir, a thumbprint) by its placeholder. `go test -update` rewrites
// the file; review its diff like code: these are the commands run on users' Macs.
func golden(t *testing.T, name string, lines []string, vars map[string]string) {
	t.Helper()
	got := strings.Join(lines, "\n") + "\n"
	for v, ph := range vars {
		got = strings.ReplaceAll(got, v, ph)
	}
	got = tempName.ReplaceAllString(got, "inspector-ca-*.pem")
	path := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./platform/darwin/ -update once)", err)
	}
	if got != string(want) {
		t.Fatalf("commands differ from %s:\n--- got\n%s--- want\n%s", path, got, want)
	}
}
