package filter

import (
	"bytes"
	"compress/gzip"
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

// MatchWhole reads past MaxSearchBody: a needle in the rest of a body, compressed or
// not, and in messages past the shared cap; the rest of the expression still applies.
func TestMatchWholeReadsTheRest(t *testing.T) {
	h := http.Header{"Content-Type": {"text/plain"}}
	data := append(bytes.Repeat([]byte("a"), MaxSearchBody+1000), "NEEDLE"...)
	s := &session.Session{ID: 1, Request: session.Request{Method: "POST", URL: "http://x/", Header: h, Body: session.Body{Data: data}}}
	if !PastSearchBound(s) {
		t.Fatal("a body longer than MaxSearchBody is not past the bound")
	}
	for _, c := range []struct {
		expr  string
		match bool
	}{
		{"body:needle", true},
		{"text:needle", true},
		{"body:needle method:GET", false},
		{"-body:needle", false},
		{"body:absent OR body:needle", true},
		{"body:absent", false},
	} {
		e := MustParse(c.expr)
		if got := e.MatchWhole(s); got != c.match {
			t.Errorf("MatchWhole(%q) = %v, want %v", c.expr, got, c.match)
		}
	}
	if MustParse("body:needle").Match(s) {
		t.Fatal("Match read past MaxSearchBody")
	}
	// A gzip body whose decoded text passes the bound.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	s.Request.Header = http.Header{"Content-Type": {"text/plain"}, "Content-Encoding": {"gzip"}}
	s.Request.Body.Data = gz.Bytes()
	if len(gz.Bytes()) > MaxSearchBody || !PastSearchBound(s) || !MustParse("body:needle").MatchWhole(s) {
		t.Fatalf("gzip body (%d bytes): past %v, whole match %v", gz.Len(), PastSearchBound(s), MustParse("body:needle").MatchWhole(s))
	}
	// Messages past the shared cap.
	s.Request.Body.Data = nil
	s.Messages = []session.Message{{Opcode: 1, Data: bytes.Repeat([]byte("b"), MaxSearchBody)}, {Opcode: 1, Data: []byte("later")}}
	if !PastSearchBound(s) || !MustParse("body:later").MatchWhole(s) || MustParse("body:later").Match(s) {
		t.Fatal("a message past the cap: want MatchWhole only")
	}
	// Within the bound nothing is past it.
	s.Messages = nil
	s.Request.Body.Data = []byte("short NEEDLE")
	s.Request.Header = h
	if PastSearchBound(s) {
		t.Fatal("a short body is past the bound")
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
