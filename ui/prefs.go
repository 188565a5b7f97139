package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Prefs is the window's preference store: the subset of fyne.Preferences the window uses,
// so that tests can pass the app's in-memory preferences and the app a file per data
// directory (FilePrefs).
type Prefs interface {
	String(key string) string
	SetString(key, value string)
	Bool(key string) bool
	SetBool(key string, value bool)
	FloatWithFallback(key string, fallback float64) float64
	SetFloat(key string, value float64)
}

// Preference keys of the window frame.
const (
	prefDensity     = "window.density"      // compact | comfortable
	prefTheme       = "window.theme"        // system | light | dark
	prefSplitList   = "window.split.list"   // list / detail offset
	prefSplitHosts  = "window.split.hosts"  // hosts / list offset
	prefSplitDetail = "window.split.detail" // request / response offset
	prefHosts       = "window.hosts"        // host tree shown
)

// FilePrefs keeps preferences in one JSON file (in the data directory, so that two
// instances on two data directories never share or race on one file). Every Set writes
// the whole file through a temporary file renamed over it. Safe for concurrent use.
type FilePrefs struct {
	path string
	mu   sync.Mutex
	m    map[string]any
	err  error // the last write error
}

// OpenFilePrefs loads path. A missing file is an empty set. A file that cannot be parsed
// is renamed to path+".bad" (nothing is lost) and the defaults are used; the error says so.
func OpenFilePrefs(path string) (*FilePrefs, error) {
	p := &FilePrefs{path: path, m: map[string]any{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, fmt.Errorf("preferences %s: %w (defaults used)", path, err)
	}
	if err := json.Unmarshal(b, &p.m); err != nil {
		p.m = map[string]any{}
		bad := path + ".bad"
		if rerr := os.Rename(path, bad); rerr != nil {
			return p, fmt.Errorf("preferences %s are not valid JSON (%v); defaults used and the file could not be moved aside: %v", path, err, rerr)
		}
		return p, fmt.Errorf("preferences %s were not valid JSON (%v); defaults used, the old file kept as %s", path, err, filepath.Base(bad))
	}
	return p, nil
}

// Err is the last error writing the file, or nil.
func (p *FilePrefs) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *FilePrefs) get(k string) any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[k]
}

func (p *FilePrefs) set(k string, v any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.m[k]; ok && old == v {
		return
	}
	p.m[k] = v
	p.err = p.save()
}

// save writes the file atomically. p.mu is held.
func (p *FilePrefs) save() error {
	b, err := json.MarshalIndent(p.m, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p.path), "."+filepath.Base(p.path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), p.path)
}

func (p *FilePrefs) String(k string) string {
	s, _ := p.get(k).(string)
	return s
}

func (p *FilePrefs) SetString(k, v string) { p.set(k, v) }

func (p *FilePrefs) Bool(k string) bool {
	b, _ := p.get(k).(bool)
	return b
}

func (p *FilePrefs) SetBool(k string, v bool) { p.set(k, v) }

func (p *FilePrefs) FloatWithFallback(k string, fb float64) float64 {
	if f, ok := p.get(k).(float64); ok {
		return f
	}
	return fb
}

func (p *FilePrefs) SetFloat(k string, v float64) { p.set(k, v) }
