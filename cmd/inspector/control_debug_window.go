package main

import (
	"path/filepath"
	"time"

	"inspector/engine/hooks/breakpoint"
	"inspector/ui"
)

// More ui.Debugger methods of debugAPI: the breakpoint timeout and the composer history
// file (DATA_DIR/composer-history.json, next to the store).

func (d *debugAPI) BreakpointSettings() breakpoint.Settings { return d.bp.Settings() }
func (d *debugAPI) SetBreakpointTimeout(t time.Duration, a breakpoint.TimeoutAction) error {
	return d.bp.SetTimeout(t, a)
}
func (d *debugAPI) ComposerHistoryPath() string {
	return filepath.Join(filepath.Dir(d.st.Path()), "composer-history.json")
}

var _ ui.HistoryFiler = (*debugAPI)(nil)
