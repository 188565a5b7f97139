package engine_test

import (
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"

	et "inspector/engine/enginetest"
)

// interimOrigin answers /hints with 103 Early Hints (a Link field) before its 200, and
// /upload by reading the body (net/http sends 100 Continue then, when the request
// expects it) before its 200.
func interimOrigin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hints":
			w.Header().Set("Link", "</style.css>; rel=preload; as=style")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Del("Link")
			w.Header().Set("X-Final", "yes")
			_, _ = io.WriteString(w, "hinted")
		case "/upload":
			b, _ := io.ReadAll(r.Body)
			_, _ = io.WriteString(w, "got "+string(b))
		}
	})
}

// 103 Early Hints and 100 Continue reach the client through Inspector, on HTTP/1.1 and
// HTTP/2 client legs (and the upstream legs they pick), and the session records each with
// its fields and time.
func TestInterimResponses(t *testing.T) {
	t.Parallel()
	o := et.StartOrigin(t, et.OriginH2TLS, interimOrigin())
	p := et.StartProxy(t, nil, o)
	for _, kind := range []string{"h1", "h2"} {
		c := p.Client(t, kind)
		c.Transport.(*http.Transport).ExpectContinueTimeout = time.Minute // only a real 100 sends the body
		var mu sync.Mutex
		var got []string
		trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			mu.Lock()
			got = append(got, http.StatusText(code)+" "+h.Get("Link"))
			mu.Unlock()
			return nil
		}}
		do := func(req *http.Request) (*http.Response, string) {
			t.Helper()
			resp, err := c.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
			if err != nil {
				t.Fatalf("%s %s: %v", kind, req.URL.Path, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp, string(b)
		}
		req, _ := http.NewRequest("GET", o.URL+"/hints", nil)
		resp, body := do(req)
		s := p.Next(t)
		if body != "hinted" || resp.Header.Get("Link") != "" || resp.Header.Get("X-Final") != "yes" {
			t.Fatalf("%s: final response %v %q", kind, resp.Header, body)
		}
		if len(got) != 1 || got[0] != "Early Hints </style.css>; rel=preload; as=style" {
			t.Fatalf("%s: the client got 1xx %q, want one 103 with its Link", kind, got)
		}
		if len(s.Interim) != 1 || s.Interim[0].Status != 103 || s.Interim[0].Header.Get("Link") != "</style.css>; rel=preload; as=style" ||
			s.Interim[0].At.Before(s.Timings.RequestHeaders) || (!s.Timings.FirstByte.IsZero() && s.Interim[0].At.Before(s.Timings.FirstByte)) {
			t.Fatalf("%s: session interim %+v (timings %+v)", kind, s.Interim, s.Timings)
		}
		got = nil
		req, _ = http.NewRequest("POST", o.URL+"/upload", strings.NewReader("payload"))
		req.Header.Set("Expect", "100-continue")
		_, body = do(req) // without a 100 the body would wait past the client's timeout
		s = p.Next(t)
		if body != "got payload" {
			t.Fatalf("%s: upload answered %q", kind, body)
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], "Continue") {
			t.Fatalf("%s: the client got 1xx %q, want one 100", kind, got)
		}
		switch {
		case kind == "h1" && (len(s.Interim) != 1 || s.Interim[0].Status != 100):
			t.Fatalf("%s: session interim %+v, want the origin's 100", kind, s.Interim)
		case kind == "h2" && len(s.Interim) != 0:
			// The HTTP/2 server (x/net) takes the client's Expect out of the request and
			// answers 100 itself at the first read of the body: the origin is not asked,
			// and sends no 100 to record.
			t.Fatalf("%s: session interim %+v, want none", kind, s.Interim)
		}
	}
}
