package filter

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"inspector/engine/session"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func gz(t testing.TB, s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func zl(t testing.TB, s string) []byte {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// corpus returns sessions with ids 1..8 covering every field.
func corpus(t testing.TB) []*session.Session {
	mk := func(id session.ID, method, url string, status int, ctype string, dur time.Duration) *session.Session {
		s := &session.Session{
			ID: id, Started: t0,
			Client:   session.Conn{Proto: session.HTTP1},
			Upstream: session.Conn{Proto: session.HTTP1},
			Request:  session.Request{Method: method, URL: url, Proto: session.HTTP1, Header: http.Header{}},
			Timings:  session.Timings{RequestHeaders: t0},
		}
		if dur > 0 {
			s.Timings.ResponseDone = t0.Add(dur)
		}
		if status > 0 {
			s.Response = &session.Response{Status: status, Proto: session.HTTP1, Header: http.Header{}}
			if ctype != "" {
				s.Response.Header.Set("Content-Type", ctype)
			}
		}
		return s
	}
	s1 := mk(1, "GET", "https://Example.com/index.html", 200, "text/html; charset=utf-8", 20*time.Millisecond)
	s1.Response.Body = session.Body{Data: []byte("<h1>Hello World</h1>"), Size: 20}
	s1.Client.TLS = &session.TLSInfo{}

	s2 := mk(2, "POST", "https://api.example.com/v1/login?next=/home", 401, "application/json", 600*time.Millisecond)
	s2.Client.Proto, s2.Request.Proto = session.HTTP2, session.HTTP2
	s2.Request.Header.Set("Authorization", "Bearer SECRET-token")
	s2.Request.Body = session.Body{Data: []byte(`{"user":"alice"}`), Size: 16}
	s2.Response.Body = session.Body{Data: gz(t, `{"error":"Denied"}`), Size: 40}
	s2.Response.Header.Set("Content-Encoding", "gzip")
	s2.Mark = "red"

	s3 := mk(3, "get", "http://cdn.other.org/img/logo.png", 404, "image/png", 3*time.Second)
	s3.Upstream.Proto = session.HTTP3
	s3.Response.Body = session.Body{Data: []byte{0x89, 'P', 'N', 'G'}, Size: 20 << 10}

	s4 := mk(4, "GET", "https://example.com/fail", 0, "", 0)
	s4.Error = &session.Error{Phase: session.PhaseTLS, Side: session.SideUpstream, Message: "bad certificate"}

	s5 := mk(5, "PUT", "https://sub.deep.example.com/upload", 500, "text/plain", 50*time.Millisecond)
	s5.Request.Body = session.Body{Data: bytes.Repeat([]byte("a"), 100), Size: 2 << 20}
	s5.Response.Body = session.Body{Data: zl(t, "Internal Failure"), Size: 30}
	s5.Response.Header.Set("Content-Encoding", "deflate")
	s5.Response.Header.Set("X-Trace", "abc=def ghi")
	s5.Mark = "blue"

	s6 := mk(6, "GET", "https://example.com/brotli", 301, "text/html", 1*time.Millisecond)
	s6.Response.Header.Set("Content-Encoding", "br")
	s6.Response.Header.Set("Location", "/elsewhere")
	s6.Response.Body = session.Body{Data: []byte("rawbrbytes"), Size: 10}

	s7 := mk(7, "GET", "wss://ws.example.com/socket", 101, "", 10*time.Millisecond)
	s7.Flags = session.FlagWebSocket
	s7.Messages = []session.Message{{FromClient: true, Opcode: 1, Data: []byte("ping me"), Size: 7}}
	s7.Response.Trailer = http.Header{"Grpc-Status": {"0"}}

	s8 := mk(8, "GET", "https://example.com/empty", 204, "", 2*time.Second)
	s8.Client.Proto, s8.Upstream.Proto = session.HTTP2, session.HTTP2
	return []*session.Session{s1, s2, s3, s4, s5, s6, s7, s8}
}

func matching(t *testing.T, e *Expr, ss []*session.Session) []int {
	t.Helper()
	var out []int
	for _, s := range ss {
		m := e.Match(s)
		if !e.NeedsSession() {
			sum := s.Summarize()
			if ms := e.MatchSummary(&sum); ms != m {
				t.Errorf("%q on #%d: MatchSummary=%v Match=%v", e, s.ID, ms, m)
			}
		}
		if m {
			out = append(out, int(s.ID))
		}
	}
	return out
}

func TestMatch(t *testing.T) {
	ss := corpus(t)
	tests := []struct {
		expr string
		want []int
	}{
		{"", []int{1, 2, 3, 4, 5, 6, 7, 8}},
		{"   ", []int{1, 2, 3, 4, 5, 6, 7, 8}},
		// bare words and phrases: URL substring, case-insensitive
		{"example", []int{1, 2, 4, 5, 6, 7, 8}},
		{"EXAMPLE.COM/index", []int{1}},
		{`"v1/login"`, []int{2}},
		{`"/img/logo"`, []int{3}},
		{"https://example.com/fail", []int{4}},
		// host
		{"host:example.com", []int{1, 4, 6, 8}},
		{"host:EXAMPLE.com", []int{1, 4, 6, 8}},
		{"host:*.example.com", []int{1, 2, 4, 5, 6, 7, 8}},
		{"host:api.*", []int{2}},
		{"host:*.org", []int{3}},
		{"host:?dn.other.org", []int{3}},
		{"host:example", nil},
		// url, path
		{"url:LOGIN", []int{2}},
		{"path:/v1", []int{2}},
		{"path:next=/home", []int{2}},
		{"path:example", nil},
		// method
		{"method:get", []int{1, 3, 4, 6, 7, 8}},
		{"method:POST", []int{2}},
		// status
		{"status:404", []int{3}},
		{"status:4xx", []int{2, 3}},
		{"status:4XX", []int{2, 3}},
		{"status:400-499", []int{2, 3}},
		{"status:>=400", []int{2, 3, 5}},
		{"status:<200", []int{7}},
		{"status:0", []int{4}},
		{"status:none", []int{4}},
		{"status:0-200", []int{1, 4, 7}},
		// type
		{"type:json", []int{2}},
		{"type:IMAGE", []int{3}},
		{"type:text", []int{1, 5, 6}},
		// proto
		{"proto:h2", []int{2, 8}},
		{"proto:http/2", []int{2, 8}},
		{"proto:h3", []int{3}},
		{"proto:h1", []int{1, 2, 3, 4, 5, 6, 7}},
		{"proto:HTTP/1.1", []int{1, 2, 3, 4, 5, 6, 7}},
		// size (request+response bytes, 1024-based)
		{"size:>10k", []int{3, 5}},
		{"size:>=20k", []int{3, 5}},
		{"size:<1mb", []int{1, 2, 3, 4, 6, 7, 8}},
		{"size:>1.5m", []int{5}},
		{"size:=0", []int{4, 7, 8}},
		{"size:0", []int{4, 7, 8}},
		{"size:20", []int{1}},
		{"size:1-30", []int{1, 6}},
		{"size:>=20480", []int{3, 5}},
		// dur
		{"dur:>500ms", []int{2, 3, 8}},
		{"dur:<2s", []int{1, 2, 5, 6, 7}},
		{"dur:>=2s", []int{3, 8}},
		{"dur:20", []int{1}},
		{"dur:1ms-50ms", []int{1, 5, 6, 7}},
		{"dur:>0.04m", []int{3}},
		// error
		{"error:yes", []int{4}},
		{"error:no", []int{1, 2, 3, 5, 6, 7, 8}},
		{"error:tls", []int{4}},
		{"error:dns", nil},
		// marked
		{"marked:yes", []int{2, 5}},
		{"marked:no", []int{1, 3, 4, 6, 7, 8}},
		{"marked:RED", []int{2}},
		// id
		{"id:3", []int{3}},
		{"id:2-4", []int{2, 3, 4}},
		{"id:>6", []int{7, 8}},
		{"id:<=2", []int{1, 2}},
		// header
		{"header:authorization", []int{2}},
		{"header:x-trace=DEF GHI", nil}, // two terms: the second is a bare word
		{`header:"x-trace=def ghi"`, []int{5}},
		{"header:authorization=secret", []int{2}},
		{"header:authorization=nope", nil},
		{"header:location", []int{6}},
		{"header:grpc-status=0", []int{7}},
		// body: request, gzip and deflate responses decoded, br left as is, websocket
		{"body:alice", []int{2}},
		{"body:denied", []int{2}},
		{"body:internal", []int{5}},
		{"body:rawbr", []int{6}},
		{"body:hello", []int{1}},
		{`body:"ping me"`, []int{7}},
		// images and binary bodies are not text: body: does not look into them (SearchableBody)
		{"body:png", nil},
		// text: searches the URL, header lines, bodies and messages
		{"text:png", []int{3}},
		{"text:secret-token", []int{2}},
		{`text:"authorization: bearer"`, []int{2}},
		{"text:denied", []int{2}},
		{`text:"ping me"`, []int{7}},
		{"text:elsewhere", []int{6}},
		// AND, OR, precedence, groups, negation
		{"method:get status:2xx", []int{1, 8}},
		{"method:get AND status:2xx", []int{1, 8}},
		{"status:404 OR status:401", []int{2, 3}},
		{"method:post OR method:put status:5xx", []int{2, 5}},
		{"method:get status:404 OR id:1", []int{1, 3}},
		{"id:1 OR id:2 id:3", []int{1}},
		{"(id:1 OR id:2) id:2-3", []int{2}},
		{"-status:2xx", []int{2, 3, 4, 5, 6, 7}},
		{"-(status:2xx OR status:3xx)", []int{2, 3, 4, 5, 7}},
		{"--id:1", []int{1}},
		{"-id:1 -id:2 id:<4", []int{3}},
		{"-(id:1 id:2)", []int{1, 2, 3, 4, 5, 6, 7, 8}},
		{"((id:1))", []int{1}},
		{"host:*.example.com -header:authorization", []int{1, 4, 5, 6, 7, 8}},
	}
	for _, tc := range tests {
		e, err := Parse(tc.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.expr, err)
			continue
		}
		if got := matching(t, e, ss); !slices.Equal(got, tc.want) {
			t.Errorf("%q matched %v, want %v", tc.expr, got, tc.want)
		}
		// The canonical form means the same.
		c := MustParse(e.Canonical())
		if got := matching(t, c, ss); !slices.Equal(got, tc.want) {
			t.Errorf("canonical %q of %q matched %v, want %v", e.Canonical(), tc.expr, got, tc.want)
		}
		if e.String() != tc.expr {
			t.Errorf("String() = %q, want the source %q", e.String(), tc.expr)
		}
	}
}

func TestNeedsSession(t *testing.T) {
	for expr, want := range map[string]bool{
		"":                              false,
		"host:x status:4xx OR -id:3":    false,
		"header:x":                      true,
		"-body:x":                       true,
		"id:1 OR (method:get body:foo)": true,
	} {
		if got := MustParse(expr).NeedsSession(); got != want {
			t.Errorf("NeedsSession(%q) = %v, want %v", expr, got, want)
		}
	}
	// header: and body: never match a bare summary.
	sum := corpus(t)[1].Summarize()
	if MustParse("header:authorization").MatchSummary(&sum) {
		t.Error("header: matched a summary")
	}
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		expr string
		pos  int
		msg  string
	}{
		{"stauts:404", 0, `unknown field "stauts:" (did you mean "status:"?)`},
		{"id:1 foo:bar", 5, `unknown field "foo:"`},
		{"localhost:8080", 0, "put it in quotes"},
		{"host:", 5, "empty value for host:"},
		{`host:""`, 5, "empty value"},
		{"(host:a", 0, "unclosed '('"},
		{"(host:a OR (id:1)", 0, "unclosed '('"},
		{"host:a)", 6, "unmatched ')'"},
		{")", 0, "unmatched ')'"},
		{"()", 0, "empty parentheses"},
		{`"abc`, 0, "unclosed quote"},
		{`url:"abc`, 4, "unclosed quote"},
		{`"abc"def`, 5, "closing quote"},
		{`url:a"b`, 5, "quote inside a word"},
		{"OR id:1", 0, "OR needs a term"},
		{"id:1 OR", 5, "OR needs a term"},
		{"id:1 OR OR id:2", 5, "OR needs a term"},
		{"(id:1 OR) id:2", 6, "OR needs a term"},
		{"AND id:1", 0, "AND needs a term"},
		{"id:1 AND", 5, "AND needs a term"},
		{"-", 0, "'-' must be followed"},
		{"id:1 - id:2", 5, "'-' must be followed"},
		{"(-)", 1, "'-' must be followed"},
		{"status:abc", 7, "expected a whole number"},
		{"status:1000", 7, "at most 999"},
		{"status:5xy", 7, "expected a whole number"},
		{"status:499-400", 7, "greater than its end"},
		{"id:10-x", 6, "expected a whole number"},
		{"id:>", 4, "expected a number"},
		{"id:1.5", 3, "whole number"},
		{"size:>10q", 6, `unknown size unit "q"`},
		{"size:big", 5, "expected a number"},
		{"dur:>5parsecs", 5, "unknown duration unit"},
		{"dur:1.2.3s", 4, "bad number"},
		{"proto:h4", 6, "unknown protocol"},
		{"error:maybe", 6, "error: takes yes, no or a phase"},
		{"header:=x", 7, "needs a header name"},
		{`status:"4xz"`, 8, "expected a whole number"},
	}
	for _, tc := range tests {
		e, err := Parse(tc.expr)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, %v; want a *SyntaxError", tc.expr, e, err)
			continue
		}
		if se.Pos != tc.pos || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("Parse(%q): at %d %q; want at %d containing %q", tc.expr, se.Pos, se.Msg, tc.pos, tc.msg)
		}
		if !strings.HasPrefix(err.Error(), "filter: at ") {
			t.Errorf("Error() = %q", err.Error())
		}
	}
	deep := strings.Repeat("(", 200) + "id:1" + strings.Repeat(")", 200)
	if _, err := Parse(deep); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Errorf("deep nesting: %v", err)
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"  host:a   id:1  ":               "host:a id:1",
		"a b OR c":                        "a b OR c",
		"(a OR b) c":                      "(a OR b) c",
		"-(a b)":                          "-(a b)",
		"-(a OR b)":                       "-(a OR b)",
		"(a b) OR (c)":                    "a b OR c",
		`header:"x-a=b c" "two words"`:    `header:"x-a=b c" "two words"`,
		`url:"say \"hi\"" "a\\b"`:         `url:"say \"hi\"" a\b`,
		"https://x.org/a":                 `"https://x.org/a"`,
		`"OR" "-x" "(y"`:                  `"OR" "-x" "(y"`,
		"HOST:Example.com AND Method:GET": "host:Example.com method:GET",
	} {
		e := MustParse(in)
		if got := e.Canonical(); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
		if again := MustParse(e.Canonical()).Canonical(); again != e.Canonical() {
			t.Errorf("Canonical not a fixpoint: %q -> %q", e.Canonical(), again)
		}
	}
}

