package main

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeSAZ(t *testing.T, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for n, c := range files {
		w, _ := zw.Create(n)
		w.Write([]byte(c))
	}
	zw.Close()
	p := filepath.Join(t.TempDir(), "capture.saz")
	os.WriteFile(p, buf.Bytes(), 0o600)
	return p
}

// TestImportArchive: `inspector import` detects the format, adds every session or none.
func TestImportArchive(t *testing.T) {
	// Not parallel: runCLI swaps the process's stdout and stderr.
	dir := t.TempDir()
	good := writeSAZ(t, map[string]string{
		"raw/1_c.txt": "GET http://a.example/one HTTP/1.1\r\nHost: a.example\r\n\r\n", "raw/1_s.txt": "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"raw/2_c.txt": "GET http://a.example/two HTTP/1.1\r\nHost: a.example\r\n\r\n", "raw/2_s.txt": "HTTP/1.1 404 Not Found\r\n\r\n",
	})
	code, out, errOut := runCLI(t, "import", "--data-dir="+dir, good)
	if code != 0 || !strings.Contains(out, "imported 2 sessions") {
		t.Fatalf("import: %d %q %q", code, out, errOut)
	}
	_, list, _ := runCLI(t, "sessions", "--data-dir="+dir)
	if !strings.Contains(list, "200 GET http://a.example/one") || !strings.Contains(list, "404 GET http://a.example/two") || !strings.Contains(list, "(imported)") {
		t.Fatalf("sessions:\n%s", list)
	}
	bad := writeSAZ(t, map[string]string{
		"raw/1_c.txt": "GET http://a.example/three HTTP/1.1\r\n\r\n", "raw/1_s.txt": "HTTP/1.1 200 OK\r\n\r\n",
		"raw/2_c.txt": "GET http://a.example/four HTTP/1.1\r\n\r\n",
	})
	code, _, errOut = runCLI(t, "import", "--data-dir="+dir, bad)
	if code != 1 || !strings.Contains(errOut, "entry 2: no response") || !strings.Contains(errOut, "nothing was added") {
		t.Fatalf("bad archive: %d %q", code, errOut)
	}
	if _, after, _ := runCLI(t, "sessions", "--data-dir="+dir); after != list {
		t.Fatalf("a failed import changed the store:\n%s", after)
	}
	unknown := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(unknown, []byte("hello"), 0o600)
	if code, _, errOut := runCLI(t, "import", "--data-dir="+dir, unknown); code != 1 || !strings.Contains(errOut, "not a known archive") {
		t.Fatalf("unknown: %d %q", code, errOut)
	}
	if code, _, _ := runCLI(t, "import", "--data-dir="+dir, "--format", "zip", good); code != 2 {
		t.Fatalf("bad --format: %d", code)
	}
}
