// Package settings is the persisted, rule-like list behind breakpoints, rules and any
// later set of the kind: a JSON document holding a list of items (and maybe a few
// settings beside it), loaded once, edited through Update, validated item by item, given
// stable ids, compiled into an immutable chain that is swapped atomically, saved
// atomically (mode 0600) and announced to OnChange callbacks.
//
// # Contract
//
//   - A missing file is an empty document. A file that does not parse or validate is an
//     error naming the file and the position (line:column for JSON, the entry and its id
//     for an invalid item); the file is left as it is.
//   - Ids are positive and unique. An item added with id 0 gets the next id, one above
//     any id the set has held since it was loaded, so an id is never reused, until the
//     largest id (MaxInt64) was given: then the lowest free id.
//   - An empty file (a power loss during a save) is an empty document with a Warning; a
//     UTF-8 byte order mark is accepted.
//   - Chain never locks: hooks on request goroutines read the compiled chain while an
//     edit compiles the next one. A chain is never changed after it is published.
//   - An edit is all or nothing: when an item is invalid or the save fails, memory, the
//     chain and the file stay as they were and the error says why.
//   - OnChange callbacks run after a successful edit (or Notify) on the goroutine that made
//     it, never under the set's lock.
package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/net/http/httpguts"

	"inspector/internal/atomicfile"
)

// Spec describes a document D holding a list of items T compiled into a chain C.
type Spec[D, T, C any] struct {
	// Name names one item in errors: "breakpoint", "rule".
	Name string
	// Items points at the list inside a document.
	Items func(d *D) *[]T
	// ID points at an item's id.
	ID func(t *T) *int64
	// Validate checks one item (nil: every item is valid).
	Validate func(t T) error
	// Check checks the rest of the document (nil: nothing else to check).
	Check func(d *D) error
	// Compile builds the chain of a valid document. The document's list is a copy that
	// nothing changes later, so the chain may keep it.
	Compile func(d *D) (C, error)
}

// Set is a persisted list of items. Create it with Open. It is safe for concurrent use.
type Set[D, T, C any] struct {
	spec  Spec[D, T, C]
	path  string
	chain atomic.Pointer[C]

	mu       sync.Mutex
	doc      D
	nextID   int64
	onChange []func()
	warning  string
}

