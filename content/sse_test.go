package content

import (
	"testing"
)

func TestParseSSE(t *testing.T) {
	body := "\xEF\xBB\xBF: keep-alive\n" +
		"id: 1\nevent: greet\ndata: hello\ndata:  world\n\n" +
		"retry: 3000\r\ndata:x\r\n\r\n" +
		"retry: 12a\nunknown: y\ndata\n\n" +
		"data: open"
	evs := ParseSSE([]byte(body))
	if len(evs) != 4 {
		t.Fatalf("%d events: %+v", len(evs), evs)
	}
	e := evs[0]
	if e.ID != "1" || e.Event != "greet" || e.Data != "hello\n world" || e.Retry != -1 || len(e.Comments) != 1 || e.Comments[0] != "keep-alive" {
		t.Errorf("event 1: %+v", e)
	}
	if evs[1].Retry != 3000 || evs[1].Data != "x" {
		t.Errorf("event 2 (CRLF): %+v", evs[1])
	}
	if evs[2].Retry != -1 || evs[2].Data != "" {
		t.Errorf("event 3 (bad retry, bare data): %+v", evs[2])
	}
	if !evs[3].Partial || evs[3].Data != "open" {
		t.Errorf("event 4 (no blank line): %+v", evs[3])
	}
	if len(ParseSSE([]byte("\n\n\n"))) != 0 {
		t.Error("blank lines made events")
	}
}

func TestLLMText(t *testing.T) {
	openai := "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo!\"}}]}\n\n" +
		"data: [DONE]\n\n"
	text, done, ok := LLMText(ParseSSE([]byte(openai)))
	if text != "Hello!" || !done || !ok {
		t.Errorf("openai: %q %v %v", text, done, ok)
	}
	anthropic := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"content\":[]}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Bonjour\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" monde\"}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	text, done, ok = LLMText(ParseSSE([]byte(anthropic)))
	if text != "Bonjour monde" || !done || !ok {
		t.Errorf("anthropic: %q %v %v", text, done, ok)
	}
	open := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n"
	if text, done, ok = LLMText(ParseSSE([]byte(open))); text != "par" || done || !ok {
		t.Errorf("open stream: %q %v %v", text, done, ok)
	}
	if _, _, ok = LLMText(ParseSSE([]byte("data: {\"tick\":1}\n\n"))); ok {
		t.Error("plain JSON events taken for an LLM stream")
	}
}
