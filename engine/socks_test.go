package engine_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/rootca"
)

// startNamedOrigin starts a TLS origin with a certificate for "localhost" from a CA of its
// own; the returned pool trusts it. A name, not an IP, is what a SOCKS client that lets
// the proxy resolve (curl --socks5-hostname, Chromium) sends.
func startNamedOrigin(t *testing.T) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	oca, err := rootca.Load(filepath.Join(t.TempDir(), "origin-ca"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := oca.LeafFor("localhost")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(et.Handler())
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(oca.Cert())
	return srv, pool
}

// socksProxy starts a proxy trusting the named origin and the standard one, with a SOCKS
// listener named client.
func socksProxy(t *testing.T, auth, client string) (p *et.Proxy, socksAddr string, named *httptest.Server, ip *et.Origin) {
	t.Helper()
	named, pool := startNamedOrigin(t)
	ip = et.StartOrigin(t, et.OriginH1TLS, nil)
	pool.AddCert(ip.Certificate())
	p = et.StartProxy(t, func(c *engine.Config) { c.UpstreamRoots = pool; c.ProxyAuth = auth })
	s, err := p.Engine.ListenSOCKS("127.0.0.1:0", client)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return p, s.Addr(), named, ip
}

func caFile(t *testing.T, p *et.Proxy) string {
	f := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(f, p.CA.PEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed (package %s)", name, pkg)
	}
	return p
}

// TestSOCKSCurl: curl through the SOCKS listener, with a domain-name target (the proxy
// resolves) and an IP target (curl resolves), with and without RFC 1929 credentials; the
// TLS is decrypted and the exchange recorded like one after an HTTP CONNECT.
func TestSOCKSCurl(t *testing.T) {
	t.Parallel()
	curl := needTool(t, "curl", "curl")
	for _, auth := range []string{"", "tester:s3cret"} {
		t.Run("auth="+auth, func(t *testing.T) {
			t.Parallel()
			p, addr, named, ip := socksProxy(t, auth, "curl-client")
			ca := caFile(t, p)
			proxyURL := "socks5h://" + addr
			if auth != "" {
				proxyURL = "socks5h://" + auth + "@" + addr
			}
			u, _ := url.Parse(named.URL)
			target := "https://localhost:" + u.Port() + "/echo?via=domain"
			out, err := exec.Command(curl, "-sS", "--max-time", "60", "--cacert", ca, "-x", proxyURL, target).CombinedOutput()
			if err != nil || !strings.Contains(string(out), `"path":"/echo?via=domain"`) {
				t.Fatalf("curl socks5h: %v %s", err, out)
			}
			s := p.Next(t)
			if s.Request.URL != target || s.Response == nil || s.Response.Status != 200 || s.Client.Process != "curl-client" {
				t.Fatalf("session %s %+v process %q", s.Request.URL, s.Response, s.Client.Process)
			}
			// IP target: --socks5 makes curl resolve and send the address.
			ipURL := ip.URL + "/echo?via=ip"
			args := []string{"-sS", "--max-time", "60", "--cacert", ca, "--socks5", addr, ipURL}
			if auth != "" {
				args = append(args, "--proxy-user", auth)
			}
			if out, err := exec.Command(curl, args...).CombinedOutput(); err != nil || !strings.Contains(string(out), `"path":"/echo?via=ip"`) {
				t.Fatalf("curl socks5 (IP): %v %s", err, out)
			}
			if s := p.Next(t); s.Request.URL != ipURL {
				t.Fatalf("IP session %s", s.Request.URL)
			}
			if auth != "" {
				out, err := exec.Command(curl, "-sS", "--max-time", "60", "--cacert", ca, "-x", "socks5h://tester:wrong@"+addr, target).CombinedOutput()
				if err == nil {
					t.Fatalf("wrong password accepted: %s", out)
				}
			}
		})
	}
}

// socksRaw speaks bytes to the listener and returns everything it answers until it closes.
func socksRaw(t *testing.T, addr string, send []byte) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	c.Write(send)
	got, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection not closed after %x (got %x)", send, got)
	}
	return got
}

