package codegen

import (
	"net/http"
	"strings"
	"testing"

	"inspector/engine/session"
)

func TestCleanURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://bücher.example/ä?q=ü#frag":        "https://xn--bcher-kva.example/%C3%A4?q=%C3%BC",
		"HTTP://[::1]:8080/a b":                    "http://[::1]:8080/a%20b",
		"http://us er:p@ss@h/":                     "http://us%20er:p%40ss@h/",
		"http://h/%7e%41%2f%2F%zz?x=%27'\"<>{}|^`": "http://h/~A%2F%2F%25zz?x=%27%27%22%3C%3E%7B%7D%7C%5E%60",
		"http://h/!$&()*+,;=:@/?a=b&c":             "http://h/!$&()*+,;=:@/?a=b&c",
		"-K/etc/passwd":                            "-K/etc/passwd",
		"relative path":                            "relative%20path",
	} {
		if got := cleanURL(in); got != want {
			t.Errorf("cleanURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPrepare(t *testing.T) {
	p := Prepare(&session.Request{Method: "G E\x00T", URL: "http://h/", Header: http.Header{
		"Connection": {"close, X-Hop"}, "X-Hop": {"1"}, "Keep-Alive": {"5"}, "Host": {"other"}, "Content-Length": {"9"},
		":authority": {"h"}, "Bad Name": {"x"}, "Cookie": {"a=1", "b=2"}, "X-Repeat": {"1", "2"},
		"X-Ctl": {" \ta\r\nb\x00c\x7fd\te \t"}, "X-Latin1": {"caf\xe9"},
	}})
	var got []string
	for _, h := range p.Headers {
		got = append(got, h.Name+"="+h.Value)
	}
	want := "Cookie=a=1; b=2|X-Ctl=a  bcd\te|X-Latin1=caf\xe9|X-Repeat=1|X-Repeat=2"
	if p.Method != "GET" || strings.Join(got, "|") != want {
		t.Errorf("method %q headers %q\nwant %q", p.Method, strings.Join(got, "|"), want)
	}
	if m := Prepare(&session.Request{Method: "\x00 "}).Method; m != "GET" {
		t.Errorf("empty method became %q", m)
	}
	if _, err := Generate("cobol", &session.Request{}); err == nil || !strings.Contains(err.Error(), "curl, wget") {
		t.Errorf("unknown language: %v", err)
	}
}
