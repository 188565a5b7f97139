package fingerprint

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	utls "github.com/refraction-networking/utls"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// helloOf returns the ClientHello records a client writes: run starts the client's
// handshake on c (it fails once c closes, which is fine).
func helloOf(t *testing.T, run func(c net.Conn)) []byte {
	t.Helper()
	cli, srv := net.Pipe()
	rec := NewRecorder(MaxHello, HelloComplete)
	go run(cli)
	buf := make([]byte, 4096)
	_ = srv.SetReadDeadline(time.Now().Add(30 * time.Second))
	for !rec.Done() {
		n, err := srv.Read(buf)
		rec.Add(buf[:n])
		if err != nil {
			t.Fatalf("reading the ClientHello: %v", err)
		}
	}
	srv.Close()
	cli.Close()
	return rec.Bytes()
}

func TestJA4OfChrome(t *testing.T) {
	t.Parallel()
	// utls's Chrome 131 parrot: its JA4 is the one FoxIO publishes for current Chrome
	// (t13d1516h2_8daaf6152771_02713d6af862); extension order is shuffled per hello, which
	// JA4 does not see, and the GREASE values vary, which neither JA3 nor JA4 sees.
	var ja3s []string
	for range 3 {
		raw := helloOf(t, func(c net.Conn) {
			u := utls.UClient(c, &utls.Config{ServerName: "example.com"}, utls.HelloChrome_131)
			_ = u.Handshake()
		})
		h, err := ParseRecords(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := h.JA4(), "t13d1516h2_8daaf6152771_02713d6af862"; got != want {
			t.Fatalf("JA4 = %s, want %s", got, want)
		}
		if h.ServerName != "example.com" || len(h.ALPN) != 2 || h.ALPN[0] != "h2" {
			t.Fatalf("SNI %q ALPN %q", h.ServerName, h.ALPN)
		}
		_, j := h.JA3()
		ja3s = append(ja3s, j)
	}
	t.Logf("JA3 hashes of three Chrome hellos (shuffled extensions): %v", ja3s)
}

func TestJA3OfGoClient(t *testing.T) {
	t.Parallel()
	raw := helloOf(t, func(c net.Conn) {
		_ = tls.Client(c, &tls.Config{ServerName: "a.test", NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}).Handshake()
	})
	h, err := ParseRecords(raw)
	if err != nil {
		t.Fatal(err)
	}
	ja3, hash := h.JA3()
	if !strings.HasPrefix(ja3, "771,") || len(hash) != 32 {
		t.Fatalf("JA3 %s %s", ja3, hash)
	}
	if ja4 := h.JA4(); !strings.HasPrefix(ja4, "t13d") || !strings.Contains(ja4, "h1_") {
		t.Fatalf("JA4 %s", ja4)
	}
	if !bytes.Equal(h.Record, raw) {
		t.Fatalf("a one-record hello is kept as it came")
	}
}

func TestHelloSplitOverRecords(t *testing.T) {
	t.Parallel()
	raw := helloOf(t, func(c net.Conn) {
		_ = tls.Client(c, &tls.Config{ServerName: "a.test"}).Handshake()
	})
	msg := raw[5:]
	var split []byte
	for i := 0; i < len(msg); i += 100 {
		part := msg[i:min(i+100, len(msg))]
		split = append(split, 0x16, 3, 1, byte(len(part)>>8), byte(len(part)))
		split = append(split, part...)
	}
	h, err := ParseRecords(split)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Record[5:], msg) {
		t.Fatal("reassembled hello differs")
	}
	if _, err := ParseRecords(split[:len(split)-3]); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("cut hello: %v", err)
	}
}

