package engine_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
)

// fpGet fetches url with c and returns what the fingerprinting origin saw.
func fpGet(t *testing.T, c *http.Client, url string) http.Header {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Header.Get("X-JA4") == "" {
		t.Fatalf("the origin computed no JA4: %v", resp.Header)
	}
	return resp.Header
}

// goClient is a Go client that offers protos in ALPN, direct or through proxy p.
func goClient(o *et.FPOrigin, p *et.Proxy, protos []string) *http.Client {
	tr := o.Pool()
	tr.TLSClientConfig.NextProtos = protos
	tr.ForceAttemptHTTP2 = len(protos) > 0 && protos[0] == "h2"
	if p != nil {
		tr.Proxy = http.ProxyURL(p.URL)
		tr.TLSClientConfig.RootCAs = p.CAPool()
	}
	if tr.ForceAttemptHTTP2 {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetHTTP1(true)
		tr.Protocols.SetHTTP2(true)
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// The client leg's fingerprint as Inspector records it is what an origin computes from
// the same client connecting directly.
func TestClientLegFingerprint(t *testing.T) {
	t.Parallel()
	o := et.StartFPOrigin(t)
	p := et.StartProxy(t, nil, o.Origin())
	for _, protos := range [][]string{{"h2", "http/1.1"}, {"http/1.1"}} {
		direct := fpGet(t, goClient(o, nil, protos), o.URL+"/")
		through := goClient(o, p, protos)
		fpGet(t, through, o.URL+"/")
		s := p.Next(t)
		fp := s.Client.Fingerprint
		if fp == nil {
			t.Fatalf("%v: no client fingerprint", protos)
		}
		if fp.JA4 != direct.Get("X-JA4") || fp.JA3Raw != direct.Get("X-JA3-Raw") || fp.JA3 != direct.Get("X-JA3") {
			t.Fatalf("%v: client leg %+v, direct %s %s", protos, fp, direct.Get("X-JA4"), direct.Get("X-JA3-Raw"))
		}
		if protos[0] == "h2" {
			if fp.H2 == "" || fp.H2 != direct.Get("X-H2FP") {
				t.Fatalf("h2 fingerprint %q, direct %q", fp.H2, direct.Get("X-H2FP"))
			}
		} else if fp.H2 != "" {
			t.Fatalf("HTTP/1.1 client with an h2 fingerprint %q", fp.H2)
		}
		through.CloseIdleConnections()
	}
}

// The origin sees the client's JA4 through Inspector as it does direct, on both
// protocols, and the session records the upstream leg's fingerprint as the origin saw it.
func TestUpstreamMirrorsGoClient(t *testing.T) {
	t.Parallel()
	o := et.StartFPOrigin(t)
	p := et.StartProxy(t, nil, o.Origin())
	// nil: a client that offers no ALPN at all (Python's urllib, Java's
	// HttpsURLConnection).
	for _, protos := range [][]string{{"h2", "http/1.1"}, {"http/1.1"}, nil} {
		direct := fpGet(t, goClient(o, nil, protos), o.URL+"/")
		through := goClient(o, p, protos)
		seen := fpGet(t, through, o.URL+"/")
		s := p.Next(t)
		if seen.Get("X-JA4") != direct.Get("X-JA4") || seen.Get("X-JA3-Raw") != direct.Get("X-JA3-Raw") {
			t.Fatalf("%v: origin saw %s / %s through Inspector, %s / %s direct", protos,
				seen.Get("X-JA4"), seen.Get("X-JA3-Raw"), direct.Get("X-JA4"), direct.Get("X-JA3-Raw"))
		}
		up := s.Upstream.Fingerprint
		if up == nil || up.JA4 != seen.Get("X-JA4") || up.JA3 != seen.Get("X-JA3") || up.Mirror != "mirrored" {
			t.Fatalf("%v: upstream fingerprint %+v, origin saw %s", protos, up, seen.Get("X-JA4"))
		}
		if len(protos) > 0 && protos[0] == "h2" && (up.H2 == "" || up.H2 != seen.Get("X-H2FP")) {
			t.Fatalf("upstream h2 fingerprint %q, origin saw %q", up.H2, seen.Get("X-H2FP"))
		}
		// A second request on the kept-alive connections: same record, no new handshake.
		fpGet(t, through, o.URL+"/")
		if s2 := p.Next(t); s2.Upstream.Fingerprint != up && *s2.Upstream.Fingerprint != *up {
			t.Fatalf("second request: %+v", s2.Upstream.Fingerprint)
		}
		through.CloseIdleConnections()
	}
}

// A client whose hello offers session resumption (session_ticket, psk_key_exchange_modes)
// but no pre_shared_key, after Inspector holds a session with the origin: Python's urllib,
// Java and Node send such hellos, and utls panicked building the mirrored one (the client
// got its connection closed with no response). Then the same client resumes with
// Inspector: the origin sees a resumed hello too, with the JA4 it sees direct.
func TestUpstreamMirrorsResumption(t *testing.T) {
	t.Parallel()
	o := et.StartFPOrigin(t)
	p := et.StartProxy(t, nil, o.Origin())
	// A first client leaves Inspector a resumable session with the origin.
	first := goClient(o, p, []string{"h2", "http/1.1"})
	fpGet(t, first, o.URL+"/")
	first.CloseIdleConnections()
	p.Next(t)
	for _, protos := range [][]string{nil, {"http/1.1"}, {"h2", "http/1.1"}} {
		resuming := func(proxy *et.Proxy) *http.Client {
			c := goClient(o, proxy, protos)
			c.Transport.(*http.Transport).TLSClientConfig.ClientSessionCache = tls.NewLRUClientSessionCache(8)
			return c
		}
		var direct [2]http.Header
		dc := resuming(nil)
		for i := range direct {
			direct[i] = fpGet(t, dc, o.URL+"/")
			dc.CloseIdleConnections()
		}
		if direct[0].Get("X-Resumed") != "false" || direct[1].Get("X-Resumed") != "true" {
			t.Fatalf("%v direct: resumed %q then %q", protos, direct[0].Get("X-Resumed"), direct[1].Get("X-Resumed"))
		}
		tc := resuming(p)
		for i := range direct {
			seen := fpGet(t, tc, o.URL+"/")
			tc.CloseIdleConnections()
			s := p.Next(t)
			if seen.Get("X-JA4") != direct[i].Get("X-JA4") || seen.Get("X-JA3-Raw") != direct[i].Get("X-JA3-Raw") {
				t.Fatalf("%v connection %d: origin saw %s / %s through Inspector, %s / %s direct", protos, i+1,
					seen.Get("X-JA4"), seen.Get("X-JA3-Raw"), direct[i].Get("X-JA4"), direct[i].Get("X-JA3-Raw"))
			}
			if up := s.Upstream.Fingerprint; up == nil || !strings.HasPrefix(up.Mirror, "mirrored") {
				t.Fatalf("%v connection %d: upstream %+v", protos, i+1, up)
			}
			if i == 1 && seen.Get("X-Resumed") != "true" {
				t.Fatalf("%v: the client resumed with Inspector, the origin saw no resumption", protos)
			}
		}
	}
}

// --fingerprint go and --fingerprint-go: Go's ClientHello, and the session says why.
func TestFingerprintPolicyGo(t *testing.T) {
	t.Parallel()
	o := et.StartFPOrigin(t)
	for _, mod := range []func(*engine.Config){
		func(c *engine.Config) { c.Fingerprint = "go" },
		func(c *engine.Config) { c.FingerprintGo = []string{"127.0.0.*"} },
	} {
		p := et.StartProxy(t, mod, o.Origin())
		c := goClient(o, p, []string{"h2", "http/1.1"})
		fpGet(t, c, o.URL+"/")
		s := p.Next(t)
		if up := s.Upstream.Fingerprint; up == nil || !strings.HasPrefix(up.Mirror, "Go's ClientHello: --fingerprint") || up.JA4 == "" {
			t.Fatalf("upstream fingerprint %+v", up)
		}
		c.CloseIdleConnections()
	}
	if _, err := engine.New(engine.Config{Listen: "127.0.0.1:0", Fingerprint: "chrome"}); err == nil || !strings.Contains(err.Error(), "mirror or go") {
		t.Fatalf("unknown policy: %v", err)
	}
}

// bodyFP reads the ja4=/ja3=/h2= lines the fingerprinting origin writes.
func bodyFP(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		for _, k := range []string{"ja4", "ja3", "h2"} {
			if i := strings.Index(l, k+"="); i >= 0 {
				m[k] = strings.TrimSpace(strings.TrimSuffix(l[i+len(k)+1:], "</pre>"))
			}
		}
	}
	return m
}

// curl, direct and through Inspector, over HTTP/2 and HTTP/1.1: the origin sees the same
// JA4 (curl's OpenSSL ClientHello, not Go's).
func TestUpstreamMirrorsCurl(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed (make deps installs it)")
	}
	o := et.StartFPOrigin(t)
	p := et.StartProxy(t, nil, o.Origin())
	dir := t.TempDir()
	originCA, proxyCA := writeCAs(t, dir, o, p)
	run := func(args ...string) map[string]string {
		t.Helper()
		out, err := exec.Command(curl, append([]string{"-sS", "--max-time", "60"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %v: %v\n%s", args, err, out)
		}
		return bodyFP(string(out))
	}
	for _, proto := range []string{"--http2", "--http1.1"} {
		direct := run("--cacert", originCA, proto, o.URL+"/")
		through := run("-x", p.URL.String(), "--cacert", proxyCA, proto, o.URL+"/")
		s := p.Next(t)
		if direct["ja4"] == "" || through["ja4"] != direct["ja4"] || through["ja3"] != direct["ja3"] {
			t.Fatalf("curl %s: origin saw %v through Inspector, %v direct (%+v)", proto, through, direct, s.Upstream.Fingerprint)
		}
		if s.Client.Fingerprint == nil || s.Client.Fingerprint.JA4 != direct["ja4"] || s.Upstream.Fingerprint.Mirror != "mirrored" {
			t.Fatalf("curl %s: session %+v / %+v", proto, s.Client.Fingerprint, s.Upstream.Fingerprint)
		}
		t.Logf("curl %s: JA4 %s JA3 %s h2 direct %q, through Inspector %q", proto, direct["ja4"], direct["ja3"], direct["h2"], through["h2"])
	}
}

// Chromium (headless), direct and through Inspector: the same JA4 at the origin.
func TestUpstreamMirrorsChromium(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed")
	}
	o := et.StartFPOrigin(t)
	p := et.StartProxy(t, nil, o.Origin())
	run := func(extra ...string) map[string]string {
		t.Helper()
		args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
			"--user-data-dir=" + t.TempDir(), "--ignore-certificate-errors", "--dump-dom"}, extra...)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, append(args, o.URL+"/")...).Output()
		if err != nil {
			t.Skipf("chromium did not run here: %v", err)
		}
		return bodyFP(string(out))
	}
	direct := run()
	through := run("--proxy-server="+p.URL.String(), "--proxy-bypass-list=<-loopback>")
	if direct["ja4"] == "" || through["ja4"] != direct["ja4"] {
		why := ""
		for len(p.Sessions) > 0 {
			if s := <-p.Sessions; s.Upstream.Fingerprint != nil {
				why += " " + s.Upstream.Fingerprint.Mirror
			}
		}
		t.Fatalf("chromium: origin saw %v through Inspector, %v direct;%s", through, direct, why)
	}
	t.Logf("chromium: JA4 %s; h2 direct %q, through Inspector %q", direct["ja4"], direct["h2"], through["h2"])
}

