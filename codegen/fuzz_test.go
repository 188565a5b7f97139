package codegen

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"inspector/engine/session"
)

// shapes are requests covering every branch of the generators' templates (methods that
// change the command, no body, text and binary bodies, https, brackets, repeated fields,
// odd values). The template lines of their snippets are the only code lines a snippet may
// have.
func shapes() []*session.Request {
	out := fixtures()
	for _, f := range out {
		f.URL = strings.ReplaceAll(f.URL, "{{O}}", "http://127.0.0.1:1")
	}
	text, bin := session.Body{Data: []byte("x")}, session.Body{Data: []byte{0, 0xff}}
	for _, m := range []string{"GET", "HEAD", "POST", "X"} {
		for _, b := range []session.Body{{}, text, bin} {
			for _, u := range []string{"https://h/", "http://[::1]:1/a", "relative"} {
				for _, h := range []http.Header{nil, {"A": {"v"}}, {"A": {"ü"}}, {"A": {"\xe9"}}, {"A": {""}}, {"A": {"=x"}}, {"A": {`\:`}}} {
					out = append(out, &session.Request{Method: m, URL: u, Header: h, Body: b})
				}
			}
		}
	}
	return out
}

var (
	templateOnce  sync.Once
	templateLines map[string]map[string]bool
)

func templates(t testing.TB) map[string]map[string]bool {
	templateOnce.Do(func() {
		templateLines = map[string]map[string]bool{}
		for lang := range lexers {
			set := map[string]bool{}
			for _, r := range shapes() {
				code, _ := Generate(lang, r)
				sk, err := skeleton(lang, code)
				if err != nil {
					panic(lang + ": " + err.Error() + "\n" + code)
				}
				for _, l := range strings.Split(sk, "\n") {
					set[l] = true
				}
			}
			templateLines[lang] = set
		}
	})
	return templateLines
}

// checkLiterals: the snippet lexes, and each of its code lines is a template line.
func checkLiterals(t testing.TB, lang string, r *session.Request) {
	t.Helper()
	code, err := Generate(lang, r)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := skeleton(lang, code)
	if err != nil {
		t.Fatalf("%s: %v\n%s", lang, err, code)
	}
	set := templates(t)[lang]
	for _, l := range strings.Split(sk, "\n") {
		if !set[l] {
			t.Fatalf("%s: code line %q is not part of the template; request data escaped its literal?\n%s", lang, l, code)
		}
	}
}

func TestTemplatesLex(t *testing.T) {
	for lang := range lexers {
		for _, r := range fixtures() {
			checkLiterals(t, lang, r)
		}
	}
	// the lexers know where each language ends a literal
	for lang, bad := range map[string]string{"python": "x = 'a'b'", "go": "x := \"a\nb\"", "powershell": "'a\u2019b'", "csharp": "\"a\u2028\""} {
		if sk, err := skeleton(lang, bad); err == nil {
			t.Errorf("%s: %q lexed as %q", lang, bad, sk)
		}
	}
	if sk, err := skeleton("java", `s = "a\u0022;`); err != nil || sk != "s = S;" {
		t.Errorf("java: a \\u0022 escape ends the literal: %q %v", sk, err)
	}
}

// shellRun runs a shell snippet with PATH holding only stand-ins for the tools (they
// record their arguments, standard input and --body-file contents); any other command,
// an injected one, fails with "not found" on stderr.
func shellRun(t testing.TB, code string) (args []string, stdin, bodyFile string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o700)
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	tool := `#!` + sh + `
for a in "$@"; do printf '%s\0' "$a" >> "` + dir + `/args"; case "$a" in --body-file=*) f=${a#--body-file=}; /bin/cat "$f" > "` + dir + `/bodyfile";; esac; done
[ -t 0 ] || /bin/cat > "` + dir + `/stdin"
`
	for _, name := range []string{"curl", "wget", "http"} {
		os.WriteFile(filepath.Join(bin, name), []byte(tool), 0o700)
	}
	for _, name := range []string{"mktemp", "rm", "cat"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skip("no " + name)
		}
		os.Symlink(p, filepath.Join(bin, name))
	}
	c := exec.Command(sh, "-c", code)
	c.Dir = dir
	c.Env = []string{"PATH=" + bin, "HOME=" + dir, "INJECTED=oops", "TMPDIR=" + dir}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	c.Stdin = strings.NewReader("")
	if err := c.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("sh: %v %s\n%s", err, stderr.Bytes(), code)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "args"))
	for _, s := range bytes.Split(a, []byte{0}) {
		args = append(args, string(s))
	}
	in, _ := os.ReadFile(filepath.Join(dir, "stdin"))
	bf, _ := os.ReadFile(filepath.Join(dir, "bodyfile"))
	return args[:len(args)-1], string(in), string(bf)
}

