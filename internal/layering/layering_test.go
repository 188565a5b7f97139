package layering

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const mod = "inspector/"

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Standard     bool
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json", "-tags", "migrated_fynedo", "inspector/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found only %d packages: run from inside the module", len(pkgs))
	}
	return pkgs
}

// under reports whether path is the package root (mod+root) or below it.
func under(path, root string) bool {
	p := strings.TrimPrefix(path, mod)
	if p == path {
		return false
	}
	return p == root || strings.HasPrefix(p, root+"/")
}

func underAny(path string, roots ...string) bool {
	for _, r := range roots {
		if under(path, r) {
			return true
		}
	}
	return false
}

// rule says why from may not import to, or "" when it may.
type rule func(from, to string) string

var (
	features = []string{"contract", "diff", "codegen", "redact"}
	core     = []string{"rootca", "platform", "engine", "store"}
	upper    = []string{"ui", "cmd"}
)

var rules = []rule{
	func(from, to string) string {
		if under(to, "cmd") && !under(from, "cmd") {
			return "only cmd/ imports cmd/"
		}
		return ""
	},
	func(from, to string) string {
		if under(to, "ui") && !underAny(from, "ui", "cmd") {
			return "only cmd/ and ui/ import ui/"
		}
		return ""
	},
	func(from, to string) string {
		if under(from, "engine/session") && strings.HasPrefix(to, mod) {
			return "engine/session imports only the standard library"
		}
		return ""
	},
	func(from, to string) string {
		if under(from, "internal") && strings.HasPrefix(to, mod) && !underAny(to, "internal", "engine/session") {
			return "internal/ utilities import only other utilities and engine/session"
		}
		return ""
	},
	func(from, to string) string {
		if underAny(from, "filter", "content") && strings.HasPrefix(to, mod) &&
			!underAny(to, "filter", "content", "internal", "engine/session") {
			return "the shared words (filter, content) import only engine/session and internal/"
		}
		if under(from, "content") && under(to, "filter") {
			return "content does not import filter"
		}
		return ""
	},
	func(from, to string) string {
		if !underAny(from, core...) || !strings.HasPrefix(to, mod) {
			return ""
		}
		if underAny(to, append(append([]string{}, features...), upper...)...) {
			return "the core (rootca, platform, engine, store) imports no feature, ui or cmd"
		}
		switch {
		case under(from, "store") && under(to, "engine") && !under(to, "engine/session"):
			return "the store sees sessions only: no engine/ but engine/session"
		case under(from, "engine") && underAny(to, "store", "platform"):
			return "the engine imports neither the store nor platform/"
		case underAny(from, "rootca", "platform") && underAny(to, "engine", "store") && !under(to, "engine/session"):
			return "rootca and platform/ import neither the engine nor the store"
		}
		return ""
	},
	func(from, to string) string {
		if under(from, "engine/internal") && under(to, "engine") && !underAny(to, "engine/internal", "engine/session") {
			return "engine/internal/ rooms import no engine package but engine/session and each other: not the public API, its hooks or its test harness"
		}
		return ""
	},
	func(from, to string) string {
		if underAny(from, features...) && strings.HasPrefix(to, mod) {
			if underAny(to, "ui", "cmd", "platform", "rootca") || (under(to, "engine") && !under(to, "engine/session")) {
				return "features import sessions, the shared words and the store, not the engine, platform or the window"
			}
		}
		return ""
	},
	func(from, to string) string {
		if !under(from, "ui") {
			return ""
		}
		switch {
		case underAny(to, "engine/internal", "platform"):
			return "ui/ imports no engine/internal/ and no platform/"
		case under(to, "engine/hooks"):
			return "ui/ imports no hook package: it declares the interfaces it needs"
		}
		return ""
	},
}