// Python's urllib, Java's HttpsURLConnection and Node's tls (OpenSSL and JSSE hellos that
// offer no ALPN, and session_ticket without a pre_shared_key), direct and through
// Inspector, twice (the second time Inspector holds a session with the origin): the
// request goes through, and the origin sees the same JA4.
func TestUpstreamMirrorsPythonJavaNode(t *testing.T) {
	t.Parallel()
	o := et.StartFPOrigin(t)
	p := et.StartProxy(t, nil, o.Origin())
	dir := t.TempDir()
	originCA, proxyCA := writeCAs(t, dir, o, p)
	run := func(name string, args ...string) map[string]string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "JAVA_TOOL_OPTIONS=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return bodyFP(string(out))
	}
	proxy := p.URL.Host
	tools := []struct {
		name            string
		direct, through []string
	}{
		{"python3", []string{"-c", pyGet, originCA, o.URL + "/"}, []string{"-c", pyGet, proxyCA, o.URL + "/", p.URL.String()}},
		{"node", []string{"-e", nodeGet, originCA, o.URL + "/"}, []string{"-e", nodeGet, proxyCA, o.URL + "/", proxy}},
		{"java", javaArgs(t, dir, "origin", originCA, o.URL+"/", ""), javaArgs(t, dir, "proxy", proxyCA, o.URL+"/", proxy)},
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool.name); err != nil {
			t.Logf("%s not installed: skipped", tool.name)
			continue
		}
		direct := run(tool.name, tool.direct...)
		for i := range 2 {
			through := run(tool.name, tool.through...)
			s := p.Next(t)
			if direct["ja4"] == "" || through["ja4"] != direct["ja4"] || through["ja3"] != direct["ja3"] {
				t.Fatalf("%s (%d): origin saw %v through Inspector, %v direct (%+v)", tool.name, i+1, through, direct, s.Upstream.Fingerprint)
			}
			if up := s.Upstream.Fingerprint; up == nil || !strings.HasPrefix(up.Mirror, "mirrored") {
				t.Fatalf("%s: upstream %+v", tool.name, up)
			}
		}
		t.Logf("%s: JA4 %s JA3 %s", tool.name, direct["ja4"], direct["ja3"])
	}
}