// Open loads the document from path (missing: an empty document) and returns a Set that
// saves every edit there. An empty path keeps everything in memory.
func Open[D, T, C any](path string, spec Spec[D, T, C]) (*Set[D, T, C], error) {
	s := &Set[D, T, C]{spec: spec, path: path}
	var d D
	if path != "" {
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, err
		default:
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) // a UTF-8 BOM, as some editors write
			if len(bytes.TrimSpace(b)) == 0 {
				// A power loss during a save can leave the file empty: nothing to keep, and
				// refusing to start would keep the user from everything else.
				s.warning = fmt.Sprintf("%s was empty (an interrupted save?); starting with no %ss", path, spec.Name)
				break
			}
			if err := json.Unmarshal(b, &d); err != nil {
				return nil, fmt.Errorf("%s: %w", path, position(b, err))
			}
		}
	}
	c, err := s.check(&d, true)
	if err != nil {
		if path == "" {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.doc = d
	for _, it := range *spec.Items(&d) {
		s.nextID = max(s.nextID, *spec.ID(&it))
	}
	s.chain.Store(&c)
	return s, nil
}

// Warning is what Open recovered from (an empty file), or "".
func (s *Set[D, T, C]) Warning() string { return s.warning }

// position adds the line and column of a JSON decoding error that has an offset.
func position(b []byte, err error) error {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off <= 0 || off > int64(len(b)) {
		return err
	}
	// Offset counts the bytes read, the offending one included.
	line, col := 1, 1
	for _, c := range b[:off-1] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

// check validates d and compiles it. located names the entry of an invalid item (for a
// file; an edit's error is the item's own).
func (s *Set[D, T, C]) check(d *D, located bool) (C, error) {
	var zero C
	items := *s.spec.Items(d)
	seen := make(map[int64]bool, len(items))
	for i := range items {
		id := *s.spec.ID(&items[i])
		if id <= 0 || seen[id] {
			return zero, fmt.Errorf("%s id %d (entry %d) is missing or repeated", s.spec.Name, id, i+1)
		}
		seen[id] = true
		if s.spec.Validate == nil {
			continue
		}
		if err := s.spec.Validate(items[i]); err != nil {
			if located {
				return zero, fmt.Errorf("entry %d (id %d): %w", i+1, id, err)
			}
			return zero, err
		}
	}
	if s.spec.Check != nil {
		if err := s.spec.Check(d); err != nil {
			return zero, err
		}
	}
	return s.spec.Compile(d)
}

// Chain returns the current compiled chain without locking.
func (s *Set[D, T, C]) Chain() C { return *s.chain.Load() }

// Doc returns a copy of the document (its list is a fresh slice).
func (s *Set[D, T, C]) Doc() D {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copyDoc()
}

func (s *Set[D, T, C]) copyDoc() D {
	d := s.doc
	l := s.spec.Items(&d)
	*l = append([]T(nil), *l...)
	return d
}

// Items returns a copy of the list.
func (s *Set[D, T, C]) Items() []T {
	d := s.Doc()
	return *s.spec.Items(&d)
}

// Update applies fn to a copy of the document; items fn leaves with id 0 get new ids. The
// result is validated, compiled, saved and swapped in, or, on any error, dropped.
func (s *Set[D, T, C]) Update(fn func(d *D) error) error {
	s.mu.Lock()
	d := s.copyDoc()
	if err := fn(&d); err != nil {
		s.mu.Unlock()
		return err
	}
	next := s.nextID
	items := *s.spec.Items(&d)
	var used map[int64]bool
	for i := range items {
		id := s.spec.ID(&items[i])
		if *id == 0 {
			if next == math.MaxInt64 {
				// The ids ran out (a file holding the largest id): take the lowest free
				// one rather than overflow into an invalid id that fails every add.
				if used == nil {
					used = make(map[int64]bool, len(items))
					for j := range items {
						used[*s.spec.ID(&items[j])] = true
					}
				}
				free := int64(1)
				for used[free] {
					free++
				}
				*id, used[free] = free, true
				continue
			}
			next++
			*id = next
		}
		next = max(next, *id)
	}
	c, err := s.check(&d, false)
	if err == nil {
		err = s.save(&d)
	}
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.doc, s.nextID = d, next
	s.chain.Store(&c)
	s.mu.Unlock()
	s.Notify()
	return nil
}

// save writes d to the file; called with s.mu held.
func (s *Set[D, T, C]) save(d *D) error {
	if s.path == "" {
		return nil
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err == nil {
		err = atomicfile.WriteFile(s.path, append(b, '\n'), 0o600)
	}
	if err != nil {
		return fmt.Errorf("saving %ss: %w", s.spec.Name, err)
	}
	return nil
}

// Add appends t (its id is ignored) and returns its new id.
func (s *Set[D, T, C]) Add(t T) (int64, error) {
	*s.spec.ID(&t) = 0
	var l *[]T
	err := s.Update(func(d *D) error {
		l = s.spec.Items(d)
		*l = append(*l, t)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return *s.spec.ID(&(*l)[len(*l)-1]), nil
}

// Put replaces the item with t's id; an unknown id is an error.
func (s *Set[D, T, C]) Put(t T) error {
	id := *s.spec.ID(&t)
	return s.Update(func(d *D) error {
		l := *s.spec.Items(d)
		if i := s.index(l, id); i >= 0 {
			l[i] = t
			return nil
		}
		return fmt.Errorf("%s %d not found", s.spec.Name, id)
	})
}

// Remove deletes the item with id; an unknown id is an error.
func (s *Set[D, T, C]) Remove(id int64) error {
	return s.Update(func(d *D) error {
		l := s.spec.Items(d)
		if i := s.index(*l, id); i >= 0 {
			*l = append((*l)[:i], (*l)[i+1:]...)
			return nil
		}
		return fmt.Errorf("%s %d not found", s.spec.Name, id)
	})
}

// Replace sets the whole list (items with id 0 get new ids) and returns the stored list.
func (s *Set[D, T, C]) Replace(items []T) ([]T, error) {
	var out []T
	err := s.Update(func(d *D) error {
		*s.spec.Items(d) = append([]T(nil), items...)
		out = *s.spec.Items(d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return append([]T(nil), out...), nil
}

func (s *Set[D, T, C]) index(l []T, id int64) int {
	for i := range l {
		if *s.spec.ID(&l[i]) == id {
			return i
		}
	}
	return -1
}

// OnChange registers f to run after every successful edit and every Notify.
func (s *Set[D, T, C]) OnChange(f func()) {
	s.mu.Lock()
	s.onChange = append(s.onChange, f)
	s.mu.Unlock()
}

// Notify runs the OnChange callbacks (for owners whose other state changed, such as the
// sessions paused at a breakpoint).
func (s *Set[D, T, C]) Notify() {
	s.mu.Lock()
	fs := append([]func(){}, s.onChange...)
	s.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Header checks the names and values of headers an item sets: a name must be an HTTP
// token and a value must not break the header block.
func Header(h http.Header) error {
	for k, vv := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("header name %q is invalid", k)
		}
		for _, v := range vv {
			if strings.ContainsAny(v, "\r\n\x00") {
				return fmt.Errorf("header %s has a line break or NUL in its value", k)
			}
		}
	}
	return nil
}
