package engine

import (
	"net/http"
	"testing"
)

func TestStatusReason(t *testing.T) {
	for _, c := range []struct {
		status string
		code   int
		want   string
	}{
		{"200 OK", 200, "OK"},
		{"404 Not Found", 404, "Not Found"},
		{"200", 200, ""},
		{"", 200, ""},
		{"599 ", 599, ""},
		{"Weird 200", 200, "Weird 200"}, // no code prefix: kept as is
		{"2000 x", 200, "0 x"},
	} {
		if got := statusReason(c.status, c.code); got != c.want {
			t.Errorf("statusReason(%q, %d) = %q, want %q", c.status, c.code, got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { statusReason("200 OK", 200) }); n != 0 {
		t.Errorf("statusReason allocates %v times", n)
	}
}

func TestHookReason(t *testing.T) {
	for _, c := range []struct {
		status string
		code   int
		want   string
	}{
		{"418 I'm a teapot", 418, "I'm a teapot"},
		{"200 OK", 418, "I'm a teapot"}, // code changed, status line not: the code's phrase
		{"418", 418, ""},
		{"", 503, "Service Unavailable"},
		{"299 Custom", 299, "Custom"},
		{"2990 x", 299, ""},
	} {
		if got := hookReason(&http.Response{Status: c.status, StatusCode: c.code}); got != c.want {
			t.Errorf("hookReason(%q, %d) = %q, want %q", c.status, c.code, got, c.want)
		}
	}
}
