// Command goproxyproxy is the benchmark's goproxy peer: github.com/elazarl/goproxy MITM-ing
// every CONNECT with the given CA, a leaf cache (CertStore), HTTP/2 to clients allowed, and
// an http.Transport with HTTP/2 towards origins.
package main

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/elazarl/goproxy"

	"inspector/bench/internal/peer"
)

// certCache is a CertStorage: one leaf per host, minted once.
type certCache struct {
	mu    sync.Mutex
	certs map[string]*tls.Certificate
}

func (c *certCache) Fetch(host string, gen func() (*tls.Certificate, error)) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cert, ok := c.certs[host]; ok {
		return cert, nil
	}
	cert, err := gen()
	if err != nil {
		return nil, err
	}
	c.certs[host] = cert
	return cert, nil
}

func main() {
	c := peer.Parse("goproxyproxy")
	p := goproxy.NewProxyHttpServer()
	p.Verbose = false
	p.AllowHTTP2 = true
	p.CertStore = &certCache{certs: map[string]*tls.Certificate{}}
	p.Tr = &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: c.UpstreamCA},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     time.Minute,
	}
	ca := c.CA
	mitmAction := &goproxy.ConnectAction{Action: goproxy.ConnectMitm, TLSConfig: goproxy.TLSConfigFromCA(&ca)}
	p.OnRequest().HandleConnectFunc(func(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
		return mitmAction, host
	})
	c.Ready()
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(c.Listener); err != nil {
		fmt.Fprintln(os.Stderr, "goproxyproxy:", err)
		os.Exit(1)
	}
}
