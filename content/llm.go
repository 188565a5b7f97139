package content

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"inspector/engine/session"
)

// LLMCall is what an LLM API exchange says: provider, model, tokens, tool calls and the
// text the model produced (joined across a stream). It reads the shapes of OpenAI (chat
// completions and responses), Anthropic (messages) and Gemini (generateContent and
// streamGenerateContent), streamed (SSE) or not.
type LLMCall struct {
	Provider string `json:"provider"` // openai, anthropic, gemini
	API      string `json:"api"`      // chat.completions, responses, messages, generateContent
	Model    string `json:"model,omitempty"`
	Streamed bool   `json:"streamed,omitempty"`
	// InputTokens and OutputTokens are the usage the response reported; HasUsage is false
	// when it reported none (a stream without usage, an error).
	InputTokens  int64         `json:"input_tokens,omitempty"`
	OutputTokens int64         `json:"output_tokens,omitempty"`
	HasUsage     bool          `json:"has_usage,omitempty"`
	ToolCalls    []LLMToolCall `json:"tool_calls,omitempty"`
	Text         string        `json:"text,omitempty"`
	Stop         string        `json:"stop,omitempty"` // finish or stop reason
	Messages     int           `json:"messages,omitempty"`
}

// LLMToolCall is one tool (function) call the model asked for.
type LLMToolCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"`
}

// llmAPI names the API of a request path, or "".
func llmAPI(rawURL string) (provider, api, model string) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", "", ""
	}
	p := u.Path
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		return "openai", "chat.completions", ""
	case strings.HasSuffix(p, "/v1/responses") || strings.HasSuffix(p, "/openai/responses"):
		return "openai", "responses", ""
	case strings.HasSuffix(p, "/v1/messages"):
		return "anthropic", "messages", ""
	case strings.Contains(p, "/models/") && (strings.HasSuffix(p, ":generateContent") || strings.HasSuffix(p, ":streamGenerateContent")):
		m := p[strings.LastIndex(p, "/models/")+len("/models/"):]
		m, _, _ = strings.Cut(m, ":")
		return "gemini", "generateContent", m
	}
	return "", "", ""
}

// LLMCallOf reads s as an LLM API call; ok is false when it is not one.
func LLMCallOf(s *session.Session) (c LLMCall, ok bool) {
	if s == nil || s.Request.Method != "POST" {
		return c, false
	}
	provider, api, model := llmAPI(s.Request.URL)
	if provider == "" {
		return c, false
	}
	c = LLMCall{Provider: provider, API: api, Model: model}
	if req, _, _, err := Decode(s.Request.Header, s.Request.Body.Data, DefaultLimit); err == nil {
		var r struct {
			Model    string            `json:"model"`
			Stream   bool              `json:"stream"`
			Messages []json.RawMessage `json:"messages"`
			Contents []json.RawMessage `json:"contents"`
		}
		if json.Unmarshal(req, &r) == nil {
			if r.Model != "" {
				c.Model = r.Model
			}
			c.Streamed = r.Stream
			c.Messages = len(r.Messages) + len(r.Contents)
		}
	}
	if s.Response == nil {
		return c, true
	}
	body, _, _, err := Decode(s.Response.Header, s.Response.Body.Data, DefaultLimit)
	if err != nil {
		return c, true
	}
	if MediaType(s.Response.Header.Get("Content-Type")) == "text/event-stream" || bytes.HasPrefix(bytes.TrimSpace(body), []byte("data:")) {
		c.Streamed = true
		acc := llmAcc{call: &c}
		for _, e := range ParseSSE(body) {
			d := strings.TrimSpace(e.Data)
			if d == "" || d[0] != '{' {
				continue
			}
			acc.event([]byte(d))
		}
		acc.finish()
		return c, true
	}
	acc := llmAcc{call: &c}
	acc.event(body)
	acc.finish()
	return c, true
}

// llmAcc folds response objects (one, or a stream's events) into a call.
type llmAcc struct {
	call  *LLMCall
	text  strings.Builder
	tools []*LLMToolCall
	// index -> tool, for OpenAI streamed tool_calls (arguments come in pieces)
	byIndex map[int]*LLMToolCall
}

