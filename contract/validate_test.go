package contract_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"inspector/contract"
	"inspector/engine/session"
)

func TestValidateTrafficAgainstItsContract(t *testing.T) {
	t.Parallel()
	sessions := runSpecTraffic(t, 8)
	in := contract.NewInferrer()
	for _, s := range sessions {
		in.Add(s)
	}
	doc := in.Document(contract.Options{})
	// Through a file, as a user would import it.
	path := filepath.Join(t.TempDir(), "api.yaml")
	var buf bytes.Buffer
	if err := contract.WriteYAML(&buf, doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := contract.LoadDocument(path)
	if err != nil {
		t.Fatalf("the written YAML does not load: %v", err)
	}
	v, err := contract.NewValidator(loaded)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sessions {
		if vd := v.Check(s); !vd.Conforms {
			t.Errorf("%s %s does not conform to its own contract: %v", s.Request.Method, s.Request.URL, vd.Problems)
		}
	}

	// A response whose field changed type, a missing required field, an unknown path, a
	// status never seen.
	var user *session.Session
	for _, s := range sessions {
		if strings.HasSuffix(s.Request.URL, "/users/me") {
			user = s
		}
	}
	bad := user.Clone()
	bad.Response.Body.Data = bytes.Replace(bad.Response.Body.Data, []byte(`"id":`), []byte(`"id":"x`), 1)
	bad.Response.Body.Data = bytes.Replace(bad.Response.Body.Data, []byte(`"x`), []byte(`"x",`), 1)
	bad.Response.Body.Data = fixID(bad.Response.Body.Data)
	bad.Response.Body.Size = int64(len(bad.Response.Body.Data))
	vd := v.Check(bad)
	if vd.Conforms || vd.Operation != "GET /users/me" || !strings.Contains(strings.Join(vd.Problems, "\n"), "id") {
		t.Errorf("a string id: %+v (body %s)", vd, bad.Response.Body.Data)
	}
	unknown := user.Clone()
	unknown.Request.URL = strings.Replace(unknown.Request.URL, "/users/me", "/nowhere/else", 1)
	if vd := v.Check(unknown); vd.Conforms || !strings.Contains(vd.Problems[0], "no operation") {
		t.Errorf("unknown path: %+v", vd)
	}
	teapot := user.Clone()
	teapot.Response.Status = 418
	if vd := v.Check(teapot); vd.Conforms {
		t.Errorf("an undocumented status conforms: %+v", vd)
	}
}

// fixID turns {"id":"x",12345,...} back into valid JSON with id a string.
func fixID(b []byte) []byte {
	i := bytes.Index(b, []byte(`"id":"x",`))
	if i < 0 {
		return b
	}
	j := i + len(`"id":"x",`)
	k := j
	for k < len(b) && b[k] >= '0' && b[k] <= '9' {
		k++
	}
	return append(append(append([]byte{}, b[:j-1]...), ','), b[k+1:]...)
}

func TestLoadDocumentErrorsNameFileAndLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := map[string]string{
		"syntax.yaml":  "openapi: 3.1.0\ninfo:\n  title: x\n  version: 1\npaths:\n  /a:\n    get: [unclosed\n",
		"invalid.yaml": "openapi: 3.1.0\ninfo:\n  title: x\n  version: '1'\npaths:\n  /a:\n    get:\n      responses:\n        '200':\n          content: {}\n",
	}
	for name, text := range cases {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o600)
		_, err := contract.LoadDocument(p)
		var de *contract.DocError
		if !errors.As(err, &de) {
			t.Errorf("%s: %v, want a DocError", name, err)
			continue
		}
		if de.File != p || de.Line == 0 || de.Reason == "" {
			t.Errorf("%s: %+v, want file, line and reason", name, de)
		}
		t.Logf("%s: %v", name, err)
	}
}

func TestDriftBetweenRecordings(t *testing.T) {
	t.Parallel()
	mk := func(bodies ...string) *contract.Inferrer {
		in := contract.NewInferrer()
		for i, b := range bodies {
			s := &session.Session{Request: session.Request{Method: "GET", URL: "https://api.example/items/" + string(rune('1'+i))}}
			s.Response = &session.Response{Status: 200, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: session.Body{Data: []byte(b), Size: int64(len(b))}}
			in.Add(s)
		}
		return in
	}
	a := mk(`{"id": 1, "name": "a", "old": true}`, `{"id": 2, "name": "b", "old": false}`).Document(contract.Options{})
	b := mk(`{"id": "1", "name": "a", "new": 1}`).Document(contract.Options{})
	got := map[string]bool{}
	for _, d := range contract.CompareDocuments(a, b) {
		got[d.String()] = true
	}
	for _, want := range []string{
		"type changed: GET /items/{itemId} 200 id (integer → string)",
		"field added: GET /items/{itemId} 200 new",
		"field removed: GET /items/{itemId} 200 old",
	} {
		if !got[want] {
			t.Errorf("drift lacks %q; got %v", want, got)
		}
	}
}
