package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"inspector/engine/hooks/script"
)

// startScripts loads the JavaScript addons of DATA_DIR/scripts and --script files
// (engine/hooks/script); installHooks puts them on the engine. The folder is created so
// users find it.
func startScripts(dataDir string, files []string) (*script.Manager, error) {
	dir := filepath.Join(dataDir, "scripts")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("scripts: %w", err)
	}
	m, err := script.New(script.Options{Dir: dir, Files: files, Logf: func(format string, a ...any) {
		fmt.Fprintf(stderr, format+"\n", a...)
	}})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// scriptHandlers serve the addons' state on the control API:
//
//	GET  /api/v1/scripts          {"scripts": [status…], "log": [entries…]}
//	POST /api/v1/scripts/reload   reloads changed files now → the same document
func scriptHandlers(m *script.Manager) map[string]http.Handler {
	state := func(w http.ResponseWriter) {
		writeJSON(w, map[string]any{"scripts": nonNil(m.Status()), "log": nonNil(m.Log())})
	}
	return map[string]http.Handler{
		"GET /api/v1/scripts": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { state(w) }),
		"POST /api/v1/scripts/reload": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m.Reload()
			state(w)
		}),
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