func (a *llmAcc) tool(name string) *LLMToolCall {
	t := &LLMToolCall{Name: name}
	a.tools = append(a.tools, t)
	return t
}

func (a *llmAcc) finish() {
	a.call.Text = a.text.String()
	for _, t := range a.tools {
		a.call.ToolCalls = append(a.call.ToolCalls, *t)
	}
}

type llmUsage struct {
	PromptTokens     *int64 `json:"prompt_tokens"`
	CompletionTokens *int64 `json:"completion_tokens"`
	InputTokens      *int64 `json:"input_tokens"`
	OutputTokens     *int64 `json:"output_tokens"`
}

func (a *llmAcc) usage(u *llmUsage) {
	if u == nil {
		return
	}
	for _, p := range []struct {
		v   *int64
		dst *int64
	}{{u.PromptTokens, &a.call.InputTokens}, {u.InputTokens, &a.call.InputTokens},
		{u.CompletionTokens, &a.call.OutputTokens}, {u.OutputTokens, &a.call.OutputTokens}} {
		if p.v != nil {
			*p.dst = *p.v
			a.call.HasUsage = true
		}
	}
}

// event reads one JSON object of any of the shapes.
func (a *llmAcc) event(b []byte) {
	var m struct {
		Model   string    `json:"model"`
		Type    string    `json:"type"`
		Usage   *llmUsage `json:"usage"`
		Choices []struct {
			Index   int `json:"index"`
			Message *struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			Delta *struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					Index    int `json:"index"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
			Text         *string `json:"text"`
			FinishReason string  `json:"finish_reason"`
		} `json:"choices"`
		// OpenAI responses
		Output   []llmRespItem   `json:"output"`
		Delta    json.RawMessage `json:"delta"`
		Item     *llmRespItem    `json:"item"`
		Response *struct {
			Model  string        `json:"model"`
			Usage  *llmUsage     `json:"usage"`
			Output []llmRespItem `json:"output"`
			Status string        `json:"status"`
		} `json:"response"`
		// Anthropic
		Content    []llmBlock `json:"content"`
		StopReason string     `json:"stop_reason"`
		Message    *struct {
			Model string    `json:"model"`
			Usage *llmUsage `json:"usage"`
		} `json:"message"`
		ContentBlock *llmBlock `json:"content_block"`
		// Gemini
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text         *string `json:"text"`
					FunctionCall *struct {
						Name string          `json:"name"`
						Args json.RawMessage `json:"args"`
					} `json:"functionCall"`
				} `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
		UsageMetadata *struct {
			PromptTokenCount     *int64 `json:"promptTokenCount"`
			CandidatesTokenCount *int64 `json:"candidatesTokenCount"`
		} `json:"usageMetadata"`
		ModelVersion string `json:"modelVersion"`
	}
	if json.Unmarshal(b, &m) != nil {
		return
	}
	c := a.call
	if m.Model != "" {
		c.Model = m.Model
	}
	a.usage(m.Usage)
	// OpenAI chat completions, whole or streamed.
	for _, ch := range m.Choices {
		if ch.FinishReason != "" {
			c.Stop = ch.FinishReason
		}
		if ch.Text != nil {
			a.text.WriteString(*ch.Text)
		}
		if ch.Message != nil {
			if ch.Message.Content != nil {
				a.text.WriteString(*ch.Message.Content)
			}
			for _, tc := range ch.Message.ToolCalls {
				a.tool(tc.Function.Name).Arguments = tc.Function.Arguments
			}
		}
		if ch.Delta != nil {
			if ch.Delta.Content != nil {
				a.text.WriteString(*ch.Delta.Content)
			}
			for _, tc := range ch.Delta.ToolCalls {
				if a.byIndex == nil {
					a.byIndex = map[int]*LLMToolCall{}
				}
				t := a.byIndex[tc.Index]
				if t == nil {
					t = a.tool(tc.Function.Name)
					a.byIndex[tc.Index] = t
				}
				t.Arguments += tc.Function.Arguments
			}
		}
	}
	// OpenAI responses: a whole response, or stream events.
	for _, it := range m.Output {
		a.respItem(it)
	}
	switch m.Type {
	case "response.output_text.delta":
		var d string
		if json.Unmarshal(m.Delta, &d) == nil {
			a.text.WriteString(d)
		}
	case "response.output_item.done":
		if m.Item != nil && m.Item.Type == "function_call" {
			a.respItem(*m.Item)
		}
	case "response.completed", "response.incomplete", "response.failed":
		if m.Response != nil {
			if m.Response.Model != "" {
				c.Model = m.Response.Model
			}
			a.usage(m.Response.Usage)
			c.Stop = m.Response.Status
		}
	case "message_start": // Anthropic stream
		if m.Message != nil {
			if m.Message.Model != "" {
				c.Model = m.Message.Model
			}
			a.usage(m.Message.Usage)
		}
	case "content_block_start":
		if m.ContentBlock != nil && m.ContentBlock.Type == "tool_use" {
			a.tool(m.ContentBlock.Name)
		}
	case "content_block_delta":
		var d struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
		}
		if json.Unmarshal(m.Delta, &d) == nil {
			switch d.Type {
			case "text_delta":
				a.text.WriteString(d.Text)
			case "input_json_delta":
				if n := len(a.tools); n > 0 {
					a.tools[n-1].Arguments += d.PartialJSON
				}
			}
		}
	case "message_delta":
		var d struct {
			StopReason string `json:"stop_reason"`
		}
		if json.Unmarshal(m.Delta, &d) == nil && d.StopReason != "" {
			c.Stop = d.StopReason
		}
	}
	// Anthropic, whole.
	for _, bl := range m.Content {
		switch bl.Type {
		case "text":
			a.text.WriteString(bl.Text)
		case "tool_use":
			a.tool(bl.Name).Arguments = string(bl.Input)
		}
	}
	if m.StopReason != "" {
		c.Stop = m.StopReason
	}
	// Gemini, whole or one chunk of a stream.
	for _, cand := range m.Candidates {
		for _, p := range cand.Content.Parts {
			if p.Text != nil {
				a.text.WriteString(*p.Text)
			}
			if p.FunctionCall != nil {
				a.tool(p.FunctionCall.Name).Arguments = string(p.FunctionCall.Args)
			}
		}
		if cand.FinishReason != "" {
			c.Stop = cand.FinishReason
		}
	}
	if u := m.UsageMetadata; u != nil {
		if u.PromptTokenCount != nil {
			c.InputTokens, c.HasUsage = *u.PromptTokenCount, true
		}
		if u.CandidatesTokenCount != nil {
			c.OutputTokens, c.HasUsage = *u.CandidatesTokenCount, true
		}
	}
	if m.ModelVersion != "" && c.Model == "" {
		c.Model = m.ModelVersion
	}
}

