package load_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"

	"inspector/bench/load"
	"inspector/bench/origin"
	"inspector/engine"
	"inspector/engine/enginetest"
)

func startOrigin(t *testing.T) (*origin.CA, *origin.Server) {
	t.Helper()
	ca, err := origin.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := origin.Start(ca)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("origin close: %v", err)
		}
	})
	return ca, srv
}

func pool(ca *origin.CA) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

var short = load.Options{Warmup: 20 * time.Millisecond, Duration: 200 * time.Millisecond}

func tiny(proto string) load.Shape {
	return load.Shape{Name: "tiny", Proto: proto, Method: "GET", Path: "/tiny", Conns: 2, Streams: 1, WantBytes: int64(len(origin.TinyJSON))}
}

func TestRunDirect(t *testing.T) {
	ca, srv := startOrigin(t)
	target := load.Target{Origin: "https://" + srv.Addr, Roots: pool(ca)}
	for _, proto := range []string{"h1", "h2"} {
		var started, ended bool
		opts := short
		opts.OnStart = func() { started = true }
		opts.OnEnd = func() { ended = !ended && started }
		res, err := load.Run(context.Background(), target, tiny(proto), opts)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"h1": "HTTP/1.1", "h2": "HTTP/2.0"}[proto]
		if res.Requests == 0 || res.Errors != 0 || res.Proto != want || !ended {
			t.Fatalf("%s: %+v (callbacks ran: %v), want requests, no errors, %s", proto, res, ended, want)
		}
		if res.P50 <= 0 || res.P99 < res.P50 || res.RPS() <= 0 {
			t.Fatalf("%s: latencies %v/%v, rps %v", proto, res.P50, res.P99, res.RPS())
		}
	}
}

// A wrong expected length makes every request an error, and the first is reported.
func TestRunCountsErrors(t *testing.T) {
	ca, srv := startOrigin(t)
	s := tiny("h1")
	s.WantBytes = 3
	res, err := load.Run(context.Background(), load.Target{Origin: "https://" + srv.Addr, Roots: pool(ca)}, s, short)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 0 || res.Errors == 0 || !strings.Contains(res.FirstErr, "want 3") {
		t.Fatalf("got %+v, want only errors", res)
	}
	// An untrusted server: TLS errors, counted.
	res, err = load.Run(context.Background(), load.Target{Origin: "https://" + srv.Addr, Roots: x509.NewCertPool()}, tiny("h1"), short)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 0 || res.Errors == 0 || !strings.Contains(res.FirstErr, "certificate") {
		t.Fatalf("untrusted: got %+v", res)
	}
}

// Every shape of the harness through a real Inspector engine (CONNECT + MITM).
func TestRunThroughEngine(t *testing.T) {
	ca, srv := startOrigin(t)
	p := enginetest.StartProxy(t, func(c *engine.Config) { c.UpstreamRoots = pool(ca) })
	go func() {
		for range p.Sessions { // the collector must not fill up
		}
	}()
	target := load.Target{Proxy: p.URL.Host, Origin: "https://" + srv.Addr, Roots: p.CAPool()}
	post := make([]byte, 64<<10)
	shapes := []load.Shape{
		tiny("h1"), tiny("h2"),
		{Name: "tunnel", Proto: "h1", Method: "GET", Path: "/tiny", Conns: 2, Streams: 1, NewTunnel: true, WantBytes: int64(len(origin.TinyJSON))},
		{Name: "get", Proto: "h1", Method: "GET", Path: "/bytes?n=65536", Conns: 2, Streams: 1, WantBytes: 65536},
		{Name: "post", Proto: "h1", Method: "POST", Path: "/echo-len", Body: post, Conns: 2, Streams: 1, WantBytes: int64(len(`{"len":65536}` + "\n"))},
		{Name: "mux", Proto: "h2", Method: "GET", Path: "/tiny", Conns: 2, Streams: 4, WantBytes: int64(len(origin.TinyJSON))},
	}
	for _, s := range shapes {
		res, err := load.Run(context.Background(), target, s, short)
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests == 0 || res.Errors != 0 {
			t.Fatalf("%s: %+v", s.Name, res)
		}
		if want := map[string]string{"h1": "HTTP/1.1", "h2": "HTTP/2.0"}[s.Proto]; res.Proto != want {
			t.Fatalf("%s: proto %s, want %s", s.Name, res.Proto, want)
		}
	}
	n, _, err := load.Stream(context.Background(), target, 3<<20+7)
	if err != nil || n != 3<<20+7 {
		t.Fatalf("stream: %d bytes, %v", n, err)
	}
}

func TestBadInput(t *testing.T) {
	good := tiny("h1")
	bad := map[string]func(*load.Shape){
		"proto":        func(s *load.Shape) { s.Proto = "h3" },
		"method":       func(s *load.Shape) { s.Method = "PUT" },
		"conns":        func(s *load.Shape) { s.Conns = 0 },
		"h1 streams":   func(s *load.Shape) { s.Streams = 2 },
		"h2 tunnel":    func(s *load.Shape) { s.Proto, s.NewTunnel = "h2", true },
		"zero streams": func(s *load.Shape) { s.Proto, s.Streams = "h2", 0 },
	}
	for name, mod := range bad {
		s := good
		mod(&s)
		if _, err := load.Run(context.Background(), load.Target{Origin: "https://127.0.0.1:1"}, s, short); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := load.Run(context.Background(), load.Target{Origin: "http://127.0.0.1:1"}, good, short); err == nil {
		t.Error("plain http origin accepted")
	}
	if _, err := load.NewTransport(load.Target{Proxy: "bad host:%%"}, good); err == nil {
		t.Error("bad proxy address accepted")
	}
}

func TestPercentile(t *testing.T) {
	if load.Percentile(nil, 50) != 0 {
		t.Error("empty")
	}
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i))
	}
	for p, want := range map[float64]time.Duration{50: 50, 99: 99, 100: 100, 0: 1} {
		if got := load.Percentile(ds, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
}

func TestOriginEndpoints(t *testing.T) {
	ca, srv := startOrigin(t)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool(ca)}}}
	for path, want := range map[string]int{"/bytes?n=-1": 400, "/bytes?n=x": 400, "/bytes?n=1073741825": 400, "/bytes?n=0": 200, "/nope": 404} {
		resp, err := c.Get("https://" + srv.Addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	resp, err := c.Post("https://"+srv.Addr+"/echo-len", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != `{"len":5}`+"\n" {
		t.Fatalf("echo-len: %q %v", b, err)
	}
}

func TestOriginH3(t *testing.T) {
	ca, srv := startOrigin(t)
	if err := srv.StartH3(); err != nil {
		t.Fatal(err)
	}
	if err := srv.StartH3(); err == nil {
		t.Fatal("second StartH3 accepted")
	}
	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool(ca)}}
	defer tr.Close()
	resp, err := (&http.Client{Transport: tr}).Get("https://" + srv.Addr + "/tiny")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.ProtoMajor != 3 || string(b) != string(origin.TinyJSON) {
		t.Fatalf("h3: %s %q %v", resp.Proto, b, err)
	}
}