func TestFields(t *testing.T) {
	f := Fields()
	if !slices.IsSorted(f) || len(f) < 22 || len(f) != len(FieldInfos()) {
		t.Fatalf("Fields() = %v", f)
	}
	for _, name := range f {
		ex := ""
		for _, fi := range FieldInfos() {
			if fi.Name == name {
				ex = fi.Example
			}
		}
		if _, err := Parse(name + ":" + ex); err != nil {
			t.Errorf("example of %s does not parse: %v", name, err)
		}
	}
}

func TestBodyDecodeCap(t *testing.T) {
	// A gzip bomb decodes to at most MaxDecodedBody bytes; the needle beyond it is not found.
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	w.Write(make([]byte, MaxDecodedBody+1024))
	w.Write([]byte("needle"))
	w.Close()
	h := http.Header{"Content-Encoding": {"gzip"}}
	if got := len(decodedBody(b.Bytes(), h)); got != MaxDecodedBody {
		t.Fatalf("decoded %d bytes, want the cap %d", got, MaxDecodedBody)
	}
	s := &session.Session{Request: session.Request{Method: "GET", URL: "http://x/"},
		Response: &session.Response{Status: 200, Header: h, Body: session.Body{Data: b.Bytes()}}}
	if MustParse("body:needle").Match(s) {
		t.Error("needle beyond the decode cap matched")
	}
	// A truncated gzip body yields what decoded; garbage stays raw.
	var nums strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&nums, "%d ", i*7919%10007)
	}
	full := gz(t, nums.String())
	if got := decodedBody(full[:len(full)/2], h); len(got) < 1000 || !strings.HasPrefix(nums.String(), string(got)) {
		t.Errorf("truncated gzip: %q", got[:min(20, len(got))])
	}
	if got := decodedBody([]byte("not gzip"), h); string(got) != "not gzip" {
		t.Errorf("garbage: %q", got)
	}
	// Stacked encodings are undone in reverse order.
	var inner bytes.Buffer
	zw := zlib.NewWriter(&inner)
	zw.Write(gz(t, "stacked"))
	zw.Close()
	if got := decodedBody(inner.Bytes(), http.Header{"Content-Encoding": {"gzip, deflate"}}); string(got) != "stacked" {
		t.Errorf("stacked: %q", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	e := MustParse("host:*.example.com status:4xx OR body:denied")
	ss := corpus(t)
	done := make(chan []bool)
	for range 4 {
		go func() {
			var r []bool
			for _, s := range ss {
				r = append(r, e.Match(s))
			}
			done <- r
		}()
	}
	first := <-done
	for range 3 {
		if r := <-done; !reflect.DeepEqual(r, first) {
			t.Fatal("concurrent results differ")
		}
	}
}

func BenchmarkMatchSummary(b *testing.B) {
	e := MustParse("host:*.example.com method:get -status:2xx")
	s := corpus(b)[2].Summarize()
	s.Host = "api.example.com"
	b.ReportAllocs()
	for b.Loop() {
		if !e.MatchSummary(&s) {
			b.Fatal("no match")
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "host:*.example.com", "status:4xx OR -(method:get size:>10k)", `header:"x-a=b c"`,
		`"quoted phrase" url:"a\"b"`, "id:10-20 dur:<2s", "(a OR b) AND c", "--x", "error:tls",
		"marked:yes proto:h3 type:json body:x", "https://example.com", "((", `"`, "OR", "a:b",
	} {
		f.Add(s)
	}
	ss := corpus(f)
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q): error %T is not a *SyntaxError", s, err)
			}
			if se.Pos < 0 || se.Pos > len(s) {
				t.Fatalf("Parse(%q): position %d out of range", s, se.Pos)
			}
			return
		}
		if e.String() != s {
			t.Fatalf("String() = %q, want %q", e.String(), s)
		}
		if _, err := Parse(e.String()); err != nil {
			t.Fatalf("String() %q does not parse again: %v", e.String(), err)
		}
		c := e.Canonical()
		e2, err := Parse(c)
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", c, s, err)
		}
		if e2.Canonical() != c {
			t.Fatalf("canonical not stable: %q -> %q", c, e2.Canonical())
		}
		for _, x := range ss {
			if e.Match(x) != e2.Match(x) {
				t.Fatalf("%q and its canonical %q disagree on #%d", s, c, x.ID)
			}
		}
	})
}
