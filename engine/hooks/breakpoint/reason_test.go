package breakpoint_test

import (
	"net/http"
	"strings"
	"testing"

	et "inspector/engine/enginetest"
	"inspector/engine/hooks/breakpoint"
)

// An edited or answered status gets its own reason phrase, or the one the user typed, in
// what the client receives and in the recorded session; it never keeps the origin's ("418
// OK" was the bug).
func TestEditedStatusGetsItsOwnReason(t *testing.T) {
	o, p, m, changed := setup(t, et.OriginH1Plain)
	if _, err := m.Add(breakpoint.Breakpoint{Filter: "path:/echo", Phase: breakpoint.PhaseResponse, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(breakpoint.Breakpoint{Filter: "path:/answer", Phase: breakpoint.PhaseRequest, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	c := p.Client(t, et.ClientH1)
	for _, tc := range []struct {
		name       string
		path       string
		decide     func(paused breakpoint.Paused) error
		wantStatus int
		wantReason string // recorded in the session
		wantWire   string // the client's resp.Status (net/http writes the standard phrase)
	}{
		{"continue edited", "/echo", func(pp breakpoint.Paused) error {
			return m.Resume(pp.ID, &breakpoint.Edits{Status: 418})
		}, 418, "I'm a teapot", "418 I'm a teapot"},
		{"continue edited with a typed reason", "/echo", func(pp breakpoint.Paused) error {
			return m.Resume(pp.ID, &breakpoint.Edits{Status: 418, Reason: "Short and Stout"})
		}, 418, "Short and Stout", "418 I'm a teapot"},
		{"reason only", "/echo", func(pp breakpoint.Paused) error {
			return m.Resume(pp.ID, &breakpoint.Edits{Reason: "Fine"})
		}, 200, "Fine", "200 OK"},
		{"respond at the response", "/echo", func(pp breakpoint.Paused) error {
			return m.Respond(pp.ID, breakpoint.Answer{Status: 503, Body: "down"})
		}, 503, "Service Unavailable", "503 Service Unavailable"},
		{"respond at the request", "/answer", func(pp breakpoint.Paused) error {
			return m.Respond(pp.ID, breakpoint.Answer{Status: 418, Body: "tea"})
		}, 418, "I'm a teapot", "418 I'm a teapot"},
		{"respond at the request with a typed reason", "/answer", func(pp breakpoint.Paused) error {
			return m.Respond(pp.ID, breakpoint.Answer{Status: 299, Reason: "Custom", Body: "x"})
		}, 299, "Custom", "299 status code 299"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", o.URL+tc.path, nil)
			held := do(c, req)
			if err := tc.decide(waitPaused(t, m, changed, 1)[0]); err != nil {
				t.Fatal(err)
			}
			r := <-held
			if r.err != nil || r.resp.StatusCode != tc.wantStatus || r.resp.Status != tc.wantWire {
				t.Fatalf("client got %+v, %v", r.resp, r.err)
			}
			s := p.Next(t)
			if s.Status() != tc.wantStatus || s.Response.Reason != tc.wantReason {
				t.Errorf("session records %d %q, want %d %q", s.Status(), s.Response.Reason, tc.wantStatus, tc.wantReason)
			}
		})
	}
}

func TestReasonBadInput(t *testing.T) {
	for _, e := range []*breakpoint.Edits{{Reason: "two\r\nlines"}, {Reason: "nul\x00"}} {
		if err := e.Validate(breakpoint.PhaseResponse); err == nil || !strings.Contains(err.Error(), "reason") {
			t.Errorf("%q: %v", e.Reason, err)
		}
	}
	if err := (&breakpoint.Edits{Reason: "x"}).Validate(breakpoint.PhaseRequest); err == nil {
		t.Error("a reason at the request stage was accepted")
	}
	m, _ := breakpoint.New("")
	if err := m.Respond(1, breakpoint.Answer{Status: 200, Reason: "a\nb"}); err == nil || !strings.Contains(err.Error(), "reason") {
		t.Errorf("respond with a bad reason: %v", err)
	}
}
