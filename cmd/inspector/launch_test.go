package main

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	et "inspector/engine/enginetest"
	"inspector/rootca"
)

// envOrigin starts a TLS origin on a non-loopback address when the machine has one (Go
// and Java never proxy loopback), with a certificate from a CA of its own; it returns the
// origin's base URL and that CA's PEM file for --upstream-ca.
func envOrigin(t *testing.T) (string, string) {
	t.Helper()
	host := "127.0.0.1"
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
				host = n.IP.String()
				break
			}
		}
	}
	oca, err := rootca.Load(filepath.Join(t.TempDir(), "origin-ca"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := oca.LeafFor(host)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: et.Handler()}, TLS: &tls.Config{Certificates: []tls.Certificate{*leaf}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	f := filepath.Join(t.TempDir(), "origin-ca.pem")
	os.WriteFile(f, oca.PEM(), 0o644)
	return srv.URL, f
}

// TestEnvRowsWithRealTools: eval "$(inspector env)" in bash, then each tool fetches an
// HTTPS page; the page must come back (the CA variable worked) and the session must be
// recorded (the proxy variable worked). Tools not installed here are skipped.
func TestEnvRowsWithRealTools(t *testing.T) {
	base, originCA := envOrigin(t)
	if strings.Contains(base, "127.0.0.1") {
		t.Log("no non-loopback address: tools that never proxy loopback (Go, Java) are skipped")
	}
	data := t.TempDir()
	h := startHeadless(t, data, "--upstream-ca", originCA)
	env, err := exec.Command(binary(t), "env", "--data-dir", data).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(env), "export HTTPS_PROXY='http://"+h.addr+"'") {
		t.Fatalf("env output:\n%s", env)
	}
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "get.go"), []byte(`package main
import ("fmt";"io";"net/http";"os")
func main(){ r,err:=http.Get(os.Args[1]); if err!=nil {fmt.Println(err); os.Exit(1)}; b,_:=io.ReadAll(r.Body); fmt.Println(string(b)) }
`), 0o644)
	os.WriteFile(filepath.Join(work, "Get.java"), []byte(`public class Get { public static void main(String[] a) throws Exception {
  var c = (javax.net.ssl.HttpsURLConnection) new java.net.URL(a[0]).openConnection();
  System.out.println(new String(c.getInputStream().readAllBytes())); } }
`), 0o644)
	// Node 20 has no proxy support of its own: the script tunnels with HTTPS_PROXY by hand,
	// which is what proxy agents do; NODE_EXTRA_CA_CERTS is what is verified.
	os.WriteFile(filepath.Join(work, "get.js"), []byte(`const http=require('http'),tls=require('tls');
const u=new URL(process.argv[2]), p=new URL(process.env.HTTPS_PROXY);
http.request({host:p.hostname,port:p.port,method:'CONNECT',path:u.host}).on('connect',(res,sock)=>{
  const s=tls.connect({socket:sock,servername:u.hostname},()=>{s.write('GET '+u.pathname+u.search+' HTTP/1.1\r\nHost: '+u.host+'\r\nConnection: close\r\n\r\n')});
  let out='';s.on('data',d=>out+=d);s.on('end',()=>console.log(out));s.on('error',e=>{console.log(e.message);process.exit(1)});
}).end();
`), 0o644)
	rows := []struct{ tool, cmd string }{
		{"curl", `curl -sS --max-time 60 "$URL"`},
		{"python3", `python3 -c 'import sys,urllib.request,ssl; print(urllib.request.urlopen(sys.argv[1]).read().decode())' "$URL"`},
		{"python3", `python3 -c 'import sys,requests; print(requests.get(sys.argv[1]).text)' "$URL"`},
		{"node", `node get.js "$URL"`},
		{"git", `git -c http.sslVerify=true ls-remote "$URL/echo.git" 2>&1 || true`},
		{"go", `go run get.go "$URL"`},
		{"java", `java Get.java "$URL"`},
	}
	for i, r := range rows {
		if _, err := exec.LookPath(r.tool); err != nil {
			t.Logf("%s not installed: row skipped", r.tool)
			continue
		}
		if strings.Contains(base, "127.0.0.1") && (r.tool == "go" || r.tool == "java") {
			continue
		}
		if strings.Contains(r.cmd, "requests") && exec.Command("python3", "-c", "import requests").Run() != nil {
			t.Log("python3 requests not installed: row skipped")
			continue
		}
		u := base + "/echo?row=" + r.tool + "-" + string(rune('a'+i))
		if r.tool == "git" {
			u = base
		}
		cmd := exec.Command("bash", "-c", `eval "$(`+binary(t)+` env --data-dir `+data+`)"; `+r.cmd)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "URL="+u, "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if r.tool != "git" && (err != nil || !strings.Contains(string(out), "/echo?row=")) {
			t.Errorf("%s: %v\n%s", r.cmd, err, out)
			continue
		}
		if r.tool == "git" && (strings.Contains(string(out), "certificate") || strings.Contains(string(out), "SSL")) {
			t.Errorf("git did not trust the bundle: %s", out)
			continue
		}
		want := "/echo?row="
		if r.tool == "git" {
			want = "/echo.git/info/refs"
		}
		if l := h.nextLine(t); !strings.Contains(l, want) {
			t.Errorf("%s: session line %q, want %s", r.tool, l, want)
		}
		t.Logf("%-8s ok in %v", r.tool, time.Since(start).Round(time.Millisecond))
	}
}

