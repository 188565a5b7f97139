package filter

import (
	"testing"

	"inspector/engine/session"
)

func TestContractTerm(t *testing.T) {
	s := &session.Session{Request: session.Request{Method: "GET", URL: "https://h/x"}}
	bad := MustParse("contract:violation")
	good := MustParse("contract:ok")
	if bad.Match(s) || good.Match(s) {
		t.Fatal("contract: terms match without a contract loaded")
	}
	SetContract(func(s *session.Session) (bool, bool) {
		return s.Request.URL != "https://h/none", s.Request.URL == "https://h/ok"
	})
	defer SetContract(nil)
	if !bad.Match(s) || good.Match(s) || !bad.NeedsSession() {
		t.Error("a violating session")
	}
	s.Request.URL = "https://h/ok"
	if bad.Match(s) || !good.Match(s) {
		t.Error("a conforming session")
	}
	s.Request.URL = "https://h/none"
	if bad.Match(s) || good.Match(s) {
		t.Error("a session the contract does not cover")
	}
	if _, err := Parse("contract:maybe"); err == nil {
		t.Error("contract:maybe parsed")
	}
}
