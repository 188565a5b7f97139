// Package load is the benchmark's closed-loop load generator: a fixed number of workers,
// each sending its next request as soon as the previous one finished, through an HTTP proxy
// (CONNECT, then TLS inside the tunnel) or straight to a TLS reverse proxy.
//
// A run has a warm-up phase and a measured window. Only requests that complete inside the
// window are counted, so the caller can read the proxy's CPU time in the OnStart/OnEnd
// callbacks and divide by Result.Requests.
package load

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Shape is one kind of traffic.
type Shape struct {
	Name      string // short label for the table
	Proto     string // "h1" or "h2" towards the proxy
	Method    string // GET or POST
	Path      string // origin path with query, e.g. "/tiny"
	Body      []byte // request body for POST; shared read-only by all workers
	Conns     int    // client connections (one transport each)
	Streams   int    // concurrent requests per connection (h2 only; 1 for h1)
	NewTunnel bool   // a new CONNECT + TLS handshake for every request (h1 only)
	WantBytes int64  // expected response body length; -1 to skip the check
}

// Validate reports a clear error for a shape the generator cannot run.
func (s Shape) Validate() error {
	switch {
	case s.Proto != "h1" && s.Proto != "h2":
		return fmt.Errorf("shape %s: proto must be h1 or h2, not %q", s.Name, s.Proto)
	case s.Method != http.MethodGet && s.Method != http.MethodPost:
		return fmt.Errorf("shape %s: method must be GET or POST, not %q", s.Name, s.Method)
	case s.Conns < 1:
		return fmt.Errorf("shape %s: conns must be at least 1", s.Name)
	case s.Streams < 1 || (s.Proto == "h1" && s.Streams != 1):
		return fmt.Errorf("shape %s: streams must be 1 for h1 and at least 1 for h2", s.Name)
	case s.NewTunnel && s.Proto != "h1":
		return fmt.Errorf("shape %s: a new tunnel per request is an h1 shape", s.Name)
	}
	return nil
}

// Target says where requests go.
type Target struct {
	Proxy  string         // host:port of an HTTP proxy (CONNECT); empty to dial Origin directly
	Origin string         // https://HOST:PORT of the server named in requests
	Roots  *x509.CertPool // trusted roots: the proxy's CA (MITM) or the server's CA
}

// Result of one run. Latencies are of requests completed inside the measured window.
type Result struct {
	Requests int64         // completed without error inside the window
	Errors   int64         // failed inside the window
	FirstErr string        // first failure seen (warm-up included), for the report
	Elapsed  time.Duration // length of the measured window
	P50, P99 time.Duration
	Proto    string // protocol of the responses, e.g. "HTTP/2.0"
}

// RPS is completed requests per second in the window.
func (r Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Options bound a run. OnStart and OnEnd are called on the Run goroutine at the window's
// edges, while workers keep sending.
type Options struct {
	Warmup, Duration time.Duration
	OnStart, OnEnd   func()
}

const (
	phaseWarm = iota
	phaseMeasure
	phaseStop
)

// NewTransport returns a client transport for shape s towards t. Each transport keeps at
// most one connection to the origin, so Shape.Conns transports make Shape.Conns
// connections. The TLS session cache lets a new tunnel resume, as browsers do.
func NewTransport(t Target, s Shape) (*http.Transport, error) {
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: t.Roots, ClientSessionCache: tls.NewLRUClientSessionCache(16)},
		MaxConnsPerHost:     1,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     time.Minute,
		DisableKeepAlives:   s.NewTunnel,
		DisableCompression:  true,
		Protocols:           new(http.Protocols),
	}
	tr.Protocols.SetHTTP1(true)
	if s.Proto == "h2" {
		tr.Protocols.SetHTTP2(true)
	}
	if t.Proxy != "" {
		pu, err := url.Parse("http://" + t.Proxy)
		if err != nil {
			return nil, fmt.Errorf("proxy address %q: %w", t.Proxy, err)
		}
		tr.Proxy = http.ProxyURL(pu)
	}
	return tr, nil
}