// writeCAs writes the origin's certificate and the proxy's CA as PEM files in dir.
func writeCAs(t *testing.T, dir string, o *et.FPOrigin, p *et.Proxy) (originCA, proxyCA string) {
	t.Helper()
	originCA, proxyCA = filepath.Join(dir, "origin.pem"), filepath.Join(dir, "proxy.pem")
	if err := os.WriteFile(originCA, o.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(proxyCA, p.CA.PEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	return originCA, proxyCA
}

// pyGet fetches argv[2] trusting argv[1], through the proxy argv[3] if given.
const pyGet = `import sys,ssl,urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[1])
h = [urllib.request.HTTPSHandler(context=ctx)]
if len(sys.argv) > 3: h.append(urllib.request.ProxyHandler({"https": sys.argv[3]}))
print(urllib.request.build_opener(*h).open(sys.argv[2], timeout=60).read().decode())`

// nodeGet fetches argv[2] trusting argv[1], tunnelled through the proxy host:port argv[3]
// if given (Node has no proxy support of its own; this is what proxy agents do).
const nodeGet = `const fs=require('fs'),http=require('http'),tls=require('tls');
const [ca,url,proxy]=process.argv.slice(1), u=new URL(url);
const go=sock=>{const s=tls.connect({socket:sock,host:u.hostname,port:u.port,ca:fs.readFileSync(ca)},()=>{
  s.write('GET '+u.pathname+' HTTP/1.1\r\nHost: '+u.host+'\r\nConnection: close\r\n\r\n')});
  let out='';s.on('data',d=>out+=d);s.on('end',()=>console.log(out));s.on('error',e=>{console.log(e.message);process.exit(1)});};
if(!proxy){go(undefined)}else{const [h,p]=proxy.split(':');
  http.request({host:h,port:p,method:'CONNECT',path:u.host}).on('connect',(res,sock)=>go(sock)).end();}`

// javaArgs are the arguments of a java run fetching url with HttpsURLConnection, trusting
// the CA in pem (a PKCS12 trust store made with keytool), through proxy host:port if not
// empty (loopback included).
func javaArgs(t *testing.T, dir, name, pem, url, proxy string) []string {
	t.Helper()
	src := filepath.Join(dir, "Get.java")
	if err := os.WriteFile(src, []byte(`public class Get { public static void main(String[] a) throws Exception {
  var c = (javax.net.ssl.HttpsURLConnection) new java.net.URL(a[0]).openConnection();
  System.out.println(new String(c.getInputStream().readAllBytes())); } }
`), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, name+".p12")
	if kt, err := exec.LookPath("keytool"); err == nil {
		if out, err := exec.Command(kt, "-importcert", "-noprompt", "-alias", name, "-file", pem, "-keystore", store,
			"-storepass", "inspector", "-storetype", "PKCS12").CombinedOutput(); err != nil {
			t.Fatalf("keytool: %v\n%s", err, out)
		}
	}
	args := []string{"-Djavax.net.ssl.trustStore=" + store, "-Djavax.net.ssl.trustStorePassword=inspector", "-Djavax.net.ssl.trustStoreType=PKCS12"}
	if proxy != "" {
		h, port, _ := strings.Cut(proxy, ":")
		args = append(args, "-Dhttps.proxyHost="+h, "-Dhttps.proxyPort="+port, "-Dhttp.nonProxyHosts=")
	}
	return append(args, src, url)
}

// git over HTTPS (libcurl with GnuTLS, whose hello carries two classical key shares,
// secp256r1 and x25519) through Inspector: the origin answers (utls holds one classical
// key: the mirrored hello keeps x25519's share only, which JA3 and JA4 do not read), and
// the origin sees the client's JA4.
func TestUpstreamMirrorsGnuTLS(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	o := et.StartFPOrigin(t)
	p := et.StartProxy(t, nil, o.Origin())
	_, proxyCA := writeCAs(t, t.TempDir(), o, p)
	cmd := exec.Command("git", "-c", "http.proxy="+p.URL.String(), "ls-remote", o.URL+"/x.git")
	cmd.Env = append(os.Environ(), "GIT_SSL_CAINFO="+proxyCA)
	out, _ := cmd.CombinedOutput() // the origin is no git server: git fails after the response
	s := p.Next(t)
	up, cl := s.Upstream.Fingerprint, s.Client.Fingerprint
	if s.Response == nil || s.Response.Status != 200 || up == nil || cl == nil || up.JA4 != cl.JA4 || up.JA3 != cl.JA3 {
		t.Fatalf("git through Inspector: error %+v, client %+v, upstream %+v\n%s", s.Error, cl, up, out)
	}
	if !strings.Contains(up.Mirror, "key shares narrowed") {
		t.Fatalf("mirror note %q", up.Mirror)
	}
	t.Logf("git (GnuTLS): JA4 %s, %s", cl.JA4, up.Mirror)
}
