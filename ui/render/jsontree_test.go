package render

import (
	"errors"
	"strings"
	"testing"
)

func TestParseJSONTree(t *testing.T) {
	tr, err := ParseJSONTree([]byte(`{"users":[{"id":1,"name":"A \"q\""}],"ok":true,"x":null}`))
	if err != nil {
		t.Fatal(err)
	}
	root := tr.Nodes[0]
	if root.Kind != 'o' || root.Value != "{3}" || len(root.Children) != 3 {
		t.Fatalf("root = %+v", root)
	}
	users := tr.Nodes[root.Children[0]]
	if users.Key != "users" || users.Kind != 'a' || users.Value != "[1]" {
		t.Fatalf("users = %+v", users)
	}
	first := tr.Nodes[users.Children[0]]
	name := tr.Nodes[first.Children[1]]
	if first.Key != "[0]" || name.Key != "name" || name.Value != `"A \"q\""` {
		t.Fatalf("first = %+v, name = %+v", first, name)
	}
	if ok := tr.Nodes[root.Children[1]]; ok.Kind != 'b' || ok.Value != "true" {
		t.Fatalf("ok = %+v", ok)
	}
	for _, bad := range []string{`{"a":}`, `[1,2`, `{"a":1} x`} {
		if _, err := ParseJSONTree([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	big := "[" + strings.Repeat("1,", MaxTreeNodes) + "1]"
	if _, err := ParseJSONTree([]byte(big)); !errors.Is(err, ErrTreeTooLarge) {
		t.Fatalf("big: %v", err)
	}
}
