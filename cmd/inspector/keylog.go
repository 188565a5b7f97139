package main

import (
	"fmt"
	"os"
	"sync"

	"inspector/engine"
	"inspector/engine/session"
)

// keyLogSwitch is the instance's TLS key-log file: --keylog FILE (or $SSLKEYLOGFILE) at
// start, and the window's Tools ▸ TLS key log… switch after. Both go through open, so the
// file is always created 0600 and appended to.
type keyLogSwitch struct {
	mu   sync.Mutex
	eng  *engine.Engine // nil until the engine exists
	path string
	f    *os.File
}

// openKeyLog opens path for the key log: created 0600, appended.
func openKeyLog(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
}

// set switches the key log to path ("": off). A path that cannot be opened leaves the
// key log as it was.
func (k *keyLogSwitch) set(path string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if path == k.path {
		return nil
	}
	var f *os.File
	if path != "" {
		var err error
		if f, err = openKeyLog(path); err != nil {
			return err
		}
	}
	if k.eng != nil {
		if f != nil {
			k.eng.SetKeyLog(f)
		} else {
			k.eng.SetKeyLog(nil)
		}
	}
	if k.f != nil {
		k.f.Close()
	}
	k.f, k.path = f, path
	return nil
}

// close turns the key log off and closes its file (instance shutdown).
func (k *keyLogSwitch) close() error { return k.set("") }

func (k *keyLogSwitch) KeyLogFile() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.path
}

func (k *keyLogSwitch) SetKeyLogFile(path string) error {
	if err := k.set(path); err != nil {
		return fmt.Errorf("TLS key log: %w", err)
	}
	return nil
}

func (k *keyLogSwitch) SessionKeys(id session.ID) (client, upstream []string) {
	k.mu.Lock()
	eng := k.eng
	k.mu.Unlock()
	if eng == nil {
		return nil, nil
	}
	return eng.SessionKeys(id)
}
