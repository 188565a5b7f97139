package launch

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		os.WriteFile(p, []byte(got), 0o644)
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update to accept):\n--- got\n%s\n--- want\n%s", p, got, want)
	}
}

func fakeEnv(goos string) func(string) string {
	m := map[string]map[string]string{
		"windows": {"ProgramFiles": `C:\Program Files`, "ProgramFiles(x86)": `C:\Program Files (x86)`, "LOCALAPPDATA": `C:\Users\ada\AppData\Local`},
		"darwin":  {"HOME": "/Users/ada"},
	}
	return func(k string) string { return m[goos][k] }
}

// TestLaunchCommandsGolden: the candidates and command lines for every browser on
// Windows, macOS and Linux, and the shell variables in sh, cmd and PowerShell form.
func TestLaunchCommandsGolden(t *testing.T) {
	t.Parallel()
	profiles := map[string]string{"windows": `C:\Users\ada\AppData\Roaming\Inspector\launch`, "darwin": "/Users/ada/Library/Application Support/Inspector/launch", "linux": "/home/ada/.local/share/inspector/launch"}
	for _, goos := range []string{"windows", "darwin", "linux"} {
		var b strings.Builder
		for _, br := range Browsers {
			cands := Candidates(br, goos, fakeEnv(goos))
			sep := "/"
			if goos == "windows" {
				sep = `\`
			}
			argv := Command(Spec{Browser: br, Exe: cands[0], Profile: profiles[goos] + sep + br.ID + "-1",
				SOCKS: "127.0.0.1:41234", SPKI: "q1w2e3r4t5y6u7i8o9p0AbCdEfGhIjKlMnOpQrStUvw=", Args: []string{"--lang=en"}, URL: "https://example.com/"})
			b.WriteString(br.ID + "\n  looks at: " + strings.Join(cands, " | ") + "\n  runs:")
			for _, a := range argv {
				b.WriteString(" [" + a + "]")
			}
			b.WriteString("\n")
		}
		golden(t, "launch_"+goos+".golden", b.String())
	}
	dirs := map[string]string{"sh": "/home/ada/.local/share/inspector/launch", "cmd": `C:\Users\ada\AppData\Roaming\Inspector\launch`, "powershell": `C:\Users\ada\AppData\Roaming\Inspector\launch`}
	for _, shell := range []string{"sh", "cmd", "powershell"} {
		d, sep := dirs[shell], `\`
		if shell == "sh" {
			sep = "/"
		}
		vs := Env("127.0.0.1:8080", EnvFiles{CA: d + sep + "ca.pem", Bundle: d + sep + "bundle.pem", TrustStore: d + sep + "truststore.p12"})
		out, err := Format(shell, vs)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "env_"+shell+".golden", out)
	}
	if _, err := Format("tcsh", nil); err == nil || !strings.Contains(err.Error(), "powershell") {
		t.Fatalf("unknown shell: %v", err)
	}
}

func TestFindNamesWhatItLookedFor(t *testing.T) {
	t.Parallel()
	br, _ := ByID("Edge")
	notFound := func(string) (string, error) { return "", os.ErrNotExist }
	_, err := Find(br, "linux", fakeEnv("linux"), notFound)
	if err == nil || !strings.Contains(err.Error(), "Microsoft Edge is not installed: looked for it on PATH: microsoft-edge, microsoft-edge-stable") {
		t.Fatalf("linux: %v", err)
	}
	_, err = Find(br, "windows", fakeEnv("windows"), notFound)
	if err == nil || !strings.Contains(err.Error(), `at C:\Program Files (x86)\Microsoft\Edge\Application\msedge.exe`) {
		t.Fatalf("windows: %v", err)
	}
	found := func(n string) (string, error) { return "/usr/bin/" + n, nil }
	if p, err := Find(br, "linux", fakeEnv("linux"), found); err != nil || p != "/usr/bin/microsoft-edge" {
		t.Fatalf("found: %q %v", p, err)
	}
	if _, ok := ByID("netscape"); ok {
		t.Fatal("unknown browser found")
	}
}

func TestNewProfileIsSeparateEachTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, n, err := NewProfile(dir, "chromium")
	if err != nil || n != 1 {
		t.Fatal(n, err)
	}
	os.WriteFile(filepath.Join(a, "Local State"), []byte("{}"), 0o600)
	b, m, err := NewProfile(dir, "chromium")
	if err != nil || m != 2 || a == b {
		t.Fatalf("second profile %q %d %v", b, m, err)
	}
	if _, err := os.Stat(filepath.Join(a, "Local State")); err != nil {
		t.Fatal("the first profile was touched")
	}
	if fi, _ := os.Stat(b); fi.Mode().Perm() != 0o700 {
		t.Fatalf("profile mode %v", fi.Mode().Perm())
	}
}

// TestCAEnvIsEnvWithoutProxies: inspector run's variables are inspector env's trust
// variables, each with the same value, and no proxy setting among them.
func TestCAEnvIsEnvWithoutProxies(t *testing.T) {
	t.Parallel()
	f := EnvFiles{CA: "/d/ca.pem", Bundle: "/d/bundle.pem", TrustStore: "/d/truststore.p12"}
	full := map[string]string{}
	for _, v := range Env("127.0.0.1:8080", f) {
		full[v.Name] = v.Value
	}
	ca := CAEnv(f)
	if len(ca) != len(caVar)+1 {
		t.Fatalf("CAEnv has %d variables, want %d: %v", len(ca), len(caVar)+1, Names(ca))
	}
	for _, v := range ca {
		if strings.Contains(strings.ToLower(v.Name), "proxy") || strings.Contains(v.Value, "8080") || strings.Contains(v.Value, "proxyHost") {
			t.Errorf("%s=%s sets a proxy", v.Name, v.Value)
		}
		if v.Name == "JAVA_TOOL_OPTIONS" {
			if !strings.HasPrefix(full[v.Name], v.Value+" ") {
				t.Errorf("JAVA_TOOL_OPTIONS %q is not the trust part of %q", v.Value, full[v.Name])
			}
			continue
		}
		if full[v.Name] != v.Value {
			t.Errorf("%s=%q, inspector env has %q", v.Name, v.Value, full[v.Name])
		}
	}
	if got := CAEnv(EnvFiles{CA: "a", Bundle: "b"}); len(got) != len(caVar) {
		t.Errorf("without a truststore: %v", Names(got))
	}
}
