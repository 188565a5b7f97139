package session

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestSplitURL(t *testing.T) {
	for _, c := range []struct{ in, host, path string }{
		{"https://example.com/a/b?x=1", "example.com", "/a/b?x=1"},
		{"https://example.com", "example.com", "/"},
		{"http://example.com:8080?q", "example.com", "/?q"},
		{"https://[::1]:8443/p", "::1", "/p"},
		{"https://user:pw@example.com/p#frag", "example.com", "/p"},
		{"example.com:443", "example.com", ""},
		{"https://127.0.0.1:1234/%20x", "127.0.0.1", "/%20x"},
	} {
		h, p := splitURL(c.in)
		if h != c.host || p != c.path {
			t.Errorf("%q: got %q %q, want %q %q", c.in, h, p, c.host, c.path)
		}
	}
}

func TestSummarizeAndClone(t *testing.T) {
	start := time.Now()
	s := &Session{
		ID: 7, Started: start,
		Client:   Conn{Proto: HTTP2, TLS: &TLSInfo{Version: "TLS 1.3"}},
		Request:  Request{Method: "POST", URL: "https://api.example/v1?x=1", Header: http.Header{"A": {"b"}}, Body: Body{Data: []byte("hi"), Size: 2}},
		Response: &Response{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: Body{Size: 10}},
		Timings:  Timings{RequestHeaders: start, ResponseDone: start.Add(1500 * time.Microsecond)},
		Error:    &Error{Phase: PhaseBody, Side: SideUpstream, Message: "cut"},
	}
	sum := s.Summarize()
	if sum.Host != "api.example" || sum.Path != "/v1?x=1" || sum.Status != 201 || sum.ReqBytes != 2 || sum.RespBytes != 10 ||
		sum.DurationMS != 1.5 || !sum.TLS || sum.ContentType != "application/json" || sum.ErrorPhase != PhaseBody {
		t.Errorf("summary %+v", sum)
	}
	c := s.Clone()
	c.Request.Header.Set("A", "changed")
	c.Request.Body.Data[0] = 'X'
	c.Response.Header.Set("Content-Type", "x")
	if s.Request.Header.Get("A") != "b" || s.Request.Body.Data[0] != 'h' || s.Response.Header.Get("Content-Type") != "application/json" {
		t.Error("Clone shares state with the original")
	}
	if !errors.Is(s.Error, &Error{Phase: PhaseBody}) || errors.Is(s.Error, &Error{Side: SideClient}) {
		t.Error("Error.Is mismatch")
	}
}
