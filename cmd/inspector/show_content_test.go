package main

import (
	bin "encoding/binary"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"inspector/content"
	"inspector/engine/session"
	"inspector/store"
)

func grpcFrame(msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	bin.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// `inspector show --json` carries the decoded views of content (issue 15).
func TestShowJSONContent(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat(`{"msg":"from brotli"}`, 10)
	brBody, _ := content.Encode([]string{"br"}, []byte(text))
	s1 := mkSession(st.NextID(), 200, brBody)
	s1.Response.Header.Set("Content-Encoding", "br")
	st.Put(s1)

	req := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "ann")
	s2 := mkSession(st.NextID(), 200, grpcFrame(protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "hi ann")))
	s2.Request.Method, s2.Request.URL = "POST", "https://rpc.example/demo.v1.Greeter/SayHello"
	s2.Request.Header = http.Header{"Content-Type": {"application/grpc"}}
	s2.Request.Body = session.Body{Data: grpcFrame(req), Size: 8}
	s2.Response.Header = http.Header{"Content-Type": {"application/grpc"}}
	s2.Response.Trailer = http.Header{"Grpc-Status": {"0"}}
	st.Put(s2)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	dd := "--data-dir=" + dir

	code, out, errOut := runCLI(t, "show", "1", "--json", dd)
	var got struct {
		session.Session
		Content showContent `json:"content"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("show 1 --json: %d %v %q %s", code, err, out, errOut)
	}
	if got.ID != 1 || len(got.Content.Response) == 0 || got.Content.Response[0].Name != "JSON" ||
		!strings.Contains(got.Content.Response[0].Text, `"msg": "from brotli"`) || !strings.Contains(got.Content.Response[0].Note, "decoded from br") {
		t.Fatalf("br content: %+v", got.Content)
	}
	// gRPC without and with a .proto.
	_, out, _ = runCLI(t, "show", "2", "--json", dd)
	got.Content = showContent{}
	json.Unmarshal([]byte(out), &got)
	if got.Content.Operation != "demo.v1.Greeter/SayHello" || !strings.Contains(got.Content.Request[0].Text, `1: "ann"`) {
		t.Fatalf("grpc schemaless: %+v", got.Content)
	}
	protoDir := t.TempDir()
	os.WriteFile(filepath.Join(protoDir, "demo.proto"), []byte(`syntax = "proto3"; package demo.v1;
message HelloRequest { string name = 1; }
message HelloReply { string message = 1; }
service Greeter { rpc SayHello(HelloRequest) returns (HelloReply); }`), 0o644)
	code, out, errOut = runCLI(t, "show", "2", "--json", "--proto-path", protoDir, dd)
	got.Content = showContent{}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("--proto-path: %d %v %s", code, err, errOut)
	}
	if len(got.Content.Protos) != 1 || !strings.Contains(got.Content.Request[0].Text, `"name":`) || !strings.Contains(got.Content.Response[0].Text, `"message":`) {
		t.Fatalf("grpc with proto: %+v", got.Content)
	}
	var status *content.View
	for i := range got.Content.Response {
		if got.Content.Response[i].Name == "Status" {
			status = &got.Content.Response[i]
		}
	}
	if status == nil || !strings.Contains(status.Text, "0 OK") {
		t.Errorf("status view: %+v", got.Content.Response)
	}
	// The text form lists the views too.
	_, out, _ = runCLI(t, "show", "1", dd)
	if !strings.Contains(out, "[response view: JSON; decoded from br]") || !strings.Contains(out, `"msg": "from brotli"`) {
		t.Errorf("text form:\n%s", out)
	}
	// A bad proto path is reported and show still works; a missing value is a usage error.
	code, out, errOut = runCLI(t, "show", "1", "--json", "--proto-path="+filepath.Join(protoDir, "nope"), dd)
	if code != 0 || !strings.Contains(errOut, "nope") || !strings.Contains(out, `"content"`) {
		t.Errorf("bad proto path: %d %q", code, errOut)
	}
	if code, _, errOut = runCLI(t, "show", "1", dd, "--proto-path"); code != 2 || !strings.Contains(errOut, "proto-path") {
		t.Errorf("missing value: %d %q", code, errOut)
	}
}
