package engine_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	et "inspector/engine/enginetest"
)

// fpGet fetches url with c and returns what the fingerprinting origin saw.
func fpGet(t *testing.T, c *http.Client, url string) http.Header {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Header.Get("X-JA4") == "" {
		t.Fatalf("the origin computed no JA4: %v", resp.Header)
	}
	return resp.Header
}

// goClient is a Go client that offers protos in ALPN, direct or through proxy p.
func goClient(o *et.FPOrigin, p *et.Proxy, protos []string) *http.Client {
	tr := o.Pool()
	tr.TLSClientConfig.NextProtos = protos
	tr.ForceAttemptHTTP2 = len(protos) > 0 && protos[0] == "h2"
	if p != nil {
		tr.Proxy = http.ProxyURL(p.URL)
		tr.TLSClientConfig.RootCAs = p.CAPool()
	}
	if tr.ForceAttemptHTTP2 {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetHTTP1(true)
		tr.Protocols.SetHTTP2(true)
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// The client leg's fingerprint as Inspector records it is what an origin computes from
// the same client connecting directly.
func TestClientLegFingerprint(t *testing.T) {
	t.Parallel()
	o := et.StartFPOrigin(t)
	p := et.StartProxy(t, nil, o.Origin())
	for _, protos := range [][]string{{"h2", "http/1.1"}, {"http/1.1"}} {
		direct := fpGet(t, goClient(o, nil, protos), o.URL+"/")
		through := goClient(o, p, protos)
		fpGet(t, through, o.URL+"/")
		s := p.Next(t)
		fp := s.Client.Fingerprint
		if fp == nil {
			t.Fatalf("%v: no client fingerprint", protos)
		}
		if fp.JA4 != direct.Get("X-JA4") || fp.JA3Raw != direct.Get("X-JA3-Raw") || fp.JA3 != direct.Get("X-JA3") {
			t.Fatalf("%v: client leg %+v, direct %s %s", protos, fp, direct.Get("X-JA4"), direct.Get("X-JA3-Raw"))
		}
		if protos[0] == "h2" {
			if fp.H2 == "" || fp.H2 != direct.Get("X-H2FP") {
				t.Fatalf("h2 fingerprint %q, direct %q", fp.H2, direct.Get("X-H2FP"))
			}
		} else if fp.H2 != "" {
			t.Fatalf("HTTP/1.1 client with an h2 fingerprint %q", fp.H2)
		}
		through.CloseIdleConnections()
	}
}

var _ = tls.VersionTLS13
