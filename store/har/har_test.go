package har

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"inspector/engine/session"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

func gzipped(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// fixtures returns sessions 1..n covering every mapped field.
func fixtures() []*session.Session {
	html := "<!doctype html><title>Hi</title>" + strings.Repeat("<p>caf\u00e9 & <b>bold</b></p>\n", 3)
	s1 := &session.Session{
		ID: 1, Started: t0,
		Client: session.Conn{Addr: "127.0.0.1:50000", Proto: session.HTTP2, ConnID: 11,
			TLS: &session.TLSInfo{Version: "TLS 1.3", CipherSuite: "TLS_AES_128_GCM_SHA256", ServerName: "www.example.com", ALPN: "h2"},
			Fingerprint: &session.Fingerprint{JA4: "t13d1516h2_8daaf6152771_02713d6af862", JA3: "0123456789abcdef0123456789abcdef",
				JA3Raw: "771,4865-4866,0-23,29-23,0", H2: "1:65536;2:0;4:6291456;6:262144|15663105|0|m,a,s,p"}},
		Upstream: session.Conn{Addr: "93.184.216.34:443", Proto: session.HTTP1, ConnID: 12,
			Fingerprint: &session.Fingerprint{JA4: "t13d1516h2_8daaf6152771_02713d6af862", Mirror: session.Mirrored},
			TLS: &session.TLSInfo{Version: "TLS 1.2", CipherSuite: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", ServerName: "www.example.com",
				ALPN: "http/1.1", Resumed: true, Certificates: [][]byte{{0x30, 0x82, 0x01, 0x0a}, {0x30, 0x03}}}},
		Request: session.Request{Method: "GET", URL: "https://www.example.com/index.html?q=a%20b&x=1&flag", Proto: session.HTTP2,
			Header: http.Header{"Accept": {"text/html"}, "Cookie": {"a=1; b=two"}, "User-Agent": {"test/1.0"}}, HeadSize: 120},
		Response: &session.Response{Status: 200, Reason: "OK", Proto: session.HTTP1,
			Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Content-Encoding": {"gzip"},
				"Set-Cookie": {"sid=xyz; Path=/; Domain=example.com; Expires=Wed, 21 Oct 2026 07:28:00 GMT; HttpOnly; Secure; SameSite=Strict", "theme=dark"}},
			Body: session.Body{Data: gzipped(html)}, HeadSize: 210},
		Timings: session.Timings{ClientConnected: at(-5), ClientTLSDone: at(-2), RequestHeaders: t0, RequestDone: at(0.5),
			DNSStart: at(1), DNSDone: at(3.25), ConnectStart: at(3.5), ConnectDone: at(10), UpstreamTLSDone: at(25.125),
			RequestSent: at(25.5), FirstByte: at(80), ResponseDone: at(95.75)},
	}
	s1.Response.Body.Size = int64(len(s1.Response.Body.Data))

	form := "user=alice&pass=s%C3%A9cret+x&empty="
	s2 := &session.Session{
		ID: 2, Started: at(1000), ReplayOf: 1,
		Client:   session.Conn{Addr: "127.0.0.1:50001", Proto: session.HTTP1, ConnID: 13, Reused: true},
		Upstream: session.Conn{Addr: "[2001:db8::1]:8080", Proto: session.HTTP1, ConnID: 14, Reused: true},
		Request: session.Request{Method: "POST", URL: "http://api.example.com:8080/login", Proto: session.HTTP1,
			Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
			Body:   session.Body{Data: []byte(form), Size: int64(len(form))}},
		Response: &session.Response{Status: 303, Reason: "See Other", Proto: session.HTTP1,
			Header: http.Header{"Location": {"/home"}, "Content-Type": {"application/json"}},
			Body:   session.Body{Data: []byte(`{"ok":true}`), Size: 11}},
		Timings: session.Timings{RequestHeaders: at(1000), RequestDone: at(1001), RequestSent: at(1001.5), FirstByte: at(1040), ResponseDone: at(1041)},
		Mark:    "red", Comment: "login flow",
	}

	bin := []byte{0x00, 0x01, 0xff, 0xfe, 'x'}
	png := []byte{0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d}
	s3 := &session.Session{
		ID: 3, Started: at(2000),
		Client:   session.Conn{Proto: session.HTTP3},
		Upstream: session.Conn{Addr: "10.0.0.1:443", Proto: session.HTTP3},
		Request: session.Request{Method: "PUT", URL: "https://files.example.com/blob", Proto: session.HTTP3,
			Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: session.Body{Data: bin, Size: 5}},
		Response: &session.Response{Status: 200, Proto: session.HTTP3, Header: http.Header{"Content-Type": {"image/png"}},
			Body: session.Body{Data: png, Size: int64(len(png))}},
		Timings: session.Timings{RequestHeaders: at(2000), ConnectStart: at(2001), ConnectDone: at(2010), RequestSent: at(2011), FirstByte: at(2020), ResponseDone: at(2021)},
	}

	s4 := &session.Session{
		ID: 4, Started: at(3000),
		Client:  session.Conn{Addr: "127.0.0.1:50003", Proto: session.HTTP1, ConnID: 15},
		Request: session.Request{Method: "GET", URL: "https://down.example.net/", Proto: session.HTTP1},
		Error:   &session.Error{Phase: session.PhaseDial, Side: session.SideUpstream, Proto: session.HTTP1, Message: "connection refused"},
		Timings: session.Timings{RequestHeaders: at(3000), DNSStart: at(3000.2), DNSDone: at(3001), ConnectStart: at(3001.5), ResponseDone: at(3003)},
	}

	s5 := &session.Session{
		ID: 5, Started: at(4000), Flags: session.FlagTunnel,
		Client:   session.Conn{Addr: "127.0.0.1:50004", ConnID: 16},
		Upstream: session.Conn{Addr: "198.51.100.1:443", ConnID: 17},
		Request:  session.Request{Method: "CONNECT", URL: "pinned.example.org:443", Proto: session.HTTP1},
		Timings:  session.Timings{RequestHeaders: at(4000), ConnectStart: at(4001), ConnectDone: at(4005), ResponseDone: at(9000)},
	}

	s6 := &session.Session{
		ID: 6, Started: at(5000), Flags: session.FlagWebSocket,
		Client:   session.Conn{Proto: session.HTTP1},
		Upstream: session.Conn{Proto: session.HTTP1},
		Request:  session.Request{Method: "GET", URL: "wss://ws.example.com/socket", Proto: session.HTTP1, Header: http.Header{"Upgrade": {"websocket"}}},
		Response: &session.Response{Status: 101, Reason: "Switching Protocols", Proto: session.HTTP1, Header: http.Header{"Upgrade": {"websocket"}}},
		Messages: []session.Message{
			{Time: at(5010), FromClient: true, Opcode: 1, Data: []byte(`{"hello":"world"}`), Size: 17},
			{Time: at(5020.5), Opcode: 2, Data: []byte{1, 2, 3}, Size: 3},
			{Time: at(5030), Opcode: 1, Data: []byte("trunc"), Size: 100000},
			{Time: at(5040), FromClient: true, Opcode: 8, Size: 0},
		},
		Timings: session.Timings{RequestHeaders: at(5000), RequestSent: at(5001), FirstByte: at(5005)},
	}

	s7 := &session.Session{
		ID: 7, Started: at(6000), Flags: session.FlagRespTruncated | session.FlagAnswered,
		Client:  session.Conn{Proto: session.HTTP2},
		Request: session.Request{Method: "GET", URL: "https://cdn.example.com/big.js", Proto: session.HTTP2},
		Response: &session.Response{Status: 200, Proto: session.HTTP2,
			Header: http.Header{"Content-Encoding": {"br"}, "Content-Type": {"application/javascript"}},
			Body:   session.Body{Data: []byte{0x1b, 0x2c, 0x00, 0x80}, Size: 1 << 20, Truncated: true}},
		Timings: session.Timings{RequestHeaders: at(6000), RequestSent: at(6000.001), FirstByte: at(6100), ResponseDone: at(6500)},
	}

	gz := gzipped(strings.Repeat("partial ", 100))
	s8 := &session.Session{
		ID: 8, Started: at(7000), Flags: session.FlagRespTruncated,
		Client:  session.Conn{Proto: session.HTTP1},
		Request: session.Request{Method: "get", URL: "http://example.com/trunc.txt", Proto: session.HTTP1},
		Response: &session.Response{Status: 200, Proto: session.HTTP1,
			Header: http.Header{"Content-Encoding": {"gzip"}, "Content-Type": {"text/plain"}},
			Body:   session.Body{Data: gz[:len(gz)/2], Size: int64(len(gz)), Truncated: true}},
		Timings: session.Timings{RequestHeaders: at(7000), RequestSent: at(7001), FirstByte: at(7002), ResponseDone: at(7003)},
	}
	return []*session.Session{s1, s2, s3, s4, s5, s6, s7, s8}
}

