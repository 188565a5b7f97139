// Package atomicfile writes small files (settings, journals, control.json) so that a
// reader, or a crash, never sees half of one: the data goes to a temporary file in the
// same folder, is synced, gets its mode, and is renamed over the target.
package atomicfile

import (
	"os"
	"path/filepath"
)

// WriteFile replaces path with data, mode perm. On error the target is unchanged and no
// temporary file is left behind.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