type llmRespItem struct {
	Type      string `json:"type"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

func (a *llmAcc) respItem(it llmRespItem) {
	switch it.Type {
	case "message":
		for _, c := range it.Content {
			if c.Type == "output_text" {
				a.text.WriteString(c.Text)
			}
		}
	case "function_call":
		a.tool(it.Name).Arguments = it.Arguments
	}
}

type llmBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// KindLLM is the kind of the LLM call view.
const KindLLM Kind = "llm"

// llmView is the session's LLM call as a view: a table of what it says, then the text.
func llmView(c LLMCall) View {
	rows := [][2]string{{"provider", c.Provider + " (" + c.API + ")"}, {"model", c.Model}}
	if c.HasUsage {
		rows = append(rows, [2]string{"tokens", fmt.Sprintf("%d in, %d out", c.InputTokens, c.OutputTokens)})
	} else {
		rows = append(rows, [2]string{"tokens", "not reported"})
	}
	if c.Streamed {
		rows = append(rows, [2]string{"streamed", "yes"})
	}
	if c.Messages > 0 {
		rows = append(rows, [2]string{"messages sent", fmt.Sprint(c.Messages)})
	}
	if c.Stop != "" {
		rows = append(rows, [2]string{"stop", c.Stop})
	}
	for _, t := range c.ToolCalls {
		rows = append(rows, [2]string{"tool call", t.Name + "(" + t.Arguments + ")"})
	}
	return View{Name: "LLM", Kind: KindLLM, Rows: rows, Text: c.Text}
}
