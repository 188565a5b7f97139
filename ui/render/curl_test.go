package render

import (
	"bytes"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"inspector/engine/session"
)

// runInShell runs cmd in a real POSIX shell with curl replaced by a function that prints
// its arguments NUL-terminated, then its standard input. A marker file that an injected
// command could create is checked too.
func runInShell(t testing.TB, cmd string) (args []string, stdin string) {
	t.Helper()
	dir := t.TempDir()
	// The function reads standard input when curl's last argument is @- (as curl would).
	script := `curl() { printf '%s\0' "$@"; printf '\0\0'; for a in "$@"; do l=$a; done; if [ "$l" = "@-" ]; then cat; fi; }
` + cmd
	c := exec.Command("sh", "-c", script)
	c.Dir = dir
	c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "INJECTED=oops"}
	out, err := c.Output()
	if err != nil {
		t.Fatalf("sh: %v\n%s", err, cmd)
	}
	parts := bytes.SplitN(out, []byte("\x00\x00\x00"), 2)
	if len(parts) != 2 {
		// no arguments at all cannot happen (curl always gets the URL)
		t.Fatalf("unexpected output %q for %s", out, cmd)
	}
	for _, a := range bytes.Split(append(parts[0], 0), []byte{0}) {
		args = append(args, string(a))
	}
	args = args[:len(args)-1]
	return args, string(parts[1])
}

// wantArgs is what curl must receive for r.
func wantArgs(r *session.Request) []string {
	var w []string
	if r.Method != "" && r.Method != http.MethodGet {
		w = append(w, "-X", noNUL(r.Method))
	}
	u := noNUL(r.URL)
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		w = append(w, "--url")
	}
	w = append(w, u)
	for _, k := range sortedKeys(r.Header) {
		if strings.EqualFold(k, "Content-Length") {
			continue
		}
		for _, v := range r.Header[k] {
			w = append(w, "-H", noNUL(k+": "+v))
		}
	}
	return w
}

func sortedKeys(h http.Header) []string {
	var ks []string
	for k := range h {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

func checkCurl(t testing.TB, r *session.Request) {
	cmd := Curl(r)
	args, stdin := runInShell(t, cmd)
	want := wantArgs(r)
	body := r.Body.Data
	switch {
	case len(body) == 0:
	case strings.HasPrefix(cmd, "printf "):
		want = append(want, "--data-binary", "@-")
		if stdin != string(body) {
			t.Fatalf("piped body %q, want %q\n%s", stdin, body, cmd)
		}
	default:
		want = append(want, "--data-raw", string(body))
	}
	if strings.Join(args, "\x01") != strings.Join(want, "\x01") {
		t.Fatalf("curl got %q\nwant %q\ncommand: %s", args, want, cmd)
	}
}

func TestCurlQuotingInAShell(t *testing.T) {
	nasty := []string{`'; touch injected; '`, `$(touch injected)`, "`touch injected`", `$INJECTED`, `"double" \back\slash`,
		"line\nbreak", `@/etc/passwd`, `-o/tmp/x`, `%s %d %%`, "tab\there", "ü ✓", `'`, `''`, `\'`, `!event`}
	for _, v := range nasty {
		checkCurl(t, &session.Request{Method: v, URL: "https://example.com/" + v,
			Header: http.Header{"X-" + strings.Map(func(r rune) rune {
				if r < 'A' || r > 'z' {
					return 'a'
				}
				return r
			}, v): {v}, "Content-Length": {"3"}}, Body: session.Body{Data: []byte(v)}})
	}
	checkCurl(t, &session.Request{Method: "POST", URL: "-K/etc/passwd", Body: session.Body{Data: []byte{0, 1, 2, 0xff, '\'', '%', '\\', 'x'}}})
	checkCurl(t, &session.Request{Method: "GET", URL: "https://x/", Header: http.Header{"A": {"nul\x00inside"}}})
	if c := Curl(&session.Request{Method: "POST", URL: "https://x/", Body: session.Body{Data: []byte("@/etc/passwd")}}); strings.Contains(c, "--data-binary '@") {
		t.Errorf("an @ body would make curl upload a file: %s", c)
	}
}

// FuzzCurl checks that whatever a session holds, the shell hands curl exactly the
// intended arguments (and body) and runs nothing else.
func FuzzCurl(f *testing.F) {
	f.Add("POST", "https://example.com/a?b=c", "X-Test", "v'al\"ue $(id)", []byte("body `id`"))
	f.Add("GET", "http://h/", "Cookie", "a=b; c=d", []byte{})
	f.Add("P'UT", "-o", "X", "\\\n", []byte{0, '\'', '%', 0xc3})
	f.Fuzz(func(t *testing.T, method, url, hk, hv string, body []byte) {
		h := http.Header{}
		if hk != "" {
			h[hk] = []string{hv}
		}
		checkCurl(t, &session.Request{Method: method, URL: url, Header: h, Body: session.Body{Data: body}})
	})
}
