package archive

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"inspector/engine/session"
)

// sazOf builds a .saz from named entries, the layout Fiddler documents (raw/NN_c.txt,
// raw/NN_s.txt, raw/NN_m.xml beside [Content_Types].xml).
func sazOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := []string{"[Content_Types].xml", "_index.htm"}
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names[2:])
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := files[n]; ok {
			w.Write([]byte(c))
		} else {
			w.Write([]byte("<html></html>"))
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const sazMeta1 = `<?xml version="1.0" encoding="utf-8"?>
<Session SID="12" BitFlags="9">
  <SessionTimers ClientConnected="2025-08-30T11:33:29.3569420-07:00" ClientBeginRequest="2025-08-30T11:33:40.0256586-07:00" GotRequestHeaders="2025-08-30T11:33:40.0266588-07:00" ClientDoneRequest="2025-08-30T11:33:40.0266588-07:00" GatewayTime="0" DNSTime="0" TCPConnectTime="122" HTTPSHandshakeTime="122" ServerConnected="2025-08-30T11:33:40.1488416-07:00" FiddlerBeginRequest="2025-08-30T11:33:40.2713745-07:00" ServerGotRequest="2025-08-30T11:33:40.2713745-07:00" ServerBeginResponse="2025-08-30T11:33:41.4264004-07:00" GotResponseHeaders="2025-08-30T11:33:41.4264004-07:00" ServerDoneResponse="2025-08-30T11:33:41.4264004-07:00" ClientBeginResponse="0001-01-01T00:00:00" ClientDoneResponse="2025-08-30T11:33:41.4264004-07:00" />
  <PipeInfo CltReuse="true" />
  <SessionFlags>
    <SessionFlag N="x-clientip" V="::ffff:127.0.0.1" />
    <SessionFlag N="x-clientport" V="64971" />
    <SessionFlag N="x-hostip" V="44.195.242.49" />
    <SessionFlag N="x-processinfo" V="msedge:12140" />
    <SessionFlag N="ui-comments" V="login &amp; redirect" />
  </SessionFlags>
</Session>`

func goodSAZ(t *testing.T) []byte {
	return sazOf(t, map[string]string{
		"raw/01_c.txt": "POST https://httpbin.org/post?x=1 HTTP/1.1\r\nHost: httpbin.org\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"hello\":\"w\"}",
		"raw/01_s.txt": "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
		"raw/01_m.xml": sazMeta1,
		"raw/02_c.txt": "GET /status/404 HTTP/1.1\r\nHost: plain.example:8080\r\n\r\n",
		"raw/02_s.txt": "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
		"raw/03_c.txt": "CONNECT httpbin.org:443 HTTP/1.1\r\nHost: httpbin.org:443\r\n\r\n",
		"raw/03_s.txt": "HTTP/1.1 200 Connection Established\r\n\r\n",
	})
}

func readSAZBytes(b []byte) ([]*session.Session, error) {
	var got []*session.Session
	err := ReadSAZ(bytes.NewReader(b), int64(len(b)), func(s *session.Session) error {
		got = append(got, s)
		return nil
	})
	return got, err
}

func TestReadSAZ(t *testing.T) {
	t.Parallel()
	got, err := readSAZBytes(goodSAZ(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d sessions", len(got))
	}
	a := got[0]
	if a.Request.Method != "POST" || a.Request.URL != "https://httpbin.org/post?x=1" || string(a.Request.Body.Data) != `{"hello":"w"}` {
		t.Errorf("request %+v", a.Request)
	}
	if a.Response.Status != 200 || string(a.Response.Body.Data) != "hello world" {
		t.Errorf("response %d %q (want the chunks joined)", a.Response.Status, a.Response.Body.Data)
	}
	want := time.Date(2025, 8, 30, 11, 33, 40, 25658600, time.FixedZone("", -7*3600))
	if !a.Started.Equal(want) || a.Timings.ResponseDone.IsZero() || a.Client.Addr != "127.0.0.1:64971" || a.Upstream.Addr != "44.195.242.49" ||
		a.Client.Process != "msedge" || a.Client.PID != 12140 || a.Comment != "login & redirect" || !a.Flags.Has(session.FlagImported) {
		t.Errorf("metadata: started %v, client %q, upstream %q, process %q/%d, comment %q", a.Started, a.Client.Addr, a.Upstream.Addr, a.Client.Process, a.Client.PID, a.Comment)
	}
	if got[1].Request.URL != "http://plain.example:8080/status/404" || got[1].Response.Status != 404 {
		t.Errorf("origin-form request: %q %d", got[1].Request.URL, got[1].Response.Status)
	}
	if !got[2].Flags.Has(session.FlagTunnel) || got[2].Request.URL != "https://httpbin.org:443" {
		t.Errorf("CONNECT: %q flags %v", got[2].Request.URL, got[2].Flags)
	}
}

func TestSAZBadInput(t *testing.T) {
	t.Parallel()
	good := goodSAZ(t)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"corrupt zip", good[:len(good)/2], "saz: not a readable zip archive"},
		{"not a zip", []byte("hello"), "saz: not a readable zip archive"},
		{"no response", sazOf(t, map[string]string{
			"raw/1_c.txt": "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n", "raw/1_s.txt": "HTTP/1.1 200 OK\r\n\r\n",
			"raw/2_c.txt": "GET http://a.example/b HTTP/1.1\r\nHost: a.example\r\n\r\n",
		}), "saz: entry 2: no response"},
		{"empty response", sazOf(t, map[string]string{
			"raw/7_c.txt": "GET http://a.example/ HTTP/1.1\r\n\r\n", "raw/7_s.txt": "",
		}), "saz: entry 7: no response"},
		{"bad request line", sazOf(t, map[string]string{
			"raw/1_c.txt": "HELLO\r\n\r\n", "raw/1_s.txt": "HTTP/1.1 200 OK\r\n\r\n",
		}), "saz: entry 1: raw/1_c.txt: request line"},
		{"bad status", sazOf(t, map[string]string{
			"raw/1_c.txt": "GET http://a.example/ HTTP/1.1\r\n\r\n", "raw/1_s.txt": "HTTP/1.1 abc\r\n\r\n",
		}), "saz: entry 1: raw/1_s.txt: status line"},
		{"bad chunks", sazOf(t, map[string]string{
			"raw/1_c.txt": "GET http://a.example/ HTTP/1.1\r\n\r\n", "raw/1_s.txt": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		}), "saz: entry 1: raw/1_s.txt: chunked body"},
		{"no sessions", sazOf(t, map[string]string{}), "saz: no sessions"},
	} {
		_, err := readSAZBytes(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestSAZWriterRoundTrip(t *testing.T) {
	t.Parallel()
	src, _ := readSAZBytes(goodSAZ(t))
	var buf bytes.Buffer
	w, err := NewSAZWriter(&buf, len(src)+1)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range src {
		if err := w.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	w.Add(&session.Session{Request: session.Request{Method: "GET", URL: "http://x.example/"}}) // no response: left out
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Count() != 3 || w.Skipped() != 1 {
		t.Fatalf("count %d skipped %d", w.Count(), w.Skipped())
	}
	back, err := readSAZBytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for i := range src {
		a, b := src[i], back[i]
		if a.Request.URL != b.Request.URL || a.Request.Method != b.Request.Method || !bytes.Equal(a.Response.Body.Data, b.Response.Body.Data) ||
			a.Response.Status != b.Response.Status || !a.Started.Equal(b.Started) || a.Comment != b.Comment || a.Client.Addr != b.Client.Addr {
			t.Errorf("session %d differs after a round trip:\n%+v\n%+v", i+1, a, b)
		}
	}
}

const charlesDoc = `[
 {"status": "COMPLETE", "method": "POST", "protocolVersion": "HTTP/1.1", "scheme": "https", "host": "api.example.com",
  "actualPort": 443, "path": "/v1/items", "query": "page=2", "tunnel": false, "clientAddress": "/127.0.0.1", "clientPort": 50123,
  "remoteAddress": "api.example.com/93.184.216.34",
  "times": {"start": "2024-01-02T03:04:05.678+01:00", "requestBegin": "2024-01-02T03:04:05.679+01:00",
            "requestComplete": "2024-01-02T03:04:05.680+01:00", "responseBegin": "2024-01-02T03:04:05.780+01:00", "end": "2024-01-02T03:04:05.790+01:00"},
  "request": {"header": {"firstLine": "POST /v1/items?page=2 HTTP/1.1", "headers": [{"name": "Host", "value": "api.example.com"},
              {"name": "Content-Type", "value": "application/json"}]}, "body": {"text": "{\"a\":1}", "charset": "UTF-8"}},
  "response": {"status": 201, "header": {"firstLine": "HTTP/1.1 201 Created", "headers": [{"name": "Content-Encoding", "value": "gzip"},
               {"name": "Content-Type", "value": "application/json"}]}, "body": {"text": "{\"id\":9}", "decoded": true}}},
 {"status": "COMPLETE", "method": "GET", "protocolVersion": "HTTP/1.1", "scheme": "http", "host": "img.example", "actualPort": 8080,
  "path": "/p.png", "query": null, "tunnel": false,
  "request": {"header": {"firstLine": "GET /p.png HTTP/1.1", "headers": []}},
  "response": {"status": 200, "header": {"firstLine": "HTTP/1.1 200 OK", "headers": [{"name": "Content-Type", "value": "image/png"}]},
               "body": {"encoding": "base64", "encoded": "` + "iVBORw0KGgo=" + `"}}}
]`

func readCharlesString(doc string) ([]*session.Session, error) {
	var got []*session.Session
	err := ReadCharles(strings.NewReader(doc), func(s *session.Session) error { got = append(got, s); return nil })
	return got, err
}

func TestReadCharles(t *testing.T) {
	t.Parallel()
	got, err := readCharlesString(charlesDoc)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d sessions", len(got))
	}
	a, b := got[0], got[1]
	if a.Request.URL != "https://api.example.com/v1/items?page=2" || string(a.Request.Body.Data) != `{"a":1}` || a.Response.Status != 201 ||
		a.Response.Reason != "Created" || string(a.Response.Body.Data) != `{"id":9}` || a.Response.Header.Get("Content-Encoding") != "" {
		t.Errorf("first: %+v %+v", a.Request, a.Response)
	}
	if a.Client.Addr != "127.0.0.1:50123" || a.Upstream.Addr != "93.184.216.34:443" || a.Started.IsZero() || a.Timings.ResponseDone.Sub(a.Started) != 112*time.Millisecond {
		t.Errorf("first: addrs %q %q, times %v %v", a.Client.Addr, a.Upstream.Addr, a.Started, a.Timings.ResponseDone)
	}
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgo=")
	if b.Request.URL != "http://img.example:8080/p.png" || !bytes.Equal(b.Response.Body.Data, png) {
		t.Errorf("second: %q %x", b.Request.URL, b.Response.Body.Data)
	}
}

func TestCharlesBadInput(t *testing.T) {
	t.Parallel()
	noResp := strings.Replace(charlesDoc, `"response": {"status": 200, "header": {"firstLine": "HTTP/1.1 200 OK", "headers": [{"name": "Content-Type", "value": "image/png"}]},
               "body": {"encoding": "base64", "encoded": "iVBORw0KGgo="}}`, `"errorMessage": "Connection reset"`, 1)
	for _, c := range []struct{ name, doc, want string }{
		{"no response", noResp, "chlsj: entry 2: no response (Connection reset)"},
		{"truncated", charlesDoc[:len(charlesDoc)/2], "chlsj: entry 1:"},
		{"not an array", `{"a":1}`, "chlsj: want a JSON array"},
		{"bad base64", strings.Replace(charlesDoc, "iVBORw0KGgo=", "!!!", 1), "chlsj: entry 2: response: body: bad base64"},
		{"bad scheme", strings.Replace(charlesDoc, `"scheme": "http"`, `"scheme": "ftp"`, 1), "chlsj: entry 2: scheme"},
		{"empty", `[]`, "chlsj: no sessions"},
	} {
		if _, err := readCharlesString(c.doc); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// tnet encodes a value as a tnetstring, following the format's definition (tnetstrings.info,
// with mitmproxy's ";" for text).
func tnet(v any) string {
	wrap := func(data string, typ byte) string { return strconv.Itoa(len(data)) + ":" + data + string(typ) }
	switch v := v.(type) {
	case []byte:
		return wrap(string(v), ',')
	case string:
		return wrap(v, ';')
	case int:
		return wrap(strconv.Itoa(v), '#')
	case float64:
		return wrap(strconv.FormatFloat(v, 'f', -1, 64), '^')
	case bool:
		return wrap(strconv.FormatBool(v), '!')
	case nil:
		return "0:~"
	case []any:
		var b strings.Builder
		for _, x := range v {
			b.WriteString(tnet(x))
		}
		return wrap(b.String(), ']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			b.WriteString(tnet(k) + tnet(v[k]))
		}
		return wrap(b.String(), '}')
	}
	panic(fmt.Sprintf("tnet %T", v))
}

func mitmFlow(path string, withResponse bool) map[string]any {
	f := map[string]any{
		"version": 20, "type": "http", "id": "3a5b", "comment": "from mitmproxy", "marked": "", "is_replay": nil,
		"client_conn": map[string]any{"peername": []any{"127.0.0.1", 51000}, "timestamp_start": 1700000000.0, "tls_version": "TLSv1.3", "sni": "example.com"},
		"server_conn": map[string]any{"address": []any{"example.com", 443}, "peername": []any{"93.184.216.34", 443}, "timestamp_tcp_setup": 1700000000.05, "alpn": []byte("http/1.1")},
		"request": map[string]any{"host": "example.com", "port": 443, "method": []byte("PUT"), "scheme": []byte("https"), "authority": []byte(""),
			"path": []byte(path), "http_version": []byte("HTTP/1.1"), "headers": []any{[]any{[]byte("Host"), []byte("example.com")}, []any{[]byte("X-A"), []byte("1")}},
			"content": []byte("payload"), "trailers": nil, "timestamp_start": 1700000000.1, "timestamp_end": 1700000000.2},
		"error": nil,
	}
	if withResponse {
		f["response"] = map[string]any{"http_version": []byte("HTTP/1.1"), "status_code": 204, "reason": []byte("No Content"),
			"headers": []any{[]any{[]byte("Server"), []byte("nginx")}}, "content": []byte(""), "trailers": nil, "timestamp_start": 1700000000.3, "timestamp_end": 1700000000.35}
	} else {
		f["error"] = map[string]any{"msg": "Connection killed.", "timestamp": 1700000000.4}
	}
	return f
}

func readMitm(doc string) ([]*session.Session, error) {
	var got []*session.Session
	err := ReadMitmproxy(strings.NewReader(doc), func(s *session.Session) error { got = append(got, s); return nil })
	return got, err
}

func TestReadMitmproxy(t *testing.T) {
	t.Parallel()
	tcp := map[string]any{"type": "tcp", "id": "x", "messages": []any{}}
	doc := tnet(mitmFlow("/a?b=1", true)) + tnet(tcp) + tnet(mitmFlow("/killed", false))
	got, err := readMitm(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d sessions (the tcp flow is skipped)", len(got))
	}
	a := got[0]
	if a.Request.Method != "PUT" || a.Request.URL != "https://example.com/a?b=1" || string(a.Request.Body.Data) != "payload" || a.Request.Header.Get("X-A") != "1" {
		t.Errorf("request %+v", a.Request)
	}
	if a.Response.Status != 204 || a.Response.Reason != "No Content" || a.Response.Header.Get("Server") != "nginx" {
		t.Errorf("response %+v", a.Response)
	}
	if a.Client.Addr != "127.0.0.1:51000" || a.Upstream.Addr != "93.184.216.34:443" || a.Comment != "from mitmproxy" ||
		a.Started.Unix() != 1700000000 || a.Timings.ResponseDone.Sub(a.Started) < 240*time.Millisecond {
		t.Errorf("conn/timings: %q %q %q %v %v", a.Client.Addr, a.Upstream.Addr, a.Comment, a.Started, a.Timings.ResponseDone)
	}
	if got[1].Response != nil || got[1].Error == nil || got[1].Error.Message != "Connection killed." {
		t.Errorf("killed flow: %+v %+v", got[1].Response, got[1].Error)
	}
}

func TestMitmproxyBadInput(t *testing.T) {
	t.Parallel()
	one := tnet(mitmFlow("/a", true))
	noResp := mitmFlow("/b", false)
	noResp["error"] = nil
	for _, c := range []struct{ name, doc, want string }{
		{"truncated", one + one[:len(one)-40], "mitmproxy: entry 2: truncated"},
		{"truncated length", one + "12", "mitmproxy: entry 2: truncated"},
		{"not a tnetstring", "hello", "mitmproxy: entry 1: not a tnetstring"},
		{"not a dict", tnet([]any{1, 2}), "mitmproxy: entry 1: a flow is a dict"},
		{"no response", one + tnet(noResp), "mitmproxy: entry 2: no response and no error"},
		{"bad inner", "10:1:a,3:abc#}", "mitmproxy: entry 1: bad integer"},
		{"unknown type", "3:abc%", "mitmproxy: entry 1: unknown tnetstring type"},
		{"no http", tnet(map[string]any{"type": "dns"}), "mitmproxy: no HTTP flows"},
	} {
		if _, err := readMitm(c.doc); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, head string
		want       Format
	}{
		{"a.saz", "", SAZ}, {"a.CHLSJ", "", Charles}, {"x.har", "", HAR}, {"x.flow", "", Mitmproxy},
		{"noext", "PK\x03\x04....", SAZ}, {"noext", "  [ {", Charles}, {"noext", "\xef\xbb\xbf{\"log\"", HAR}, {"flows", "1234:4:type", Mitmproxy},
	} {
		if got, err := Detect(c.name, []byte(c.head)); err != nil || got != c.want {
			t.Errorf("Detect(%q, %q) = %q, %v; want %q", c.name, c.head, got, err, c.want)
		}
	}
	if _, err := Detect("notes.txt", []byte("hello")); err != ErrUnknownFormat {
		t.Errorf("unknown: %v", err)
	}
}

// TestWriteSAZFigure writes the archive of the import figure (docs/your-data.md) when
// INSPECTOR_SAZ_FIGURE names a file: INSPECTOR_SAZ_N sessions (default 50,000) of 2 KB
// JSON responses.
func TestWriteSAZFigure(t *testing.T) {
	path := os.Getenv("INSPECTOR_SAZ_FIGURE")
	if path == "" {
		t.Skip("set INSPECTOR_SAZ_FIGURE=FILE to write the 50,000-session archive of the import figure")
	}
	n := 50000
	if v, err := strconv.Atoi(os.Getenv("INSPECTOR_SAZ_N")); err == nil {
		n = v
	}
	f, err := os.Create(filepath.Clean(path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, _ := NewSAZWriter(f, n)
	body := bytes.Repeat([]byte(`{"k":"value-0123456789"},`), 80)
	t0 := time.Now().Add(-time.Hour)
	for i := 1; i <= n; i++ {
		s := &session.Session{ID: session.ID(i), Started: t0.Add(time.Duration(i) * time.Millisecond),
			Request: session.Request{Method: "GET", URL: fmt.Sprintf("https://api.example.com/items/%d", i), Proto: "HTTP/1.1",
				Header: http.Header{"Host": {"api.example.com"}, "Accept": {"application/json"}}},
			Response: &session.Response{Status: 200, Proto: "HTTP/1.1", Header: http.Header{"Content-Type": {"application/json"}},
				Body: session.Body{Data: body, Size: int64(len(body))}}}
		if err := w.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
