package content

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
)

const demoProto = `syntax = "proto3";
package demo.v1;
import "google/protobuf/timestamp.proto";
message HelloRequest { string name = 1; repeated int32 nums = 2; google.protobuf.Timestamp at = 3; }
message HelloReply { string message = 1; }
service Greeter {
  rpc SayHello(HelloRequest) returns (HelloReply);
  rpc Stream(HelloRequest) returns (stream HelloReply);
}
`

func writeProtos(t *testing.T) string {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "demo", "v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "demo", "v1", "demo.proto"), []byte(demoProto), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func helloRequest(name string) []byte {
	b := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), name)
	var packed []byte
	packed = protowire.AppendVarint(protowire.AppendVarint(packed, 1), 2)
	return protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), packed)
}

func TestLoadProtos(t *testing.T) {
	dir := writeProtos(t)
	// A broken file beside the good one: reported by name, the good one still loads.
	os.WriteFile(filepath.Join(dir, "broken.proto"), []byte("syntax = \"proto3\"; message {"), 0o644)
	p, err := LoadProtos([]string{dir})
	if err == nil || !strings.Contains(err.Error(), "broken.proto") {
		t.Errorf("broken file not reported: %v", err)
	}
	m, ok := p.Method("/demo.v1.Greeter/SayHello")
	if !ok || m.Input().FullName() != "demo.v1.HelloRequest" || m.Output().FullName() != "demo.v1.HelloReply" {
		t.Fatalf("method %v %v", m, ok)
	}
	js, err := p.MessageJSON(m.Input(), helloRequest("ann"))
	if err != nil || !strings.Contains(js, `"name":`) || !strings.Contains(js, `"ann"`) {
		t.Errorf("json %q %v", js, err)
	}
	// JSON → wire for breakpoint edits.
	wire, err := p.EncodeJSON(m.Input(), `{"name":"bob","nums":[1,2]}`)
	if err != nil || !bytes.Equal(wire, helloRequest("bob")) {
		t.Errorf("encode %x %v", wire, err)
	}
	if _, err := p.EncodeJSON(m.Input(), `{"nope":1}`); err == nil {
		t.Error("unknown JSON field accepted")
	}

	// The same schema as a descriptor set (protoc -o).
	fd, _ := p.Message("demo.v1.HelloRequest")
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		protodesc.ToFileDescriptorProto(fd.ParentFile().Imports().Get(0).FileDescriptor),
		protodesc.ToFileDescriptorProto(fd.ParentFile())}}
	b, _ := proto.Marshal(set)
	setPath := filepath.Join(t.TempDir(), "demo.protoset")
	os.WriteFile(setPath, b, 0o644)
	p2, err := LoadProtos([]string{setPath})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p2.Method("/demo.v1.Greeter/Stream"); !ok {
		t.Error("descriptor set: method not found")
	}
	// Bad paths are errors, not panics.
	bad := filepath.Join(t.TempDir(), "x.pb")
	os.WriteFile(bad, []byte("not a descriptor set \xff"), 0o644)
	if _, err := LoadProtos([]string{bad, "/nonexistent/protos"}); err == nil || !strings.Contains(err.Error(), "x.pb") || !strings.Contains(err.Error(), "nonexistent") {
		t.Errorf("bad paths: %v", err)
	}
	var nilP *Protos
	if _, ok := nilP.Method("/a/b"); ok {
		t.Error("nil Protos found a method")
	}
}

func viewNamed(vs []View, name string) *View {
	for i := range vs {
		if vs[i].Name == name {
			return &vs[i]
		}
	}
	return nil
}

