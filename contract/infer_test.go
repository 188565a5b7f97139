package contract

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"inspector/engine/session"
)

func sess(method, url string, status int, ct, body string) *session.Session {
	s := &session.Session{Request: session.Request{Method: method, URL: url, Header: http.Header{}}}
	s.Response = &session.Response{Status: status, Header: http.Header{}}
	if ct != "" {
		s.Response.Header.Set("Content-Type", ct)
	}
	s.Response.Body = session.Body{Data: []byte(body), Size: int64(len(body))}
	return s
}

func paths(doc *openapi3.T) []string {
	var out []string
	for _, p := range doc.Paths.InMatchingOrder() {
		out = append(out, p)
	}
	return out
}

func TestSmallSamplesNeverTemplateWords(t *testing.T) {
	t.Parallel()
	in := NewInferrer()
	for _, u := range []string{"/docs/intro", "/docs/setup", "/docs/faq", "/api/v1/users/42", "/api/v2/status"} {
		in.Add(sess("GET", "https://h.example"+u, 200, "", ""))
	}
	got := strings.Join(paths(in.Document(Options{})), " ")
	for _, want := range []string{"/docs/intro", "/docs/setup", "/docs/faq", "/api/v1/users/{userId}", "/api/v2/status"} {
		if !strings.Contains(got, want) {
			t.Errorf("paths %s lack %s", got, want)
		}
	}
}

func TestManyWordsBecomeAParameter(t *testing.T) {
	t.Parallel()
	in := NewInferrer()
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu")
	for _, w := range words {
		in.Add(sess("GET", "https://h.example/tags/"+w, 200, "", ""))
	}
	in.Add(sess("GET", "https://h.example/tags", 200, "", ""))
	got := paths(in.Document(Options{}))
	if strings.Join(got, " ") != "/tags /tags/{tagId}" {
		t.Errorf("paths %v, want /tags and /tags/{tagId}", got)
	}
	// Below the threshold, words stay.
	in2 := NewInferrer()
	for _, w := range words[:WordThreshold-1] {
		in2.Add(sess("GET", "https://h.example/tags/"+w, 200, "", ""))
	}
	if n := len(paths(in2.Document(Options{}))); n != WordThreshold-1 {
		t.Errorf("%d paths for %d words, want each kept", n, WordThreshold-1)
	}
}

func TestConflictingTypesAndSkippedBodies(t *testing.T) {
	t.Parallel()
	in := NewInferrer()
	in.Add(sess("GET", "https://h.example/v", 200, "application/json", `{"v": 1}`))
	in.Add(sess("GET", "https://h.example/v", 200, "application/json", `{"v": 2.5}`))
	in.Add(sess("GET", "https://h.example/v", 200, "application/json", `{"v": "x"}`))
	in.Add(sess("GET", "https://h.example/v", 200, "application/json", `{"v": tru`))
	in.Add(sess("GET", "https://h.example/v", 200, "application/json", `not json`))
	tr := sess("GET", "https://h.example/v", 200, "application/json", `{"v": 1, "w"`)
	tr.Response.Body.Size = 1 << 20
	tr.Response.Body.Truncated = true
	in.Add(tr)
	in.Add(sess("GET", "https://h.example/v", 200, "text/html", `<p>`))
	st := in.Stats()
	if st.Skipped["body not JSON"] != 2 || st.Skipped["body truncated (over the capture limit)"] != 1 || st.Bodies != 3 {
		t.Fatalf("stats %+v", st)
	}
	doc := in.Document(Options{})
	resp := doc.Paths.Value("/v").Get.Responses.Value("200").Value
	v := resp.Content["application/json"].Schema.Value.Properties["v"].Value
	if len(v.OneOf) != 2 {
		t.Fatalf("v: %s, want a oneOf of number and string", mustJSON(v))
	}
	counts := map[string]any{}
	for _, b := range v.OneOf {
		counts[(*b.Value.Type)[0]] = b.Value.Extensions[CountExt]
	}
	if counts["number"] != 2 || counts["string"] != 1 {
		t.Errorf("branch counts %v, want number 2 (integer widened) and string 1", counts)
	}
	if resp.Content["text/html"] == nil || resp.Content["application/json"].Extensions["x-inspector-skipped"] != 3 {
		t.Errorf("media types %s", mustJSON(resp.Content))
	}
}

func TestDeepBodiesAreBounded(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"a":`, 500) + "1" + strings.Repeat("}", 500)
	in := NewInferrer()
	in.Add(sess("POST", "https://h.example/deep", 200, "application/json", deep))
	doc := in.Document(Options{})
	raw := mustJSON(doc)
	if !strings.Contains(raw, "x-inspector-bounded") {
		t.Errorf("a 500-deep body was not marked as bounded")
	}
	if strings.Count(raw, `"properties"`) > MaxDepth+2 {
		t.Errorf("schema deeper than MaxDepth")
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestYAMLKeysInTheUsualOrder(t *testing.T) {
	t.Parallel()
	in := NewInferrer()
	in.Add(sess("GET", "https://h.example/a", 200, "application/json", `{"a":1}`))
	var b strings.Builder
	if err := WriteYAML(&b, in.Document(Options{})); err != nil {
		t.Fatal(err)
	}
	var top []string
	for _, l := range strings.Split(b.String(), "\n") {
		if l != "" && l[0] != ' ' && l[0] != '-' {
			top = append(top, strings.TrimSuffix(strings.Fields(l)[0], ":"))
		}
	}
	if got := strings.Join(top, " "); got != "openapi info servers paths components" {
		t.Errorf("top-level keys %q", got)
	}
}