// Run drives shape s against t for opts.Warmup + opts.Duration and returns the window's
// figures. It returns an error only for a bad shape or target; request failures are counted.
func Run(ctx context.Context, t Target, s Shape, opts Options) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, err
	}
	u, err := url.Parse(t.Origin + s.Path)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return Result{}, fmt.Errorf("origin %q with path %q is not an https URL", t.Origin, s.Path)
	}
	var (
		phase    atomic.Int32
		firstErr atomic.Pointer[string]
		proto    atomic.Pointer[string]
		wg       sync.WaitGroup
		lat      = make([][]time.Duration, s.Conns*s.Streams)
		errs     = make([]int64, s.Conns*s.Streams)
	)
	fail := func(err error) {
		msg := err.Error()
		firstErr.CompareAndSwap(nil, &msg)
	}
	var trs []*http.Transport
	for c := 0; c < s.Conns; c++ {
		tr, err := NewTransport(t, s)
		if err != nil {
			return Result{}, err
		}
		trs = append(trs, tr)
		client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for st := 0; st < s.Streams; st++ {
			w := c*s.Streams + st
			wg.Add(1)
			go func() {
				defer wg.Done()
				for phase.Load() != phaseStop && ctx.Err() == nil {
					start := time.Now()
					p, err := once(ctx, client, s, u)
					end := phase.Load()
					if err != nil {
						fail(err)
						if end == phaseMeasure {
							errs[w]++
						}
						continue
					}
					proto.CompareAndSwap(nil, &p)
					if end == phaseMeasure {
						lat[w] = append(lat[w], time.Since(start))
					}
				}
			}()
		}
	}
	wait := func(d time.Duration) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	wait(opts.Warmup)
	if opts.OnStart != nil {
		opts.OnStart()
	}
	phase.Store(phaseMeasure)
	t0 := time.Now()
	wait(opts.Duration)
	phase.Store(phaseStop)
	elapsed := time.Since(t0)
	if opts.OnEnd != nil {
		opts.OnEnd()
	}
	wg.Wait()
	for _, tr := range trs {
		tr.CloseIdleConnections()
	}
	res := Result{Elapsed: elapsed}
	var all []time.Duration
	for w := range lat {
		all = append(all, lat[w]...)
		res.Errors += errs[w]
	}
	res.Requests = int64(len(all))
	res.P50, res.P99 = Percentile(all, 50), Percentile(all, 99)
	if p := firstErr.Load(); p != nil {
		res.FirstErr = *p
	}
	if p := proto.Load(); p != nil {
		res.Proto = *p
	}
	return res, ctx.Err()
}

// once sends one request and reads the whole response, checking status and length.
func once(ctx context.Context, client *http.Client, s Shape, u *url.URL) (string, error) {
	var body io.Reader
	if s.Method == http.MethodPost {
		body = bytes.NewReader(s.Body)
	}
	req, err := http.NewRequestWithContext(ctx, s.Method, u.String(), body)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		return "", fmt.Errorf("reading body: %w", err)
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("status %d", resp.StatusCode)
	case s.WantBytes >= 0 && n != s.WantBytes:
		return "", fmt.Errorf("body of %d bytes, want %d", n, s.WantBytes)
	}
	return resp.Proto, nil
}

// Percentile returns the p-th percentile (nearest rank) of ds, which it sorts in place;
// 0 for an empty slice.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	if !slices.IsSorted(ds) {
		slices.Sort(ds)
	}
	i := int(float64(len(ds))*p/100+0.5) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

// Stream sends one GET for n bytes (Origin's /bytes) through t and reads it to the end,
// returning the bytes read and the time taken.
func Stream(ctx context.Context, t Target, n int64) (int64, time.Duration, error) {
	s := Shape{Name: "stream", Proto: "h1", Method: http.MethodGet, Conns: 1, Streams: 1}
	tr, err := NewTransport(t, s)
	if err != nil {
		return 0, 0, err
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/bytes?n=%d", t.Origin, n), nil)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	got, err := io.Copy(io.Discard, resp.Body)
	if err == nil && got != n {
		err = errors.New("short body")
	}
	return got, time.Since(start), err
}
