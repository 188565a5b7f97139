package engine

import (
	"io"
	"sync"
)

// keyLogWriter serialises key-log lines from the handshakes of every connection, both
// legs, into one writer.
type keyLogWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func newKeyLog(w io.Writer) io.Writer {
	if w == nil {
		return nil // a nil *keyLogWriter in an io.Writer would not be nil
	}
	return &keyLogWriter{w: w}
}

func (k *keyLogWriter) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.w.Write(p)
}
