package redact

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"inspector/engine/session"
)

const (
	jwt      = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"
	password = "hunter2-Correct-Horse"
	sid      = "s3ss10n-cookie-value-42"
	apiKey   = "ak_live_0123456789abcdef"
	refresh  = "rt-9f8e7d6c5b4a"
)

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// login is a session that holds every kind of secret the defaults know.
func login(t *testing.T) *session.Session {
	form := "user=alice&password=" + strings.ReplaceAll(password, "-", "%2D") + "&remember=1"
	respBody := `{"access_token": "` + jwt + `", "token_type": "Bearer", "usage": {"max_tokens": 100},
  "refresh_token": "` + refresh + `", "profile": {"name": "Alice"}}`
	return &session.Session{
		ID: 7,
		Request: session.Request{
			Method: "POST", URL: "https://api.example/login?api_key=" + apiKey + "&lang=en", Proto: session.HTTP1,
			Header: http.Header{
				"Authorization": {"Bearer " + jwt},
				"Cookie":        {"sid=" + sid + "; theme=dark"},
				"Content-Type":  {"application/x-www-form-urlencoded"},
				"User-Agent":    {"curl/8"},
			},
			Body: session.Body{Data: []byte(form), Size: int64(len(form))},
		},
		Response: &session.Response{
			Status: 200, Proto: session.HTTP1,
			Header: http.Header{
				"Set-Cookie":       {"sid=" + sid + "; Path=/; HttpOnly"},
				"Content-Type":     {"application/json"},
				"Content-Encoding": {"gzip"},
			},
			Body: session.Body{Data: gz(t, []byte(respBody)), Size: 0},
		},
	}
}

func TestDefaultsMaskEverySecretConsistently(t *testing.T) {
	t.Parallel()
	orig := login(t)
	before, _ := json.Marshal(orig)
	r := Default()
	got, findings := r.Session(orig)
	after, _ := json.Marshal(orig)
	if !bytes.Equal(before, after) {
		t.Fatal("Session changed its input")
	}
	all, _ := json.Marshal(got)
	text := string(all) + string(got.Response.Body.Data) + string(got.Request.Body.Data)
	for _, secret := range []string{jwt, "c2lnbmF0dXJlLW9mLXRoZS10b2tlbg", password, sid, apiKey, refresh, "hunter2"} {
		if strings.Contains(text, secret) {
			t.Errorf("%q is still in the masked session", secret)
		}
	}
	auth := got.Request.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "Bearer "+PlaceholderPrefix) {
		t.Fatalf("Authorization = %q, want the scheme kept", auth)
	}
	ph := strings.TrimPrefix(auth, "Bearer ")
	var resp map[string]any
	if got.Response.Header.Get("Content-Encoding") != "" {
		t.Fatal("the masked body is decoded; its Content-Encoding must go")
	}
	if err := json.Unmarshal(got.Response.Body.Data, &resp); err != nil {
		t.Fatalf("masked JSON does not parse: %v\n%s", err, got.Response.Body.Data)
	}
	if resp["access_token"] != ph {
		t.Errorf("access_token = %v, want the Authorization's placeholder %s (same secret, same placeholder)", resp["access_token"], ph)
	}
	if resp["token_type"] != "Bearer" || resp["usage"].(map[string]any)["max_tokens"] != float64(100) {
		t.Errorf("token_type or max_tokens masked: %v", resp)
	}
	if !bytes.Contains(got.Response.Body.Data, []byte(`"profile": {"name": "Alice"}}`)) {
		t.Errorf("the JSON's layout changed:\n%s", got.Response.Body.Data)
	}
	cookie := got.Request.Header.Get("Cookie")
	sc := got.Response.Header.Get("Set-Cookie")
	m := regexp.MustCompile(`sid=(REDACTED-[0-9]+); theme=(REDACTED-[0-9]+)`).FindStringSubmatch(cookie)
	if m == nil {
		t.Fatalf("Cookie = %q", cookie)
	}
	if sc != "sid="+m[1]+"; Path=/; HttpOnly" {
		t.Errorf("Set-Cookie = %q, want sid=%s with the attributes kept", sc, m[1])
	}
	if !strings.Contains(got.Request.URL, "lang=en") || !strings.Contains(got.Request.URL, "api_key=REDACTED-") {
		t.Errorf("URL = %q", got.Request.URL)
	}
	if !strings.Contains(string(got.Request.Body.Data), "user=alice&password=REDACTED-") {
		t.Errorf("form = %q", got.Request.Body.Data)
	}
	if len(findings) < 6 {
		t.Errorf("findings = %+v, want one per masked place", findings)
	}
	for _, f := range findings {
		if strings.Contains(f.Hint, "hunter2") || strings.Contains(f.Hint, sid) {
			t.Errorf("a hint shows the secret: %+v", f)
		}
	}
	// The same Redactor on another session: the same secrets get the same placeholders.
	again, _ := r.Session(orig)
	if again.Request.Header.Get("Authorization") != auth {
		t.Errorf("a second session got %q, want %q", again.Request.Header.Get("Authorization"), auth)
	}
}

