package osapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseProfilesINI(t *testing.T) {
	root := filepath.Join(t.TempDir(), "firefox")
	abs := filepath.Join(t.TempDir(), "abs.profile")
	ini := "\ufeff; comment\r\n[General]\r\nStartWithLastProfile=1\r\n\r\n[Profile1]\r\nName=work\r\nIsRelative=0\r\nPath=" + abs + "\r\n" +
		"[Profile0]\r\nName=default\r\nIsRelative=1\r\nPath=Profiles/ab.default\r\nDefault=1\r\n" +
		"[Install4F96D1932A9F858E]\r\nDefault=Profiles/ab.default\r\n[BackgroundTasksProfiles]\r\nMozillaBackgroundTask-x=bg\r\n"
	ps, err := ParseProfilesINI([]byte(ini), root)
	if err != nil {
		t.Fatal(err)
	}
	want := []FirefoxProfile{{Name: "work", Dir: abs}, {Name: "default", Dir: filepath.Join(root, "Profiles", "ab.default")}}
	if len(ps) != 2 || ps[0] != want[0] || ps[1] != want[1] {
		t.Fatalf("profiles %+v, want %+v", ps, want)
	}
}

func TestParseProfilesINIBadInput(t *testing.T) {
	for _, c := range []struct{ ini, want string }{
		{"[Profile0\nPath=x\n", "line 1: bad section header"},
		{"[Profile0]\nName=x\njunk\n", "line 3: want key=value"},
		{"[Profile0]\nName=nopath\n[Profile1]\nPath=ok\n", "[Profile0] has no Path"},
	} {
		ps, err := ParseProfilesINI([]byte(c.ini), "/r")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.ini, err, c.want)
		}
		if strings.Contains(c.ini, "Path=ok") && (len(ps) != 1 || ps[0].Dir != filepath.Join("/r", "ok")) {
			t.Errorf("%q: the good section was lost: %+v", c.ini, ps)
		}
	}
}

// TestFirefoxProfilesAcrossRoots: every profiles.ini is read, a folder listed twice (a
// symlinked root) counts once, a root without profiles.ini is no error and a damaged one
// is reported while the others' profiles are still returned.
func TestFirefoxProfilesAcrossRoots(t *testing.T) {
	home := t.TempDir()
	roots := FirefoxRoots("linux", home, "")
	write := func(dir, body string) {
		os.MkdirAll(dir, 0o700)
		if err := os.WriteFile(filepath.Join(dir, "profiles.ini"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(roots[0], "[Profile0]\nPath=a.default\n")
	write(roots[1], "[Profile0]\nPath=b.default\n[Profile1]\nIsRelative=0\nPath="+filepath.Join(roots[0], "a.default")+"\n")
	write(roots[2], "[Profile0\n")
	ps, err := FirefoxProfiles(roots)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(roots[2], "profiles.ini")) {
		t.Fatalf("damaged profiles.ini not reported: %v", err)
	}
	if len(ps) != 2 || ps[0].Dir != filepath.Join(roots[0], "a.default") || ps[1].Dir != filepath.Join(roots[1], "b.default") {
		t.Fatalf("profiles %+v", ps)
	}
	for _, g := range []string{"windows", "darwin"} {
		r := FirefoxRoots(g, home, filepath.Join(home, "Roaming"))
		if len(r) != 1 || !strings.Contains(r[0], "Firefox") {
			t.Fatalf("%s roots %v", g, r)
		}
	}
}
