package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"inspector/diff"
	"inspector/store"
)

func TestDiffAndShowAs(t *testing.T) {
	dir := fillStore(t, 200, 500, 200, 200)
	dd := "--data-dir=" + dir
	harA, harB := filepath.Join(t.TempDir(), "a.har"), filepath.Join(t.TempDir(), "b.har")
	if code, _, e := runCLI(t, "har", "export", dd, "--filter", "id:1-3", "-o", harA); code != 0 {
		t.Fatal(e)
	}
	if code, _, e := runCLI(t, "har", "export", dd, "--filter", "id:1-2", "-o", harB); code != 0 {
		t.Fatal(e)
	}
	cmds := []struct {
		args []string
		code int
		has  string
	}{
		{[]string{"diff", "1", "3", dd}, 1, "~ $.n: 0 → 2"},
		{[]string{"diff", "#1", "1", dd}, 0, "equal (0 ignored)"},
		{[]string{"diff", "1", "2", dd, "--json"}, 1, `"op": "changed"`},
		{[]string{"diff", "--recording", "ids:1-4", "ids:1-4", dd}, 0, "no differences (4 calls matched)"},
		{[]string{"diff", "--recording", "ids:1-2", "ids:3-4", dd}, 1, "0 calls missing, 0 new, 1 changed, 0 slower"},
		{[]string{"diff", "--recording", "--json", "filter:status:500", "ids:1-4", dd}, 1, `"summary_line": "0 calls missing, 3 new, 0 changed, 0 slower"`},
		{[]string{"diff", "--recording", harA, harB, dd}, 1, "1 call missing, 0 new, 0 changed, 0 slower"},
		{[]string{"diff", "--recording", harA, dir, dd}, 1, "0 calls missing, 1 new"},
		{[]string{"show", "1", "--as", "python", dd}, 0, "requests.Request('GET', 'https://example.com/item/1'"},
		{[]string{"show", "1", "2", "--as=curl", dd}, 0, "# request 2 of 2\ncurl 'https://example.com/item/2' -H 'Accept: application/json'\n"},
		{[]string{"show", "3", dd, "--as", "go"}, 0, `req.Header["Accept"] = []string{"application/json"}`},
	}
	type result struct {
		code     int
		out, err string
	}
	direct := make([]result, len(cmds))
	for i, c := range cmds {
		code, out, errOut := runCLI(t, c.args...)
		direct[i] = result{code, out, errOut}
		if code != c.code || !strings.Contains(out, c.has) {
			t.Errorf("%v: exit %d, want %d; want %q in\n%s\nstderr %s", c.args, code, c.code, c.has, out, errOut)
		}
	}
	// usage errors exit 2; a missing session exits 1 with a clear line
	for _, bad := range [][]string{{"diff", "1"}, {"diff", "1", "x"}, {"diff", "--recording", "ids:2-1", "ids:1-2"}, {"diff", "--recording", "filter:status:(", harA},
		{"show", "1", "--as", "cobol"}, {"show", "--as", "go"}, {"show", "1", "--as"}, {"diff", "--slower-factor", "0.5", "--recording", harA, harB}} {
		if code, _, errOut := runCLI(t, append(bad, dd)...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d %q, want 2", bad, code, errOut)
		}
	}
	if code, _, errOut := runCLI(t, "diff", "1", "99", dd); code != 1 || !strings.Contains(errOut, "no such session") {
		t.Errorf("missing session: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "diff", "--recording", harA, filepath.Join(dir, "nope.har"), dd); code != 1 || !strings.Contains(errOut, "nope.har") {
		t.Errorf("missing HAR: %d %q", code, errOut)
	}
	// a broken ignore list is an error, not a silent default
	os.WriteFile(filepath.Join(dir, diff.IgnoreFile), []byte("{"), 0o600)
	if code, _, errOut := runCLI(t, "diff", "1", "2", dd); code != 1 || !strings.Contains(errOut, diff.IgnoreFile) {
		t.Errorf("broken ignore list: %d %q", code, errOut)
	}
	os.Remove(filepath.Join(dir, diff.IgnoreFile))

	// the same through a running instance's control API
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, stop, err := startControl(dir, "127.0.0.1:8080", st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for i, c := range cmds {
		if slices.Contains(c.args, dir) {
			continue // the instance holds that store
		}
		code, out, errOut := runCLI(t, c.args...)
		if code != direct[i].code || out != direct[i].out {
			t.Errorf("%v through the instance: code %d (direct %d)\nout:\n%s\ndirect:\n%s\nstderr %q", c.args, code, direct[i].code, out, direct[i].out, errOut)
		}
	}

	api, err := newControlClient(dir)
	if err != nil {
		t.Fatal(err)
	}
	raw := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, api.base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+api.token)
		resp, err := api.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := raw("GET", "/api/v1/sessions/2/code?lang=node", ""); code != 200 || !strings.Contains(body, "await send('https://example.com/item/2', 'GET'") {
		t.Errorf("code: %d %s", code, body)
	}
	var e diff.Exchange
	if err := api.do("GET", "/api/v1/diff?a=1&b=3", nil, &e); err != nil || e.Equal || e.Response.Body.Kind != diff.BodyJSON {
		t.Errorf("diff API: %+v %v", e, err)
	}
	var rr recordingResult
	if err := api.do("POST", "/api/v1/diff/recording", strings.NewReader(`{"a":"ids:1-2","b":"`+harA+`"}`), &rr); err != nil || rr.Summary.New != 1 {
		t.Errorf("recording API: %+v %v", rr.Summary, err)
	}
	for _, bad := range []struct{ method, path, body string }{
		{"GET", "/api/v1/sessions/1/code?lang=cobol", ""}, {"GET", "/api/v1/sessions/x/code", ""}, {"GET", "/api/v1/diff?a=1", ""},
		{"GET", "/api/v1/diff?a=1&b=x", ""}, {"POST", "/api/v1/diff/recording", "{"}, {"POST", "/api/v1/diff/recording", `{"a":"ids:1"}`},
		{"POST", "/api/v1/diff/recording", `{"a":"ids:1","b":"ids:9-1"}`}, {"POST", "/api/v1/diff/recording", `{"a":"ids:1","b":"ids:2","extra":1}`},
	} {
		if code, body := raw(bad.method, bad.path, bad.body); code != 400 || !strings.Contains(body, `"error"`) {
			t.Errorf("%s %s %s: %d %s", bad.method, bad.path, bad.body, code, body)
		}
	}
	if code, _ := raw("GET", "/api/v1/diff?a=1&b=99", ""); code != 404 {
		t.Errorf("diff of a missing session: %d", code)
	}
	if code, _ := raw("GET", "/api/v1/sessions/99/code", ""); code != 404 {
		t.Errorf("code of a missing session: %d", code)
	}
}
