package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"inspector/bench/load"
	"inspector/bench/origin"
	"inspector/rootca"
)

// testEnv builds the certificates and origin the way run does, without pinning.
func testEnv(t *testing.T) *env {
	t.Helper()
	tmp := t.TempDir()
	e := &env{tmp: tmp, caDir: filepath.Join(tmp, "ca")}
	if _, err := rootca.Load(e.caDir); err != nil {
		t.Fatal(err)
	}
	var err error
	if e.caPool, err = poolFromFile(filepath.Join(e.caDir, rootca.CertFile)); err != nil {
		t.Fatal(err)
	}
	oca, err := origin.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	if e.originCA, err = oca.WriteFiles(tmp); err != nil {
		t.Fatal(err)
	}
	e.originPEM = oca.CertPEM
	_, cert, key, err := oca.Leaf()
	if err != nil {
		t.Fatal(err)
	}
	e.nginxCert, e.nginxKey = filepath.Join(tmp, "nginx-cert.pem"), filepath.Join(tmp, "nginx-key.pem")
	os.WriteFile(e.nginxCert, cert, 0o600)
	os.WriteFile(e.nginxKey, key, 0o600)
	srv, err := origin.Start(oca)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	e.originAdr = srv.Addr
	return e
}

// Each peer process (the martian and goproxy mains of this module, and nginx and mitmdump
// when installed) starts, proxies h1 and h2 shapes without errors, and reports CPU time and
// peak RSS through /proc; a proxy that is not installed is logged, not failed.
func TestPeersThroughHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs proxy processes")
	}
	e := testEnv(t)
	ctx := context.Background()
	var proxies []proxy
	for _, name := range []string{"martianproxy", "goproxyproxy"} {
		bin := filepath.Join(e.tmp, name)
		if err := goBuild(ctx, "../..", bin, "./cmd/"+name); err != nil {
			t.Fatalf("building %s: %v", name, err)
		}
		proxies = append(proxies, proxy{name: name, start: e.goPeer(bin)})
	}
	if b, err := lookPath("nginx"); err == nil {
		proxies = append(proxies, proxy{name: "nginx", reverse: true, start: e.nginx(b)})
	} else {
		t.Log("nginx not installed: not run")
	}
	if b, err := lookPath("mitmdump"); err == nil {
		proxies = append(proxies, proxy{name: "mitmdump", start: e.mitmdump(b)})
	} else {
		t.Log("mitmdump not installed: not run")
	}
	o := options{warmup: 50 * time.Millisecond, duration: 300 * time.Millisecond}
	tiny := int64(len(origin.TinyJSON))
	shapes := []load.Shape{
		{Name: "h1", Proto: "h1", Method: "GET", Path: "/tiny", Conns: 2, Streams: 1, WantBytes: tiny},
		{Name: "h2", Proto: "h2", Method: "GET", Path: "/tiny", Conns: 2, Streams: 2, WantBytes: tiny},
	}
	for _, p := range proxies {
		for _, s := range shapes {
			r := measure(ctx, o, p, s, e)
			if r.skip != "" || r.res.Requests == 0 || r.res.Errors != 0 {
				t.Fatalf("%s %s: %+v", p.name, s.Name, r)
			}
			if r.hwmKiB <= 0 || r.anonKiB <= 0 || r.cpu < 0 {
				t.Fatalf("%s %s: /proc figures hwm %d anon %d cpu %v", p.name, s.Name, r.hwmKiB, r.anonKiB, r.cpu)
			}
		}
	}
	// A proxy that cannot start becomes a skipped row with its reason, not a failure.
	bad := proxy{name: "broken", start: e.goPeer(filepath.Join(e.tmp, "no-such-binary"))}
	if r := measure(ctx, o, bad, shapes[0], e); r.skip == "" {
		t.Fatalf("missing binary: %+v", r)
	}
}

// The real Inspector binary (built from the committed HEAD, so others' edits in progress do
// not matter) runs through the harness with capture on and with --no-capture: with capture
// on it prints one session line per request, with capture off none.
func TestInspectorThroughHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the Inspector binary")
	}
	e := testEnv(t)
	ctx := context.Background()
	src, err := exportRev(ctx, "../../..", "HEAD", filepath.Join(e.tmp, "src"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(e.tmp, "inspector")
	if err := goBuild(ctx, src, bin, "-tags", "migrated_fynedo", "./cmd/inspector"); err != nil {
		t.Fatal(err)
	}
	o := options{warmup: 50 * time.Millisecond, duration: 300 * time.Millisecond}
	s := load.Shape{Name: "h1", Proto: "h1", Method: "GET", Path: "/tiny", Conns: 2, Streams: 1, WantBytes: int64(len(origin.TinyJSON))}
	on := measure(ctx, o, proxy{name: "Inspector", start: e.inspector(bin, true)}, s, e)
	off := measure(ctx, o, proxy{name: "Inspector capture off", start: e.inspector(bin, false)}, s, e)
	for _, r := range []row{on, off} {
		if r.skip != "" || r.res.Requests == 0 || r.res.Errors != 0 {
			t.Fatalf("%s: %+v", r.proxy, r)
		}
	}
	if on.sessions < on.res.Requests || off.sessions != 0 {
		t.Fatalf("session lines: capture on %d for %d requests in the window, capture off %d", on.sessions, on.res.Requests, off.sessions)
	}
	if _, err := exportRev(ctx, "../../..", "no-such-revision", filepath.Join(e.tmp, "bad")); err == nil {
		t.Fatal("bad revision accepted")
	}
}
