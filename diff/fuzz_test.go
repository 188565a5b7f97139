package diff

import (
	"net/http"
	"testing"

	"inspector/engine/session"
)

// FuzzParseIgnore: any file either loads (and then survives a save and a reload
// unchanged in meaning) or is an error; never a panic.
func FuzzParseIgnore(f *testing.F) {
	f.Add([]byte(`{"default":{"headers":["Date","X-B3-*"],"json":["$..timestamp","$.items[*].id","$[\"a b\"]"]},"hosts":{"h":{"json":["$.x[3]"]}}}`))
	f.Add([]byte(`{"default":{"json":["$.a..b.*"]}}`))
	f.Add([]byte(`{"default":{"json":["$["]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseIgnore(b, "fuzz")
		if err != nil {
			return
		}
		dir := t.TempDir()
		if err := c.Save(dir); err != nil {
			t.Fatalf("a list that loads does not save: %v", err)
		}
		c2, err := LoadIgnore(dir)
		if err != nil {
			t.Fatalf("a saved list does not load: %v", err)
		}
		m1, m2 := c.For("h"), c2.For("h")
		if len(m1.paths) != len(m2.paths) || len(m1.headers) != len(m2.headers) {
			t.Fatalf("round trip changed the rules")
		}
	})
}

// FuzzBodies: any two bodies compare without panic, and a body equals itself.
func FuzzBodies(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":null}]}`), []byte(`{"a":[1,{"b":"x"}],"c":true}`), true)
	f.Add([]byte("line 1\nline 2\n"), []byte("line 1\r\nline 3"), false)
	f.Add([]byte{0, 1, 2}, []byte("[1, 2"), true)
	ig := DefaultIgnore().For("h")
	f.Fuzz(func(t *testing.T, a, b []byte, js bool) {
		h := http.Header{}
		if js {
			h.Set("Content-Type", "application/json")
		}
		if d := Bodies(h, bodyOf(a), h, bodyOf(a), ig); !d.Equal {
			t.Fatalf("a body differs from itself: %+v", d)
		}
		d := Bodies(h, bodyOf(a), h, bodyOf(b), ig)
		if string(a) == string(b) && !d.Equal {
			t.Fatalf("equal bodies differ")
		}
	})
}

func bodyOf(d []byte) session.Body { return session.Body{Data: d, Size: int64(len(d))} }