// knownBackEdges are arrows that break a rule today and are being removed (issue 34: the
// debugger interface split by concern). The test fails when one of them is gone, so that the
// list only shrinks, and when any other arrow breaks a rule.
var knownBackEdges = map[string]bool{
	"inspector/ui -> inspector/engine/hooks/breakpoint": true,
	"inspector/ui -> inspector/engine/hooks/replay":     true,
	"inspector/ui -> inspector/engine/hooks/rules":      true,
	"inspector/ui -> inspector/engine/hooks/script":     true,
}

func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	found := map[string]string{}
	for _, p := range pkgs {
		for _, to := range p.Imports {
			for _, r := range rules {
				if why := r(p.ImportPath, to); why != "" {
					found[p.ImportPath+" -> "+to] = why
				}
			}
		}
	}
	var bad, gone []string
	for edge, why := range found {
		if !knownBackEdges[edge] {
			bad = append(bad, fmt.Sprintf("%s: %s", edge, why))
		}
	}
	for edge := range knownBackEdges {
		if _, ok := found[edge]; !ok {
			gone = append(gone, edge)
		}
	}
	sort.Strings(bad)
	sort.Strings(gone)
	for _, b := range bad {
		t.Errorf("import breaks the layering: %s", b)
	}
	for _, g := range gone {
		t.Errorf("known back edge %s is gone: remove it from knownBackEdges", g)
	}
	t.Logf("%d packages, %d known back edges left", len(pkgs), len(found))
}

// TestNoFyneInCore: only the window, the composition root and assets import fyne.io/…, tests
// included, so the core's tests build with CGO_ENABLED=0.
func TestNoFyneInCore(t *testing.T) {
	for _, p := range listPackages(t) {
		if underAny(p.ImportPath, "ui", "cmd", "assets") {
			continue
		}
		for _, list := range [][]string{p.Imports, p.TestImports, p.XTestImports} {
			for _, to := range list {
				if strings.HasPrefix(to, "fyne.io/") {
					t.Errorf("%s imports %s", p.ImportPath, to)
				}
			}
		}
	}
}

// TestRulesCatchBackEdges: each rule refuses an arrow it is written for and lets the allowed
// direction through, so a rule that matches nothing cannot pass unnoticed.
func TestRulesCatchBackEdges(t *testing.T) {
	refused := [][2]string{
		{"store", "engine"},
		{"store/har", "engine/internal/capture"},
		{"engine", "store"},
		{"engine/hooks/rules", "ui"},
		{"engine/session", "filter"},
		{"content", "filter"},
		{"filter", "store"},
		{"internal/textual", "content"},
		{"diff", "engine"},
		{"diff", "ui"},
		{"ui", "platform/launch"},
		{"ui", "engine/hooks/rules"},
		{"ui/viewmodel", "engine/internal/conn"},
		{"store", "cmd/inspector"},
		{"rootca", "engine"},
		{"platform", "store"},
		{"engine", "diff"},
		{"engine/internal/ws", "engine"},
		{"engine/internal/frames", "engine/hooks/rules"},
		{"engine/internal/conn", "engine/enginetest"},
	}
	allowed := [][2]string{
		{"store", "engine/session"},
		{"store", "filter"},
		{"engine", "filter"},
		{"filter", "content"},
		{"diff", "store"},
		{"ui", "engine"},
		{"ui", "store"},
		{"cmd/inspector", "ui"},
		{"cmd/inspector", "platform/launch"},
		{"content", "internal/textual"},
		{"engine/internal/frames", "engine/session"},
		{"engine/internal/upstream", "engine/internal/fingerprint"},
		{"engine", "engine/internal/ws"},
	}
	check := func(from, to string) string {
		for _, r := range rules {
			if why := r(mod+from, mod+to); why != "" {
				return why
			}
		}
		return ""
	}
	for _, e := range refused {
		if check(e[0], e[1]) == "" {
			t.Errorf("%s -> %s is let through", e[0], e[1])
		}
	}
	for _, e := range allowed {
		if why := check(e[0], e[1]); why != "" {
			t.Errorf("%s -> %s is refused: %s", e[0], e[1], why)
		}
	}
}
