//go:build linux

package linux

import (
	"bufio"
	"net"
	"os/exec"
	"testing"
	"time"
)

// TestProcessOfRealCurl: a real curl process connects to a listener here; the accepting
// side looks up the peer and must find curl's PID and name.
func TestProcessOfRealCurl(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed (make deps installs it)")
	}
	for _, network := range []string{"tcp4", "tcp6"} {
		t.Run(network, func(t *testing.T) {
			host := "127.0.0.1"
			if network == "tcp6" {
				host = "[::1]"
			}
			ln, err := net.Listen(network, host+":0")
			if err != nil {
				t.Skipf("no %s loopback: %v", network, err)
			}
			defer ln.Close()
			curl := exec.Command("curl", "-sS", "--max-time", "30", "http://"+ln.Addr().String()+"/")
			if err := curl.Start(); err != nil {
				t.Fatal(err)
			}
			defer curl.Wait()
			ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
			c, err := ln.Accept()
			if err != nil {
				curl.Process.Kill()
				t.Fatal(err)
			}
			defer c.Close()
			p, err := ProcessOf("/proc", c.RemoteAddr().(*net.TCPAddr).AddrPort(), c.LocalAddr().(*net.TCPAddr).AddrPort())
			// Answer so curl exits either way.
			bufio.NewReader(c).ReadString('\n')
			c.Write([]byte("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"))
			if err != nil {
				t.Fatal(err)
			}
			if p.PID != curl.Process.Pid || p.Name != "curl" {
				t.Fatalf("found %+v, want curl with pid %d", p, curl.Process.Pid)
			}
		})
	}
}
