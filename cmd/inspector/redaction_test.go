package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"inspector/engine/session"
	"inspector/redact"
	"inspector/store"
)

const (
	shareBearer   = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJib2IifQ.Zm9yZ2VkLXNpZ25hdHVyZS1ieXRlcw"
	shareCookie   = "c00kie-Value-77aa"
	sharePassword = "Tr0ub4dor&3-horse"
	shareCustomer = "CUST-0042-9999"
)

// secretStore is a data directory holding a login (password in a form body, a cookie
// set) and a call that uses the token and the cookie.
func secretStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	login := mkSession(st.NextID(), 200, []byte(`{"access_token":"`+shareBearer+`","user":{"id":7}}`))
	login.Request.Method, login.Request.URL = "POST", "https://api.example/login"
	form := "user=bob&password=" + strings.ReplaceAll(strings.ReplaceAll(sharePassword, "&", "%26"), "-", "%2D")
	login.Request.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	login.Request.Body = session.Body{Data: []byte(form), Size: int64(len(form))}
	login.Response.Header.Set("Set-Cookie", "sid="+shareCookie+"; Path=/; Secure")
	st.Put(login)
	call := mkSession(st.NextID(), 200, []byte(`{"customer":"`+shareCustomer+`"}`))
	call.Request.Header.Set("Authorization", "Bearer "+shareBearer)
	call.Request.Header.Set("Cookie", "sid="+shareCookie)
	st.Put(call)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHARExportForSharing is the figure of the note: a HAR exported for sharing holds
// none of the originals, and one secret has one placeholder all through the file.
func TestHARExportForSharing(t *testing.T) {
	// Not parallel: runCLI swaps the process's stdout and stderr.
	dir := secretStore(t)
	// A user rule saved in the data directory.
	rs, err := openRedaction(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Add(redact.Rule{Kind: redact.JSON, Value: "$.customer"}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "shared.har")
	code, _, errOut := runCLI(t, "har", "export", "--data-dir="+dir, "--share", "-o", out)
	if code != 0 {
		t.Fatalf("har export --share: %d %s", code, errOut)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, secret := range []string{shareBearer, "Zm9yZ2VkLXNpZ25hdHVyZS1ieXRlcw", shareCookie, sharePassword, "Tr0ub4dor", shareCustomer} {
		if strings.Contains(text, secret) {
			t.Errorf("the shared HAR holds %q", secret)
		}
	}
	var doc struct {
		Log struct {
			Entries []struct {
				Request struct {
					Headers []struct{ Name, Value string } `json:"headers"`
				} `json:"request"`
				Response struct {
					Content struct{ Text string } `json:"content"`
				} `json:"response"`
			} `json:"entries"`
		} `json:"log"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Log.Entries) != 2 {
		t.Fatalf("shared HAR: %v, %d entries", err, len(doc.Log.Entries))
	}
	var auth string
	for _, h := range doc.Log.Entries[1].Request.Headers {
		if h.Name == "Authorization" {
			auth = strings.TrimPrefix(h.Value, "Bearer ")
		}
	}
	if !regexp.MustCompile(`^REDACTED-[0-9]+$`).MatchString(auth) {
		t.Fatalf("Authorization placeholder %q", auth)
	}
	if !strings.Contains(doc.Log.Entries[0].Response.Content.Text, `"access_token":"`+auth+`"`) {
		t.Errorf("the login's token is not masked with the Authorization's placeholder %s: %s", auth, doc.Log.Entries[0].Response.Content.Text)
	}
	if n := strings.Count(text, "sid=REDACTED-"); n < 2 {
		t.Errorf("cookie placeholders: %d, want the Set-Cookie and the Cookie", n)
	}
	m := regexp.MustCompile(`sid=(REDACTED-[0-9]+)`).FindAllStringSubmatch(text, -1)
	for _, x := range m {
		if x[1] != m[0][1] {
			t.Errorf("the cookie has two placeholders: %s and %s", m[0][1], x[1])
		}
	}

	// The store keeps the originals: a plain export still has them.
	plain := filepath.Join(t.TempDir(), "plain.har")
	if code, _, errOut := runCLI(t, "har", "export", "--data-dir="+dir, "-o", plain); code != 0 {
		t.Fatal(errOut)
	}
	if pb, _ := os.ReadFile(plain); !strings.Contains(string(pb), shareBearer) || !strings.Contains(string(pb), shareCookie) {
		t.Error("the plain export lost the originals")
	}

	// The preview lists the places, and writes no file.
	code, prev, errOut := runCLI(t, "har", "export", "--data-dir="+dir, "--preview", "--redact", "header:Accept")
	if code != 0 || !strings.Contains(prev, "request header Authorization") || !strings.Contains(prev, "request body form password") ||
		!strings.Contains(prev, "request header Accept") || !strings.Contains(errOut, "would be masked") {
		t.Fatalf("preview: %d\n%s\n%s", code, prev, errOut)
	}
	if strings.Contains(prev, shareBearer) || strings.Contains(prev, sharePassword) {
		t.Error("the preview shows a secret")
	}
	// A bad rule is a usage error.
	if code, _, errOut := runCLI(t, "har", "export", "--data-dir="+dir, "--redact", "regex:(", "-o", out); code != 2 || !strings.Contains(errOut, "redaction rule") {
		t.Fatalf("bad rule: %d %s", code, errOut)
	}
	// A damaged rules file is an error naming it, not an export without the user's rules.
	os.WriteFile(filepath.Join(dir, redact.FileName), []byte(`{"rules":[{"kind":"regex","value":"("}]}`), 0o600)
	if code, _, errOut := runCLI(t, "har", "export", "--data-dir="+dir, "--share", "-o", out); code != 1 || !strings.Contains(errOut, redact.FileName) {
		t.Fatalf("bad rules file: %d %s", code, errOut)
	}
}

// TestMCPAnswersMasked: the MCP server masks secrets by default and not with --no-redact.
func TestMCPAnswersMasked(t *testing.T) {
	t.Parallel()
	dir := secretStore(t)
	var got map[string]any
	cs := connectStdio(t, "--data-dir="+dir)
	callTool(t, cs, "get_session", map[string]any{"id": 2}, &got)
	b, _ := json.Marshal(got)
	if strings.Contains(string(b), shareBearer) || strings.Contains(string(b), shareCookie) || !strings.Contains(string(b), "REDACTED-") {
		t.Fatalf("get_session answered secrets: %s", b)
	}
	var har struct{ HAR string }
	callTool(t, cs, "export_har", map[string]any{}, &har)
	if strings.Contains(har.HAR, shareBearer) || strings.Contains(har.HAR, sharePassword) || strings.Contains(har.HAR, "Tr0ub4dor") {
		t.Fatalf("export_har answered secrets")
	}
	var code struct{ Code string }
	callTool(t, cs, "request_as_code", map[string]any{"id": 2, "lang": "curl"}, &code)
	if strings.Contains(code.Code, shareBearer) || !strings.Contains(code.Code, "REDACTED-") {
		t.Fatalf("request_as_code: %s", code.Code)
	}

	clear := connectStdio(t, "--data-dir="+dir, "--no-redact")
	callTool(t, clear, "get_session", map[string]any{"id": 2}, &got)
	if b, _ = json.Marshal(got); !strings.Contains(string(b), shareBearer) {
		t.Fatalf("--no-redact still masked: %s", b)
	}
}
