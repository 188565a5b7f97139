// Package origin is the benchmark's upstream: a TLS server on 127.0.0.1 speaking HTTP/1.1
// and HTTP/2 (ALPN), with a certificate from a CA of its own that the proxies under test are
// told to trust.
//
// Endpoints:
//
//	GET  /tiny           a small JSON document
//	GET  /bytes?n=N      N bytes of body (N ≤ 1 GiB), streamed from one shared buffer
//	POST /echo-len       reads the whole body and answers {"len":N}
//
// StartH3 adds HTTP/3 on the same port over UDP. The server is safe for any number of
// concurrent clients; it keeps no per-request state.
package origin

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// MaxBytes is the largest body /bytes serves.
const MaxBytes = 1 << 30

// TinyJSON is the body of GET /tiny.
var TinyJSON = []byte(`{"ok":true,"service":"bench-origin","items":[1,2,3]}` + "\n")

// CA is a throw-away certificate authority for the benchmark's own servers (origin, nginx).
type CA struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte
}

// NewCA creates a fresh ECDSA P-256 CA valid for one day.
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "inspector bench origin CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Leaf mints a server certificate for 127.0.0.1 and localhost and returns it with its
// PEM-encoded certificate and key (for servers configured from files, such as nginx).
func (ca *CA) Leaf() (tls.Certificate, []byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	return c, certPEM, keyPEM, err
}

// WriteFiles writes the CA certificate to dir/origin-ca.pem and returns its path.
func (ca *CA) WriteFiles(dir string) (string, error) {
	p := filepath.Join(dir, "origin-ca.pem")
	return p, os.WriteFile(p, ca.CertPEM, 0o600)
}

// Server is a running origin. Close stops it.
type Server struct {
	Addr string // 127.0.0.1:PORT
	srv  *http.Server
	ln   net.Listener
	done chan error

	cert   tls.Certificate // the leaf, for the HTTP/3 side (srv.TLSConfig belongs to ServeTLS)
	h3     *http3.Server   // nil until StartH3
	h3pc   net.PacketConn
	h3done chan error
}

// Handler returns the origin's http.Handler.
func Handler() http.Handler {
	chunk := make([]byte, 256<<10)
	for i := range chunk {
		chunk[i] = 'a' + byte(i%26)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /tiny", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{strconv.Itoa(len(TinyJSON))}
		w.Write(TinyJSON)
	})
	mux.HandleFunc("GET /bytes", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		if err != nil || n < 0 || n > MaxBytes {
			http.Error(w, fmt.Sprintf("n must be an integer in [0, %d]", MaxBytes), http.StatusBadRequest)
			return
		}
		h := w.Header()
		h["Content-Type"] = []string{"application/octet-stream"}
		h["Content-Length"] = []string{strconv.FormatInt(n, 10)}
		for n > 0 {
			k := min(n, int64(len(chunk)))
			if _, err := w.Write(chunk[:k]); err != nil {
				return
			}
			n -= k
		}
	})
	mux.HandleFunc("POST /echo-len", func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header()["Content-Type"] = []string{"application/json"}
		fmt.Fprintf(w, `{"len":%d}`+"\n", n)
	})
	return mux
}

// Start serves Handler over TLS (h2 and http/1.1) on 127.0.0.1 with a leaf from ca.
func Start(ca *CA) (*Server, error) {
	cert, _, _, err := ca.Leaf()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{
		Handler:           Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
		ErrorLog:          log.New(io.Discard, "", 0), // clients that hang up mid-handshake are expected
	}
	srv.SetKeepAlivesEnabled(true)
	s := &Server{Addr: ln.Addr().String(), srv: srv, ln: ln, done: make(chan error, 1), cert: cert}
	go func() { s.done <- srv.ServeTLS(ln, "", "") }()
	return s, nil
}

// StartH3 also serves Handler over HTTP/3 on UDP at the same port number as the TCP side,
// so one https://127.0.0.1:PORT URL reaches either (a proxy forced to HTTP/3 towards origins
// dials the URL's port over UDP). It fails if that UDP port is taken.
func (s *Server) StartH3() error {
	if s.h3 != nil {
		return errors.New("origin: HTTP/3 already started")
	}
	pc, err := net.ListenPacket("udp", s.Addr)
	if err != nil {
		return fmt.Errorf("origin: HTTP/3 on UDP %s: %w", s.Addr, err)
	}
	s.h3pc = pc
	s.h3 = &http3.Server{Handler: s.srv.Handler, TLSConfig: http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{s.cert}})}
	s.h3done = make(chan error, 1)
	go func() { s.h3done <- s.h3.Serve(pc) }()
	return nil
}

// Close stops the server and its connections.
func (s *Server) Close() error {
	err := s.srv.Close()
	if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if s.h3 != nil {
		err = errors.Join(err, s.h3.Close())
		s.h3pc.Close()
		if herr := <-s.h3done; herr != nil && !errors.Is(herr, http.ErrServerClosed) && !errors.Is(herr, net.ErrClosed) {
			err = errors.Join(err, herr)
		}
	}
	return err
}
