package content

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Event is one server-sent event (the WHATWG event-stream format).
type Event struct {
	ID    string `json:"id,omitempty"`
	Event string `json:"event,omitempty"` // "" means "message"
	Data  string `json:"data"`
	// Retry is the reconnection time in milliseconds, -1 when the event set none.
	Retry int `json:"retry"`
	// Comments are the ": …" lines of the event, without the colon.
	Comments []string `json:"comments,omitempty"`
	// Partial: the stream ended (or the capture was cut) before the event's blank line.
	Partial bool `json:"partial,omitempty"`
}

// maxEvents bounds how many events ParseSSE returns.
const maxEvents = 100000

// ParseSSE parses a text/event-stream body into events, following the WHATWG rules:
// lines end in CR, LF or CRLF; "field: value" with one optional space after the colon;
// data lines join with "\n"; an event ends at a blank line; a leading BOM is skipped;
// unknown fields are ignored; retry takes only digits. A last event without its blank
// line is returned with Partial set (the stream was still open or the capture was cut).
func ParseSSE(body []byte) []Event {
	body = bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF"))
	var out []Event
	cur := Event{Retry: -1}
	var data []string
	hasData, any := false, false
	flush := func(partial bool) {
		if !any {
			return
		}
		if hasData || cur.ID != "" || cur.Event != "" || cur.Retry >= 0 || len(cur.Comments) > 0 {
			cur.Data = strings.Join(data, "\n")
			cur.Partial = partial
			out = append(out, cur)
		}
		cur, data, hasData, any = Event{Retry: -1}, nil, false, false
	}
	for len(body) > 0 && len(out) < maxEvents {
		i := bytes.IndexAny(body, "\r\n")
		var line []byte
		if i < 0 {
			line, body = body, nil // cut mid-line: keep what is there
		} else {
			line = body[:i]
			if body[i] == '\r' && i+1 < len(body) && body[i+1] == '\n' {
				body = body[i+2:]
			} else {
				body = body[i+1:]
			}
		}
		if len(line) == 0 {
			flush(false)
			continue
		}
		any = true
		field, value := string(line), ""
		if c := bytes.IndexByte(line, ':'); c >= 0 {
			field, value = string(line[:c]), string(line[c+1:])
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "":
			cur.Comments = append(cur.Comments, value)
		case "data":
			data = append(data, value)
			hasData = true
		case "event":
			cur.Event = value
		case "id":
			if !strings.ContainsRune(value, 0) {
				cur.ID = value
			}
		case "retry":
			if n, err := strconv.Atoi(value); err == nil && n >= 0 && strings.Trim(value, "0123456789") == "" {
				cur.Retry = n
			}
		}
	}
	flush(true)
	return out
}

// LLMText joins the streamed text of an LLM completion stream: OpenAI chat
// (choices[].delta.content), OpenAI completions (choices[].text), OpenAI Responses
// (response.output_text.delta), Anthropic messages (content_block_delta with
// text_delta), Gemini (candidates[].content.parts[].text) and Ollama-style
// ({"response": …} / {"message":{"content":…}}). done says a `data: [DONE]` or a
// message_stop / [finish] event ended the stream; ok is false when no event carried
// streamed text.
func LLMText(events []Event) (text string, done bool, ok bool) {
	var sb strings.Builder
	for _, e := range events {
		d := strings.TrimSpace(e.Data)
		if d == "[DONE]" {
			done = true
			continue
		}
		if e.Event == "message_stop" || e.Event == "response.completed" {
			done = true
		}
		if d == "" || d[0] != '{' {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(d), &m) != nil {
			continue
		}
		if t, found := llmDelta(m); found {
			sb.WriteString(t)
			ok = true
		}
		var typ string
		_ = json.Unmarshal(m["type"], &typ)
		if typ == "message_stop" || typ == "response.completed" {
			done = true
		}
	}
	return sb.String(), done, ok
}

func llmDelta(m map[string]json.RawMessage) (string, bool) {
	var typ string
	_ = json.Unmarshal(m["type"], &typ)
	switch typ {
	case "content_block_delta": // Anthropic
		var d struct {
			Delta struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"delta"`
		}
		if json.Unmarshal(m["delta"], &d.Delta) == nil && d.Delta.Type == "text_delta" {
			return d.Delta.Text, true
		}
		return "", false
	case "response.output_text.delta": // OpenAI Responses API
		var s string
		if json.Unmarshal(m["delta"], &s) == nil {
			return s, true
		}
		return "", false
	}
	if raw, has := m["choices"]; has { // OpenAI chat and completions
		var choices []struct {
			Index int `json:"index"`
			Delta *struct {
				Content *string `json:"content"`
			} `json:"delta"`
			Text *string `json:"text"`
		}
		if json.Unmarshal(raw, &choices) != nil {
			return "", false
		}
		var sb strings.Builder
		found := false
		for _, c := range choices {
			if c.Index != 0 {
				continue // one joined text: the first choice
			}
			if c.Delta != nil && c.Delta.Content != nil {
				sb.WriteString(*c.Delta.Content)
				found = true
			} else if c.Text != nil {
				sb.WriteString(*c.Text)
				found = true
			}
		}
		return sb.String(), found
	}
	if raw, has := m["candidates"]; has { // Gemini
		var cands []struct {
			Content struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"content"`
		}
		if json.Unmarshal(raw, &cands) != nil || len(cands) == 0 {
			return "", false
		}
		var sb strings.Builder
		for _, p := range cands[0].Content.Parts {
			sb.WriteString(p.Text)
		}
		return sb.String(), true
	}
	if raw, has := m["response"]; has { // Ollama generate
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, true
		}
	}
	if raw, has := m["message"]; has { // Ollama chat
		var msg struct {
			Content *string `json:"content"`
		}
		if json.Unmarshal(raw, &msg) == nil && msg.Content != nil {
			return *msg.Content, true
		}
	}
	return "", false
}

func init() {
	Register(KindSSE, func(in *Input) []View { return sseViews(in.Body, in.Partial, in.Note) })
}

func sseViews(dec []byte, partial bool, note string) []View {
	evs := ParseSSE(dec)
	var sb strings.Builder
	open := false
	for i, e := range evs {
		fmt.Fprintf(&sb, "#%d", i+1)
		if e.Event != "" {
			fmt.Fprintf(&sb, " event: %s", e.Event)
		}
		if e.ID != "" {
			fmt.Fprintf(&sb, " id: %s", e.ID)
		}
		if e.Retry >= 0 {
			fmt.Fprintf(&sb, " retry: %d", e.Retry)
		}
		if e.Partial {
			sb.WriteString(" (incomplete)")
			open = true
		}
		sb.WriteByte('\n')
		for _, c := range e.Comments {
			fmt.Fprintf(&sb, ": %s\n", c)
		}
		if p, ok := IndentJSON(e.Data); ok && strings.HasPrefix(strings.TrimSpace(e.Data), "{") || ok && strings.HasPrefix(strings.TrimSpace(e.Data), "[") {
			sb.WriteString(p)
		} else {
			sb.WriteString(e.Data)
		}
		sb.WriteString("\n\n")
	}
	v := View{Name: "Events", Kind: KindSSE, Text: sb.String(), Partial: partial || open,
		Note: joinNote(note, fmt.Sprintf("%d events", len(evs)))}
	out := []View{v}
	if t, done, ok := LLMText(evs); ok {
		n := "streamed text joined"
		if !done {
			n += "; no end marker (stream open or cut)"
		}
		out = append(out, View{Name: "LLM text", Kind: KindSSE, Text: t, Partial: !done, Note: n})
	}
	return out
}