func TestViewsGRPC(t *testing.T) {
	p, err := LoadProtos([]string{writeProtos(t)})
	if err != nil {
		t.Fatal(err)
	}
	body := append(frame(0, helloRequest("ann")), frame(1, gz(helloRequest("bob")))...)
	h := http.Header{"Content-Type": {"application/grpc"}, "Grpc-Encoding": {"gzip"}}
	opts := Options{Request: true, URL: "https://h/demo.v1.Greeter/SayHello"}
	vs := Views(h, body, opts)
	m := viewNamed(vs, "Messages")
	if m == nil || !strings.Contains(m.Text, `1: "ann"`) || !strings.Contains(m.Text, `1: "bob"`) || !strings.Contains(m.Note, "2 messages") {
		t.Fatalf("schemaless: %+v", vs)
	}
	opts.Protos = p
	m = viewNamed(Views(h, body, opts), "Messages")
	if m == nil || !strings.Contains(m.Text, `"ann"`) || !strings.Contains(m.Text, `"name":`) || m.Lang != "json" || !strings.Contains(m.Note, "demo.v1.HelloRequest") {
		t.Fatalf("schema: %+v", m)
	}
	// Response with trailers.
	opts.Request = false
	opts.Trailer = http.Header{"Grpc-Status": {"7"}, "Grpc-Message": {"go away"}}
	reply := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "hi ann")
	vs = Views(http.Header{"Content-Type": {"application/grpc+proto"}}, frame(0, reply), opts)
	if m := viewNamed(vs, "Messages"); m == nil || !strings.Contains(m.Text, `"message":`) {
		t.Errorf("reply %+v", vs)
	}
	if s := viewNamed(vs, "Status"); s == nil || !strings.Contains(s.Text, "7 PERMISSION_DENIED") || !strings.Contains(s.Text, "go away") {
		t.Errorf("status %+v", vs)
	}
	// grpc-web-text with its trailer frame inside the body.
	web := frame(0, reply)
	web = append(web, frame(0x80, []byte("grpc-status: 0\r\n"))...)
	txt := []byte(b64(web))
	vs = Views(http.Header{"Content-Type": {"application/grpc-web-text"}}, txt, Options{URL: "/demo.v1.Greeter/SayHello"})
	if m := viewNamed(vs, "Messages"); m == nil || !strings.Contains(m.Text, `1: "hi ann"`) {
		t.Errorf("web-text %+v", vs)
	}
	if s := viewNamed(vs, "Status"); s == nil || !strings.Contains(s.Text, "0 OK") {
		t.Errorf("web-text status %+v", vs)
	}
	// Connect streaming JSON with an end-of-stream error.
	cb := append(frame(0, []byte(`{"message":"x"}`)), frame(2, []byte(`{"error":{"code":"not_found","message":"gone"}}`))...)
	vs = Views(http.Header{"Content-Type": {"application/connect+json"}}, cb, Options{})
	if e := viewNamed(vs, "End of stream"); e == nil || e.Note != "error not_found: gone" || viewNamed(vs, "Messages").Lang != "json" {
		t.Errorf("connect %+v", vs)
	}
	// Plain protobuf, no schema.
	vs = Views(http.Header{"Content-Type": {"application/x-protobuf"}}, helloRequest("z"), Options{})
	if vs[0].Name != "Protobuf" || !strings.Contains(vs[0].Text, "2: [1, 2]  // packed varints") {
		t.Errorf("protobuf %+v", vs)
	}
	// A broken frame stream says so and still lists what came before.
	vs = Views(http.Header{"Content-Type": {"application/grpc"}}, append(frame(0, reply), 9, 9), Options{})
	if m := viewNamed(vs, "Messages"); m == nil || !strings.Contains(m.Note, "stray bytes") || !strings.Contains(m.Text, "hi ann") {
		t.Errorf("broken %+v", vs)
	}
}

