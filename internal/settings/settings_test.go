package settings_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"inspector/internal/settings"
)

// item and doc are a small rule-like set: a name that must not be empty, and a limit
// beside the list.
type item struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
}

type doc struct {
	Items []item `json:"items"`
	Limit int    `json:"limit,omitempty"`
}

// chain is what the compiled form holds: the enabled names and, to check that a chain is
// never half built, the count of all items it was built from.
type chain struct {
	names []string
	all   int
}

func spec() settings.Spec[doc, item, *chain] {
	return settings.Spec[doc, item, *chain]{
		Name:  "item",
		Items: func(d *doc) *[]item { return &d.Items },
		ID:    func(t *item) *int64 { return &t.ID },
		Validate: func(t item) error {
			if strings.TrimSpace(t.Name) == "" {
				return errors.New("empty name")
			}
			return nil
		},
		Check: func(d *doc) error {
			if d.Limit < 0 {
				return fmt.Errorf("limit %d is negative", d.Limit)
			}
			return nil
		},
		Compile: func(d *doc) (*chain, error) {
			c := &chain{all: len(d.Items)}
			for _, t := range d.Items {
				if t.Enabled {
					c.names = append(c.names, t.Name)
				}
			}
			return c, nil
		},
	}
}

func open(t *testing.T, path string) *settings.Set[doc, item, *chain] {
	t.Helper()
	s, err := settings.Open(path, spec())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMissingFileIsEmptyAndEditsPersist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.json")
	s := open(t, path)
	if len(s.Items()) != 0 || s.Chain().all != 0 {
		t.Fatalf("a missing file gave %v", s.Items())
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("opening wrote the file: %v", err)
	}
	changes := 0
	s.OnChange(func() { changes++ })
	a, err := s.Add(item{ID: 99, Name: "a", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Add(item{Name: "b"})
	if a != 1 || b != 2 {
		t.Fatalf("ids %d %d, want 1 2 (an added item's id is ignored)", a, b)
	}
	if err := s.Put(item{ID: b, Name: "b2", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(item{ID: 7, Name: "x"}); err == nil || !strings.Contains(err.Error(), "item 7 not found") {
		t.Fatalf("put of an unknown id: %v", err)
	}
	if err := s.Update(func(d *doc) error { d.Limit = 3; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Chain().names, ","); got != "a,b2" {
		t.Fatalf("chain %q", got)
	}
	if changes != 4 {
		t.Fatalf("%d change notifications for 4 edits (a failed edit notifies nobody)", changes)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved file: %v %v", fi, err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
}

// TestReloadKeepsIDs: ids survive a reload, and a new item gets an id above every loaded
// one, even when the list is not in id order.
func TestReloadKeepsIDs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.json")
	s := open(t, path)
	for _, n := range []string{"a", "b", "c", "d"} {
		if _, err := s.Add(item{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Remove(2); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(2); err == nil {
		t.Fatal("removed an id twice")
	}
	rs, err := s.Replace([]item{{ID: 4, Name: "d"}, {ID: 1, Name: "a"}, {Name: "e"}})
	if err != nil {
		t.Fatal(err)
	}
	if rs[2].ID != 5 {
		t.Fatalf("replace gave the new item id %d, want 5", rs[2].ID)
	}
	s2 := open(t, path)
	got := fmt.Sprint(s2.Items())
	if want := fmt.Sprint(s.Items()); got != want {
		t.Fatalf("reloaded %s, want %s", got, want)
	}
	id, err := s2.Add(item{Name: "f"})
	if err != nil || id != 6 {
		t.Fatalf("new id after reload %d %v, want 6", id, err)
	}
}

// TestCorruptFile: a file that does not parse or validate is an error naming the file and
// where, and the file is left exactly as it was.
func TestCorruptFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ data, want string }{
		{"{\n  \"items\": [\n    {\"id\": 1, \"name\": \"a\"},\n    {\"id\": 2 \"name\": \"b\"}\n  ]\n}\n", "line 4, column 14"},
		{`{"items": {"id": 1}}`, "line 1, column 11"},
		{`{"items": [{"id": 1, "name": "a"}, {"id": 5, "name": " "}]}`, "entry 2 (id 5): empty name"},
		{`{"items": [{"id": 1, "name": "a"}, {"id": 1, "name": "b"}]}`, "item id 1 (entry 2) is missing or repeated"},
		{`{"items": [{"name": "a"}]}`, "item id 0 (entry 1) is missing"},
		{`{"items": [], "limit": -1}`, "limit -1 is negative"},
		{"\ufeff{\"items\": [", "unexpected end of JSON input"},
		{`{"items": []} trailing`, "line 1, column 15"},
	} {
		path := filepath.Join(dir, "items.json")
		if err := os.WriteFile(path, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := settings.Open(path, spec())
		if err == nil || !strings.Contains(err.Error(), path+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want the path and %q", c.data, err, c.want)
		}
		if b, _ := os.ReadFile(path); string(b) != c.data {
			t.Errorf("%q: the file was changed to %q", c.data, b)
		}
	}
	if _, err := settings.Open(dir, spec()); err == nil {
		t.Error("opened a directory as a settings file")
	}
}

// TestEmptyFileBOMAndLastID: an empty file (a save cut by a power loss) opens as an empty
// document with a warning and is left as it is; a UTF-8 BOM is accepted; after an item
// with the largest id, adds still get valid ids.
func TestEmptyFileBOMAndLastID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.json")
	for _, data := range []string{"", " \n", "\ufeff"} {
		os.WriteFile(path, []byte(data), 0o600)
		s, err := settings.Open(path, spec())
		if err != nil || len(s.Items()) != 0 || !strings.Contains(s.Warning(), path+" was empty") {
			t.Fatalf("%q: %v, warning %q", data, err, s.Warning())
		}
		if b, _ := os.ReadFile(path); string(b) != data {
			t.Fatalf("%q: the file was changed to %q", data, b)
		}
	}
	os.WriteFile(path, []byte("\ufeff{\"items\": [{\"id\": 9223372036854775807, \"name\": \"last\"}]}"), 0o600)
	s, err := settings.Open(path, spec())
	if err != nil || s.Warning() != "" {
		t.Fatalf("BOM: %v, warning %q", err, s.Warning())
	}
	a, err := s.Add(item{Name: "a"})
	if err != nil || a != 1 {
		t.Fatalf("add after the largest id: %d, %v", a, err)
	}
	b, err := s.Add(item{Name: "b"})
	if err != nil || b != 2 {
		t.Fatalf("second add: %d, %v", b, err)
	}
}

// TestBadEditChangesNothing: an invalid item or a failing fn leaves memory, chain and file.
func TestBadEditChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.json")
	s := open(t, path)
	s.Add(item{Name: "a", Enabled: true})
	before, _ := os.ReadFile(path)
	c := s.Chain()
	if _, err := s.Add(item{Name: ""}); err == nil || err.Error() != "empty name" {
		t.Fatalf("adding an invalid item: %v", err)
	}
	if _, err := s.Replace([]item{{ID: 3, Name: "x"}, {ID: 3, Name: "y"}}); err == nil {
		t.Fatal("replace with a repeated id succeeded")
	}
	if err := s.Update(func(d *doc) error { d.Items = nil; return errors.New("no") }); err == nil || err.Error() != "no" {
		t.Fatalf("fn's error: %v", err)
	}
	if err := s.Update(func(d *doc) error { d.Limit = -2; return nil }); err == nil {
		t.Fatal("a bad document was accepted")
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(before) || s.Chain() != c || len(s.Items()) != 1 || s.Doc().Limit != 0 {
		t.Fatalf("a refused edit changed something: %s / %v", after, s.Items())
	}
	if id, _ := s.Add(item{Name: "b"}); id != 2 {
		t.Fatalf("refused edits used up ids: next is %d", id)
	}
}

// TestFailedSave: when the file cannot be written the edit returns an error and memory,
// the chain and the file on disk all keep the last saved state.
func TestFailedSave(t *testing.T) {
	check := func(t *testing.T, s *settings.Set[doc, item, *chain], path string, breakIt, repair func()) {
		t.Helper()
		if _, err := s.Add(item{Name: "kept", Enabled: true}); err != nil {
			t.Fatal(err)
		}
		saved, _ := os.ReadFile(path)
		c := s.Chain()
		breakIt()
		_, err := s.Add(item{Name: "lost", Enabled: true})
		rmErr := s.Remove(1)
		repair()
		if err == nil || !strings.Contains(err.Error(), "saving items") || rmErr == nil {
			t.Fatalf("saves into a broken folder: add %v, remove %v", err, rmErr)
		}
		if got := fmt.Sprint(s.Items()); got != "[{1 kept true}]" || s.Chain() != c {
			t.Fatalf("memory after the failed save: %s", got)
		}
		if disk, _ := os.ReadFile(path); string(disk) != string(saved) {
			t.Fatalf("disk after the failed save: %s", disk)
		}
		if got := fmt.Sprint(open(t, path).Items()); got != "[{1 kept true}]" {
			t.Fatalf("reloaded after the failed save: %s", got)
		}
		if id, err := s.Add(item{Name: "later"}); err != nil || id != 2 {
			t.Fatalf("save after the repair: %d %v", id, err)
		}
	}
	t.Run("read-only folder", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		probe, err := os.CreateTemp(dir, "probe")
		if err == nil { // root, or a file system that ignores modes
			probe.Close()
			os.Remove(probe.Name())
			os.Chmod(dir, 0o700)
			t.Skip("this user can write into a read-only folder; the not-a-folder case covers a failed save")
		}
		os.Chmod(dir, 0o700)
		path := filepath.Join(dir, "items.json")
		check(t, open(t, path), path, func() { os.Chmod(dir, 0o500) }, func() { os.Chmod(dir, 0o700) })
	})
	t.Run("folder replaced by a file", func(t *testing.T) {
		root := t.TempDir()
		dir := filepath.Join(root, "data")
		os.Mkdir(dir, 0o700)
		path := filepath.Join(dir, "items.json")
		check(t, open(t, path), path, func() {
			if err := os.Rename(dir, dir+".away"); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(dir, nil, 0o600)
		}, func() {
			os.Remove(dir)
			if err := os.Rename(dir+".away", dir); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// TestConcurrentEditsAndReaders: writers add and remove while readers walk the chain
// without locks (run with -race); every chain a reader sees is whole, and the end state
// is on disk.
func TestConcurrentEditsAndReaders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.json")
	s := open(t, path)
	stop := make(chan struct{})
	var readers sync.WaitGroup
	bad := make(chan string, 4)
	for range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c := s.Chain()
				if len(c.names) != c.all { // every item below is enabled
					select {
					case bad <- fmt.Sprintf("chain of %d items has %d names", c.all, len(c.names)):
					default:
					}
					return
				}
				for _, n := range c.names {
					if n == "" {
						bad <- "empty name in a chain"
						return
					}
				}
				runtime.Gosched() // the machine is shared: let the writers run
			}
		}()
	}
	var writers sync.WaitGroup
	const perWriter = 24
	for w := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range perWriter {
				id, err := s.Add(item{Name: fmt.Sprintf("w%d-%d", w, i), Enabled: true})
				if err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					if err := s.Remove(id); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	select {
	case msg := <-bad:
		t.Fatal(msg)
	default:
	}
	items := s.Items()
	if len(items) != 4*perWriter/2 || s.Chain().all != len(items) {
		t.Fatalf("%d items, chain of %d", len(items), s.Chain().all)
	}
	seen := map[int64]bool{}
	for _, it := range items {
		if seen[it.ID] || it.ID <= 0 || it.ID > 4*perWriter {
			t.Fatalf("id %d repeated or out of range", it.ID)
		}
		seen[it.ID] = true
	}
	if got, want := fmt.Sprint(open(t, path).Items()), fmt.Sprint(items); got != want {
		t.Fatalf("disk has %s, memory %s", got, want)
	}
}

func TestHeader(t *testing.T) {
	for _, h := range []http.Header{{"Bad Name": {"x"}}, {"X": {"a\r\nInjected: 1"}}, {"X": {"a\x00"}}} {
		if err := settings.Header(h); err == nil {
			t.Errorf("accepted %q", h)
		}
	}
	if err := settings.Header(http.Header{"X-Ok": {"a b", ""}}); err != nil {
		t.Error(err)
	}
}
