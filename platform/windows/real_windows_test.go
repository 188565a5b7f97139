//go:build windows

package windows

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"inspector/platform/internal/testca"
	"inspector/platform/osapi"

	xwin "golang.org/x/sys/windows"
)

// TestRealRootStores adds a throwaway CA to the real Root stores through crypt32 (the
// machine's too when elevated, as every Wine process is), removes it and checks that both
// read paths, crypt32 and the registry keys behind the stores, say it is gone. Under Wine
// it runs in the throwaway prefix of `make test-windows`; before CertControlStore(COMMIT)
// was called, Wine's crypt32 kept the certificate in the registry and in a fresh open.
func TestRealRootStores(t *testing.T) {
	cert := testca.New(t)
	thumb := osapi.SHA1(cert)
	ts := NewTrustStore()
	ts.Firefox = osapi.FirefoxEnterpriseRoots{}
	ctx := context.Background()
	t.Cleanup(func() { ts.Remove(ctx, cert) })
	locs := []Location{CurrentUser}
	if xwin.GetCurrentProcessToken().IsElevated() {
		locs = append(locs, LocalMachine)
	}
	if err := ts.Install(ctx, cert); err != nil {
		t.Fatal(err)
	}
	for _, loc := range locs {
		if !crypt32Has(t, loc, thumb) || !regHas(t, loc, thumb) {
			t.Fatalf("%v after Install: crypt32 %v, registry %v", loc, crypt32Has(t, loc, thumb), regHas(t, loc, thumb))
		}
	}
	if err := ts.Remove(ctx, cert); err != nil {
		t.Fatal(err)
	}
	for _, loc := range locs {
		if crypt32Has(t, loc, thumb) || regHas(t, loc, thumb) {
			t.Fatalf("%v after Remove: crypt32 %v, registry %v", loc, crypt32Has(t, loc, thumb), regHas(t, loc, thumb))
		}
	}
	st, err := ts.Status(ctx, cert)
	if err != nil || st.Trusted() {
		t.Fatalf("status after Remove: %v %v", st, err)
	}
}

func crypt32Has(t *testing.T, loc Location, thumb []byte) bool {
	s, err := OpenSystemStore(loc, RootStore)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ok, err := s.Has(thumb)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func regHas(t *testing.T, loc Location, thumb []byte) bool {
	ok, err := registryHas(loc, RootStore, thumb)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestRealProcessOf: a connection made by this process is attributed to it through
// GetExtendedTcpTable (under Wine: Wine's iphlpapi).
func TestRealProcessOf(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := ProcessOf(s.RemoteAddr().(*net.TCPAddr).AddrPort(), s.LocalAddr().(*net.TCPAddr).AddrPort())
	if err != nil {
		t.Fatal(err)
	}
	if p.PID != os.Getpid() || !strings.HasSuffix(strings.ToLower(p.Name), ".exe") {
		t.Fatalf("found %+v, want pid %d and an .exe name", p, os.Getpid())
	}
	t.Logf("attributed to %+v", p)
}

// TestRealProcessOfChild: a connection from another process (this test binary re-run as a
// client) is attributed to that process's PID.
func TestRealProcessOfChild(t *testing.T) {
	if addr := os.Getenv("INSPECTOR_PROCESS_CHILD"); addr != "" {
		t.Skip("child side")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	child := exec.Command(os.Args[0], "-test.run", "^TestProcessChildHelper$")
	child.Env = append(os.Environ(), "INSPECTOR_PROCESS_CHILD="+ln.Addr().String())
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(time.Minute))
	s, err := ln.Accept()
	if err != nil {
		child.Process.Kill()
		t.Fatal(err)
	}
	p, err := ProcessOf(s.RemoteAddr().(*net.TCPAddr).AddrPort(), s.LocalAddr().(*net.TCPAddr).AddrPort())
	s.Close() // the child exits on EOF
	if err != nil {
		t.Fatal(err)
	}
	if p.PID != child.Process.Pid || p.PID == os.Getpid() {
		t.Fatalf("found %+v, want the child's pid %d", p, child.Process.Pid)
	}
	t.Logf("attributed to %+v", p)
}

// TestProcessChildHelper is the client side of TestRealProcessOfChild.
func TestProcessChildHelper(t *testing.T) {
	addr := os.Getenv("INSPECTOR_PROCESS_CHILD")
	if addr == "" {
		t.Skip("run by TestRealProcessOfChild")
	}
	c, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	io.Copy(io.Discard, c)
}
