package har

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"inspector/engine/session"
)

// bigDoc is a HAR document whose entries have the given response texts (with encoding
// enc each) and an unused "text" field in a custom object.
func bigDoc(texts []string, enc string, header string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"log":{"version":"1.2","creator":{"name":"other","version":"1"},"entries":[`)
	for i, tx := range texts {
		if i > 0 {
			b.WriteByte(',')
		}
		q, _ := json.Marshal(tx)
		b.WriteString(`{"startedDateTime":"2026-03-04T05:06:07Z","_custom":{"text":` + string(q) + `},` +
			`"request":{"method":"POST","url":"http://example.com/` + string(rune('a'+i)) + `","headers":[],` +
			`"postData":{"mimeType":"text/plain","text":` + string(q) + `}},` +
			`"response":{"status":200,"headers":[` + header + `],"content":{"size":-1,"text":` + string(q) + `,"encoding":"` + enc + `"}},"timings":{}}`)
	}
	b.WriteString(`]}}`)
	return b.Bytes()
}

// fullBody is a body's bytes: Data, then its spill file.
func fullBody(t *testing.T, b *session.Body) []byte {
	t.Helper()
	if b.Spilled == "" {
		return b.Data
	}
	rest, err := os.ReadFile(b.Spilled)
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]byte(nil), b.Data...), rest...)
}

func decodeAllSessions(t *testing.T, doc []byte, lim Limits) ([]*session.Session, error) {
	t.Helper()
	var out []*session.Session
	_, err := Decode(bytes.NewReader(doc), lim, func(s *session.Session, _ session.ID) error {
		out = append(out, s)
		return nil
	})
	return out, err
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range es {
		n = append(n, e.Name())
	}
	return n
}

// TestLargeBase64BodySpills: a 20 MiB base64 body is decoded as it streams into Data (the
// first MiB) and a spill file, byte-exact; a text body is spilled as it is; the diverted
// copy of an unused "text" field leaves no file behind.
func TestLargeBase64BodySpills(t *testing.T) {
	body := make([]byte, 20<<20)
	rng := rand.NewChaCha8([32]byte{7})
	rng.Read(body)
	doc := bigDoc([]string{base64.StdEncoding.EncodeToString(body), "c2hvcnQ="}, "base64", "")
	dir := t.TempDir()
	ss, err := decodeAllSessions(t, doc, Limits{MaxDocument: 1 << 30, MaxBody: 64 << 20, MaxEntries: 10, SpillDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 {
		t.Fatalf("%d sessions", len(ss))
	}
	r := ss[0].Response.Body
	if len(r.Data) != defaultSpillAbove || r.Spilled == "" || r.Size != int64(len(body)) {
		t.Fatalf("response body: %d bytes in memory, spilled %q, size %d", len(r.Data), r.Spilled, r.Size)
	}
	if got := fullBody(t, &r); !bytes.Equal(got, body) {
		t.Fatalf("response body differs: %d bytes, want %d", len(got), len(body))
	}
	// The request's text is the base64 itself, as text.
	q := ss[0].Request.Body
	if want := base64.StdEncoding.EncodeToString(body); string(fullBody(t, &q)) != want || q.Size != int64(len(want)) {
		t.Fatalf("request body: %d bytes (size %d), want %d", len(fullBody(t, &q)), q.Size, len(want))
	}
	if s := ss[1]; string(s.Response.Body.Data) != "short" || s.Response.Body.Spilled != "" {
		t.Fatalf("small body: %q spilled %q", s.Response.Body.Data, s.Response.Body.Spilled)
	}
	if n := dirNames(t, dir); len(n) != 2 {
		t.Fatalf("spill folder holds %v, want the two bodies' files", n)
	}

	// Without a spill folder the same document reads the same bytes, in memory.
	mem, err := decodeAllSessions(t, doc, Limits{MaxDocument: 1 << 30, MaxBody: 64 << 20, MaxEntries: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mem[0].Response.Body.Data, body) || mem[0].Response.Body.Spilled != "" {
		t.Fatal("in-memory read differs")
	}
}

// TestLargeTextUnescapes: a diverted plain-text body is unescaped exactly as
// encoding/json does it: every escape, surrogate pairs, lone surrogates, and invalid
// UTF-8 (each bad byte is U+FFFD).
func TestLargeTextUnescapes(t *testing.T) {
	var raw strings.Builder
	for i := range 400 {
		raw.WriteString(`a\"b\\c\/d\b\f\n\r\t\u00e9\u20AC\ud83d\ude00\ud800x\udc00\ud83d\u0041 café ` + "\xff\xc3(\xe2\x82 € 😀 ")
		raw.WriteString(strings.Repeat("z", i%7))
	}
	lit := `"` + raw.String() + `"`
	var want string
	if err := json.Unmarshal([]byte(lit), &want); err != nil {
		t.Fatal(err)
	}
	doc := []byte(`{"log":{"entries":[{"startedDateTime":"2026-03-04T05:06:07Z","request":{"method":"GET","url":"http://e.com/"},` +
		`"response":{"status":200,"content":{"text":` + lit + `}}}]}}`)
	dir := t.TempDir()
	ss, err := decodeAllSessions(t, doc, Limits{MaxDocument: 1 << 30, MaxBody: 1 << 30, MaxEntries: 10, SpillDir: dir, SpillAbove: 1000})
	if err != nil {
		t.Fatal(err)
	}
	b := ss[0].Response.Body
	if b.Spilled == "" {
		t.Fatal("not spilled")
	}
	if got := string(fullBody(t, &b)); got != want {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("differs at byte %d: got %q, want %q", i, got[i:min(i+20, len(got))], want[i:min(i+20, len(want))])
			}
		}
		t.Fatalf("got %d bytes, want %d", len(got), len(want))
	}
	if b.Size != int64(len(want)) {
		t.Errorf("size %d, want %d", b.Size, len(want))
	}
}

