package filter

import (
	"net/http"
	"testing"

	"inspector/engine/session"
)

func TestLLMTerms(t *testing.T) {
	s := &session.Session{Request: session.Request{Method: "POST", URL: "https://api.anthropic.com/v1/messages",
		Header: http.Header{"Content-Type": {"application/json"}}, Body: session.Body{Data: []byte(`{"model":"claude-sonnet-4-5"}`)}}}
	body := `{"model":"claude-sonnet-4-5","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":700,"output_tokens":400}}`
	s.Response = &session.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: session.Body{Data: []byte(body)}}
	other := &session.Session{Request: session.Request{Method: "GET", URL: "https://h/x"}, Response: &session.Response{Status: 200}}
	for expr, want := range map[string][2]bool{
		"llm:yes": {true, false}, "llm:no": {false, true}, "llm:claude*": {true, false}, "llm:anthropic": {true, false},
		"llm:gpt*": {false, false}, "tokens:>1000": {true, false}, "tokens:<1000": {false, false}, "tokens:1100": {true, false},
	} {
		e := MustParse(expr)
		if got := [2]bool{e.Match(s), e.Match(other)}; got != want || !e.NeedsSession() {
			t.Errorf("%s: %v, want %v", expr, got, want)
		}
	}
	if _, err := Parse("tokens:lots"); err == nil {
		t.Error("tokens:lots parsed")
	}
}
