package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"inspector/content"
)

// schemaSetting keeps real schemas loaded with content.LoadProtos, as the instance does.
type schemaSetting struct {
	paths []string
	p     *content.Protos
	err   error
}

func (s *schemaSetting) State() ([]string, []string, string) {
	msg := ""
	if s.err != nil {
		msg = s.err.Error()
	}
	return s.paths, s.p.Files(), msg
}

func (s *schemaSetting) SetPaths(paths []string) error {
	s.paths, s.p, s.err = paths, nil, nil
	if len(paths) > 0 {
		s.p, s.err = content.LoadProtos(paths)
	}
	return s.err
}

// Capture ▸ Protobuf schemas… loads a folder typed in the dialog, and the selected gRPC
// session's messages are shown with the schema's field names at once; a broken file is
// named in the dialog.
func TestSchemasDialogLoadsAndRedraws(t *testing.T) {
	msg := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "ada")
	g := mkSession(0, "rpc.example", "/demo.v1.Greeter/SayHello", 200, "application/grpc", string(grpcFrame(msg)))
	g.Request.Method = "POST"
	g.Request.Header.Set("Content-Type", "application/grpc")
	g.Request.Body.Data, g.Request.Body.Size = grpcFrame(msg), int64(len(grpcFrame(msg)))
	st := openStore(t, g)
	set := &schemaSetting{}
	u, _ := newTestUI(t, Deps{Store: st, Schemas: set, Protos: func() *content.Protos { return set.p }})
	u.SelectID(1)
	u.detail.req.tabs.SelectIndex(1)
	if got := u.detail.req.body.text.Text(); !strings.Contains(got, `1: "ada"`) {
		t.Fatalf("without schemas: %q", got)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "g.proto"), []byte(`syntax = "proto3"; package demo.v1;
message Req { string name = 1; } message Reply { string message = 1; }
service Greeter { rpc SayHello(Req) returns (Reply); }`), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.proto"), []byte("syntax = \"proto3\"; message {"), 0o644)
	d := u.schemasDialog()
	d.paths.SetText(dir)
	d.apply()
	if !strings.Contains(d.files.Text, "g.proto") || !strings.Contains(d.errs.Text, "broken.proto") {
		t.Fatalf("dialog: files %q, errors %q", d.files.Text, d.errs.Text)
	}
	u.detail.req.tabs.SelectIndex(1)
	if got := strings.Join(strings.Fields(u.detail.req.body.text.Text()), ""); !strings.Contains(got, `"name":"ada"`) {
		t.Fatalf("with the schema loaded: %q", got)
	}
}