func TestViewsBodies(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	j := makeJWT(`{"alg":"HS256"}`, `{"exp":`+itoa(now.Add(-3*time.Hour).Unix())+`}`)
	h := http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"br"}, "Authorization": {"Bearer " + j}}
	vs := Views(h, br([]byte(`{"query":"query Me { me { id } }","variables":{"x":1}}`)), Options{Request: true, Now: now})
	if g := viewNamed(vs, "GraphQL"); g == nil || !strings.HasPrefix(g.Text, "# query Me\n") || g.Lang != "graphql" || !strings.Contains(g.Note, "decoded from br") {
		t.Errorf("graphql %+v", vs)
	}
	if v := viewNamed(vs, "Variables"); v == nil || !strings.Contains(v.Text, `"x": 1`) {
		t.Errorf("variables %+v", vs)
	}
	jw := viewNamed(vs, "JWT (Authorization)")
	if jw == nil || !strings.Contains(jw.Note, "expired 3 h ago") || !json.Valid([]byte(jw.Text)) {
		t.Errorf("jwt %+v", jw)
	}
	// SSE with an LLM stream.
	sse := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n"
	vs = Views(http.Header{"Content-Type": {"text/event-stream"}, "Content-Encoding": {"zstd"}}, zst([]byte(sse)), Options{})
	if e := viewNamed(vs, "Events"); e == nil || !strings.Contains(e.Text, `"content": "Hi"`) || !strings.Contains(e.Note, "2 events") {
		t.Errorf("events %+v", vs)
	}
	if l := viewNamed(vs, "LLM text"); l == nil || l.Text != "Hi" || l.Partial {
		t.Errorf("llm %+v", vs)
	}
	// Charset conversion is noted.
	vs = Views(http.Header{"Content-Type": {"text/html; charset=iso-8859-1"}}, []byte("<p>caf\xe9</p>"), Options{})
	if vs[0].Name != "HTML" || vs[0].Text != "<p>café</p>" || vs[0].Lang != "html" || !strings.Contains(vs[0].Note, "windows-1252") {
		t.Errorf("html %+v", vs[0])
	}
	// Damaged encoding: a hex view with the error, the body not lost.
	vs = Views(http.Header{"Content-Encoding": {"br"}}, []byte("not brotli"), Options{})
	if vs[0].Name != "Hex" || !strings.Contains(vs[0].Note, "cannot decode") || !strings.Contains(vs[0].Text, "6e 6f 74") {
		t.Errorf("damaged %+v", vs[0])
	}
	// Form as a table; multipart parts.
	vs = Views(http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, []byte("a=1&b=two+words"), Options{Request: true})
	if vs[0].Name != "Form" || len(vs[0].Rows) != 2 || vs[0].Rows[1][1] != "two words" {
		t.Errorf("form %+v", vs[0])
	}
	// GraphQL GET: the request has no body.
	vs = Views(http.Header{}, nil, Options{Request: true, URL: "https://x/graphql?query=%7Bme%7Bid%7D%7D"})
	if len(vs) == 0 || vs[0].Name != "GraphQL" {
		t.Errorf("GET %+v", vs)
	}
	// Text cap.
	vs = Views(http.Header{"Content-Type": {"text/plain"}}, bytes.Repeat([]byte("x"), 5000), Options{TextCap: 1000})
	if len(vs[0].Text) != 1000 || !vs[0].Partial || !strings.Contains(vs[0].Note, "4000 more bytes") {
		t.Errorf("cap %+v", vs[0].Note)
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func TestIndentJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1}`:                "{\n  \"a\": 1\n}",
		"{\"a\":1}\n{\"b\":2}\n": "{\n  \"a\": 1\n}\n{\n  \"b\": 2\n}",
		`[1][2]`:                 "[\n  1\n]\n[\n  2\n]",
	} {
		if got, ok := IndentJSON(in); !ok || got != want {
			t.Errorf("IndentJSON(%q) = %q %v", in, got, ok)
		}
	}
	for _, bad := range []string{`{"a":`, `{"a":1} x`, `plain`, ``} {
		if got, ok := IndentJSON(bad); ok || got != bad {
			t.Errorf("IndentJSON(%q) = %q %v", bad, got, ok)
		}
	}
}

func TestViewsBinaryProtobufGuess(t *testing.T) {
	vs := Views(http.Header{"Content-Type": {"application/octet-stream"}}, helloRequest("guess"), Options{})
	if len(vs) != 2 || vs[0].Name != "Hex" || vs[1].Name != "Protobuf (guess)" || !strings.Contains(vs[1].Text, `1: "guess"`) {
		t.Errorf("%+v", vs)
	}
	vs = Views(http.Header{"Content-Type": {"application/octet-stream"}}, []byte{0xff, 0xff, 0xff}, Options{})
	if len(vs) != 1 {
		t.Errorf("random bytes guessed as protobuf: %+v", vs)
	}
}

func TestViewsGRPCStopsDecodingPastTheTextCap(t *testing.T) {
	var body []byte
	for range 200 {
		body = append(body, frame(0, helloRequest(strings.Repeat("x", 100)))...)
	}
	vs := Views(http.Header{"Content-Type": {"application/grpc"}}, body, Options{TextCap: 2000})
	m := viewNamed(vs, "Messages")
	if m == nil || !m.Partial || !strings.Contains(m.Note, "200 messages") || !strings.Contains(m.Note, "more messages not decoded") || len(m.Text) > 2000 {
		t.Errorf("%+v", m.Note)
	}
}

func TestRegisterViewer(t *testing.T) {
	old := viewers[KindCSS]
	t.Cleanup(func() { Register(KindCSS, old) })
	Register(KindCSS, func(in *Input) []View {
		s, _ := in.Text()
		return []View{{Name: "Custom CSS", Kind: in.Kind, Text: strings.ToUpper(s), Note: in.Note}}
	})
	vs := Views(http.Header{"Content-Type": {"text/css"}, "Content-Encoding": {"br"}}, br([]byte("a{}")), Options{})
	if len(vs) != 1 || vs[0].Name != "Custom CSS" || vs[0].Text != "A{}" || vs[0].Note != "decoded from br" {
		t.Errorf("%+v", vs)
	}
}