// checkShell: only the tool runs, with the URL, every header and the body intact.
func checkShell(t testing.TB, lang string, r *session.Request) {
	t.Helper()
	code, _ := Generate(lang, r)
	args, stdin, bodyFile := shellRun(t, code)
	p := Prepare(r)
	has := func(want string) bool {
		for _, a := range args {
			if a == want {
				return true
			}
		}
		return false
	}
	if !has(p.URL) {
		t.Fatalf("%s: URL %q not among the arguments %q\n%s", lang, p.URL, args, code)
	}
	if len(p.Body) > 0 && !has(string(p.Body)) && !has("--body-data="+string(p.Body)) && stdin != string(p.Body) && bodyFile != string(p.Body) {
		t.Fatalf("%s: body %q lost (args %q, stdin %q, file %q)\n%s", lang, p.Body, args, stdin, bodyFile, code)
	}
	for _, h := range p.Headers {
		var want []string
		switch lang {
		case "curl":
			want = []string{h.Name + ": " + h.Value, h.Name + ";"}
		case "wget":
			want = []string{"--header=" + h.Name + ": " + h.Value}
		case "httpie":
			want = []string{h.Name + ":" + h.Value, h.Name + `:\` + h.Value, h.Name + ";", h.Name + ":@"}
		}
		found := false
		for _, w := range want {
			for _, a := range args {
				found = found || a == w || strings.HasPrefix(a, h.Name+":@") && strings.HasPrefix(w, h.Name+":@")
			}
		}
		if !found && !(lang == "httpie" && strings.Contains(code, "# HTTPie sends only UTF-8")) {
			t.Fatalf("%s: header %q lost (args %q)\n%s", lang, h, args, code)
		}
	}
}

func fuzzRequest(method, url, hk, hv string, body []byte) *session.Request {
	h := http.Header{}
	if hk != "" {
		h[hk] = []string{hv}
	}
	return &session.Request{Method: method, URL: url, Header: h, Body: session.Body{Data: body}}
}

func seed(f *testing.F) {
	f.Add("POST", "https://example.com/a?b=c", "X-Test", "v'al\"ue $(id)", []byte("body `id`"))
	f.Add("GET", "http://h/", "Cookie", "a=b; c=d", []byte{})
	f.Add("P'UT", "-o", "X", "\\\n", []byte{0, '\'', '%', 0xc3})
	f.Add("HEAD", "http://[::1]:8/ü?x=\u2028", "A", "\u2019'\u2018", []byte("\\u000a\"); x"))
	for _, inj := range injections {
		f.Add("POST", "http://h/"+inj, "X-I", inj, []byte(inj))
	}
}

func fuzzLiterals(f *testing.F, lang string) {
	seed(f)
	templates(f)
	f.Fuzz(func(t *testing.T, method, url, hk, hv string, body []byte) {
		checkLiterals(t, lang, fuzzRequest(method, url, hk, hv, body))
	})
}

func fuzzShell(f *testing.F, lang string) {
	seed(f)
	f.Fuzz(func(t *testing.T, method, url, hk, hv string, body []byte) {
		checkShell(t, lang, fuzzRequest(method, url, hk, hv, body))
	})
}

// One fuzz target per generator: the shells' snippets run in a real shell with only the
// tool present; the others lex with their language's literal rules into template lines.
func FuzzCurl(f *testing.F)       { fuzzShell(f, "curl") }
func FuzzWget(f *testing.F)       { fuzzShell(f, "wget") }
func FuzzHTTPie(f *testing.F)     { fuzzShell(f, "httpie") }
func FuzzPowerShell(f *testing.F) { fuzzLiterals(f, "powershell") }
func FuzzFetch(f *testing.F)      { fuzzLiterals(f, "fetch") }
func FuzzNode(f *testing.F)       { fuzzLiterals(f, "node") }
func FuzzPython(f *testing.F)     { fuzzLiterals(f, "python") }
func FuzzHTTPX(f *testing.F)      { fuzzLiterals(f, "httpx") }
func FuzzGo(f *testing.F)         { fuzzLiterals(f, "go") }
func FuzzJava(f *testing.F)       { fuzzLiterals(f, "java") }
func FuzzCSharp(f *testing.F)     { fuzzLiterals(f, "csharp") }
func FuzzPHP(f *testing.F)        { fuzzLiterals(f, "php") }
func FuzzRust(f *testing.F)       { fuzzLiterals(f, "rust") }