// TestLargeBodyBadInput: bad base64, a bad escape or a control character in the middle
// of a large body, and a document cut inside one, each fail with the entry's number, and
// leave nothing in the spill folder.
func TestLargeBodyBadInput(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1, 2, 3}, 2<<20))
	mid := len(good) / 2
	cases := []struct {
		name string
		doc  []byte
		want string
	}{
		{"bad base64", bigDoc([]string{"aGk=", good[:mid] + "!!!!" + good[mid:]}, "base64", ""), "entry 1: response.content.text: bad base64"},
		{"bad escape", []byte(strings.Replace(string(bigDoc([]string{"aGk=", good}, "base64", "")), good[mid:mid+8], `\x`, 3)), "entry 1: "},
		{"control character", []byte(strings.Replace(string(bigDoc([]string{"aGk=", good}, "base64", "")), good[mid:mid+8], "\x01", 3)), "control character"},
		{"cut", bigDoc([]string{"aGk=", good}, "base64", "")[:len(good)+400], "truncated"},
		{"too large", bigDoc([]string{good}, "base64", ""), "exceeds the limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			lim := Limits{MaxDocument: 1 << 30, MaxBody: 32 << 20, MaxEntries: 10, SpillDir: dir}
			if c.name == "too large" {
				lim.MaxBody = 4 << 20
			}
			n := 0
			_, err := Decode(bytes.NewReader(c.doc), lim, func(s *session.Session, _ session.ID) error {
				n++
				removeSpilled(s)
				return nil
			})
			var he *Error
			if !errors.As(err, &he) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want an *Error with %q", err, c.want)
			}
			if c.name != "too large" && c.name != "cut" && he.Entry != 1 {
				t.Errorf("entry %d, want 1: %v", he.Entry, err)
			}
			if left := dirNames(t, dir); len(left) != 0 {
				t.Errorf("spill folder holds %v", left)
			}
		})
	}
}

// TestLargeBodyEncodedAgain: a large body another tool exported decoded, with
// Content-Encoding gzip, is stored gzip-encoded again, as it travelled, streaming.
func TestLargeBodyEncodedAgain(t *testing.T) {
	text := strings.Repeat("hello large world\n", 200_000)
	doc := bigDoc([]string{text}, "", `{"name":"Content-Encoding","value":"gzip"}`)
	dir := t.TempDir()
	ss, err := decodeAllSessions(t, doc, Limits{MaxDocument: 1 << 30, MaxBody: 64 << 20, MaxEntries: 10, SpillDir: dir, SpillAbove: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	b := ss[0].Response.Body
	zr, err := gzip.NewReader(bytes.NewReader(fullBody(t, &b)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil || string(got) != text {
		t.Fatalf("gunzipped %d bytes (%v), want %d", len(got), err, len(text))
	}
	// Only the request's text is left in a file: the gzipped response fits in memory.
	if n := dirNames(t, dir); len(n) != 1 || b.Spilled != "" || !strings.HasPrefix(filepath.Base(ss[0].Request.Body.Spilled), "har-body-") {
		t.Errorf("spill folder %v, response spilled %q", n, b.Spilled)
	}
}

// BenchmarkLargeBase64Body: decoding one 32 MiB base64 body with a spill folder.
func BenchmarkLargeBase64Body(b *testing.B) {
	body := bytes.Repeat([]byte{0, 1, 2, 250}, 8<<20)
	var d bytes.Buffer
	d.WriteString(`{"log":{"entries":[{"startedDateTime":"2026-03-04T05:06:07Z","request":{"method":"GET","url":"http://e.com/"},"response":{"status":200,"content":{"encoding":"base64","text":"`)
	d.WriteString(base64.StdEncoding.EncodeToString(body))
	d.WriteString(`"}}}]}}`)
	doc := d.Bytes()
	dir := b.TempDir()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		_, err := Decode(bytes.NewReader(doc), Limits{MaxDocument: 1 << 30, MaxBody: 64 << 20, MaxEntries: 10, SpillDir: dir}, func(s *session.Session, _ session.ID) error {
			removeSpilled(s)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