// TestLaunchChromium: `inspector launch chromium` starts Chromium through its own SOCKS
// listener with a fresh profile; the page is decrypted and the session carries the
// client's name. A second launch gets a second profile. A browser that is not installed is
// named with where it was looked for.
func TestLaunchChromium(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("chromium not installed (package chromium)")
	}
	base, originCA := envOrigin(t)
	data, err := os.MkdirTemp("", "inspector-launch")
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs last: Chromium may still be writing its profile as it
	// exits after --dump-dom.
	t.Cleanup(func() {
		deadline := time.Now().Add(60 * time.Second)
		for os.RemoveAll(data) != nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
	})
	h := startHeadless(t, data, "--upstream-ca", originCA)
	for n := 1; n <= 2; n++ {
		start := time.Now()
		code, out, errs := runCmd(t, "launch", "--data-dir", data, "--url", base+"/echo?launched=1", "chromium", "--", "--headless", "--disable-gpu", "--dump-dom")
		if code != 0 || !strings.Contains(out, "chromium-"+string(rune('0'+n))) {
			t.Fatalf("launch %d: %d %q %q", n, code, out, errs)
		}
		// Chromium's own background requests come first; the page's session follows.
		for l := h.nextLine(t); !strings.Contains(l, "/echo?launched=1"); l = h.nextLine(t) {
		}
		t.Logf("launch %d: first decrypted HTTPS session after %v", n, time.Since(start).Round(time.Millisecond))
		if _, err := os.Stat(filepath.Join(data, "launch", "chromium-"+string(rune('0'+n)))); err != nil {
			t.Fatalf("profile %d: %v", n, err)
		}
	}
	if _, err := exec.LookPath("microsoft-edge"); err != nil {
		code, _, errs := runCmd(t, "launch", "--data-dir", data, "edge")
		if code == 0 || !strings.Contains(errs, "Microsoft Edge is not installed: looked for it on PATH: microsoft-edge, microsoft-edge-stable") {
			t.Fatalf("edge: %d %q", code, errs)
		}
	}
	if code, _, errs := runCmd(t, "launch", "--data-dir", data, "netscape"); code != 2 || !strings.Contains(errs, "unknown client") {
		t.Fatalf("unknown client: %d %q", code, errs)
	}
}
