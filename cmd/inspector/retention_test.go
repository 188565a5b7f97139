package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportPastRetentionSaysSo (issue 26 item 7): an import past the user's limit says
// how many old sessions went, and a session marked Keep is never among them.
func TestImportPastRetentionSaysSo(t *testing.T) {
	// Not parallel: runCLI swaps the process's stdout and stderr.
	src := fillStore(t, 200, 201, 202)
	harFile := filepath.Join(t.TempDir(), "three.har")
	if code, _, errOut := runCLI(t, "har", "export", "--data-dir="+src, "-o", harFile); code != 0 {
		t.Fatal(errOut)
	}
	dir := fillStore(t, 200, 404, 500, 201, 403)
	if err := os.WriteFile(filepath.Join(dir, retentionFile), []byte(`{"max_sessions": 5}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "sessions", "keep", "--data-dir="+dir, "#1"); code != 0 || out != "#1 kept\n" {
		t.Fatalf("sessions keep: %d %q %q", code, out, errOut)
	}
	code, out, errOut := runCLI(t, "har", "import", "--data-dir="+dir, harFile)
	if code != 0 || !strings.Contains(out, "imported 3 sessions (#") || !strings.HasSuffix(out, "); 3 old sessions removed to stay under 5 sessions\n") {
		t.Fatalf("import: %d %q %q", code, out, errOut)
	}
	_, list, _ := runCLI(t, "sessions", "--data-dir="+dir)
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(list), "\n") {
		ids = append(ids, strings.Fields(l)[0])
	}
	if len(ids) != 5 || ids[0] != "#1" || ids[1] != "#5" {
		t.Fatalf("after import: %v, want the kept #1 and the 4 newest", ids)
	}
	// An import bigger than the limit says its own sessions went too.
	os.WriteFile(filepath.Join(dir, retentionFile), []byte(`{"max_sessions": 2}`), 0o600)
	code, out, errOut = runCLI(t, "har", "import", "--data-dir="+dir, harFile)
	if code != 0 || !strings.Contains(out, "of them from this import") || !strings.Contains(errOut, "raise --max-sessions") {
		t.Fatalf("import past the limit: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "sessions", "keep", "--data-dir="+dir, "--off", "1"); code != 0 {
		t.Fatal(errOut)
	}
	if code, _, errOut := runCLI(t, "sessions", "keep", "--data-dir="+dir, "999"); code != 1 || !strings.Contains(errOut, "999") {
		t.Fatalf("keep of an unknown id: %d %q", code, errOut)
	}
	// A damaged retention.json stops the import with its name; nothing is added.
	os.WriteFile(filepath.Join(dir, retentionFile), []byte(`{"max_size": "lots"}`), 0o600)
	if code, _, errOut := runCLI(t, "har", "import", "--data-dir="+dir, harFile); code != 1 || !strings.Contains(errOut, "retention.json: max_size") {
		t.Fatalf("bad retention.json: %d %q", code, errOut)
	}
}
