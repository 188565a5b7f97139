package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"inspector/content"
	"inspector/contract"
	"inspector/engine/session"
	"inspector/filter"
	"inspector/store"
)

func TestOpenAPICommands(t *testing.T) {
	dir := fillStore(t, 200, 200, 404, 200, 201, 200)
	dd := "--data-dir=" + dir
	api := filepath.Join(t.TempDir(), "api.yaml")
	code, out, errOut := runCLI(t, "openapi", dd, "-o", api)
	if code != 0 {
		t.Fatalf("openapi: %d %q %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "6 sessions, 1 operations over 1 hosts") {
		t.Errorf("summary %q", errOut)
	}
	doc, err := contract.LoadDocument(api)
	if err != nil {
		t.Fatal(err)
	}
	if op := doc.Paths.Value("/item/{itemId}"); op == nil || op.Get == nil {
		t.Fatalf("paths %v", doc.Paths.InMatchingOrder())
	}
	// The same traffic conforms, but for session 2, whose JSON body is binary (inference
	// skipped it); other traffic added later does not.
	if code, out, errOut := runCLI(t, "openapi", "check", dd, "--spec", api); code != 1 ||
		!strings.HasPrefix(out, "#2 GET") || strings.Count(out, "\n") != 1 || !strings.Contains(errOut, "5 conform, 1 violate") {
		t.Fatalf("check against its own contract: %d %q %q", code, out, errOut)
	}
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bad := mkSession(st.NextID(), 200, []byte(`{"n":"seven"}`))
	st.Put(bad)
	st.Put(mkSession(st.NextID(), 418, []byte(`{"n":1}`)))
	st.Close()
	code, out, errOut = runCLI(t, "openapi", "check", dd, "--spec", api)
	if code != 1 || !strings.Contains(out, "field n") || !strings.Contains(out, "418") || !strings.Contains(errOut, "3 violate") {
		t.Errorf("check with violations: %d\n%s\n%s", code, out, errOut)
	}
	// JSON output to stdout, drift between the two recordings.
	api2 := filepath.Join(t.TempDir(), "api2.json")
	if code, _, errOut := runCLI(t, "openapi", dd, "-o", api2); code != 0 {
		t.Fatal(errOut)
	}
	if b, _ := os.ReadFile(api2); !strings.HasPrefix(string(b), "{") {
		t.Errorf("-o x.json wrote %.40q", b)
	}
	code, out, _ = runCLI(t, "openapi", "diff", api, api2)
	if code != 1 || !strings.Contains(out, "type changed: GET /item/{itemId} 200 n (integer → integer|string)") {
		t.Errorf("drift: %d %q", code, out)
	}
	// Bad input: a missing or invalid document.
	if code, _, errOut := runCLI(t, "openapi", "check", dd); code != 2 || !strings.Contains(errOut, "--spec") {
		t.Errorf("no --spec: %d %q", code, errOut)
	}
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	os.WriteFile(broken, []byte("openapi: 3.1.0\ninfo: [\n"), 0o600)
	if code, _, errOut := runCLI(t, "openapi", "check", dd, "--spec", broken); code != 1 || !strings.Contains(errOut, "broken.yaml:") {
		t.Errorf("broken spec: %d %q", code, errOut)
	}
}

func TestProtoCommandOutputDecodesTheTraffic(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		var req, resp []byte
		req = protowire.AppendTag(req, 1, protowire.BytesType)
		req = protowire.AppendString(req, fmt.Sprintf("name %d", i))
		req = protowire.AppendTag(req, 2, protowire.VarintType)
		req = protowire.AppendVarint(req, uint64(i))
		resp = protowire.AppendTag(resp, 1, protowire.BytesType)
		resp = protowire.AppendString(resp, "hello")
		s := mkSession(st.NextID(), 200, grpcFrame(resp))
		s.Request.Method, s.Request.URL = "POST", "https://127.0.0.1:9/demo.v1.Greeter/SayHello"
		s.Request.Header = http.Header{"Content-Type": {"application/grpc"}}
		s.Request.Body = session.Body{Data: grpcFrame(req), Size: int64(len(req) + 5)}
		s.Response.Header = http.Header{"Content-Type": {"application/grpc"}, "Grpc-Status": {"0"}}
		st.Put(s)
	}
	st.Put(mkSession(st.NextID(), 200, []byte(`{"n":1}`))) // not gRPC: ignored
	st.Close()
	out := t.TempDir()
	code, stdoutText, errOut := runCLI(t, "proto", "--data-dir", dir, "-o", out)
	if code != 0 || !strings.Contains(stdoutText, filepath.Join("demo", "v1", "inferred.proto")) || !strings.Contains(errOut, "5 gRPC sessions, 1 methods") {
		t.Fatalf("proto: %d %q %q", code, stdoutText, errOut)
	}
	// The files load as the instance's --proto-path would, and name the method's types.
	protos, err := content.LoadProtos([]string{out})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := protos.Method("/demo.v1.Greeter/SayHello")
	if !ok || m.Input().Fields().ByNumber(1).Kind().String() != "string" || m.Input().Fields().ByNumber(2) == nil {
		t.Fatalf("method %v %v", m, ok)
	}
	if code, _, errOut := runCLI(t, "proto", "--data-dir", dir); code != 2 || !strings.Contains(errOut, "-o DIR") {
		t.Errorf("no -o: %d %q", code, errOut)
	}
}

