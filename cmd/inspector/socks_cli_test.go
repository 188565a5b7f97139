package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	et "inspector/engine/enginetest"
)

// TestHeadlessSOCKSAndLeafDays: --listen-socks takes curl's SOCKS5 CONNECT into the same
// decrypt-and-record path, and the leaf a SOCKS client gets lasts what --leaf-days says.
func TestHeadlessSOCKSAndLeafDays(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed (package curl)")
	}
	o := et.StartOrigin(t, et.OriginH1TLS, nil)
	originCA := filepath.Join(t.TempDir(), "origin.pem")
	os.WriteFile(originCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: o.Certificate().Raw}), 0o644)
	data := t.TempDir()
	h := startHeadless(t, data, "--upstream-ca", originCA, "--listen-socks", "127.0.0.1:0", "--leaf-days", "5")
	line := h.nextLine(t)
	socksAddr, ok := strings.CutPrefix(line, "SOCKS5 listening on ")
	if !ok {
		t.Fatalf("second line %q", line)
	}
	caPEM, err := exec.Command(binary(t), "ca", "export", "--data-dir", data).Output()
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, caPEM, 0o644)
	out, err := exec.Command(curl, "-sS", "--max-time", "60", "--cacert", caFile, "--socks5", socksAddr, o.URL+"/echo?socks=1").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "/echo?socks=1") {
		t.Fatalf("curl --socks5: %v %s", err, out)
	}
	if l := h.nextLine(t); !strings.Contains(l, "/echo?socks=1") || !strings.Contains(l, "200") {
		t.Fatalf("session line %q", l)
	}

	// The leaf on the wire, through the SOCKS listener.
	c, err := net.Dial("tcp", socksAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	u, _ := url.Parse(o.URL)
	port, _ := strconv.Atoi(u.Port())
	c.Write([]byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, byte(port >> 8), byte(port)})
	ans := make([]byte, 12)
	if _, err := io.ReadFull(c, ans); err != nil || ans[3] != 0 {
		t.Fatalf("SOCKS answer %x %v", ans, err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	tc := tls.Client(c, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	leaf := tc.ConnectionState().PeerCertificates[0]
	if life := leaf.NotAfter.Sub(leaf.NotBefore); life != 5*24*time.Hour {
		t.Fatalf("leaf lasts %v with --leaf-days 5", life)
	}
}

func TestSOCKSAndLeafDaysBadInput(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--leaf-days", "48"},
		{"--leaf-days", "0"},
		{"--listen-socks", "0.0.0.0:0"},
	} {
		cmd := exec.Command(binary(t), append([]string{"--headless", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}, args...)...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), args[0]) {
			t.Errorf("%v: %v %s, want exit 2 naming %s", args, err, out, args[0])
		}
	}
}