func TestLearnMasksEarlierSessions(t *testing.T) {
	t.Parallel()
	// Session 1 echoes a token in an innocuous field; session 2 reveals it is a secret.
	echo := &session.Session{ID: 1, Request: session.Request{Method: "GET", URL: "https://x.example/a",
		Header: http.Header{}}, Response: &session.Response{Status: 200,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: session.Body{Data: []byte(`{"note":"` + refresh + `"}`)}}}
	reveal := &session.Session{ID: 2, Request: session.Request{Method: "GET", URL: "https://x.example/b",
		Header: http.Header{"X-Refresh-Token": {refresh}}}}
	r := Default()
	r.Learn(echo)
	r.Learn(reveal)
	got, _ := r.Session(echo)
	if strings.Contains(string(got.Response.Body.Data), refresh) {
		t.Fatalf("body = %s, want the token learnt from a later session masked", got.Response.Body.Data)
	}
	got2, _ := r.Session(reveal)
	if !strings.Contains(string(got.Response.Body.Data), got2.Request.Header.Get("X-Refresh-Token")) {
		t.Errorf("placeholders differ: %s vs %s", got.Response.Body.Data, got2.Request.Header.Get("X-Refresh-Token"))
	}
}

func TestUserRules(t *testing.T) {
	t.Parallel()
	var rules []Rule
	for _, spec := range []string{
		"header:X-Customer",
		"param:account",
		"json:$.card.number",
		"json:..ssn",
		`regex:acct-([0-9]{6})`,
		"filter:host:bank.example",
		"header:X-Only-Here if host:other.example",
	} {
		r, err := ParseRule(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if r.String() != spec {
			t.Errorf("String() = %q, want %q", r.String(), spec)
		}
		rules = append(rules, r)
	}
	red, err := New(rules, Options{NoDefaults: true})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"card":{"number":"4111111111111111","cvc":"123"},"people":[{"ssn":"078-05-1120"}],"memo":"see acct-123456"}`
	s := &session.Session{Request: session.Request{Method: "POST", URL: "https://shop.example/pay?account=998877&x=1",
		Header: http.Header{"X-Customer": {"cust-42"}, "X-Only-Here": {"kept-value"}, "Authorization": {"Basic abc"}, "Content-Type": {"application/json"}},
		Body:   session.Body{Data: []byte(body)}}}
	got, _ := red.Session(s)
	b := string(got.Request.Body.Data)
	for _, gone := range []string{"4111111111111111", "078-05-1120", "123456"} {
		if strings.Contains(b, gone) {
			t.Errorf("%s still in %s", gone, b)
		}
	}
	if !strings.Contains(b, `"cvc":"123"`) || !strings.Contains(b, "acct-REDACTED-") {
		t.Errorf("body = %s", b)
	}
	if strings.Contains(got.Request.URL, "998877") || !strings.Contains(got.Request.URL, "x=1") {
		t.Errorf("URL = %s", got.Request.URL)
	}
	if got.Request.Header.Get("X-Customer") == "cust-42" {
		t.Error("header rule not applied")
	}
	if got.Request.Header.Get("X-Only-Here") != "kept-value" {
		t.Error("a rule limited to another host applied")
	}
	if got.Request.Header.Get("Authorization") != "Basic abc" {
		t.Error("NoDefaults still masked Authorization")
	}

	s.Request.URL = "https://bank.example/statement"
	got, f := red.Session(s)
	if !isPlaceholder(string(got.Request.Body.Data)) {
		t.Errorf("filter rule: body = %s, want a placeholder", got.Request.Body.Data)
	}
	if len(f) == 0 || f[0].Rule == "" {
		t.Errorf("findings = %+v", f)
	}
}

func TestBadRules(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"", "nokind", "header:", "json:$..", "json:$.a[x]", "regex:(", "regex:a*", "filter:status:", "color:red", "header:X if status:"} {
		if _, err := ParseRule(spec); err == nil {
			t.Errorf("ParseRule(%q) accepted", spec)
		} else if !strings.Contains(err.Error(), "redaction rule") && !strings.Contains(err.Error(), "JSON path") {
			t.Errorf("ParseRule(%q): %v, want an error naming the rule", spec, err)
		}
	}
	if _, err := New([]Rule{{Kind: Regex, Value: "("}}, Options{}); err == nil {
		t.Error("New accepted a bad regex")
	}
}

func TestTruncatedAndOddBodies(t *testing.T) {
	t.Parallel()
	r := Default()
	// JSON cut short: what parsed is masked, the rest kept.
	s := &session.Session{Request: session.Request{Method: "POST", URL: "http://h.example/",
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   session.Body{Data: []byte(`{"password":"p4ssw0rd-xyz","more":"abc`), Size: 100, Truncated: true}}}
	got, _ := r.Session(s)
	if strings.Contains(string(got.Request.Body.Data), "p4ssw0rd-xyz") || !got.Request.Body.Truncated {
		t.Errorf("truncated JSON: %s truncated=%v", got.Request.Body.Data, got.Request.Body.Truncated)
	}
	// A JWT in a WebSocket message and in a Referer.
	s = &session.Session{Flags: session.FlagWebSocket, Request: session.Request{Method: "GET", URL: "http://h.example/ws",
		Header: http.Header{"Referer": {"http://h.example/?token=" + refresh}}},
		Messages: []session.Message{{Opcode: 1, Data: []byte("hello " + jwt)}, {Opcode: 2, Data: []byte{0, 1}}}}
	got, _ = r.Session(s)
	if strings.Contains(string(got.Messages[0].Data), "c2lnbmF0dXJl") || !strings.Contains(string(got.Messages[0].Data), "eyJzdWIiOiJhbGljZSJ9.REDACTED-") {
		t.Errorf("message = %s, want the signature masked and the claims kept", got.Messages[0].Data)
	}
	if string(s.Messages[0].Data) != "hello "+jwt {
		t.Error("the original message changed")
	}
	if strings.Contains(got.Request.Header.Get("Referer"), refresh) {
		t.Errorf("Referer = %s", got.Request.Header.Get("Referer"))
	}
	// Nothing to mask: the body stays as it travelled, encoding included.
	plain := gz(t, []byte(`{"hello":"world"}`))
	s = &session.Session{Request: session.Request{Method: "GET", URL: "http://h.example/"},
		Response: &session.Response{Status: 200, Header: http.Header{"Content-Encoding": {"gzip"}}, Body: session.Body{Data: plain}}}
	got, _ = r.Session(s)
	if !bytes.Equal(got.Response.Body.Data, plain) || got.Response.Header.Get("Content-Encoding") != "gzip" {
		t.Error("a body without secrets was rewritten")
	}
}

func TestSummaryURL(t *testing.T) {
	t.Parallel()
	r := Default()
	s := r.Summary(session.Summary{URL: "https://u:pw-secret@h.example/p?access_token=abcdefgh&q=1", Path: "/p?access_token=abcdefgh&q=1"})
	if strings.Contains(s.URL, "abcdefgh") || strings.Contains(s.Path, "abcdefgh") || strings.Contains(s.URL, "pw-secret") {
		t.Errorf("summary = %+v", s)
	}
}
