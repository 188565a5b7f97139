package codegen

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"inspector/engine/session"
)

// received is what the origin saw of one request.
type received struct {
	method, uri string
	header      http.Header
	body        []byte
}

// recordingOrigin starts an HTTP origin on 127.0.0.1 that records every request.
func recordingOrigin(t *testing.T) (*httptest.Server, chan received) {
	ch := make(chan received, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- received{r.Method, r.RequestURI, r.Header.Clone(), b}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

// injections are strings that would run something in one language or another if they
// escaped their literal: each creates a file named "injected" in the working directory.
var injections = []string{
	`$(touch injected)`, "`touch injected`", `'; touch injected; '`, `"; touch injected; "`,
	`'); open('injected','w')#`, `"""); open("injected","w")#`, `'+require('fs').writeFileSync('injected','')+'`,
	`"); new java.io.File("injected").createNewFile(); //`, `"); os.Create("injected") //`,
	`'; touch('injected'); //`, `${touch injected}`, `#{touch injected}`, `\u0022); touch injected; //`,
	`\'; touch injected; \'`, `*/ touch injected /*`, `?> <?php touch('injected'); ?>`, "\u2019; touch injected; \u2018",
}

// fixtures are the awkward requests every runnable generator is checked with; {{O}} is
// the origin's base URL.
func fixtures() []*session.Request {
	inj := strings.Join(injections, " ")
	return []*session.Request{
		{Method: "GET", URL: "{{O}}/ünï/päth?q=a b&x='\"$(touch injected)\"`id`&y=✓&z=%41#frag", Header: http.Header{
			"Accept":              {"*/*"},
			"X-Repeat":            {"one", "two, three"},
			"Cookie":              {"a=1", "b=2"},
			"X-Quote":             {`it's "quoted" \back\slash %s %d`},
			"X-Shell":             {inj},
			"X-Unicode":           {"ü ✓ 日本 😀"},
			"Connection":          {"keep-alive, X-Hop"},
			"X-Hop":               {"dropped"},
			"Proxy-Authorization": {"Basic c2VjcmV0"},
			"Content-Length":      {"0"},
		}},
		{Method: "POST", URL: "{{O}}/api/items?id=1", Header: http.Header{
			"Content-Type": {"application/json; charset=utf-8"},
			"User-Agent":   {"inspector-test/1"},
			"X-Inject":     {inj},
		}, Body: session.Body{Data: []byte(`{"name":"it's \"me\" ü ✓","inj":` + fmt.Sprintf("%q", inj) + `,"nl":"a\nb","tab":"\t","uesc":"\u000a"}`)}},
		{Method: "PUT", URL: "{{O}}/upload/bin", Header: http.Header{
			"Content-Type": {"application/octet-stream"},
		}, Body: session.Body{Data: allBytes()}},
		{Method: "PATCH", URL: "{{O}}/crlf", Header: http.Header{
			"Content-Type": {"text/plain"},
			"X-Crlf":       {"a\r\nX-Injected: yes"},
			"X-Nul":        {"nul\x00byte\x01ctl"},
		}, Body: session.Body{Data: []byte("line1\r\nline2\r\n" + inj + "\r\n")}},
		{Method: "DELETE", URL: "{{O}}/odd/values", Header: http.Header{
			"X-Empty":  {""},
			"X-Eq":     {"=starts with equals"},
			"X-At":     {"@/etc/passwd"},
			"X-Bslash": {`back\:slash\=colon\;\@ \\ end\`},
			"X-Pct":    {"100% %s %n %%"},
			"X-Latin1": {"caf\xe9"},
		}},
		{Method: "GET", URL: "{{O}}/_search?pretty", Header: http.Header{
			"Content-Type": {"application/json"},
		}, Body: session.Body{Data: []byte(`{"query":{"match_all":{}}}`)}},
		{Method: "HEAD", URL: "{{O}}/exists", Header: http.Header{"If-None-Match": {`"abc"`}}},
		{Method: "PURGE", URL: "{{O}}/custom?u=%E2%9C%93", Header: http.Header{
			"Content-Type": {"text/plain; charset=utf-8"},
		}, Body: session.Body{Data: []byte("'''\"\"\" \\u000a \\x41 ${x} #{x} </script> ?> */ \\\n" + inj)}},
	}
}

func allBytes() []byte {
	b := make([]byte, 512)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// runner runs a snippet; it returns a reason to skip when its runtime is missing.
type runner struct {
	file  string   // the snippet's file name
	cmd   []string // the command; the file's path is appended
	probe []string // a command that must succeed for the runtime to count as present
	// joins: the library joins repeated fields into one.
	joins bool
	// asciiHeaders: header values outside ASCII cannot be sent (checked to arrive with '?'
	// for each such byte).
	asciiHeaders bool
	// utf8Headers: header values that are not UTF-8 are left out.
	utf8Headers bool
	// asciiOnly: header values outside ASCII are left out.
	asciiOnly bool
	// quoteUnescaped: the client's URL type writes %27 as ' (.NET's System.Uri).
	quoteUnescaped bool
	// noBodyOnGET: a GET or HEAD body is left out (fetch refuses to send one).
	noBodyOnGET bool
	// extra are header names the client adds of its own (beyond those always allowed).
	extra []string
}

var runners = map[string]runner{
	"curl":   {file: "snippet.sh", cmd: []string{"sh"}, probe: []string{"curl", "--version"}},
	"wget":   {file: "snippet.sh", cmd: []string{"sh"}, probe: []string{"wget", "--version"}, joins: true},
	"httpie": {file: "snippet.sh", cmd: []string{"sh"}, probe: []string{"http", "--version"}, utf8Headers: true},
	"python": {file: "snippet.py", cmd: []string{"/usr/bin/python3"}, probe: []string{"/usr/bin/python3", "-c", "import requests"}, joins: true},
	"httpx":  {file: "snippet.py", cmd: []string{"/usr/bin/python3"}, probe: []string{"/usr/bin/python3", "-c", "import httpx"}},
	"node":   {file: "snippet.js", cmd: []string{"node"}, probe: []string{"node", "--version"}},
	"fetch":  {file: "snippet.mjs", cmd: []string{"node"}, probe: []string{"node", "-e", "if (typeof fetch !== 'function') process.exit(1)"}, joins: true, noBodyOnGET: true, extra: []string{"Accept-Language", "Sec-Fetch-Mode", "Cache-Control", "Pragma"}},
	"go":     {file: "main.go", cmd: []string{"go", "run"}, probe: []string{"go", "version"}},
	"java":   {file: "Request.java", cmd: []string{"java"}, probe: []string{"java", "-version"}, asciiHeaders: true},
	"php":    {file: "snippet.php", cmd: []string{"php"}, probe: []string{"php", "-r", "exit(function_exists('curl_init') ? 0 : 1);"}},
	// C# runs on Mono (Debian's mcs and mono; the .NET SDK is not packaged there).
	"csharp": {file: "Request.cs", cmd: []string{"sh", "-c", `mcs -nologo -r:System.Net.Http.dll -out:"$0.exe" "$0" && mono "$0.exe"`},
		probe: []string{"sh", "-c", "mcs --version && mono --version && test -n \"$(find /usr/lib/mono -name System.Net.Http.dll | head -1)\""}, asciiOnly: true, joins: true, quoteUnescaped: true},
	// Rust: reqwest cannot be fetched offline; the snippet is compiled by rustc against a
	// stand-in with reqwest's names and signatures (testdata/reqwest_standin.rs) that
	// sends the request with std::net, so its literals are checked byte for byte.
	"rust": {file: "main.rs", cmd: []string{"sh", "-c", `mkdir "$0.d" && rustc --edition 2021 --crate-type lib --crate-name reqwest -o "$0.d/libreqwest.rlib" "$REQWEST_STANDIN" && rustc --edition 2021 -A warnings --extern reqwest="$0.d/libreqwest.rlib" -o "$0.bin" "$0" && "$0.bin"`},
		probe: []string{"rustc", "--version"}},
	"powershell": {probe: []string{"pwsh", "-Version"}},
}

// alwaysExtra are fields any client may add: the ones it computes and its defaults.
var alwaysExtra = []string{"Host", "Content-Length", "Connection", "User-Agent", "Accept", "Accept-Encoding", "Keep-Alive"}

// childEnv is the environment without proxy settings (the snippets talk to 127.0.0.1).
func childEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(strings.ToLower(k), "_proxy") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	if gc, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		env = append(env, "GOCACHE="+strings.TrimSpace(string(gc)))
	}
	standin, _ := filepath.Abs(filepath.Join("testdata", "reqwest_standin.rs"))
	if h, err := os.UserHomeDir(); err == nil && os.Getenv("RUSTUP_HOME") == "" {
		env = append(env, "RUSTUP_HOME="+filepath.Join(h, ".rustup")) // rustup finds its toolchains there
	}
	return append(env, "HOME="+home, "INJECTED=oops", "REQWEST_STANDIN="+standin)
}

var probed sync.Map

func available(t *testing.T, lang string, r runner) {
	t.Helper()
	if r.file == "" {
		t.Skipf("%s: no way to run it offline here; verified by parsing only (FuzzGenerators)", lang)
	}
	ok, seen := probed.Load(lang)
	if !seen {
		err := exec.Command(r.probe[0], r.probe[1:]...).Run()
		ok = err == nil
		probed.Store(lang, ok)
	}
	if !ok.(bool) {
		t.Skipf("%s: runtime missing (%s); `make test` installs it", lang, strings.Join(r.probe, " "))
	}
}

// TestRoundTrip runs every generator's snippet for every fixture against a real origin
// and compares what arrived with the prepared request, byte for byte.
func TestRoundTrip(t *testing.T) {
	fx := fixtures()
	for _, lang := range Langs {
		t.Run(lang, func(t *testing.T) {
			r := runners[lang]
			available(t, lang, r)
			t.Parallel()
			srv, ch := recordingOrigin(t)
			for i, f := range fx {
				f := *f
				f.URL = strings.ReplaceAll(f.URL, "{{O}}", srv.URL)
				code, err := Generate(lang, &f)
				if err != nil {
					t.Fatal(err)
				}
				got := runSnippet(t, r, code, ch)
				checkReceived(t, lang, i, r, Prepare(&f), got, code)
			}
		})
	}
}

// runSnippet runs code and returns the one request the origin received (each language
// has its own origin, so the languages run in parallel).
func runSnippet(t *testing.T, r runner, code string, ch chan received) received {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, r.file)
	if err := os.WriteFile(path, []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(r.cmd[0], append(r.cmd[1:], path)...)
	cmd.Dir = dir
	cmd.Env = childEnv(dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Stdin = nil
	err := cmd.Run()
	if _, serr := os.Stat(filepath.Join(dir, "injected")); serr == nil {
		t.Fatalf("the snippet ran injected code:\n%s", code)
	}
	if err != nil {
		t.Fatalf("%v: %v\n%s\n--- snippet:\n%s", r.cmd, err, out.Bytes(), code)
	}
	select {
	case got := <-ch:
		if len(ch) > 0 {
			t.Fatalf("the snippet sent %d requests", 1+len(ch))
		}
		return got
	default:
		t.Fatalf("the origin received nothing; output:\n%s\n--- snippet:\n%s", out.Bytes(), code)
	}
	return received{}
}

func checkReceived(t *testing.T, lang string, fix int, r runner, p *Request, got received, code string) {
	t.Helper()
	fail := func(format string, a ...any) {
		t.Errorf("%s fixture %d: %s\n--- snippet:\n%s", lang, fix, fmt.Sprintf(format, a...), code)
	}
	if got.method != p.Method {
		fail("method %q, want %q", got.method, p.Method)
	}
	_, rest, _ := strings.Cut(p.URL, "://")
	wantURI := rest[strings.IndexByte(rest, '/'):]
	if r.quoteUnescaped {
		wantURI = strings.ReplaceAll(wantURI, "%27", "'")
	}
	if got.uri != wantURI {
		fail("request URI %q, want %q", got.uri, wantURI)
	}
	if r.noBodyOnGET && (p.Method == "GET" || p.Method == "HEAD") {
		p.Body = nil
	}
	if !bytes.Equal(got.body, p.Body) {
		fail("body %q, want %q", got.body, p.Body)
	}
	want := p.Headers
	if r.joins {
		want = joined(p.Headers)
	}
	wantH := http.Header{}
	for _, h := range want {
		if r.utf8Headers && !utf8.ValidString(h.Value) || r.asciiOnly && !isASCII(h.Value) {
			continue
		}
		if r.asciiHeaders {
			h.Value = asciiOnly(h.Value)
		}
		wantH[http.CanonicalHeaderKey(h.Name)] = append(wantH[http.CanonicalHeaderKey(h.Name)], h.Value)
	}
	for k, vs := range wantH {
		if !slices.Equal(got.header[k], vs) {
			fail("header %s: %q, want %q", k, got.header[k], vs)
		}
	}
	for k := range got.header {
		if _, ok := wantH[k]; ok {
			continue
		}
		if !slices.Contains(alwaysExtra, k) && !slices.Contains(r.extra, k) {
			fail("header %s: %q was not in the request", k, got.header[k])
		}
	}
}

// asciiOnly is what a client that writes US-ASCII makes of s: each byte outside ASCII
// becomes '?'.
func asciiOnly(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 0x80 {
			b[i] = '?'
		}
	}
	return string(b)
}
