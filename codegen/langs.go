package codegen

import (
	"encoding/base64"
	"strconv"
	"strings"
)

func init() {
	register("python", generator{head: pythonHead, block: pythonBlock, comment: "# "})
	register("httpx", generator{head: httpxHead, block: httpxBlock, comment: "    # "})
	register("fetch", generator{block: fetchBlock, comment: "// "})
	register("node", generator{head: nodeHead, block: nodeBlock, tail: "})();\n", comment: "  // "})
	register("go", generator{head: goHead, block: goBlock, tail: "}\n", comment: "\t// "})
	register("java", generator{head: javaHead, block: javaBlock, tail: "    }\n}\n", comment: "        // "})
	register("csharp", generator{head: csHead, block: csBlock, tail: "    }\n}\n", comment: "        // "})
	register("php", generator{head: func([]*Request) string { return "<?php\n" }, block: phpBlock, comment: "// "})
	register("rust", generator{head: rustHead, block: rustBlock, tail: "    Ok(())\n}\n", comment: "    // "})
	register("powershell", generator{block: psBlock, comment: "# "})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func b64(d []byte) string { return base64.StdEncoding.EncodeToString(d) }

func anyBinary(ps []*Request) bool {
	for _, p := range ps {
		if len(p.Body) > 0 && !p.Text() {
			return true
		}
	}
	return false
}

// lines is a small builder of indented code.
type lines struct{ strings.Builder }

func (l *lines) add(indent int, parts ...string) {
	l.WriteString(strings.Repeat(" ", indent))
	for _, p := range parts {
		l.WriteString(p)
	}
	l.WriteByte('\n')
}

// --- Python: requests -------------------------------------------------------------------

func pythonHead(ps []*Request) string {
	h := "import requests\n"
	if anyBinary(ps) {
		h = "import base64\n\n" + h
	}
	return h + "\n"
}

func pyBody(p *Request) string {
	if p.Text() {
		return pyStr(string(p.Body)) + ".encode('utf-8')"
	}
	return "base64.b64decode(" + pyStr(b64(p.Body)) + ")"
}

// requests keeps one value per header name, so repeated fields are joined. The request is
// prepared from requests.Request and sent with Session.send, which adds none of the
// session's default headers.
func pythonBlock(p *Request) string {
	var l lines
	l.add(0, "req = requests.Request(", pyStr(p.Method), ", ", pyStr(p.URL), ", headers={")
	for _, h := range joined(p.Headers) {
		l.add(4, pyStr(h.Name), ": ", pyBytes([]byte(h.Value)), ",")
	}
	if len(p.Body) > 0 {
		l.add(0, "}, data=", pyBody(p), ")")
	} else {
		l.add(0, "})")
	}
	l.add(0, "resp = requests.Session().send(req.prepare())")
	l.add(0, "print(resp.status_code)")
	l.add(0, "print(resp.text)")
	return l.String()
}

// --- Python: httpx ----------------------------------------------------------------------

func httpxHead(ps []*Request) string {
	h := "import httpx\n"
	if anyBinary(ps) {
		h = "import base64\n\n" + h
	}
	return h + "\nwith httpx.Client() as client:\n"
}

// httpx.Request takes the headers as a list of byte pairs (repeated ones kept), and
// Client.send adds none of the client's default headers.
func httpxBlock(p *Request) string {
	var l lines
	l.add(4, "req = httpx.Request(", pyStr(p.Method), ", ", pyStr(p.URL), ", headers=[")
	for _, h := range p.Headers {
		l.add(8, "(", pyBytes([]byte(h.Name)), ", ", pyBytes([]byte(h.Value)), "),")
	}
	if len(p.Body) > 0 {
		l.add(4, "], content=", pyBody(p), ")")
	} else {
		l.add(4, "])")
	}
	l.add(4, "resp = client.send(req)")
	l.add(4, "print(resp.status_code)")
	l.add(4, "print(resp.text)")
	return l.String()
}

// --- JavaScript: fetch ------------------------------------------------------------------

// fetch: Headers.append keeps repeated names but the request joins them; header values
// are ByteStrings (one character per byte). A browser drops forbidden names.
func fetchBlock(p *Request) string {
	var l lines
	l.add(0, "await fetch(", jsStr(p.URL), ", {")
	l.add(2, "method: ", jsStr(p.Method), ",")
	l.add(2, "headers: [")
	for _, h := range p.Headers {
		l.add(4, "[", jsStr(h.Name), ", ", jsByteStr(h.Value), "],")
	}
	l.add(2, "],")
	switch {
	case len(p.Body) > 0 && (p.Method == "GET" || p.Method == "HEAD"):
		l.add(2, "// fetch cannot send a body with GET or HEAD: the recorded body is left out")
	case len(p.Body) > 0:
		if p.Text() {
			l.add(2, "body: ", jsStr(string(p.Body)), ",")
		} else {
			l.add(2, "body: Uint8Array.from(atob(", jsStr(b64(p.Body)), "), (c) => c.charCodeAt(0)),")
		}
	}
	l.add(0, "}).then(async (res) => console.log(res.status, await res.text()));")
	return l.String()
}

// --- Node: node:http --------------------------------------------------------------------

func nodeHead([]*Request) string {
	return `const http = require('node:http');
const https = require('node:https');

// send makes one request; headers are raw [name, value, …] pairs, sent as they are
// (node:http adds neither Host nor Content-Length to raw headers).
function send(url, method, headers, body) {
  return new Promise((resolve, reject) => {
    const mod = url.startsWith('https:') ? https : http;
    headers = ['Host', new URL(url).host, ...headers];
    if (body !== undefined) headers.push('Content-Length', String(body.length));
    const req = mod.request(url, { method, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => { console.log(res.statusCode, Buffer.concat(chunks).toString()); resolve(); });
    });
    req.on('error', reject);
    req.end(body);
  });
}

(async () => {
`
}

// node:http takes the headers as a flat array of names and values (as rawHeaders), so
// repeated fields stay separate lines; values are byte strings.
func nodeBlock(p *Request) string {
	var l lines
	l.add(2, "await send(", jsStr(p.URL), ", ", jsStr(p.Method), ", [")
	for _, h := range p.Headers {
		l.add(4, jsStr(h.Name), ", ", jsByteStr(h.Value), ",")
	}
	switch {
	case len(p.Body) == 0:
		l.add(2, "]);")
	case p.Text():
		l.add(2, "], Buffer.from(", jsStr(string(p.Body)), ", 'utf8'));")
	default:
		l.add(2, "], Buffer.from(", jsStr(b64(p.Body)), ", 'base64'));")
	}
	return l.String()
}

// --- Go: net/http -----------------------------------------------------------------------

func goHead([]*Request) string {
	return "package main\n\nimport (\n\t\"fmt\"\n\t\"io\"\n\t\"net/http\"\n\t\"os\"\n\t\"strings\"\n)\n\nfunc main() {\n"
}

// goStr is a Go string literal: strconv.Quote writes any bytes, invalid UTF-8 as \x.
func goStr(s string) string { return strconv.Quote(s) }

// Header fields are set on the map directly, so their names are sent as recorded.
func goBlock(p *Request) string {
	var l lines
	t := func(n int, parts ...string) { l.add(0, append([]string{strings.Repeat("\t", n)}, parts...)...) }
	t(1, "{")
	t(2, "req, err := http.NewRequest(", goStr(p.Method), ", ", goStr(p.URL), ", strings.NewReader(", goStr(string(p.Body)), "))")
	t(2, "if err != nil {")
	t(3, "panic(err)")
	t(2, "}")
	for i := 0; i < len(p.Headers); {
		j := i
		var vs []string
		for ; j < len(p.Headers) && p.Headers[j].Name == p.Headers[i].Name; j++ {
			vs = append(vs, goStr(p.Headers[j].Value))
		}
		t(2, "req.Header[", goStr(p.Headers[i].Name), "] = []string{", strings.Join(vs, ", "), "}")
		i = j
	}
	t(2, "resp, err := http.DefaultClient.Do(req)")
	t(2, "if err != nil {")
	t(3, "panic(err)")
	t(2, "}")
	t(2, "fmt.Println(resp.Status)")
	t(2, "io.Copy(os.Stdout, resp.Body)")
	t(2, "resp.Body.Close()")
	t(1, "}")
	return l.String()
}

// --- Java: java.net.http.HttpClient -----------------------------------------------------

func javaHead([]*Request) string {
	return `import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

// Run with: java Request.java
public class Request {
    public static void main(String[] args) throws Exception {
        HttpClient client = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build();
`
}

// HttpClient refuses Connection, Content-Length, Expect, Host and Upgrade, all dropped by
// preparation. Plain http:// is sent as HTTP/1.1 (HTTP_2 there would add an h2c Upgrade).
func javaBlock(p *Request) string {
	var l lines
	body := "HttpRequest.BodyPublishers.noBody()"
	switch {
	case len(p.Body) > 0 && p.Text():
		body = "HttpRequest.BodyPublishers.ofByteArray(" + javaStr(string(p.Body)) + ".getBytes(StandardCharsets.UTF_8))"
	case len(p.Body) > 0:
		body = "HttpRequest.BodyPublishers.ofByteArray(Base64.getDecoder().decode(" + javaStr(b64(p.Body)) + "))"
	}
	version := "HTTP_1_1"
	if strings.HasPrefix(p.URL, "https://") {
		version = "HTTP_2"
	}
	l.add(8, "{")
	l.add(12, "HttpRequest request = HttpRequest.newBuilder(URI.create(", javaStr(p.URL), "))")
	l.add(16, ".version(HttpClient.Version.", version, ")")
	l.add(16, ".method(", javaStr(p.Method), ", ", body, ")")
	for _, h := range p.Headers {
		if !isASCII(h.Value) {
			l.add(16, "// HttpClient sends header values in US-ASCII: the next one arrives with '?' for its other bytes")
		}
		l.add(16, ".header(", javaStr(h.Name), ", ", javaByteStr(h.Value), ")")
	}
	l.add(16, ".build();")
	l.add(12, "HttpResponse<String> response = client.send(request, HttpResponse.BodyHandlers.ofString());")
	l.add(12, "System.out.println(response.statusCode());")
	l.add(12, "System.out.println(response.body());")
	l.add(8, "}")
	return l.String()
}

// --- C#: System.Net.Http.HttpClient -----------------------------------------------------

func csHead([]*Request) string {
	return `// A console program (any C#; .NET or Mono): csc Request.cs, or replace Program.cs.
using System;
using System.Net.Http;
using System.Text;

class Request
{
    static void Main()
    {
        var client = new HttpClient(new HttpClientHandler { AllowAutoRedirect = false, UseCookies = false });
`
}

// contentHeaders belong to HttpContent in .NET, not to the request.
var contentHeaders = map[string]bool{
	"allow": true, "content-disposition": true, "content-encoding": true, "content-language": true,
	"content-location": true, "content-md5": true, "content-range": true, "content-type": true,
	"expires": true, "last-modified": true,
}

func csBlock(p *Request) string {
	var l lines
	l.add(8, "{")
	l.add(12, "var request = new HttpRequestMessage(new HttpMethod(", csStr(p.Method), "), ", csStr(p.URL), ");")
	needContent := len(p.Body) > 0
	for _, h := range p.Headers {
		needContent = needContent || contentHeaders[strings.ToLower(h.Name)] && isASCII(h.Value)
	}
	if needContent {
		switch {
		case len(p.Body) == 0:
			l.add(12, "request.Content = new ByteArrayContent(new byte[0]);")
		case p.Text():
			l.add(12, "request.Content = new ByteArrayContent(Encoding.UTF8.GetBytes(", csStr(string(p.Body)), "));")
		default:
			l.add(12, "request.Content = new ByteArrayContent(Convert.FromBase64String(", csStr(b64(p.Body)), "));")
		}
		l.add(12, "request.Content.Headers.Clear();")
	}
	for _, h := range joined(p.Headers) { // as HttpClient would (it joins with ", ")
		if !isASCII(h.Value) {
			l.add(12, "// HttpClient refuses header values outside ASCII; one such field is left out here")
			continue
		}
		target := "request.Headers"
		if contentHeaders[strings.ToLower(h.Name)] {
			target = "request.Content.Headers"
		}
		l.add(12, target, ".TryAddWithoutValidation(", csStr(h.Name), ", ", csByteStr(h.Value), ");")
	}
	l.add(12, "var response = client.SendAsync(request).GetAwaiter().GetResult();")
	l.add(12, "Console.WriteLine((int)response.StatusCode);")
	l.add(12, "Console.WriteLine(response.Content.ReadAsStringAsync().GetAwaiter().GetResult());")
	l.add(8, "}")
	return l.String()
}

// --- PHP: ext/curl ----------------------------------------------------------------------

// libcurl sends "Expect: 100-continue" for larger bodies unless told not to ("Expect:"),
// and a header with an empty value is written "Name;".
func phpBlock(p *Request) string {
	var l lines
	l.add(0, "$ch = curl_init();")
	l.add(0, "curl_setopt_array($ch, [")
	l.add(4, "CURLOPT_URL => ", phpStr(p.URL), ",")
	l.add(4, "CURLOPT_CUSTOMREQUEST => ", phpStr(p.Method), ",")
	if p.Method == "HEAD" {
		l.add(4, "CURLOPT_NOBODY => true,")
	}
	l.add(4, "CURLOPT_HTTPHEADER => [")
	for _, h := range p.Headers {
		if h.Value == "" {
			l.add(8, phpStr(h.Name+";"), ",")
		} else {
			l.add(8, phpStr(h.Name+": "+h.Value), ",")
		}
	}
	l.add(8, "'Expect:',")
	l.add(4, "],")
	switch {
	case len(p.Body) == 0:
	case p.Text():
		l.add(4, "CURLOPT_POSTFIELDS => ", phpStr(string(p.Body)), ",")
	default:
		l.add(4, "CURLOPT_POSTFIELDS => base64_decode(", phpStr(b64(p.Body)), "),")
	}
	l.add(4, "CURLOPT_RETURNTRANSFER => true,")
	l.add(0, "]);")
	l.add(0, "$response = curl_exec($ch);")
	l.add(0, "if ($response === false) {")
	l.add(4, "fwrite(STDERR, curl_error($ch) . \"\\n\");")
	l.add(4, "exit(1);")
	l.add(0, "}")
	l.add(0, "echo curl_getinfo($ch, CURLINFO_RESPONSE_CODE), \"\\n\", $response, \"\\n\";")
	l.add(0, "curl_close($ch);")
	return l.String()
}

// --- Rust: reqwest ----------------------------------------------------------------------

func rustHead([]*Request) string {
	return `// Cargo.toml: reqwest = { version = "0.12", features = ["blocking"] }
use reqwest::header::{HeaderName, HeaderValue};
use reqwest::Method;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
`
}

// RequestBuilder.header appends, so repeated fields stay separate.
func rustBlock(p *Request) string {
	var l lines
	l.add(4, "{")
	l.add(8, "let resp = client")
	l.add(12, ".request(Method::from_bytes(", rustBytes([]byte(p.Method)), ")?, ", rustStr(p.URL), ")")
	for _, h := range p.Headers {
		l.add(12, ".header(HeaderName::from_bytes(", rustBytes([]byte(h.Name)), ")?, HeaderValue::from_bytes(", rustBytes([]byte(h.Value)), ")?)")
	}
	switch {
	case len(p.Body) == 0:
	case p.Text():
		l.add(12, ".body(", rustStr(string(p.Body)), ")")
	default:
		l.add(12, ".body(", rustBytes(p.Body), ".to_vec())")
	}
	l.add(12, ".send()?;")
	l.add(8, "println!(\"{}\", resp.status());")
	l.add(8, "println!(\"{}\", resp.text()?);")
	l.add(4, "}")
	return l.String()
}

// --- PowerShell: Invoke-WebRequest ------------------------------------------------------

// -Headers is a hashtable (repeated fields joined); -SkipHeaderValidation lets every
// value through as recorded, Content-Type included; -CustomMethod takes any method
// (PowerShell 6 or later).
func psBlock(p *Request) string {
	var l lines
	l.add(0, "$headers = @{")
	for _, h := range joined(p.Headers) {
		l.add(4, psStr(h.Name), " = ", psStr(h.Value))
	}
	l.add(0, "}")
	args := "-Uri " + psStr(p.URL) + " -CustomMethod " + psStr(p.Method) + " -Headers $headers -SkipHeaderValidation -MaximumRedirection 0"
	switch {
	case len(p.Body) == 0:
	case p.Text():
		l.add(0, "$body = [System.Text.Encoding]::UTF8.GetBytes(", psStr(string(p.Body)), ")")
		args += " -Body $body"
	default:
		l.add(0, "$body = [Convert]::FromBase64String(", psStr(b64(p.Body)), ")")
		args += " -Body $body"
	}
	l.add(0, "$response = Invoke-WebRequest ", args)
	l.add(0, "$response.StatusCode")
	l.add(0, "$response.Content")
	return l.String()
}
