package osapi

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FirefoxProfile is one profile listed in a Firefox profiles.ini.
type FirefoxProfile struct {
	// Name is the profile's Name= (e.g. "default-esr").
	Name string
	// Dir is the profile folder, absolute (IsRelative=1 paths resolved against the folder
	// holding profiles.ini).
	Dir string
	// Ini is the profiles.ini that lists it.
	Ini string
}

// FirefoxRoots are the folders where Firefox keeps profiles.ini on goos, for the user whose
// home is home (appData is %APPDATA% on Windows). Every one is read: a machine may have
// several Firefox builds (Debian's ESR, the snap, the flatpak, an old and a new layout).
func FirefoxRoots(goos, home, appData string) []string {
	switch goos {
	case "windows":
		if appData == "" {
			appData = filepath.Join(home, "AppData", "Roaming")
		}
		return []string{filepath.Join(appData, "Mozilla", "Firefox")}
	case "darwin":
		return []string{filepath.Join(home, "Library", "Application Support", "Firefox")}
	}
	roots := []string{
		filepath.Join(home, ".mozilla", "firefox"),
		filepath.Join(home, ".config", "mozilla", "firefox"), // Firefox 147+ (XDG layout)
		filepath.Join(home, "snap", "firefox", "common", ".mozilla", "firefox"),
		filepath.Join(home, ".var", "app", "org.mozilla.firefox", ".mozilla", "firefox"),
		filepath.Join(home, ".var", "app", "org.mozilla.firefox", "config", "mozilla", "firefox"),
	}
	// Firefox honours $XDG_CONFIG_HOME when it is an absolute path.
	if x := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) && filepath.Clean(x) != filepath.Join(home, ".config") {
		roots = append(roots, filepath.Join(x, "mozilla", "firefox"))
	}
	return roots
}

// FirefoxProfiles lists every profile of every profiles.ini in roots, each folder once. A
// root without profiles.ini is no error (that Firefox is not used); an unreadable or
// damaged profiles.ini is, and the profiles of the other files are still returned.
func FirefoxProfiles(roots []string) ([]FirefoxProfile, error) {
	var out []FirefoxProfile
	var errs []error
	seen := map[string]bool{}
	for _, root := range roots {
		ini := filepath.Join(root, "profiles.ini")
		data, err := os.ReadFile(ini)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("firefox: %w", err))
			continue
		}
		ps, err := ParseProfilesINI(data, root)
		if err != nil {
			errs = append(errs, fmt.Errorf("firefox: %s: %w", ini, err))
		}
		for _, p := range ps {
			key := filepath.Clean(p.Dir)
			if real, err := filepath.EvalSymlinks(key); err == nil {
				key = real
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			p.Ini = ini
			out = append(out, p)
		}
	}
	return out, errors.Join(errs...)
}

// ParseProfilesINI reads the [ProfileN] sections of a profiles.ini whose folder is root.
// A section without Path= is an error naming it; the other sections are still returned.
func ParseProfilesINI(data []byte, root string) ([]FirefoxProfile, error) {
	type section struct {
		name string
		kv   map[string]string
	}
	var secs []*section
	var cur *section
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		l := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff"))
		switch {
		case l == "" || l[0] == ';' || l[0] == '#':
		case l[0] == '[':
			if !strings.HasSuffix(l, "]") {
				return nil, fmt.Errorf("line %d: bad section header %q", line, l)
			}
			cur = &section{name: l[1 : len(l)-1], kv: map[string]string{}}
			secs = append(secs, cur)
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				return nil, fmt.Errorf("line %d: want key=value, got %q", line, l)
			}
			if cur != nil {
				cur.kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var out []FirefoxProfile
	var errs []error
	for _, s := range secs {
		if !strings.HasPrefix(s.name, "Profile") {
			continue // [General], [Install...], [BackgroundTasksProfiles]
		}
		path := s.kv["Path"]
		if path == "" {
			errs = append(errs, fmt.Errorf("[%s] has no Path", s.name))
			continue
		}
		dir := path
		if s.kv["IsRelative"] != "0" { // Firefox's default is relative
			dir = filepath.Join(root, filepath.FromSlash(path))
		} else {
			dir = filepath.Clean(path)
		}
		out = append(out, FirefoxProfile{Name: s.kv["Name"], Dir: dir})
	}
	return out, errors.Join(errs...)
}
