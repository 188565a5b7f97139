package osapi

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FirefoxEnterpriseRoots makes Firefox trust the OS root store (where Install put the CA) by
// setting security.enterprise_roots.enabled in the user.js of every profile. It is used on
// Windows and macOS, where Firefox can read the OS store; on Linux Firefox gets the CA in its
// own NSS database instead.
//
// The lines it adds end with a marker comment so Remove deletes exactly them and nothing the
// user wrote. Not safe for concurrent use on the same profiles.
type FirefoxEnterpriseRoots struct {
	// ProfileGlobs are glob patterns of Firefox profile directories, e.g.
	// "C:\Users\u\AppData\Roaming\Mozilla\Firefox\Profiles\*".
	ProfileGlobs []string
}

const firefoxMarker = "// added by Inspector"

var firefoxLine = `user_pref("security.enterprise_roots.enabled", true); ` + firefoxMarker

func (f FirefoxEnterpriseRoots) profiles() []string {
	var out []string
	for _, g := range f.ProfileGlobs {
		m, _ := filepath.Glob(g)
		for _, p := range m {
			// A profile has prefs.js (written by Firefox on first run) or times.json.
			if _, err := os.Stat(filepath.Join(p, "prefs.js")); err == nil {
				out = append(out, p)
			}
		}
	}
	return out
}

// Install adds the preference to every profile's user.js (idempotent).
func (f FirefoxEnterpriseRoots) Install() error {
	for _, p := range f.profiles() {
		path := filepath.Join(p, "user.js")
		old, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("firefox profile %s: %w", p, err)
		}
		if bytes.Contains(old, []byte(firefoxMarker)) {
			continue
		}
		data := old
		if len(data) > 0 && data[len(data)-1] != '\n' {
			data = append(data, '\n')
		}
		data = append(data, firefoxLine+"\n"...)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("firefox profile %s: %w", p, err)
		}
	}
	return nil
}

// Remove deletes the lines Install added; a user.js left empty is deleted.
func (f FirefoxEnterpriseRoots) Remove() error {
	for _, p := range f.profiles() {
		path := filepath.Join(p, "user.js")
		old, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("firefox profile %s: %w", p, err)
		}
		if !bytes.Contains(old, []byte(firefoxMarker)) {
			continue
		}
		var keep []string
		for _, l := range strings.SplitAfter(string(old), "\n") {
			if !strings.Contains(l, firefoxMarker) {
				keep = append(keep, l)
			}
		}
		data := strings.Join(keep, "")
		if strings.TrimSpace(data) == "" {
			err = os.Remove(path)
		} else {
			err = os.WriteFile(path, []byte(data), 0o644)
		}
		if err != nil {
			return fmt.Errorf("firefox profile %s: %w", p, err)
		}
	}
	return nil
}

// Places reports one TrustPlace per profile.
func (f FirefoxEnterpriseRoots) Places() []TrustPlace {
	var out []TrustPlace
	for _, p := range f.profiles() {
		data, _ := os.ReadFile(filepath.Join(p, "user.js"))
		out = append(out, TrustPlace{
			Store:   "Firefox profile " + filepath.Base(p) + " (uses the OS store)",
			Trusted: bytes.Contains(data, []byte(firefoxMarker)),
		})
	}
	return out
}
