package contract_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"inspector/contract"
)

// The inferred document also passes an independent validator: @apidevtools/swagger-parser,
// installed by `make deps` under .cache/npm-tools (INSPECTOR_NPM_TOOLS overrides). Skipped
// with a message when node or the package is missing.
func TestInferredDocumentPassesSwaggerParser(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	mods := os.Getenv("INSPECTOR_NPM_TOOLS")
	if mods == "" {
		mods, _ = filepath.Abs("../.cache/npm-tools")
	}
	mods = filepath.Join(mods, "node_modules")
	if _, err := os.Stat(filepath.Join(mods, "@apidevtools", "swagger-parser")); err != nil {
		t.Skipf("@apidevtools/swagger-parser is not installed under %s (make deps installs it)", mods)
	}
	in := contract.NewInferrer()
	for _, s := range runSpecTraffic(t, 8) {
		in.Add(s)
	}
	dir := t.TempDir()
	for _, name := range []string{"api.yaml", "api.json"} {
		var buf bytes.Buffer
		write := contract.WriteYAML
		if strings.HasSuffix(name, ".json") {
			write = contract.WriteJSON
		}
		if err := write(&buf, in.Document(contract.Options{})); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		os.WriteFile(p, buf.Bytes(), 0o600)
		out, err := exec.Command(node, "testdata/validate.mjs", mods, p).CombinedOutput()
		if err != nil {
			t.Fatalf("swagger-parser rejects %s: %v\n%s", name, err, out)
		}
		t.Logf("%s: %s", name, strings.TrimSpace(string(out)))
	}
}
