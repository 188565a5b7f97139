package filter

import (
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"inspector/engine/session"
)

func TestTextClauses(t *testing.T) {
	for _, c := range []struct {
		expr string
		want [][]string
	}{
		{"", nil},
		{"status:4xx", nil},
		{"body:Token", [][]string{{"token"}}},
		{"text:abc body:defg status:2xx", [][]string{{"abc"}, {"defg"}}},
		{"body:abc OR text:xyz", [][]string{{"abc", "xyz"}}},
		{"body:abc OR status:500", nil}, // one side has no needle
		{"-body:abc", nil},              // a negation narrows nothing
		{"(body:ab body:abcdef) OR body:q", [][]string{{"abcdef", "q"}}},
		{"host:x (body:a OR body:b)", [][]string{{"a", "b"}}},
	} {
		if got := MustParse(c.expr).TextClauses(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("TextClauses(%q) = %q, want %q", c.expr, got, c.want)
		}
	}
}

func TestSearchableBodyCap(t *testing.T) {
	h := http.Header{"Content-Type": {"text/plain"}}
	data := append(bytes.Repeat([]byte("a"), MaxSearchBody), "NEEDLE"...)
	if got := SearchableBody(data, h); len(got) != MaxSearchBody {
		t.Fatalf("searchable %d bytes, want the cap %d", len(got), MaxSearchBody)
	}
	s := &session.Session{ID: 1, Request: session.Request{Method: "POST", URL: "http://x/", Header: h, Body: session.Body{Data: data}}}
	if MustParse("body:needle").Match(s) || MustParse("text:needle").Match(s) {
		t.Fatal("a needle beyond MaxSearchBody matched")
	}
	data = append(bytes.Repeat([]byte("a"), MaxSearchBody-6), "NEEDLE"...)
	s.Request.Body.Data = data
	if !MustParse("body:needle").Match(s) || !MustParse("text:needle").Match(s) {
		t.Fatal("a needle at the end of the searchable part did not match")
	}
	// Messages share one cap.
	s.Request.Body.Data = nil
	s.Messages = []session.Message{{Opcode: 1, Data: bytes.Repeat([]byte("b"), MaxSearchBody)}, {Opcode: 1, Data: []byte("later")}}
	if MustParse("body:later").Match(s) {
		t.Fatal("a message beyond the cap matched")
	}
}

func TestFindSnippet(t *testing.T) {
	body := strings.Repeat("x", 100) + "the NEEDLE here" + strings.Repeat("y", 100)
	s := &session.Session{ID: 1, Request: session.Request{Method: "GET", URL: "http://h/path",
		Header: http.Header{"X-A": {"alpha"}}},
		Response: &session.Response{Status: 200, Header: http.Header{"Content-Type": {"text/plain"}}, Body: session.Body{Data: []byte(body)}}}
	sn, ok := FindSnippet(s, "needle", 20)
	if !ok || sn.Part != "response body" || !strings.EqualFold(sn.Text[sn.Start:sn.End], "needle") || len(sn.Text) > 20+6 {
		t.Fatalf("snippet %+v, %v", sn, ok)
	}
	if sn, ok := FindSnippet(s, "x-a: al", 10); !ok || sn.Part != "header" || sn.Text[sn.Start:sn.End] != "X-A: al" {
		t.Fatalf("header snippet %+v, %v", sn, ok)
	}
	if sn, ok := FindSnippet(s, "PATH", 10); !ok || sn.Part != "url" || sn.Text[sn.Start:sn.End] != "path" {
		t.Fatalf("url snippet %+v, %v", sn, ok)
	}
	if _, ok := FindSnippet(s, "absent", 10); ok {
		t.Fatal("found an absent needle")
	}
	// Agrees with text: on every needle tried.
	for _, nd := range []string{"needle", "alpha", "http://h", "zzz", "ere yyy"} {
		_, ok := FindSnippet(s, nd, 10)
		if m := MustParse(`text:"` + nd + `"`).Match(s); m != ok {
			t.Fatalf("%q: snippet %v, text: %v", nd, ok, m)
		}
	}
}
