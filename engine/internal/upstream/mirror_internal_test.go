package upstream

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	utls "github.com/refraction-networking/utls"
)

// panicky is an extension whose marshalling panics, as utls does on states it does not
// expect.
type panicky struct{ utls.GenericExtension }

func (*panicky) Len() int                 { panic("no length") }
func (*panicky) Read([]byte) (int, error) { panic("no bytes") }

// A utls panic during the handshake is an error wrapping errUtlsPanic, and nothing went
// on the wire (so the caller may still use the connection for Go's ClientHello).
func TestUHandshakeCatchesPanic(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() { _, _ = io.Copy(io.Discard, b) }()
	w := &countConn{Conn: a}
	uc := utls.UClient(w, &utls.Config{ServerName: "example.com"}, utls.HelloCustom)
	if err := uc.ApplyPreset(&utls.ClientHelloSpec{
		CipherSuites: []uint16{utls.TLS_AES_128_GCM_SHA256},
		Extensions:   []utls.TLSExtension{&utls.SNIExtension{}, &panicky{}},
	}); err != nil {
		t.Fatalf("ApplyPreset: %v", err)
	}
	err := uHandshake(context.Background(), uc)
	if !errors.Is(err, errUtlsPanic) {
		t.Fatalf("err %v, want a caught panic", err)
	}
	if w.n != 0 {
		t.Fatalf("%d bytes written before the panic", w.n)
	}
}

type countConn struct {
	net.Conn
	n int
}

func (c *countConn) Write(p []byte) (int, error) { c.n += len(p); return c.Conn.Write(p) }
