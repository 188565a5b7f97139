package content

import (
	"net/http"
	"strings"
	"testing"

	"inspector/engine/session"
)

func llmSession(url, reqBody, respType, respBody string) *session.Session {
	s := &session.Session{Request: session.Request{Method: "POST", URL: url,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: session.Body{Data: []byte(reqBody), Size: int64(len(reqBody))}}}
	s.Response = &session.Response{Status: 200, Header: http.Header{"Content-Type": {respType}}, Body: session.Body{Data: []byte(respBody), Size: int64(len(respBody))}}
	return s
}

// Payloads in the shapes of each provider's API reference (OpenAI chat completions and
// responses, Anthropic messages, Gemini generateContent), whole and streamed.
func TestLLMCallShapes(t *testing.T) {
	cases := []struct {
		name                 string
		s                    *session.Session
		provider, model      string
		in, out              int64
		text, tool, toolArgs string
		streamed             bool
	}{
		{"openai chat", llmSession("https://api.openai.com/v1/chat/completions",
			`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, "application/json",
			`{"id":"c1","model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","tool_calls":[{"id":"t1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}}`),
			"openai", "gpt-4o-2024-08-06", 9, 12, "Hello!", "get_weather", `{"city":"Oslo"}`, false},
		{"openai chat streamed", llmSession("https://api.openai.com/v1/chat/completions",
			`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[]}`, "text/event-stream",
			"data: {\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n"+
				"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\n\n"+
				"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\"\"}}]}}]}\n\n"+
				"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":1}\"}}]},\"finish_reason\":\"stop\"}]}\n\n"+
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n"),
			"openai", "gpt-4o", 5, 2, "Hello", "f", `{"a":1}`, true},
		{"openai responses", llmSession("https://api.openai.com/v1/responses",
			`{"model":"gpt-4.1","input":"hi"}`, "application/json",
			`{"id":"r1","model":"gpt-4.1","output":[{"type":"function_call","name":"lookup","arguments":"{}"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}],"usage":{"input_tokens":30,"output_tokens":4,"total_tokens":34}}`),
			"openai", "gpt-4.1", 30, 4, "Done.", "lookup", "{}", false},
		{"anthropic", llmSession("https://api.anthropic.com/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"hi"}]}`, "application/json",
			`{"id":"m1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hi there"},{"type":"tool_use","id":"tu1","name":"search","input":{"q":"x"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":25}}`),
			"anthropic", "claude-sonnet-4-5", 10, 25, "Hi there", "search", `{"q":"x"}`, false},
		{"anthropic streamed", llmSession("https://api.anthropic.com/v1/messages",
			`{"model":"claude-sonnet-4-5","stream":true,"messages":[]}`, "text/event-stream",
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n"+
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n"+
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\n"+
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"name\":\"calc\",\"input\":{}}}\n\n"+
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"n\\\":2}\"}}\n\n"+
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n"+
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
			"anthropic", "claude-sonnet-4-5", 7, 15, "Hello", "calc", `{"n":2}`, true},
		{"gemini", llmSession("https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
			`{"contents":[{"parts":[{"text":"hi"}]}]}`, "application/json",
			`{"candidates":[{"content":{"parts":[{"text":"Hey"},{"functionCall":{"name":"find","args":{"k":1}}}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":8,"totalTokenCount":11},"modelVersion":"gemini-2.5-flash-001"}`),
			"gemini", "gemini-2.5-flash", 3, 8, "Hey", "find", `{"k":1}`, false},
		{"gemini streamed", llmSession("https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
			`{"contents":[]}`, "text/event-stream",
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"A\"}]}}]}\r\n\r\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"B\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":2,\"candidatesTokenCount\":2}}\r\n\r\n"),
			"gemini", "gemini-2.5-flash", 2, 2, "AB", "", "", true},
	}
	for _, c := range cases {
		got, ok := LLMCallOf(c.s)
		if !ok {
			t.Errorf("%s: not an LLM call", c.name)
			continue
		}
		if got.Provider != c.provider || got.Model != c.model || !got.HasUsage || got.InputTokens != c.in || got.OutputTokens != c.out ||
			got.Text != c.text || got.Streamed != c.streamed {
			t.Errorf("%s: %+v", c.name, got)
		}
		if c.tool != "" && (len(got.ToolCalls) != 1 || got.ToolCalls[0].Name != c.tool || got.ToolCalls[0].Arguments != c.toolArgs) {
			t.Errorf("%s: tool calls %+v", c.name, got.ToolCalls)
		}
		_, resp := SessionViews(c.s, Options{})
		if v := resp[len(resp)-1]; v.Name != "LLM" || v.Text != c.text || !strings.Contains(v.Rows[1][1], c.model) {
			t.Errorf("%s: view %+v", c.name, v)
		}
	}
	// Not LLM calls: another path, a GET, a body that is not JSON (still an LLM call by
	// its path, with nothing read).
	if _, ok := LLMCallOf(llmSession("https://api.example/v1/users", `{}`, "application/json", `{}`)); ok {
		t.Error("a plain API call read as an LLM call")
	}
	g := llmSession("https://api.openai.com/v1/chat/completions", "", "application/json", `{}`)
	g.Request.Method = "GET"
	if _, ok := LLMCallOf(g); ok {
		t.Error("a GET read as an LLM call")
	}
	if c, ok := LLMCallOf(llmSession("https://api.openai.com/v1/chat/completions", "garbage", "application/json", "<html>")); !ok || c.HasUsage || c.Text != "" {
		t.Errorf("garbage: %+v %v", c, ok)
	}
}
