package transparent_test

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"inspector/engine/transparent"
)

// startResolver is a real UDP DNS server on 127.0.0.1:0 that answers every A query with
// addr.
func startResolver(t *testing.T, addr [4]byte) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dnsmessage.Message
			if err := m.Unpack(buf[:n]); err != nil || len(m.Questions) != 1 {
				continue
			}
			m.Header.Response = true
			m.Answers = []dnsmessage.Resource{{
				Header: dnsmessage.ResourceHeader{Name: m.Questions[0].Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 30},
				Body:   &dnsmessage.AResource{A: addr},
			}}
			out, _ := m.Pack()
			pc.WriteTo(out, from)
		}
	}()
	return pc.LocalAddr().String()
}

func query(t *testing.T, c net.Conn, name string, id uint16) []byte {
	t.Helper()
	m := dnsmessage.Message{Header: dnsmessage.Header{ID: id, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName(name), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}}}
	b, _ := m.Pack()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// The forwarder relays queries to the resolver and its answers back, remembers the
// addresses it answered, and drops garbage without stopping.
func TestDNSForwarder(t *testing.T) {
	t.Parallel()
	upstream := startResolver(t, [4]byte{192, 0, 2, 7})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := transparent.NewDNSForwarder(upstream, t.Logf, pc)
	defer f.Close()
	c, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("not dns")) // dropped
	resp := query(t, c, "api.example.test.", 77)
	var m dnsmessage.Message
	if err := m.Unpack(resp); err != nil || m.ID != 77 || len(m.Answers) != 1 {
		t.Fatalf("answer %+v %v", m, err)
	}
	got := f.Answered("API.example.test")
	if len(got) != 1 || got[0] != netip.MustParseAddr("192.0.2.7") {
		t.Fatalf("answered %v", got)
	}
	if len(f.Answered("other.test")) != 0 {
		t.Fatal("an unasked name has answers")
	}
}

func TestSystemResolver(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"# c\nsearch x\nnameserver 10.255.255.53\nnameserver 1.1.1.1\n": "10.255.255.53:53",
		"nameserver ::1\n": "[::1]:53",
		"nameserver bad\n": "",
		"":                 "",
	} {
		if got := transparent.SystemResolver([]byte(in)); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
