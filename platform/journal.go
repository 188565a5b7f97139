package platform

import (
	"encoding/json"
	"errors"
	"fmt"
	"inspector/internal/atomicfile"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// JournalFile is the journal's name inside the data directory.
const JournalFile = "proxy-journal.json"

// Journal is the content of proxy-journal.json: the settings to restore and who owns the
// change.
type Journal struct {
	Version int `json:"version"`
	// OwnerPID is the process whose death means "restore now"; 0 when no process owns it
	// (set by 'inspector proxy on' without a running instance).
	OwnerPID int       `json:"owner_pid"`
	Addr     string    `json:"addr"`
	Created  time.Time `json:"created"`
	// State is StateApplying from before the first backend changes until every backend
	// applied, then StateSet. A journal never claims a proxy that is not in place: a
	// failed Enable whose rollback failed too leaves StateApplying.
	State string `json:"state,omitempty"`
	// Saved holds each backend's snapshot, in the order they were applied.
	Saved []SavedSettings `json:"saved"`
}

// SavedSettings is one backend's snapshot.
type SavedSettings struct {
	Backend  string          `json:"backend"`
	Settings json.RawMessage `json:"settings"`
}

// Journal states.
const (
	StateApplying = "applying"
	StateSet      = "set"
)

// ErrNoJournal is returned by ReadJournal when there is no journal.
var ErrNoJournal = errors.New("no proxy journal")

// ReadJournal reads DATA_DIR/proxy-journal.json. A missing journal is ErrNoJournal; a
// damaged one is a clear error naming the file.
func ReadJournal(dataDir string) (*Journal, error) {
	path := filepath.Join(dataDir, JournalFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoJournal
	}
	if err != nil {
		return nil, err
	}
	var j Journal
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("proxy journal %s is damaged: %v", path, err)
	}
	if j.Version != 1 {
		return nil, fmt.Errorf("proxy journal %s: unknown version %d", path, j.Version)
	}
	return &j, nil
}

// writeJournal writes the journal atomically (temp file, fsync, rename) with mode 0600.
func writeJournal(dataDir string, j *Journal) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	j.Version = 1
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dataDir, JournalFile), data, 0o600)
}

func removeJournal(dataDir string) error {
	err := os.Remove(filepath.Join(dataDir, JournalFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