func TestSessionsFilterByContract(t *testing.T) {
	dir := fillStore(t, 200, 200, 200)
	dd := "--data-dir=" + dir
	api := filepath.Join(t.TempDir(), "api.yaml")
	if code, _, errOut := runCLI(t, "openapi", dd, "-o", api); code != 0 {
		t.Fatal(errOut)
	}
	defer filter.SetContract(nil)
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seven := mkSession(st.NextID(), 200, []byte(`{"n":"seven"}`))
	st.Put(seven)
	other := mkSession(st.NextID(), 200, []byte(`{"x":1}`))
	other.Request.URL = "https://elsewhere.example/item/1" // not covered by the contract
	st.Put(other)
	st.Close()
	code, out, errOut := runCLI(t, "sessions", dd, "--contract", api, "--filter", "contract:violation")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// Session 2 has a binary body labelled JSON, seven a string where the contract
	// has an integer; other is to another origin, so neither ok nor a violation.
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "#2 ") || !strings.HasPrefix(lines[1], fmt.Sprintf("#%d ", seven.ID)) {
		t.Fatalf("contract:violation: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "sessions", dd, "--contract", api, "--filter", "contract:ok")
	if n := strings.Count(out, "\n"); code != 0 || n != 2 {
		t.Errorf("contract:ok: %d %q", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("openapi: 3.1.0\n"), 0o600)
	if code, _, errOut := runCLI(t, "sessions", dd, "--contract", bad); code != 2 || !strings.Contains(errOut, "bad.yaml") {
		t.Errorf("bad contract: %d %q", code, errOut)
	}
}

func TestRecordingDiffReportsContractDrift(t *testing.T) {
	a := fillStore(t, 200, 200)
	b := t.TempDir()
	st, err := store.Open(filepath.Join(b, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Put(mkSession(st.NextID(), 200, []byte(`{"n":"one","extra":true}`)))
	st.Close()
	code, out, errOut := runCLI(t, "diff", "--recording", a, b)
	if code != 1 || !strings.Contains(out, "contract drift") ||
		!strings.Contains(out, "field added: GET /item/{itemId} 200 extra") ||
		!strings.Contains(out, "type changed: GET /item/{itemId} 200 n (integer → string)") {
		t.Fatalf("diff: %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "diff", "--recording", a, b, "--json")
	if !strings.Contains(out, `"contract_drift"`) {
		t.Errorf("json: %d %s", code, out)
	}
}