// TestSOCKSRefusals: unsupported commands, a bad version and bad credentials get the RFC's
// reply and a closed connection; a target that is Inspector's own address is refused.
func TestSOCKSRefusals(t *testing.T) {
	t.Parallel()
	p, addr, _, _ := socksProxy(t, "", "")
	reply := func(code byte) []byte { return []byte{5, 0, 5, code, 0, 1, 0, 0, 0, 0, 0, 0} }
	for name, c := range map[string]struct{ send, want []byte }{
		"bind":          {[]byte{5, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1, 0, 80}, reply(7)},
		"udp associate": {[]byte{5, 1, 0, 5, 3, 0, 1, 0, 0, 0, 0, 0, 0}, reply(7)},
		"version 4":     {[]byte{4, 1, 0, 80, 127, 0, 0, 1, 0}, []byte{5, 0xff}},
		"auth offered":  {[]byte{5, 1, 2}, []byte{5, 0xff}},
	} {
		if got := socksRaw(t, addr, c.send); !bytes.Equal(got, c.want) {
			t.Errorf("%s: answered %x, want %x", name, got, c.want)
		}
	}
	host, port, _ := net.SplitHostPort(p.Engine.Addr())
	self := append([]byte{5, 1, 0, 5, 1, 0, 1}, net.ParseIP(host).To4()...)
	self = append(self, byte(atoi(port)>>8), byte(atoi(port)))
	if got := socksRaw(t, addr, self); !bytes.Equal(got, reply(2)) {
		t.Errorf("CONNECT to the proxy itself: %x, want %x", got, reply(2))
	}

	_, authAddr, _, _ := socksProxy(t, "u:p", "")
	bad := []byte{5, 1, 2, 1, 1, 'u', 1, 'x'}
	if got := socksRaw(t, authAddr, bad); !bytes.Equal(got, []byte{5, 2, 1, 1}) {
		t.Errorf("bad password: %x, want 05 02 01 01", got)
	}
	if got := socksRaw(t, authAddr, []byte{5, 1, 0}); !bytes.Equal(got, []byte{5, 0xff}) {
		t.Errorf("no credentials: %x, want 05 ff", got)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestSOCKSRemoteListenRefused: like every listener, SOCKS is loopback unless allowed.
func TestSOCKSRemoteListenRefused(t *testing.T) {
	t.Parallel()
	p := et.StartProxy(t, nil)
	if _, err := p.Engine.ListenSOCKS("0.0.0.0:0", ""); !errors.Is(err, engine.ErrRemoteListen) {
		t.Fatalf("ListenSOCKS 0.0.0.0: %v, want ErrRemoteListen", err)
	}
}

// chromiumPath finds a Chromium-family browser for the browser tests.
func chromiumPath(t *testing.T) string {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Skip("no Chromium installed (package chromium)")
	return ""
}

// TestSOCKSChromium: headless Chromium with --proxy-server=socks5:// loads an HTTPS page
// through the listener, trusting only this CA by its SPKI hash; the page is decrypted and
// recorded under the listener's client name.
func TestSOCKSChromium(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	p, addr, named, _ := socksProxy(t, "", "chromium")
	u, _ := url.Parse(named.URL)
	target := "https://localhost:" + u.Port() + "/echo?from=chromium"
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--proxy-server=socks5://"+addr, "--proxy-bypass-list=<-loopback>",
		"--ignore-certificate-errors-spki-list="+p.CA.SPKIHash(), "--disable-quic", "--dump-dom", target)
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "/echo?from=chromium") {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case s := <-p.Sessions:
			if s.Request.URL == target {
				if s.Client.Process != "chromium" || s.Response == nil || s.Response.Status != 200 {
					t.Fatalf("session process %q response %+v", s.Client.Process, s.Response)
				}
				return
			}
		case <-deadline:
			t.Fatal("Chromium's request was not recorded")
		}
	}
}
