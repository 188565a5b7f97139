//go:build linux

package linux

import (
	"net"
	"testing"
)

// BenchmarkProcessOfLoopback: one lookup of a live loopback connection of this process
// (net/tcp scan, then every visible process's fds), the cost the engine pays once per
// client connection, off the request path.
func BenchmarkProcessOfLoopback(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if s, ok := <-accepted; ok {
		defer s.Close()
	}
	local, remote := c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ProcessOf("/proc", local, remote); err != nil {
			b.Fatal(err)
		}
	}
}
