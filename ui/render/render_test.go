package render

import (
	"bytes"
	"compress/gzip"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"

	"inspector/engine/session"
)

func gz(t *testing.T, s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDecode(t *testing.T) {
	h := http.Header{"Content-Encoding": {"gzip"}}
	out, enc, trunc, err := Decode(h, gz(t, `{"a":1}`))
	if err != nil || enc != "gzip" || trunc || string(out) != `{"a":1}` {
		t.Fatalf("Decode = %q %q %v %v", out, enc, trunc, err)
	}
	// Garbage is a clear error and the raw bytes come back.
	out, _, _, err = Decode(h, []byte("not gzip"))
	if err == nil || string(out) != "not gzip" {
		t.Fatalf("bad gzip: %q %v", out, err)
	}
	_, _, _, err = Decode(http.Header{"Content-Encoding": {"compress"}}, []byte{1, 2})
	if !errors.Is(err, ErrUnsupportedEncoding) {
		t.Fatalf("compress: %v", err)
	}
	// br and zstd decode (through content).
	var bb bytes.Buffer
	bw := brotli.NewWriter(&bb)
	bw.Write([]byte("brotli text"))
	bw.Close()
	if out, enc, _, err := Decode(http.Header{"Content-Encoding": {"br"}}, bb.Bytes()); err != nil || enc != "br" || string(out) != "brotli text" {
		t.Fatalf("br: %q %q %v", out, enc, err)
	}
	out, enc, _, err = Decode(http.Header{}, []byte("plain"))
	if err != nil || enc != "" || string(out) != "plain" {
		t.Fatal("identity changed the body")
	}
}

func TestClassifyAndPretty(t *testing.T) {
	cases := []struct {
		ct   string
		data string
		want Kind
	}{
		{"application/json", `{"a":[1,2]}`, KindJSON},
		{"text/plain", `[1, 2]`, KindJSON},
		{"application/problem+json", `{}`, KindJSON},
		{"text/html; charset=utf-8", `<p>x</p>`, KindHTML},
		{"application/xml", `<a><b>1</b></a>`, KindXML},
		{"image/png", "\x89PNG", KindImage},
		{"application/octet-stream", "\x00\x01\x02", KindBinary},
		{"", "hello", KindText},
		{"text/plain", "", KindEmpty},
	}
	for _, c := range cases {
		if got := Classify(c.ct, []byte(c.data)); got != c.want {
			t.Errorf("Classify(%q, %q) = %v, want %v", c.ct, c.data, got, c.want)
		}
	}
	s, ok := Pretty(KindJSON, "", []byte(`{"a":[1,2]}`))
	if !ok || s != "{\n  \"a\": [\n    1,\n    2\n  ]\n}" {
		t.Fatalf("pretty JSON = %q", s)
	}
	if _, ok := Pretty(KindJSON, "", []byte(`{"a":`)); ok {
		t.Fatal("broken JSON reported as formatted")
	}
	s, ok = Pretty(KindXML, "", []byte(`<a><b>1</b></a>`))
	if !ok || !strings.Contains(s, "\n  <b>1</b>") {
		t.Fatalf("pretty XML = %q", s)
	}
	if got := Text("text/plain; charset=ISO-8859-1", []byte{'c', 0xe9}); got != "cé" {
		t.Fatalf("latin1 = %q", got)
	}
}

func TestCapsAndHex(t *testing.T) {
	big := strings.Repeat("é", 100)
	c := Cap(big, 51)
	if !strings.HasPrefix(c, strings.Repeat("é", 25)+"\n…") {
		t.Fatalf("Cap cut a rune: %q", c[:60])
	}
	h := Hex(make([]byte, 100), 32)
	if strings.Count(h, "\n") != 3 || !strings.Contains(h, "68 more bytes") {
		t.Fatalf("Hex = %q", h)
	}
}

func TestRawCookiesQuery(t *testing.T) {
	req := &session.Request{
		Method: "POST", URL: "https://example.com/a?x=1&y=two%20words", Proto: "HTTP/1.1",
		Header: http.Header{"Cookie": {"sid=abc; theme=dark"}, "Content-Type": {"application/x-www-form-urlencoded"}},
		Body:   session.Body{Data: []byte("name=J%C3%B6rg&ok=1"), Size: 19},
	}
	raw := RawRequest(req)
	if !strings.HasPrefix(raw, "POST /a?x=1&y=two%20words HTTP/1.1\nHost: example.com\n") || !strings.HasSuffix(raw, "\nname=J%C3%B6rg&ok=1") {
		t.Fatalf("raw = %q", raw)
	}
	q, f := QueryAndForm(req)
	if len(q) != 2 || q[1] != [2]string{"y", "two words"} || len(f) != 2 || f[0] != [2]string{"name", "Jörg"} {
		t.Fatalf("query %v form %v", q, f)
	}
	if c := RequestCookies(req.Header); len(c) != 2 || c[1] != [2]string{"theme", "dark"} {
		t.Fatalf("cookies %v", c)
	}
	resp := &session.Response{Status: 404, Proto: "HTTP/2.0", Header: http.Header{"Set-Cookie": {"a=b; Path=/; HttpOnly"}}}
	if r := RawResponse(resp); !strings.HasPrefix(r, "HTTP/2.0 404 Not Found\n") {
		t.Fatalf("raw response = %q", r)
	}
	if c := ResponseCookies(resp.Header); len(c) != 1 || !strings.Contains(c[0][1], "HttpOnly") {
		t.Fatalf("set-cookies %v", c)
	}
	if got := Curl(req); got != `curl 'https://example.com/a?x=1&y=two%20words' -H 'Content-Type: application/x-www-form-urlencoded' -H 'Cookie: sid=abc; theme=dark' --data-raw 'name=J%C3%B6rg&ok=1'` {
		t.Fatalf("curl = %s", got)
	}
}

func TestWaterfall(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	tm := session.Timings{
		ClientConnected: ms(0), ClientTLSDone: ms(5), RequestHeaders: ms(6), RequestDone: ms(7),
		DNSStart: ms(7), DNSDone: ms(9), ConnectStart: ms(9), ConnectDone: ms(12),
		UpstreamTLSDone: ms(20), RequestSent: ms(21), FirstByte: ms(40), ResponseDone: ms(45),
	}
	ph, total := Waterfall(tm)
	if total != 45*time.Millisecond {
		t.Fatalf("total = %v", total)
	}
	names := []string{}
	for _, p := range ph {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "client TLS,request,DNS,connect,upstream TLS,send,wait,receive" {
		t.Fatalf("phases = %v", names)
	}
	if ph[6].Start != 21*time.Millisecond || ph[6].End != 40*time.Millisecond {
		t.Fatalf("wait = %+v", ph[6])
	}
	// A reused connection: no DNS, connect or TLS bars.
	ph, _ = Waterfall(session.Timings{RequestHeaders: ms(0), RequestSent: ms(1), FirstByte: ms(3), ResponseDone: ms(4)})
	if len(ph) != 3 {
		t.Fatalf("reused phases = %+v", ph)
	}
	if ph, total := Waterfall(session.Timings{}); len(ph) != 0 || total != 0 {
		t.Fatal("empty timings produced phases")
	}
}
