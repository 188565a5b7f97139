package main

import (
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"inspector/content"
	"inspector/store"
)

// The control API serves a session's decoded views at /api/v1/sessions/{id}/content,
// behind the same token, with the instance's --proto-path schemas.
func TestControlContentRoute(t *testing.T) {
	dir, st := storeWithGreeterCall(t)

	_, stop, err := startControl(dir, "127.0.0.1:8080", st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	api, err := newControlClient(dir)
	if err != nil {
		t.Fatal(err)
	}
	var c showContent
	if err := api.do("GET", "/api/v1/sessions/1/content", nil, &c); err != nil || c.Operation != "demo.v1.Greeter/SayHello" ||
		len(c.Response) == 0 || !strings.Contains(c.Response[0].Text, `1: "hi"`) {
		t.Fatalf("content: %v %+v", err, c)
	}
	status := func(p string, api *controlClient) int {
		var ce *controlError
		if err := api.do("GET", p, nil, &c); errors.As(err, &ce) {
			return ce.Status
		}
		return 200
	}
	for p, want := range map[string]int{"/api/v1/sessions/9/content": 404, "/api/v1/sessions/x/content": 400} {
		if code := status(p, api); code != want {
			t.Errorf("%s: %d, want %d", p, code, want)
		}
	}
	if code := status("/api/v1/sessions/1/content", &controlClient{base: api.base, hc: api.hc}); code != 401 {
		t.Errorf("no token: %d", code)
	}

	// With schemas (the handler as the instance mounts it, with a loader of its own).
	protoDir := greeterProtoDir(t)
	p, err := content.LoadProtos([]string{protoDir})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	mux := http.NewServeMux()
	mux.Handle(contentPattern, contentHandler(st, func() *content.Protos { return p }))
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/sessions/1/content", nil))
	c = showContent{}
	if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil || !strings.Contains(c.Response[0].Text, `"message":`) {
		t.Errorf("with schema: %v %s", err, rec.Body)
	}
}

// --proto-path on the instance: repeatable, comma lists, an empty value is an error.
func TestInstanceProtoPathFlag(t *testing.T) {
	old := instanceProtoPath
	t.Cleanup(func() { instanceProtoPath = old })
	instanceProtoPath = nil
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	protoPathFlag(fs)
	if err := fs.Parse([]string{"--proto-path", "a,b", "--proto-path=c"}); err != nil || strings.Join(instanceProtoPath, " ") != "a b c" {
		t.Errorf("%v %q", err, instanceProtoPath)
	}
	if err := fs.Parse([]string{"--proto-path", ","}); err == nil {
		t.Error("empty --proto-path accepted")
	}
}

// `inspector show` through a running instance uses the instance's --proto-path.
func TestShowThroughInstanceUsesItsProtos(t *testing.T) {
	dir, st := storeWithGreeterCall(t)
	protoDir := greeterProtoDir(t)
	oldPath := instanceProtoPath
	instanceProtoPath, instanceProtosOnce, instanceProtosVal = []string{protoDir}, sync.Once{}, nil
	t.Cleanup(func() { instanceProtoPath, instanceProtosOnce, instanceProtosVal = oldPath, sync.Once{}, nil })

	_, stop, err := startControl(dir, "127.0.0.1:8080", st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	code, out, errOut := runCLI(t, "show", "1", "--json", "--data-dir="+dir)
	var got struct {
		Content showContent `json:"content"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got.Content.Protos) != 1 ||
		!strings.Contains(got.Content.Response[0].Text, `"message":`) {
		t.Fatalf("show via instance: %d %v %s %s", code, err, out, errOut)
	}
}

// PUT /api/v1/protos loads schemas into the running instance: the content route then names
// the gRPC message's fields; a folder that does not exist is a 400 and changes nothing.
func TestControlProtosRoute(t *testing.T) {
	oldPath := instanceProtoPath
	instanceProtoPath, instanceProtosOnce, instanceProtosVal = nil, sync.Once{}, nil
	t.Setenv("INSPECTOR_PROTO_PATH", "")
	t.Cleanup(func() { setInstanceProtoPath(nil); instanceProtoPath, instanceProtosOnce = oldPath, sync.Once{} })
	dir, st := storeWithGreeterCall(t)
	protoDir := greeterProtoDir(t)
	_, stop, err := startControl(dir, "127.0.0.1:8080", st, protoHandlers(dir, func() []string { return []string{protoDir} }))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	api, err := newControlClient(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ps protoState
	if err := api.do("GET", "/api/v1/protos", nil, &ps); err != nil || len(ps.Paths) != 0 || len(ps.Files) != 0 {
		t.Fatalf("initial: %v %+v", err, ps)
	}
	var c showContent
	api.do("GET", "/api/v1/sessions/1/content", nil, &c)
	if len(c.Response) == 0 || !strings.Contains(c.Response[0].Text, `1: "hi"`) {
		t.Fatalf("without schemas: %+v", c.Response)
	}
	var ce *controlError
	if err := api.call("PUT", "/api/v1/protos", map[string]any{"paths": []string{filepath.Join(protoDir, "missing")}}, &ps); !errors.As(err, &ce) || ce.Status != 400 {
		t.Fatalf("missing folder: %v", err)
	}
	if err := api.call("PUT", "/api/v1/protos", map[string]any{"paths": []string{protoDir}}, &ps); err != nil || len(ps.Files) != 1 || ps.Error != "" {
		t.Fatalf("load: %v %+v", err, ps)
	}
	c = showContent{}
	api.do("GET", "/api/v1/sessions/1/content", nil, &c)
	if len(c.Response) == 0 || !strings.Contains(c.Response[0].Text, `"message":`) {
		t.Fatalf("with schemas loaded through the API: %+v", c.Response)
	}
}

// storeWithGreeterCall is a store in a fresh data directory holding one gRPC call
// (/demo.v1.Greeter/SayHello answered with message field 1 = "hi").
func storeWithGreeterCall(t *testing.T) (string, *store.Store) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := mkSession(st.NextID(), 200, grpcFrame(protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "hi")))
	s.Request.Method, s.Request.URL = "POST", "https://rpc.example/demo.v1.Greeter/SayHello"
	s.Request.Header = http.Header{"Content-Type": {"application/grpc"}}
	s.Response.Header = http.Header{"Content-Type": {"application/grpc"}}
	st.Put(s)
	st.Flush()
	return dir, st
}

// greeterProtoDir is a folder with the .proto of that call's service.
func greeterProtoDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	os.WriteFile(filepath.Join(d, "g.proto"), []byte(`syntax = "proto3"; package demo.v1;
message Req { string name = 1; } message Reply { string message = 1; }
service Greeter { rpc SayHello(Req) returns (Reply); }`), 0o644)
	return d
}

// PUT /api/v1/protos reads schemas only under a folder the user chose (map_local's allowed
// folders, or --proto-path at start), never in the data directory or a folder holding
// it, symlinks resolved: a 403 that says so, and the schemas stay as they were.
func TestControlProtosRouteRefusesOtherPaths(t *testing.T) {
	oldPath := instanceProtoPath
	instanceProtoPath, instanceProtosOnce, instanceProtosVal = nil, sync.Once{}, nil
	t.Setenv("INSPECTOR_PROTO_PATH", "")
	t.Cleanup(func() { setInstanceProtoPath(nil); instanceProtoPath, instanceProtosOnce = oldPath, sync.Once{} })
	dir, st := storeWithGreeterCall(t)
	if err := os.MkdirAll(filepath.Join(dir, "ca"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "ca", "key.proto"), []byte("syntax = \"proto3\"; package secret; message K { string pem = 1; }\n"), 0o600)
	allowed := t.TempDir()
	inAllowed := filepath.Join(allowed, "schemas")
	os.Mkdir(inAllowed, 0o700)
	os.WriteFile(filepath.Join(inAllowed, "ok.proto"), []byte("syntax = \"proto3\"; package ok; message M { string s = 1; }\n"), 0o600)
	link := filepath.Join(allowed, "ca-link")
	if err := os.Symlink(filepath.Join(dir, "ca"), link); err != nil {
		t.Fatal(err)
	}
	other, err := os.MkdirTemp("", "protos-other") // exists, outside every allowed folder
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	os.WriteFile(filepath.Join(other, "o.proto"), []byte("syntax = \"proto3\"; package o; message O { string s = 1; }\n"), 0o600)
	_, stop, err := startControl(dir, "127.0.0.1:8080", st, protoHandlers(dir, func() []string { return []string{allowed, filepath.Dir(dir)} }))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	api, err := newControlClient(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{other, "not under a folder you chose"},
		{filepath.Join(dir, "ca"), "data directory"},
		{filepath.Join(dir, "ca", "key.proto"), "data directory"},
		{link, "data directory"},
		{filepath.Dir(dir), "data directory"}, // allowed, but it holds the data directory
	} {
		var ps protoState
		var ce *controlError
		err := api.call("PUT", "/api/v1/protos", map[string]any{"paths": []string{c.path}}, &ps)
		if !errors.As(err, &ce) || ce.Status != 403 || !strings.Contains(ce.Msg, c.want) {
			t.Errorf("PUT %s: %v, want 403 with %q", c.path, err, c.want)
		}
	}
	var ps protoState
	if err := api.do("GET", "/api/v1/protos", nil, &ps); err != nil || len(ps.Paths) != 0 || len(ps.Files) != 0 {
		t.Fatalf("after refusals: %v %+v", err, ps)
	}
	if err := api.call("PUT", "/api/v1/protos", map[string]any{"paths": []string{inAllowed}}, &ps); err != nil || len(ps.Files) != 1 {
		t.Fatalf("a folder under an allowed one: %v %+v", err, ps)
	}
}