func TestMalformedHellos(t *testing.T) {
	t.Parallel()
	good := helloOf(t, func(c net.Conn) { _ = tls.Client(c, &tls.Config{ServerName: "a.test"}).Handshake() })
	cases := map[string][]byte{
		"not a handshake record": append([]byte{0x17}, good[1:]...),
		"server hello":           append(append([]byte(nil), good[:5]...), append([]byte{2}, good[6:]...)...),
		"zero length record":     {0x16, 3, 1, 0, 0},
		"bad record version":     append([]byte{0x16, 9}, good[2:]...),
		"truncated body": func() []byte {
			b := append([]byte(nil), good[:49]...)
			b[3], b[4] = 0, 44
			b[6], b[7], b[8] = 0, 0, 40
			return b
		}(),
	}
	for name, b := range cases {
		if _, err := ParseRecords(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
		}
	}
}

func FuzzParseRecords(f *testing.F) {
	cli, srv := net.Pipe()
	go func() { _ = tls.Client(cli, &tls.Config{ServerName: "a.test"}).Handshake() }()
	buf := make([]byte, 4096)
	n, _ := srv.Read(buf)
	cli.Close()
	srv.Close()
	f.Add(buf[:n])
	f.Add([]byte{0x16, 3, 1, 0, 4, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseRecords(b)
		if err == nil {
			h.JA4()
			h.JA3()
		}
		_ = HelloComplete(b)
	})
}

func TestAkamaiOfH2Opening(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	b.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&b, nil)
	_ = fr.WriteSettings(http2.Setting{ID: 1, Val: 65536}, http2.Setting{ID: 2, Val: 0},
		http2.Setting{ID: 4, Val: 6291456}, http2.Setting{ID: 6, Val: 262144})
	_ = fr.WriteWindowUpdate(0, 15663105)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":authority", "a.test"}, {":scheme", "https"}, {":path", "/"}, {"user-agent", "x"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: true,
		Priority: http2.PriorityParam{Exclusive: true, Weight: 255}})
	all := b.Bytes()
	for i := range all {
		if H2Complete(all[:i]) {
			t.Fatalf("complete at %d of %d bytes", i, len(all))
		}
	}
	o, err := ParseH2Opening(all)
	if err != nil {
		t.Fatal(err)
	}
	// Chrome's, as Akamai's paper and every fingerprint list spell it.
	if got, want := o.Akamai(), "1:65536;2:0;4:6291456;6:262144|15663105|0|m,a,s,p"; got != want {
		t.Fatalf("Akamai = %s, want %s", got, want)
	}
	if len(o.Headers) != 1 || o.Headers[0] != "user-agent" || o.HeadersPriority == nil || o.HeadersPriority.Weight != 255 {
		t.Fatalf("opening %+v", o)
	}
	if _, err := ParseH2Opening([]byte("GET / HTTP/1.1\r\n\r\n")); err == nil || errors.Is(err, ErrNoHeaders) {
		t.Fatalf("HTTP/1 bytes: %v", err)
	}
}

// The Go client's own HTTP/2 opening, as a real x/net Transport writes it.
func TestAkamaiOfGoTransport(t *testing.T) {
	t.Parallel()
	cli, srv := net.Pipe()
	rec := NewRecorder(16<<10, H2Complete)
	tr := &http2.Transport{}
	go func() {
		cc, err := tr.NewClientConn(cli)
		if err != nil {
			return
		}
		req, _ := httpRequest(context.Background())
		_, _ = cc.RoundTrip(req)
	}()
	buf := make([]byte, 4096)
	_ = srv.SetReadDeadline(time.Now().Add(30 * time.Second))
	for !rec.Done() {
		n, err := srv.Read(buf)
		rec.Add(buf[:n])
		if err != nil {
			t.Fatal(err)
		}
	}
	cli.Close()
	srv.Close()
	o, err := ParseH2Opening(rec.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	// x/net's Transport: push off, 4 MiB stream window, 1 GiB connection window, and
	// :authority first.
	if got := o.Akamai(); !strings.HasPrefix(got, "2:0;4:4194304;") || !strings.HasSuffix(got, "|1073741824|0|a,m,p,s") {
		t.Fatalf("Go's opening %s", got)
	}
	t.Logf("x/net Transport: %s", o.Akamai())
}
