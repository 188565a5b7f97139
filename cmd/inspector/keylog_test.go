package main

import (
	"bufio"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	et "inspector/engine/enginetest"
)

// TestKeylogDecryptsBothLegs: with --keylog, tshark decrypts a loopback capture of a
// request through Inspector on both legs (client to proxy, proxy to origin) to the same
// HTTP request.
func TestKeylogDecryptsBothLegs(t *testing.T) {
	for _, tool := range []string{"tshark", "dumpcap", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (make deps installs it)", tool)
		}
	}
	data := t.TempDir()
	origin := et.StartOrigin(t, et.OriginH2TLS, nil)
	originCA := filepath.Join(t.TempDir(), "origin.pem")
	os.WriteFile(originCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: origin.Certificate().Raw}), 0o644)
	keylog := filepath.Join(t.TempDir(), "keys.log")
	h := startHeadless(t, data, "--upstream-ca", originCA, "--keylog", keylog)
	caPEM, err := exec.Command(binary(t), "ca", "export", "--data-dir", data).Output()
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, caPEM, 0o644)

	_, proxyPort, _ := net.SplitHostPort(h.addr)
	_, originPort, _ := net.SplitHostPort(strings.TrimPrefix(origin.URL, "https://"))
	pcap := filepath.Join(t.TempDir(), "lo.pcapng")
	// dumpcap (tshark's capture engine) writes the file itself and flushes it when
	// interrupted.
	capture := exec.Command("dumpcap", "-q", "-i", "lo", "-w", pcap, "-f", "tcp port "+proxyPort+" or tcp port "+originPort)
	stderr, _ := capture.StderrPipe()
	if err := capture.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { capture.Process.Kill(); capture.Wait() })
	// dumpcap says "Capturing on 'Loopback: lo'" once packets are being taken.
	started := make(chan bool, 1)
	stderrDone := make(chan struct{})
	var capErr strings.Builder
	go func() {
		defer close(stderrDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			capErr.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "Capturing on") {
				started <- true
			}
		}
		select {
		case started <- false:
		default:
		}
	}()
	select {
	case ok := <-started:
		if !ok {
			t.Skipf("dumpcap cannot capture on lo here (needs root or CAP_NET_RAW): %s", capErr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("dumpcap did not start capturing within 60 s")
	}

	const path = "/keylog-probe-7f3a"
	out, err := exec.Command("curl", "-sS", "--http1.1", "-x", "http://"+h.addr, "--cacert", caFile, "-o", "/dev/null",
		"-w", "%{http_code}", origin.URL+path).CombinedOutput()
	if err != nil || len(out) != 3 || out[0] < '1' || out[0] > '5' {
		t.Fatalf("curl: %v %s", err, out)
	}
	h.nextLine(t) // the session is complete: both legs are done
	// Both legs' secrets are in the file: CLIENT_RANDOM (TLS 1.2) or the TLS 1.3 traffic
	// secrets, two handshakes.
	keys, _ := os.ReadFile(keylog)
	if n := strings.Count(string(keys), "CLIENT_TRAFFIC_SECRET_0 ") + strings.Count(string(keys), "CLIENT_RANDOM "); n < 2 {
		t.Fatalf("key log holds %d handshakes, want 2:\n%s", n, keys)
	}
	if fi, _ := os.Stat(keylog); fi.Mode().Perm() != 0o600 {
		t.Errorf("key log mode %v, want 0600", fi.Mode().Perm())
	}
	// The capture lags behind the traffic on a loaded machine: read the file as dumpcap
	// writes it until both legs' requests decrypt, or a deadline passes.
	decrypted := func() (map[string]bool, string) {
		fields, _ := exec.Command("tshark", "-r", pcap, "-o", "tls.keylog_file:"+keylog, "-d", "tcp.port=="+originPort+",tls",
			"-Y", "http.request", "-T", "fields", "-e", "tcp.dstport", "-e", "http.request.method", "-e", "http.request.uri").CombinedOutput()
		legs := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(string(fields)), "\n") {
			f := strings.Split(l, "\t")
			if len(f) == 3 && f[1] == "GET" && strings.HasSuffix(f[2], path) {
				legs[f[0]] = true
			}
		}
		return legs, string(fields)
	}
	deadline := time.Now().Add(90 * time.Second)
	legs, fields := decrypted()
	for !(legs[proxyPort] && legs[originPort]) && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		legs, fields = decrypted()
	}
	capture.Process.Signal(syscall.SIGINT)
	select {
	case <-stderrDone: // read to the end: closing the pipe under dumpcap would kill it
	case <-time.After(60 * time.Second):
	}
	capture.Wait()
	if !legs[proxyPort] || !legs[originPort] {
		if d := os.Getenv("INSPECTOR_KEEP_CAPTURE"); d != "" {
			pb, _ := os.ReadFile(pcap)
			os.WriteFile(filepath.Join(d, "lo.pcapng"), pb, 0o600)
			os.WriteFile(filepath.Join(d, "keys.log"), keys, 0o600)
		}
		t.Fatalf("decrypted GET %s on ports %v, want the client leg (%s) and the upstream leg (%s); tshark:\n%s", path, legs, proxyPort, originPort, fields)
	}

	// pcapng with the secrets inside (a Decryption Secrets Block): editcap puts the key
	// log into the capture, and tshark decrypts it without being told of any key file.
	if _, err := exec.LookPath("editcap"); err != nil {
		t.Log("editcap not installed (wireshark-common): the DSB recipe was not checked")
		return
	}
	dsb := filepath.Join(t.TempDir(), "with-keys.pcapng")
	if out, err := exec.Command("editcap", "--inject-secrets", "tls,"+keylog, pcap, dsb).CombinedOutput(); err != nil {
		t.Fatalf("editcap --inject-secrets: %v\n%s", err, out)
	}
	dsbOut, _ := exec.Command("tshark", "-r", dsb, "-d", "tcp.port=="+originPort+",tls",
		"-Y", "http.request", "-T", "fields", "-e", "tcp.dstport", "-e", "http.request.uri").CombinedOutput()
	dsbLegs := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(dsbOut)), "\n") {
		if f := strings.Split(l, "\t"); len(f) == 2 && strings.HasSuffix(f[1], path) {
			dsbLegs[f[0]] = true
		}
	}
	if !dsbLegs[proxyPort] || !dsbLegs[originPort] {
		t.Fatalf("the DSB capture decrypted GET %s on ports %v without -o, want %s and %s; tshark:\n%s", path, dsbLegs, proxyPort, originPort, dsbOut)
	}
	// Without the block, the same capture does not decrypt: the keys came from the file.
	plain, _ := exec.Command("tshark", "-r", pcap, "-d", "tcp.port=="+originPort+",tls", "-Y", "http.request", "-T", "fields", "-e", "http.request.uri").CombinedOutput()
	if strings.Contains(string(plain), path) {
		t.Fatalf("the capture decrypts without any key:\n%s", plain)
	}
}

// TestKeylogUnwritable: a key-log path that cannot be written stops the start with one
// clear error.
func TestKeylogUnwritable(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "no-such-dir", "keys.log")
	cmd := exec.Command(binary(t), "--headless", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--keylog", bad)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--keylog") || !strings.Contains(string(out), "no-such-dir") || strings.Contains(string(out), "listening on") {
		t.Fatalf("start with an unwritable key log: %v\n%s", err, out)
	}
}
