// Package peer holds what the benchmark's peer-proxy mains share: flags, CA loading, the
// upstream trust pool and the "listening on ADDR" line the harness waits for.
package peer

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
)

// Config is parsed from the command line of a peer main.
type Config struct {
	Listen     string
	CA         tls.Certificate // CA certificate (Leaf set) and key for minting leaves
	UpstreamCA *x509.CertPool  // roots trusted for origins
	Listener   net.Listener
	// HAR asks a peer that can to record every exchange, bodies included, as a capturing
	// proxy does (martian's HAR logger); -har.
	HAR bool
}

// Parse reads -listen, -ca-cert, -ca-key and -upstream-ca, loads them and opens the
// listener. It exits with status 2 and a clear message on bad input.
func Parse(name string) *Config {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	caCert := fs.String("ca-cert", "", "PEM file of the MITM CA certificate")
	caKey := fs.String("ca-key", "", "PEM file of the MITM CA key")
	upCA := fs.String("upstream-ca", "", "PEM file of roots trusted for origins (added to the system roots)")
	har := fs.Bool("har", false, "record every exchange with bodies (peers that support it)")
	fs.Parse(os.Args[1:])
	c, err := load(*listen, *caCert, *caKey, *upCA)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	c.HAR = *har
	return c
}

func load(listen, caCert, caKey, upCA string) (*Config, error) {
	if caCert == "" || caKey == "" {
		return nil, errors.New("-ca-cert and -ca-key are required")
	}
	ca, err := tls.LoadX509KeyPair(caCert, caKey)
	if err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	if ca.Leaf == nil || !ca.Leaf.IsCA {
		return nil, fmt.Errorf("CA: %s is not a CA certificate", caCert)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if upCA != "" {
		pem, err := os.ReadFile(upCA)
		if err != nil {
			return nil, fmt.Errorf("-upstream-ca: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-upstream-ca: %s holds no PEM certificate", upCA)
		}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	return &Config{Listen: listen, CA: ca, UpstreamCA: pool, Listener: ln}, nil
}

// Ready prints the line the harness waits for.
func (c *Config) Ready() {
	fmt.Printf("listening on %s\n", c.Listener.Addr())
}
