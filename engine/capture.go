package engine

import (
	"io"
	"net/http"

	"inspector/engine/internal/capture"
	"inspector/engine/session"
)

// newCapture captures one body of session id (part "request" or "response") with the
// engine's limits: CaptureLimit in memory within the CaptureMemory budget, the rest
// spilled up to SpillLimit (engine/internal/capture).
func (e *Engine) newCapture(rc io.ReadCloser, size int64, id session.ID, part string, trailer func() http.Header) *capture.Body {
	o := capture.Options{Limit: e.cfg.CaptureLimit, Budget: e.captureMem, ID: id, Part: part}
	if e.cfg.SpillDir != "" {
		o.SpillDir, o.SpillLimit = e.cfg.SpillDir, e.cfg.SpillLimit-max(e.cfg.CaptureLimit, 0)
	}
	return capture.New(rc, size, trailer, o)
}