func export(t testing.TB, ss []*session.Session) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := NewWriter(&b, "1.0.0-test")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if err := w.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./store/har -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output; diff it with -update and git diff.\n got: %.2000s", path, got)
	}
}

func TestGolden(t *testing.T) {
	out := export(t, fixtures())
	golden(t, "sessions.golden.har", out)
	if !json.Valid(out) {
		t.Fatal("output is not valid JSON")
	}
	golden(t, "empty.golden.har", export(t, nil))
}

func TestSchema(t *testing.T) {
	schema := loadSchema(t)
	for name, doc := range map[string][]byte{
		"export":  export(t, fixtures()),
		"empty":   export(t, nil),
		"chrome":  mustRead(t, "testdata/chrome.har"),
		"firefox": mustRead(t, "testdata/firefox.har"),
	} {
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			t.Fatal(err)
		}
		if errs := validate(schema, schema, v, "$"); len(errs) > 0 {
			t.Errorf("%s does not validate:\n%s", name, strings.Join(errs, "\n"))
		}
	}
	// The validator itself must catch violations.
	for _, mutate := range []func(m map[string]any){
		func(m map[string]any) { delete(entry0(m)["request"].(map[string]any), "headers") },
		func(m map[string]any) { entry0(m)["response"].(map[string]any)["status"] = "200" },
		func(m map[string]any) { entry0(m)["response"].(map[string]any)["status"] = 200.5 },
		func(m map[string]any) { entry0(m)["timings"].(map[string]any)["send"] = -1.0 },
		func(m map[string]any) { entry0(m)["timings"].(map[string]any)["dns"] = -2.0 },
		func(m map[string]any) {
			entry0(m)["response"].(map[string]any)["content"].(map[string]any)["encoding"] = "hex"
		},
		func(m map[string]any) { m["log"].(map[string]any)["version"] = 12.0 },
		func(m map[string]any) {
			entry0(m)["request"].(map[string]any)["cookies"] = []any{map[string]any{"name": "x"}}
		},
	} {
		var m map[string]any
		json.Unmarshal(export(t, fixtures()), &m)
		mutate(m)
		if errs := validate(schema, schema, m, "$"); len(errs) == 0 {
			t.Error("a broken document validated")
		}
	}
}

