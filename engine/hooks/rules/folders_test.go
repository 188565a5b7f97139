package rules_test

import (
	"errors"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	et "inspector/engine/enginetest"
	"inspector/engine/hooks/rules"
)

const fakeKey = "-----BEGIN EC PRIVATE KEY-----\nnot a real key\n-----END EC PRIVATE KEY-----\n"

// dataDir lays out a data directory with a CA key and a control token, and a site folder
// holding a page and three ways back into the data directory.
func dataDir(t *testing.T) (data, site string) {
	t.Helper()
	data, site = t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(data, "ca"), 0o700)
	must(t, os.WriteFile(filepath.Join(data, "ca", "root-key.pem"), []byte(fakeKey), 0o600))
	must(t, os.WriteFile(filepath.Join(data, "control.json"), []byte(`{"token":"secret-token"}`), 0o600))
	must(t, os.WriteFile(filepath.Join(site, "index.html"), []byte("<p>site</p>"), 0o644))
	must(t, os.Symlink(filepath.Join(data, "ca", "root-key.pem"), filepath.Join(site, "key.pem")))
	must(t, os.Symlink(filepath.Join(data, "ca"), filepath.Join(site, "ca")))
	must(t, os.Symlink("/etc/passwd", filepath.Join(site, "passwd")))
	if err := os.Link(filepath.Join(data, "ca", "root-key.pem"), filepath.Join(site, "hard.pem")); err != nil {
		t.Logf("no hard link (%v): the hard-link case is not tried", err)
	}
	return data, site
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestMapLocalServesOnlyAllowedFolders: a map_local rule is added only for a file under a
// folder the user allowed and outside the data directory, however the path is spelled;
// and every file is checked again when served, so a rule that got into rules.json
// another way, a symlink or a hard link into ca/ never hands out the key.
func TestMapLocalServesOnlyAllowedFolders(t *testing.T) {
	t.Parallel()
	data, site := dataDir(t)
	key := filepath.Join(data, "ca", "root-key.pem")
	m, err := rules.New(filepath.Join(data, "rules.json"))
	must(t, err)
	local := func(file string) rules.Rule {
		return rules.Rule{Kind: rules.MapLocal, Enabled: true, Filter: "path:/", File: file}
	}
	// No folder allowed yet: nothing is served, not even the site.
	if _, err := m.Add(local(filepath.Join(site, "index.html"))); !errors.Is(err, rules.ErrNotInFolder) || !strings.Contains(err.Error(), "allow-folder") {
		t.Fatalf("add before any folder is allowed: %v", err)
	}
	if err := m.AllowFolder(filepath.Join(data, "ca")); !errors.Is(err, rules.ErrProtected) {
		t.Fatalf("allowing ca/ as a folder: %v", err)
	}
	if err := m.AllowFolder(data); !errors.Is(err, rules.ErrProtected) {
		t.Fatalf("allowing the data directory as a folder: %v", err)
	}
	must(t, m.AllowFolder(site))
	for _, c := range []struct {
		file string
		want error
	}{
		{key, rules.ErrProtected},
		{filepath.Join(data, "control.json"), rules.ErrProtected},
		{filepath.Join(data, "rules.json"), rules.ErrProtected},
		{"/etc/passwd", rules.ErrNotInFolder},
		{filepath.Join(site, "key.pem"), rules.ErrProtected},            // symlink to the key
		{filepath.Join(site, "ca", "root-key.pem"), rules.ErrProtected}, // symlinked folder
		{filepath.Join(site, "passwd"), rules.ErrNotInFolder},           // symlink out of the folder
		{site + "/../" + filepath.Base(data) + "/ca/root-key.pem", nil},
	} {
		_, err := m.Add(local(c.file))
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("add map_local %s: %v, want %v", c.file, err, c.want)
		}
	}
	if len(m.Rules()) != 0 {
		t.Fatalf("a refused rule was stored: %+v", m.Rules())
	}
	// The folder itself is served, with its links refused at serve time.
	if _, err := m.Add(local(site)); err != nil {
		t.Fatal(err)
	}
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	m.Install(p.Engine)
	c := p.Client(t, et.ClientH1)
	resp, body := get(t, c, o.URL+"/index.html")
	if resp.StatusCode != 200 || body != "<p>site</p>" {
		t.Fatalf("the allowed page: %d %q", resp.StatusCode, body)
	}
	for _, path := range []string{"/key.pem", "/ca/root-key.pem", "/hard.pem", "/passwd", "/../../" + filepath.Base(data) + "/ca/root-key.pem"} {
		resp, body := get(t, c, o.URL+path)
		if strings.Contains(body, "PRIVATE KEY") || strings.Contains(body, "root:") {
			t.Errorf("%s served a protected file: %d %q", path, resp.StatusCode, body)
		}
		if path == "/hard.pem" {
			if _, err := os.Lstat(filepath.Join(site, "hard.pem")); err != nil {
				continue
			}
		}
		if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d %q", path, resp.StatusCode, body)
		}
	}
}

