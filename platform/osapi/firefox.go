package osapi

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FirefoxEnterpriseRoots makes Firefox trust the OS root store (where Install put the CA) by
// setting security.enterprise_roots.enabled in the user.js of every profile listed in the
// profiles.ini files under Roots. It is used on Windows and macOS, where Firefox can read
// the OS store; on Linux Firefox gets the CA in its own NSS database instead. (A managed
// machine can do the same for every profile with a policies.json next to the Firefox
// binary: {"policies": {"Certificates": {"ImportEnterpriseRoots": true}}}; see README.)
//
// A listed profile whose folder does not exist yet gets it (Firefox reads user.js when it
// first starts the profile). The lines it adds end with a marker comment so Remove deletes
// exactly them and nothing the user wrote. Not safe for concurrent use on the same profiles.
type FirefoxEnterpriseRoots struct {
	// Roots are the folders holding profiles.ini (FirefoxRoots).
	Roots []string
}

const firefoxMarker = "// added by Inspector"

var firefoxLine = `user_pref("security.enterprise_roots.enabled", true); ` + firefoxMarker

func (f FirefoxEnterpriseRoots) profiles() ([]string, error) {
	ps, err := FirefoxProfiles(f.Roots)
	var out []string
	for _, p := range ps {
		out = append(out, p.Dir)
	}
	return out, err
}

// Install adds the preference to every profile's user.js (idempotent).
func (f FirefoxEnterpriseRoots) Install() error {
	ps, perr := f.profiles()
	for _, p := range ps {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return fmt.Errorf("firefox profile %s: %w", p, err)
		}
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
	return perr
}

// Remove deletes the lines Install added; a user.js left empty is deleted.
func (f FirefoxEnterpriseRoots) Remove() error {
	ps, perr := f.profiles()
	for _, p := range ps {
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
	return perr
}

// Places reports one TrustPlace per profile, and one for a profiles.ini that cannot be read.
func (f FirefoxEnterpriseRoots) Places() []TrustPlace {
	ps, err := f.profiles()
	var out []TrustPlace
	for _, p := range ps {
		tp := TrustPlace{Store: "Firefox profile " + filepath.Base(p) + " (uses the OS store)"}
		data, rerr := os.ReadFile(filepath.Join(p, "user.js"))
		tp.Trusted = bytes.Contains(data, []byte(firefoxMarker))
		if _, serr := os.Stat(p); serr != nil {
			tp.Note = "profile folder missing; 'inspector ca install' creates it"
		} else if rerr != nil && !os.IsNotExist(rerr) {
			tp.Note = rerr.Error()
		}
		out = append(out, tp)
	}
	if err != nil {
		out = append(out, TrustPlace{Store: "Firefox profiles.ini", Note: strings.Join(strings.Fields(err.Error()), " ")})
	}
	return out
}