func entry0(m map[string]any) map[string]any {
	return m["log"].(map[string]any)["entries"].([]any)[0].(map[string]any)
}

func mustRead(t testing.TB, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadSchema(t *testing.T) map[string]any {
	var schema map[string]any
	if err := json.Unmarshal(mustRead(t, "testdata/har-1.2.schema.json"), &schema); err != nil {
		t.Fatal(err)
	}
	return schema
}

// validate is a small JSON Schema validator: $ref (local), type, required, properties,
// items, enum, minimum. It returns one line per violation.
func validate(root, s map[string]any, v any, path string) []string {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/definitions/")
		def, ok := root["definitions"].(map[string]any)[name].(map[string]any)
		if !ok {
			return []string{path + ": unknown $ref " + ref}
		}
		return validate(root, def, v, path)
	}
	var errs []string
	if ty, ok := s["type"]; ok {
		var types []string
		switch ty := ty.(type) {
		case string:
			types = []string{ty}
		case []any:
			for _, x := range ty {
				types = append(types, x.(string))
			}
		}
		okType := false
		for _, tn := range types {
			if hasType(v, tn) {
				okType = true
			}
		}
		if !okType {
			return []string{fmt.Sprintf("%s: want type %v, got %T", path, types, v)}
		}
	}
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			if reflect.DeepEqual(e, v) {
				found = true
			}
		}
		if !found {
			errs = append(errs, fmt.Sprintf("%s: %v not in %v", path, v, enum))
		}
	}
	if min, ok := s["minimum"].(float64); ok {
		if n, isNum := v.(float64); isNum && n < min {
			errs = append(errs, fmt.Sprintf("%s: %v is less than %v", path, n, min))
		}
	}
	if obj, ok := v.(map[string]any); ok {
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, present := obj[r.(string)]; !present {
					errs = append(errs, fmt.Sprintf("%s: missing required %q", path, r))
				}
			}
		}
		if props, ok := s["properties"].(map[string]any); ok {
			for k, ps := range props {
				if x, present := obj[k]; present {
					errs = append(errs, validate(root, ps.(map[string]any), x, path+"."+k)...)
				}
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if items, ok := s["items"].(map[string]any); ok {
			for i, x := range arr {
				errs = append(errs, validate(root, items, x, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	return errs
}

func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		n, ok := v.(float64)
		return ok && n == math.Trunc(n)
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	}
	return false
}

// importLikeStore gives the sessions ids as a store into an empty data dir would (capture
// order, from 1) and remaps ReplayOf through the source ids.
func importLikeStore(t testing.TB, doc []byte) []*session.Session {
	t.Helper()
	res, err := ReadAll(bytes.NewReader(doc), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	remap := map[session.ID]session.ID{}
	for i, s := range res.Sessions {
		if s.ID != 0 || !s.Flags.Has(session.FlagImported) {
			t.Fatalf("Read gave id %d flags %b", s.ID, s.Flags)
		}
		s.ID = session.ID(i + 1)
		remap[res.SourceIDs[i]] = s.ID
	}
	for _, s := range res.Sessions {
		if s.ReplayOf != 0 {
			s.ReplayOf = remap[s.ReplayOf]
		}
	}
	return res.Sessions
}

func TestRoundTrip(t *testing.T) {
	orig := fixtures()
	first := export(t, orig)
	back := importLikeStore(t, first)
	second := export(t, back)
	if !bytes.Equal(first, second) {
		t.Fatalf("export → Read → export differs:\nfirst:  %.3000s\nsecond: %.3000s", first, second)
	}
	// A third pass through a browser-written file is stable too.
	for _, f := range []string{"testdata/chrome.har", "testdata/firefox.har"} {
		a := export(t, importLikeStore(t, mustRead(t, f)))
		b := export(t, importLikeStore(t, a))
		if !bytes.Equal(a, b) {
			t.Errorf("%s: re-export of an import is not stable", f)
		}
	}

	// What the session keeps.
	if len(back) != len(orig) {
		t.Fatalf("%d sessions back, want %d", len(back), len(orig))
	}
	for i, o := range orig {
		b := back[i]
		check := func(what string, got, want any) {
			t.Helper()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("#%d %s = %#v, want %#v", o.ID, what, got, want)
			}
		}
		check("ID", b.ID, o.ID)
		check("ReplayOf", b.ReplayOf, o.ReplayOf)
		check("Started", b.Started, o.Started)
		check("Flags", b.Flags, o.Flags|session.FlagImported)
		check("Method", b.Request.Method, o.Request.Method)
		check("URL", b.Request.URL, o.Request.URL)
		check("Request.Proto", b.Request.Proto, o.Request.Proto)
		check("Request.HeadSize", b.Request.HeadSize, o.Request.HeadSize)
		check("Request.Header", normHeader(b.Request.Header), normHeader(o.Request.Header))
		check("Request.Body.Data", string(b.Request.Body.Data), string(o.Request.Body.Data))
		check("Request.Body.Size", b.Request.Body.Size, o.Request.Body.Size)
		check("Client", b.Client, o.Client)
		check("Upstream.Proto", b.Upstream.Proto, o.Upstream.Proto)
		check("Upstream.ConnID", b.Upstream.ConnID, o.Upstream.ConnID)
		check("Upstream.TLS", b.Upstream.TLS, o.Upstream.TLS)
		check("Upstream.Fingerprint", b.Upstream.Fingerprint, o.Upstream.Fingerprint)
		check("Error", b.Error, o.Error)
		check("Mark", b.Mark, o.Mark)
		check("Comment", b.Comment, o.Comment)
		check("Status", b.Status(), o.Status())
		if !o.Timings.ResponseDone.IsZero() {
			check("Duration", b.Duration().Round(time.Microsecond), o.Duration().Round(time.Microsecond))
		}
		if o.Response != nil {
			check("Response.Header", normHeader(b.Response.Header), normHeader(o.Response.Header))
			check("Response.Body.Size", b.Response.Body.Size, o.Response.Body.Size)
			check("Response.Body.Truncated", b.Response.Body.Truncated, o.Response.Body.Truncated)
			check("Response.Reason", b.Response.Reason, o.Response.Reason)
			check("Response.Proto", b.Response.Proto, o.Response.Proto)
			check("Response.HeadSize", b.Response.HeadSize, o.Response.HeadSize)
			check("Response.Body.Data decoded", decoded(t, b.Response), decoded(t, o.Response))
		}
		for j := range o.Messages {
			om, bm := o.Messages[j], b.Messages[j]
			om.Time = om.Time.Round(time.Microsecond)
			check(fmt.Sprintf("Messages[%d]", j), bm, om)
		}
	}
	// Upstream addresses keep the IP; the port comes from the URL.
	if got := back[0].Upstream.Addr; got != "93.184.216.34:443" {
		t.Errorf("upstream addr %q", got)
	}
	if got := back[1].Upstream.Addr; got != "[2001:db8::1]:8080" {
		t.Errorf("upstream addr %q", got)
	}
}

func normHeader(h http.Header) http.Header {
	if len(h) == 0 {
		return nil
	}
	return h
}

func decoded(t *testing.T, r *session.Response) string {
	b, ok := decodeAll(r.Body.Data, encodings(r.Header), 1<<20)
	if !ok {
		return "raw:" + string(r.Body.Data)
	}
	return string(b)
}

func TestExportDetails(t *testing.T) {
	var doc struct {
		Log struct {
			Creator harCreator
			Entries []map[string]any
		}
	}
	if err := json.Unmarshal(export(t, fixtures()), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Log.Creator != (harCreator{"Inspector", "1.0.0-test"}) {
		t.Errorf("creator %+v", doc.Log.Creator)
	}
	e := doc.Log.Entries
	get := func(i int, path string) any {
		var v any = e[i]
		for _, p := range strings.Split(path, ".") {
			v = v.(map[string]any)[p]
		}
		return v
	}
	for _, c := range []struct {
		i    int
		path string
		want any
	}{
		{0, "timings.blocked", 1.0}, {0, "timings.dns", 2.25}, {0, "timings.connect", 21.875},
		{0, "timings.ssl", 15.125}, {0, "timings.send", 0.375}, {0, "timings.wait", 54.5},
		{0, "timings.receive", 15.75}, {0, "time", 95.75},
		{0, "startedDateTime", "2026-03-04T05:06:07.123456789Z"},
		{0, "serverIPAddress", "93.184.216.34"}, {0, "connection", "12"},
		{0, "request.httpVersion", "HTTP/2"}, {0, "response.httpVersion", "HTTP/1.1"},
		{0, "response.content.mimeType", "text/html; charset=utf-8"},
		{0, "response.content.text", "<!doctype html><title>Hi</title>" + strings.Repeat("<p>caf\u00e9 & <b>bold</b></p>\n", 3)},
		{0, "_clientProto", "h2"}, {0, "_upstreamProto", "http/1.1"}, {0, "_id", 1.0},
		{0, "_tls.upstream.certificates", []any{"MIIBCg==", "MAM="}},
		{1, "request.postData.mimeType", "application/x-www-form-urlencoded"},
		{1, "response.redirectURL", "/home"}, {1, "_replayOf", 1.0}, {1, "_mark", "red"}, {1, "comment", "login flow"},
		{1, "timings.dns", -1.0}, {1, "timings.connect", -1.0}, {1, "timings.blocked", 1.0},
		{2, "request.postData._encoding", "base64"}, {2, "request.postData.text", "AAH//ng="},
		{2, "response.content.encoding", "base64"}, {2, "timings.ssl", -1.0}, {2, "timings.connect", 9.0},
		{3, "response.status", 0.0}, {3, "response.bodySize", -1.0}, {3, "_error.phase", "dial"},
		{3, "_error.message", "connection refused"}, {3, "response._error", "upstream dial: connection refused"}, {3, "timings.dns", 0.8}, {3, "timings.connect", -1.0},
		{4, "_flags", []any{"tunnel"}}, {4, "_clientProto", ""},
		{5, "_webSocketMessages", []any{
			map[string]any{"type": "send", "time": 1772600772.133457, "opcode": 1.0, "data": `{"hello":"world"}`},
			map[string]any{"type": "receive", "time": 1772600772.143957, "opcode": 2.0, "data": "AQID"},
			map[string]any{"type": "receive", "time": 1772600772.153457, "opcode": 1.0, "data": "trunc", "_size": 100000.0},
			map[string]any{"type": "send", "time": 1772600772.163457, "opcode": 8.0, "data": ""},
		}},
		{6, "response.content._raw", true}, {6, "response.content.encoding", "base64"},
		{6, "response.content.size", 1048576.0}, {6, "_truncated.response", true},
		{6, "_flags", []any{"responseTruncated", "answered"}},
		{7, "response.content._raw", true},
	} {
		if got := get(c.i, c.path); !reflect.DeepEqual(got, c.want) {
			t.Errorf("entry %d %s = %#v, want %#v", c.i, c.path, got, c.want)
		}
	}
	q := get(0, "request.queryString")
	wantQ := []any{map[string]any{"name": "q", "value": "a b"}, map[string]any{"name": "x", "value": "1"}, map[string]any{"name": "flag", "value": ""}}
	if !reflect.DeepEqual(q, wantQ) {
		t.Errorf("queryString %v", q)
	}
	params := get(1, "request.postData.params")
	wantP := []any{map[string]any{"name": "user", "value": "alice"}, map[string]any{"name": "pass", "value": "s\u00e9cret x"}, map[string]any{"name": "empty", "value": ""}}
	if !reflect.DeepEqual(params, wantP) {
		t.Errorf("params %v", params)
	}
	rc := get(0, "request.cookies").([]any)
	if len(rc) != 2 || rc[1].(map[string]any)["value"] != "two" {
		t.Errorf("request cookies %v", rc)
	}
	sc := get(0, "response.cookies").([]any)
	want := map[string]any{"name": "sid", "value": "xyz", "path": "/", "domain": "example.com", "expires": "2026-10-21T07:28:00Z",
		"httpOnly": true, "secure": true, "sameSite": "Strict"}
	if len(sc) != 2 || !reflect.DeepEqual(sc[0], want) {
		t.Errorf("response cookies %v", sc)
	}
	size, compression := get(0, "response.content.size").(float64), get(0, "response.content.compression").(float64)
	if body := get(0, "response.bodySize").(float64); size-compression != body {
		t.Errorf("content size %v - compression %v != bodySize %v", size, compression, body)
	}
}

func TestReadBrowsers(t *testing.T) {
	ch, err := Read(bytes.NewReader(mustRead(t, "testdata/chrome.har")))
	if err != nil {
		t.Fatal(err)
	}
	if len(ch) != 5 {
		t.Fatalf("%d sessions from chrome.har", len(ch))
	}
	s := ch[0]
	if s.Request.Proto != session.HTTP2 || s.Client.Proto != session.HTTP2 || s.Upstream.Proto != session.HTTP2 {
		t.Errorf("protos %q %q %q", s.Request.Proto, s.Client.Proto, s.Upstream.Proto)
	}
	if s.Request.Header.Get("Accept") != "text/html" || s.Request.Header.Get(":authority") != "" {
		t.Errorf("request header %v", s.Request.Header)
	}
	if s.Upstream.Addr != "[2606:2800:220:1:248:1893:25c8:1946]:443" || s.Upstream.ConnID != 123456 {
		t.Errorf("upstream %+v", s.Upstream)
	}
	// br body: browsers export it decoded; it is stored brotli-encoded again, as it
	// travelled, so its Content-Encoding header stays true.
	if got, ok := decodeAll(s.Response.Body.Data, []string{"br"}, 1<<20); !ok || string(got) != "<!doctype html><h1>Example</h1>\n" || s.Response.Body.Size != 23 {
		t.Errorf("br body decodes to %q (%v), size %d", got, ok, s.Response.Body.Size)
	}
	T := s.Timings
	if d := T.DNSDone.Sub(T.DNSStart); d != 10500*time.Microsecond {
		t.Errorf("dns %v", d)
	}
	if d := T.UpstreamTLSDone.Sub(T.ConnectDone); d != 20200*time.Microsecond {
		t.Errorf("ssl %v", d)
	}
	if d := s.Duration(); d != 250123*time.Microsecond {
		t.Errorf("duration %v, want the sum of the timings", d)
	}
	// gzip body: re-encoded so the session holds it as it travelled.
	s = ch[1]
	if got, _ := decodeAll(s.Response.Body.Data, []string{"gzip"}, 1<<20); string(got) != "{\"id\":7,\"name\":\"x\"}\n" {
		t.Errorf("gzip body decodes to %q", got)
	}
	if string(s.Request.Body.Data) != `{"name":"x"}` || s.Response.Body.Size != 34 {
		t.Errorf("post %q size %d", s.Request.Body.Data, s.Response.Body.Size)
	}
	if ch[2].Request.Proto != session.HTTP3 || !bytes.Equal(ch[2].Response.Body.Data, []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}) {
		t.Errorf("image: %q %v", ch[2].Request.Proto, ch[2].Response.Body.Data)
	}
	if f := ch[3]; f.Response != nil || f.Error == nil || f.Error.Message != "net::ERR_CONNECTION_REFUSED" {
		t.Errorf("failed request: %+v %+v", f.Response, f.Error)
	}
	ws := ch[4]
	if len(ws.Messages) != 3 || !ws.Messages[0].FromClient || string(ws.Messages[1].Data) != "world" ||
		!bytes.Equal(ws.Messages[2].Data, []byte{0, 1, 2}) || ws.Messages[0].Time.UnixMicro() != 1714557604123456 {
		t.Errorf("websocket messages %+v", ws.Messages)
	}

	ff, err := Read(bytes.NewReader(mustRead(t, "testdata/firefox.har")))
	if err != nil {
		t.Fatal(err)
	}
	if len(ff) != 3 {
		t.Fatalf("%d sessions from firefox.har", len(ff))
	}
	if want := time.Date(2024, 5, 1, 10, 0, 0, 123e6, time.UTC); !ff[0].Started.Equal(want) {
		t.Errorf("started %v", ff[0].Started)
	}
	if ff[0].Upstream.ConnID != 443 || ff[0].Upstream.Addr != "93.184.216.34:443" || ff[0].Request.HeadSize != 350 {
		t.Errorf("firefox entry 0: %+v", ff[0].Upstream)
	}
	if got, _ := decodeAll(ff[0].Response.Body.Data, []string{"gzip"}, 1<<20); string(got) != "console.log(1);" {
		t.Errorf("firefox gzip body %q", got)
	}
	if string(ff[1].Request.Body.Data) != "q=a+b&n=1" || ff[1].Request.Body.Size != 9 || ff[1].Status() != 302 {
		t.Errorf("form post from params: %q", ff[1].Request.Body.Data)
	}
	if ff[2].Request.Body.Size != 0 || ff[2].Status() != 304 || ff[2].Upstream.Proto != session.HTTP3 {
		t.Errorf("304 entry: %+v", ff[2].Request.Body)
	}
}

func TestReadCorrupt(t *testing.T) {
	valid := string(export(t, fixtures()[:2]))
	entry := func(mod func(m map[string]any)) string {
		var m map[string]any
		json.Unmarshal([]byte(valid), &m)
		mod(m["log"].(map[string]any)["entries"].([]any)[1].(map[string]any))
		b, _ := json.Marshal(m)
		return string(b)
	}
	huge := `{"log":{"version":"1.2","creator":{"name":"x","version":"1"},"entries":[{"startedDateTime":"2024-01-01T00:00:00Z",
		"request":{"method":"GET","url":"http://x/","headers":[]},"response":{"status":200,"content":{"size":1,"text":"` +
		strings.Repeat("QUFB", 2000) + `","encoding":"base64"}}}]}}`
	tests := []struct {
		name, doc string
		lim       Limits
		entry     int
		msg       string
	}{
		{"not JSON", "hello world", DefaultLimits, -1, "not valid JSON at line 1"},
		{"empty", "", DefaultLimits, -1, "truncated"},
		{"truncated", valid[:len(valid)/2], DefaultLimits, -1, "truncated"},
		{"array", "[1,2]", DefaultLimits, -1, "top level is an array"},
		{"no log", `{"foo":1}`, DefaultLimits, -1, `no "log" object`},
		{"no entries", `{"log":{"version":"1.2"}}`, DefaultLimits, -1, `no "entries" array`},
		{"log not object", `{"log":[]}`, DefaultLimits, -1, "log: want an object, got an array"},
		{"bad version", `{"log":{"version":"2.0","entries":[]}}`, DefaultLimits, -1, "unsupported HAR version"},
		{"bad URL", entry(func(m map[string]any) { m["request"].(map[string]any)["url"] = "not a url" }), DefaultLimits, 1, `request.url: "not a url" is not an absolute URL`},
		{"relative URL", entry(func(m map[string]any) { m["request"].(map[string]any)["url"] = "/x" }), DefaultLimits, 1, "request.url"},
		{"status string", entry(func(m map[string]any) { m["response"].(map[string]any)["status"] = "OK" }), DefaultLimits, 1, "response.status: want a number, got a string"},
		{"status fraction", entry(func(m map[string]any) { m["response"].(map[string]any)["status"] = 200.5 }), DefaultLimits, 1, "response.status: want a whole number"},
		{"status huge", entry(func(m map[string]any) { m["response"].(map[string]any)["status"] = 10000 }), DefaultLimits, 1, "not an HTTP status"},
		{"no status", entry(func(m map[string]any) { delete(m["response"].(map[string]any), "status") }), DefaultLimits, 1, "response.status: missing"},
		{"no method", entry(func(m map[string]any) { delete(m["request"].(map[string]any), "method") }), DefaultLimits, 1, "request.method"},
		{"no request", entry(func(m map[string]any) { delete(m, "request") }), DefaultLimits, 1, "request: missing"},
		{"bad date", entry(func(m map[string]any) { m["startedDateTime"] = "yesterday" }), DefaultLimits, 1, "startedDateTime: want an ISO 8601"},
		{"no date", entry(func(m map[string]any) { delete(m, "startedDateTime") }), DefaultLimits, 1, "startedDateTime: missing"},
		{"bad base64", entry(func(m map[string]any) {
			c := m["response"].(map[string]any)["content"].(map[string]any)
			c["text"], c["encoding"] = "!!!", "base64"
		}), DefaultLimits, 1, "response.content.text: bad base64"},
		{"bad encoding", entry(func(m map[string]any) {
			m["response"].(map[string]any)["content"].(map[string]any)["encoding"] = "rot13"
		}), DefaultLimits, 1, `unsupported encoding "rot13"`},
		{"header name", entry(func(m map[string]any) {
			m["request"].(map[string]any)["headers"] = []any{map[string]any{"value": "x"}}
		}), DefaultLimits, 1, "request.headers[0].name: missing"},
		{"CRLF in header name", entry(func(m map[string]any) {
			m["request"].(map[string]any)["headers"] = []any{map[string]any{"name": "X-A\r\nX-Forged", "value": "1"}}
		}), DefaultLimits, 1, "request.headers[0].name: \"X-A\\r\\nX-Forged\" is not a valid header name"},
		{"space in header name", entry(func(m map[string]any) {
			m["request"].(map[string]any)["headers"] = []any{map[string]any{"name": "X A", "value": "1"}}
		}), DefaultLimits, 1, "request.headers[0].name"},
		{"CRLF in header value", entry(func(m map[string]any) {
			m["response"].(map[string]any)["headers"] = []any{map[string]any{"name": "X-A", "value": "1\r\nSet-Cookie: forged=1"}}
		}), DefaultLimits, 1, "response.headers[0].value: \"1\\r\\nSet-Cookie: forged=1\" has control characters"},
		{"LF in header value", entry(func(m map[string]any) {
			m["request"].(map[string]any)["headers"] = []any{map[string]any{"name": "X-A", "value": "1\nX-B: 2"}}
		}), DefaultLimits, 1, "request.headers[0].value"},
		{"NUL in header value", entry(func(m map[string]any) {
			m["request"].(map[string]any)["headers"] = []any{map[string]any{"name": "X-A", "value": "a\x00b"}}
		}), DefaultLimits, 1, "request.headers[0].value"},
		{"CRLF in status text", entry(func(m map[string]any) {
			m["response"].(map[string]any)["statusText"] = "OK\r\nX-Forged: 1"
		}), DefaultLimits, 1, "response.statusText"},
		{"CRLF in HTTP version", entry(func(m map[string]any) {
			m["request"].(map[string]any)["httpVersion"] = "HTTP/1.1\r\nX: 1"
		}), DefaultLimits, 1, "request.httpVersion"},
		{"CRLF in method", entry(func(m map[string]any) {
			m["request"].(map[string]any)["method"] = "GET\r\nX:"
		}), DefaultLimits, 1, "request.method"},
		{"trailing data", valid + "{}", DefaultLimits, -1, "after the top-level object"},
		{"entries not array", `{"log":{"entries":{}}}`, DefaultLimits, -1, "log.entries: want an array, got an object"},
		{"headers type", entry(func(m map[string]any) { m["request"].(map[string]any)["headers"] = "x" }), DefaultLimits, 1, "request.headers: want an array"},
		{"negative timing", entry(func(m map[string]any) { m["timings"].(map[string]any)["wait"] = -5 }), DefaultLimits, 1, "timings.wait"},
		{"entry not object", `{"log":{"entries":[1]}}`, DefaultLimits, 0, "want an object, got a number"},
		{"huge base64", huge, Limits{MaxDocument: 1 << 20, MaxBody: 4096, MaxEntries: 10}, 0, "exceeds the limit of 4096"},
		{"huge document", valid, Limits{MaxDocument: 100, MaxBody: 1 << 20, MaxEntries: 10}, -1, "larger than 100 bytes"},
		{"too many entries", valid, Limits{MaxDocument: 1 << 20, MaxBody: 1 << 20, MaxEntries: 1}, -1, "more than the limit 1"},
	}
	for _, tc := range tests {
		res, err := ReadAll(strings.NewReader(tc.doc), tc.lim)
		var he *Error
		if res != nil || !errors.As(err, &he) {
			t.Errorf("%s: got %v, %v; want no result and a *har.Error", tc.name, res, err)
			continue
		}
		if he.Entry != tc.entry || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: entry %d %q; want entry %d containing %q", tc.name, he.Entry, err, tc.entry, tc.msg)
		}
		if ss, err2 := Read(strings.NewReader(tc.doc)); tc.lim == DefaultLimits && (ss != nil || err2 == nil) {
			t.Errorf("%s: Read returned %d sessions, %v", tc.name, len(ss), err2)
		}
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n -= len(p); f.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestWriterErrors(t *testing.T) {
	var b bytes.Buffer
	w, _ := NewWriter(&b, "v")
	if err := w.Add(nil); err == nil {
		t.Error("Add(nil) succeeded")
	}
	w.Close()
	if err := w.Add(fixtures()[0]); err == nil || !strings.Contains(err.Error(), "after Close") {
		t.Errorf("Add after Close: %v", err)
	}
	// A failing sink surfaces at the latest on Close, and the error sticks.
	fw := &failWriter{n: 1000}
	w, err := NewWriter(fw, "v")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range fixtures() {
		err = w.Add(s)
	}
	if err == nil {
		err = w.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("want disk full, got %v", err)
	}
	if err2 := w.Close(); err2 == nil {
		t.Error("error did not stick")
	}
}

func TestExportDecodeCap(t *testing.T) {
	var b bytes.Buffer
	gw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	gw.Write(make([]byte, MaxExportDecoded+1))
	gw.Close()
	s := &session.Session{Started: t0, Request: session.Request{Method: "GET", URL: "http://x/"},
		Response: &session.Response{Status: 200, Header: http.Header{"Content-Encoding": {"gzip"}}, Body: session.Body{Data: b.Bytes(), Size: int64(b.Len())}}}
	e := buildEntry(s)
	if !e.Response.Content.Raw || e.Response.Content.Size != int64(b.Len()) {
		t.Errorf("bomb exported decoded: raw=%v size=%d", e.Response.Content.Raw, e.Response.Content.Size)
	}
}

func FuzzRead(f *testing.F) {
	// Compact seeds: the fuzzer minimizes every new input, which is slow for large ones.
	for _, doc := range [][]byte{export(f, fixtures()[:3]), export(f, fixtures()[3:]),
		mustRead(f, "testdata/chrome.har"), mustRead(f, "testdata/firefox.har")} {
		var b bytes.Buffer
		if err := json.Compact(&b, doc); err != nil {
			f.Fatal(err)
		}
		f.Add(b.String())
	}
	f.Add(`{"log":{"entries":[{"startedDateTime":"2024-01-01T00:00:00Z","request":{"method":"GET","url":"http://x/"},"response":{"status":200}}]}}`)
	f.Add(`{"log":{"entries":[]}}`)
	f.Add(`{"log":null}`)
	f.Add("[]")
	lim := Limits{MaxDocument: 1 << 20, MaxBody: 1 << 16, MaxEntries: 1000}
	f.Fuzz(func(t *testing.T, doc string) {
		res, err := ReadAll(strings.NewReader(doc), lim)
		if err != nil {
			if res != nil {
				t.Fatal("result with an error")
			}
			var he *Error
			if !errors.As(err, &he) {
				t.Fatalf("error %T is not a *har.Error", err)
			}
			return
		}
		// Whatever was accepted exports, and re-reads to the same number of sessions.
		var b bytes.Buffer
		w, _ := NewWriter(&b, "fuzz")
		for _, s := range res.Sessions {
			if err := w.Add(s); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		again, err := ReadAll(bytes.NewReader(b.Bytes()), DefaultLimits)
		if err != nil {
			t.Fatalf("re-read of an export: %v", err)
		}
		if len(again.Sessions) != len(res.Sessions) {
			t.Fatalf("%d sessions after re-read, want %d", len(again.Sessions), len(res.Sessions))
		}
	})
}

func BenchmarkWriterAdd(b *testing.B) {
	ss := fixtures()
	s := ss[0]
	w, err := NewWriter(discard{}, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Add(s); err != nil {
			b.Fatal(err)
		}
	}
	w.Close()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestHeaderValuesKept: header values with tabs and non-ASCII bytes (obs-text) are valid
// and kept as they are.
func TestHeaderValuesKept(t *testing.T) {
	doc := `{"log":{"entries":[{"startedDateTime":"2024-01-01T00:00:00Z",
		"request":{"method":"GET","url":"http://x/","headers":[{"name":"X-Tab","value":"a\tb"},{"name":"X-Utf8","value":"caf\u00e9"}]},
		"response":{"status":200,"headers":[]}}]}}`
	ss, err := Read(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if h := ss[0].Request.Header; h.Get("X-Tab") != "a\tb" || h.Get("X-Utf8") != "café" {
		t.Errorf("headers %v", h)
	}
}

// TestDecodeStreams: Decode hands over each entry as soon as it is read, before the rest of
// the document arrives (one entry in memory at a time), and passes fn's error through.
func TestDecodeStreams(t *testing.T) {
	doc := string(export(t, fixtures()[:3]))
	cut := strings.Index(doc, `"entries": [`) + len(`"entries": [`)
	// The first entry ends where the second begins: find it by decoding the whole list.
	whole, err := ReadAll(strings.NewReader(doc), DefaultLimits)
	if err != nil || len(whole.Sessions) != 3 {
		t.Fatal(len(whole.Sessions), err)
	}
	pr, pw := io.Pipe()
	got := make(chan *session.Session, 3)
	done := make(chan error, 1)
	go func() {
		_, err := Decode(pr, DefaultLimits, func(s *session.Session, _ session.ID) error {
			got <- s
			return nil
		})
		done <- err
	}()
	// Write everything except the end of the document, then wait for the entries.
	rest := strings.LastIndex(doc, "]")
	if _, err := io.WriteString(pw, doc[:cut]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(pw, doc[cut:rest]); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the third may wait for the decoder to see what follows it
		if s := <-got; s.Request.URL != whole.Sessions[i].Request.URL {
			t.Fatalf("entry %d: %s", i, s.Request.URL)
		}
	}
	io.WriteString(pw, doc[rest:])
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d more entries", len(got))
	}
	stop := errors.New("stop here")
	n := 0
	_, err = Decode(strings.NewReader(doc), DefaultLimits, func(*session.Session, session.ID) error {
		n++
		return stop
	})
	if err != stop || n != 1 {
		t.Errorf("fn error: %v after %d entries", err, n)
	}
}