// TestMapLocalRuleInTheFileIsCheckedWhenServed: a rule written into rules.json by hand
// (or kept from a version without folders) pointing at the CA key loads, but serves a
// 403 that says why instead of the key.
func TestMapLocalRuleInTheFileIsCheckedWhenServed(t *testing.T) {
	t.Parallel()
	data, site := dataDir(t)
	path := filepath.Join(data, "rules.json")
	must(t, os.WriteFile(path, []byte(`{"rules":[
 {"id":1,"kind":"map_local","enabled":true,"filter":"path:/k","file":"`+filepath.Join(data, "ca", "root-key.pem")+`"},
 {"id":2,"kind":"map_local","enabled":true,"filter":"path:/p","file":"/etc/passwd"},
 {"id":3,"kind":"map_local","enabled":true,"filter":"path:/s","file":"`+filepath.Join(site, "key.pem")+`"}]}`), 0o600))
	m, err := rules.New(path)
	must(t, err)
	must(t, m.AllowFolder(site))
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, nil, o)
	m.Install(p.Engine)
	c := p.Client(t, et.ClientH1)
	for _, u := range []string{"/k", "/p", "/s"} {
		resp, body := get(t, c, o.URL+u)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "refused") || strings.Contains(body, "PRIVATE KEY") || strings.Contains(body, "root:") {
			t.Errorf("%s: %d %q", u, resp.StatusCode, body)
		}
	}
	// Saving the list unchanged (as the window does) keeps the rules; changing one's file
	// to a protected one is refused.
	rs := m.Rules()
	if _, err := m.Replace(rs); err != nil {
		t.Fatalf("saving unchanged rules: %v", err)
	}
	rs[2].File = filepath.Join(data, "control.json")
	if _, err := m.Replace(rs); !errors.Is(err, rules.ErrProtected) {
		t.Fatalf("changing a file to the token: %v", err)
	}
}

// TestWindowAllowsTheFolderOfItsFile: saving in the window allows the folder of the file
// the user entered; the data directory stays refused.
func TestWindowAllowsTheFolderOfItsFile(t *testing.T) {
	t.Parallel()
	data, site := dataDir(t)
	m, err := rules.New(filepath.Join(data, "rules.json"))
	must(t, err)
	if _, err := m.ReplaceAllowingFolders([]rules.Rule{{Kind: rules.MapLocal, Enabled: true, Filter: "path:/", File: filepath.Join(site, "index.html")}}); err != nil {
		t.Fatal(err)
	}
	if f := m.Folders(); len(f) != 1 || f[0] != site {
		t.Fatalf("folders %v", f)
	}
	if _, err := m.ReplaceAllowingFolders([]rules.Rule{{Kind: rules.MapLocal, Enabled: true, Filter: "path:/", File: filepath.Join(data, "ca", "root-key.pem")}}); !errors.Is(err, rules.ErrProtected) {
		t.Fatalf("window rule for the key: %v", err)
	}
	// Folders persist in the data directory, read by another Manager (another process).
	m2, err := rules.New(filepath.Join(data, "rules.json"))
	must(t, err)
	if f := m2.Folders(); len(f) != 1 || f[0] != site {
		t.Fatalf("reloaded folders %v", f)
	}
	must(t, m2.RemoveFolder(site))
	if f := m.Folders(); len(f) != 0 {
		t.Fatalf("folders after another Manager removed it: %v", f)
	}
}

// TestRulesFileRecovery: an empty rules.json (power loss) loads as no rules with a
// warning, a UTF-8 BOM is accepted, and a rule with the largest id does not make the next
// add fail.
func TestRulesFileRecovery(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "rules.json")
	must(t, os.WriteFile(p, nil, 0o600))
	m, err := rules.New(p)
	if err != nil || len(m.Rules()) != 0 || !strings.Contains(m.Warning(), "empty") {
		t.Fatalf("empty file: %v, %d rules, warning %q", err, len(m.Rules()), m.Warning())
	}
	must(t, os.WriteFile(p, []byte("\xef\xbb\xbf{\"rules\":[{\"id\":9223372036854775807,\"kind\":\"header\",\"filter\":\"host:a\",\"header_name\":\"X\"}]}"), 0o600))
	m, err = rules.New(p)
	if err != nil || len(m.Rules()) != 1 || m.Warning() != "" {
		t.Fatalf("file with a BOM: %v, %d rules, warning %q", err, len(m.Rules()), m.Warning())
	}
	id, err := m.Add(rules.Rule{Kind: rules.Header, Filter: "host:b", HeaderName: "Y"})
	if err != nil || id <= 0 || id == math.MaxInt64 {
		t.Fatalf("add after the largest id: %d, %v", id, err)
	}
	if id2, err := m.Add(rules.Rule{Kind: rules.Header, Filter: "host:c", HeaderName: "Z"}); err != nil || id2 == id || id2 <= 0 {
		t.Fatalf("second add: %d, %v", id2, err)
	}
}
