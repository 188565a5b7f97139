package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"inspector/internal/atomicfile"
)

// Map-local folders
//
// A map_local rule reads files from disk and answers proxy clients with them, so whoever
// can add a rule (the control API, an MCP client with writes enabled, a model steered by
// captured text) could read any file the user can: the CA's private key, the control
// token, /etc/passwd. Files are therefore served only from folders the user allowed in
// the window (DATA_DIR/map-local-folders.json, written by AllowFolder, never by the
// control API), and never from the data directory, whatever the folders say. Both are
// checked when a rule is added and again, after resolving symlinks, each time a file is
// served; the opened file is finally compared with the data directory's files so that a
// hard link or a path swapped after the check cannot reach them either.

// ErrNotInFolder is the error of a map_local file outside every allowed folder.
var ErrNotInFolder = errors.New("not under a map-local folder")

// ErrProtected is the error of a map_local file in the data directory.
var ErrProtected = errors.New("in the data directory, whose keys, token and settings are never served")

// foldersFile is the allowed folders' file in the data directory.
const foldersFile = "map-local-folders.json"

type folders struct {
	dataDir string // "" for an in-memory Manager: nothing extra to protect
	path    string // the folders file, "" in memory

	mu   sync.Mutex
	dirs []string // absolute, cleaned, as the user chose them
	mod  fileStamp
}

type fileStamp struct {
	size int64
	mod  int64
}

type foldersDoc struct {
	Folders []string `json:"folders"`
}

func newFolders(dataDir string) *folders {
	f := &folders{dataDir: dataDir}
	if dataDir != "" {
		f.path = filepath.Join(dataDir, foldersFile)
	}
	return f
}

// list returns the allowed folders, rereading the file when it changed (so a folder
// allowed by another process, `inspector rules allow-folder`, counts at once).
func (f *folders) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.path == "" {
		return slices.Clone(f.dirs)
	}
	fi, err := os.Stat(f.path)
	if err != nil {
		f.dirs, f.mod = nil, fileStamp{}
		return nil
	}
	if st := (fileStamp{fi.Size(), fi.ModTime().UnixNano()}); st != f.mod {
		var d foldersDoc
		if b, err := os.ReadFile(f.path); err == nil && json.Unmarshal(b, &d) == nil {
			f.dirs = nil
			for _, dir := range d.Folders {
				if filepath.IsAbs(dir) {
					f.dirs = append(f.dirs, filepath.Clean(dir))
				}
			}
		} else {
			f.dirs = nil // unreadable: nothing allowed
		}
		f.mod = st
	}
	return slices.Clone(f.dirs)
}

func (f *folders) save(dirs []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.path != "" {
		b, _ := json.MarshalIndent(foldersDoc{Folders: dirs}, "", "  ")
		if err := atomicfile.WriteFile(f.path, append(b, '\n'), 0o600); err != nil {
			return fmt.Errorf("saving the map-local folders: %w", err)
		}
		f.mod = fileStamp{} // reread on next list
	}
	f.dirs = slices.Clone(dirs)
	return nil
}

// allow adds dir (an absolute path of an existing folder outside the data directory).
func (f *folders) allow(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("map-local folder %q: want an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("map-local folder: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("map-local folder %s is not a folder", dir)
	}
	if f.inDataDir(dir) {
		return fmt.Errorf("map-local folder %s: %w", dir, ErrProtected)
	}
	dirs := f.list()
	if slices.Contains(dirs, dir) {
		return nil
	}
	return f.save(append(dirs, dir))
}

func (f *folders) remove(dir string) error {
	dirs := f.list()
	i := slices.Index(dirs, filepath.Clean(dir))
	if i < 0 {
		return fmt.Errorf("%s is not a map-local folder", dir)
	}
	return f.save(slices.Delete(dirs, i, i+1))
}

// resolve returns p with every symlink resolved; for a path that does not exist (yet),
// its longest existing parent is resolved and the rest appended.
func resolve(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// within reports whether p is dir or inside it (both resolved and clean).
func within(p, dir string) bool {
	if p == dir {
		return true
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func (f *folders) inDataDir(p string) bool {
	if f.dataDir == "" {
		return false
	}
	rp, rd := resolve(p), resolve(f.dataDir)
	return within(rp, rd) || within(filepath.Clean(p), filepath.Clean(f.dataDir))
}

// check says whether file may be served: no ".." element, not in the data directory and
// under an allowed folder, after resolving symlinks.
func (f *folders) check(file string) error {
	if !filepath.IsAbs(file) {
		return fmt.Errorf("file %q: want an absolute path", file)
	}
	for _, el := range strings.Split(filepath.ToSlash(file), "/") {
		if el == ".." {
			return fmt.Errorf("file %q: a path with .. in it is refused", file)
		}
	}
	if f.inDataDir(file) {
		return fmt.Errorf("file %s: %w", file, ErrProtected)
	}
	dirs := f.list()
	if len(dirs) == 0 {
		return fmt.Errorf("file %s: %w: none is allowed yet (allow one in the window's Rules, or run `inspector rules allow-folder DIR`)", file, ErrNotInFolder)
	}
	rp := resolve(file)
	for _, d := range dirs {
		if within(rp, resolve(d)) {
			return nil
		}
	}
	return fmt.Errorf("file %s: %w (%s)", file, ErrNotInFolder, strings.Join(dirs, ", "))
}

// protectedFiles are the regular files of the data directory and of its ca/ folder.
func (f *folders) protectedFiles() []os.FileInfo {
	if f.dataDir == "" {
		return nil
	}
	var out []os.FileInfo
	for _, d := range []string{f.dataDir, filepath.Join(f.dataDir, "ca")} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if fi, err := os.Stat(filepath.Join(d, e.Name())); err == nil && fi.Mode().IsRegular() {
				out = append(out, fi)
			}
		}
	}
	return out
}

// open checks file and opens it for serving. The opened file is compared with the data
// directory's files, so that a hard link to the CA key, or a symlink swapped in after the
// check, is refused too.
func (f *folders) open(file string) (*os.File, os.FileInfo, error) {
	if err := f.check(file); err != nil {
		return nil, nil, err
	}
	fh, err := os.Open(resolve(file))
	if err != nil {
		return nil, nil, err
	}
	fi, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, nil, err
	}
	for _, p := range f.protectedFiles() {
		if os.SameFile(fi, p) {
			fh.Close()
			return nil, nil, fmt.Errorf("file %s: %w", file, ErrProtected)
		}
	}
	return fh, fi, nil
}

// readLimited reads at most limit bytes of r; more is an error.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("larger than %d bytes", limit)
	}
	return b, err
}
