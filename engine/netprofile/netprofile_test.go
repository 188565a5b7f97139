package netprofile_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	et "inspector/engine/enginetest"
	"inspector/engine/netprofile"
)

func setup(t *testing.T, p *netprofile.Profile) (*netprofile.Shaper, *et.Proxy, *et.Origin, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	o := et.StartOrigin(t, et.OriginH2TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		n, _ := io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/upload" {
			w.Write([]byte(strings.Repeat("u", int(n%10))))
			return
		}
		size := 0
		if r.URL.Path == "/big" {
			size = 400 << 10
		}
		w.Write(bytes.Repeat([]byte("x"), size))
	}))
	p0 := et.StartProxy(t, nil, o)
	go func() {
		for range p0.Sessions {
		}
	}()
	s, err := netprofile.New(p)
	if err != nil {
		t.Fatal(err)
	}
	s.Install(p0.Engine)
	t.Cleanup(func() { s.Set(nil) })
	return s, p0, o, &hits
}

func timed(t *testing.T, c *http.Client, req *http.Request) (time.Duration, time.Duration, int, int64) {
	t.Helper()
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ttfb := time.Since(start)
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return ttfb, time.Since(start), resp.StatusCode, n
}

func within(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if lo, hi := want*85/100, want*115/100; got < lo || got > hi {
		t.Errorf("%s: %v, want %v ±15%%", what, got, want)
	} else {
		t.Logf("%s: %v (want %v)", what, got, want)
	}
}

// The shaped download rate is the profile's within ±15%: 400 KiB at 1,600 kbit/s.
func TestDownloadRate(t *testing.T) {
	p, _ := netprofile.Parse("bw:1600")
	_, px, o, _ := setup(t, p)
	c := px.Client(t, et.ClientH2)
	req, _ := http.NewRequest("GET", o.URL+"/big", nil)
	_, total, status, n := timed(t, c, req)
	if status != 200 || n != 400<<10 {
		t.Fatalf("status %d, %d bytes", status, n)
	}
	want := time.Duration(float64(400<<10) * 8 / 1600e3 * float64(time.Second))
	within(t, "400 KiB at 1600 kbit/s", total, want)
}

// The upload rate is the profile's up rate: 200 KiB at 800 kbit/s.
func TestUploadRate(t *testing.T) {
	p, _ := netprofile.Parse("down:0,up:800")
	_, px, o, _ := setup(t, p)
	c := px.Client(t, et.ClientH1)
	req, _ := http.NewRequest("POST", o.URL+"/upload", bytes.NewReader(bytes.Repeat([]byte("y"), 200<<10)))
	_, total, status, _ := timed(t, c, req)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	want := time.Duration(float64(200<<10) * 8 / 800e3 * float64(time.Second))
	within(t, "200 KiB up at 800 kbit/s", total, want)
}

// Latency is added to each request on a kept-alive connection, not once per connection.
// Each side takes the fastest of five requests, so a scheduling hiccup on a loaded machine
// does not count as latency.
func TestLatencyPerRequest(t *testing.T) {
	s, px, o, _ := setup(t, nil)
	c := px.Client(t, et.ClientH2)
	req, _ := http.NewRequest("GET", o.URL+"/small", nil)
	timed(t, c, req) // connection set up
	fastest := func() time.Duration {
		best := time.Hour
		for i := 0; i < 5; i++ {
			ttfb, _, _, _ := timed(t, c, req)
			best = min(best, ttfb)
		}
		return best
	}
	base := fastest()
	p, _ := netprofile.Parse("latency:300")
	s.Set(p)
	within(t, "time to first byte with +300 ms", fastest()-base, 300*time.Millisecond)
}

func TestOfflineAndHosts(t *testing.T) {
	p, _ := netprofile.Parse("Offline")
	s, px, o, hits := setup(t, p)
	c := px.Client(t, et.ClientH1)
	req, _ := http.NewRequest("GET", o.URL+"/small", nil)
	_, _, status, _ := timed(t, c, req)
	if status != http.StatusBadGateway || hits.Load() != 0 {
		t.Fatalf("offline: status %d, origin hits %d", status, hits.Load())
	}
	// A profile for other hosts leaves this one alone.
	other, _ := netprofile.Parse("latency:5000,hosts:*.example.com")
	s.Set(other)
	ttfb, _, status, _ := timed(t, c, req)
	if status != 200 || ttfb > 4*time.Second {
		t.Fatalf("unmatched host shaped: status %d, %v", status, ttfb)
	}
	// A host glob matches a request inside the decrypted tunnel (its URL is only a path
	// until it goes upstream: the host comes from the Host header).
	if err := s.Set(&netprofile.Profile{Name: "Offline", Offline: true, Hosts: []string{"127.0.0.*"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, status, _ = timed(t, c, req); status != http.StatusBadGateway {
		t.Fatalf("host-matched offline over HTTPS: status %d", status)
	}
	// URL regular expressions see the absolute URL: offline for /small only, so another
	// path still goes out.
	if err := s.Set(&netprofile.Profile{Name: "Offline", Offline: true, URLs: []string{`^https://[^/]+/small$`}}); err != nil {
		t.Fatal(err)
	}
	before := hits.Load()
	if _, _, status, _ = timed(t, c, req); status != http.StatusBadGateway || hits.Load() != before {
		t.Fatalf("URL-matched offline: status %d, origin hits %d", status, hits.Load()-before)
	}
	other2, _ := http.NewRequest("GET", o.URL+"/small?x=1", nil)
	if _, _, status, _ = timed(t, c, other2); status != 200 || hits.Load() != before+1 {
		t.Fatalf("URL not matched: status %d, origin hits %d", status, hits.Load())
	}
	// A host glob or a URL expression: either one matching shapes the request.
	either, err := netprofile.Parse("latency:5000,hosts:*.example.com,url:/nothing-here")
	if err != nil || len(either.URLs) != 1 {
		t.Fatalf("Parse url: %+v, %v", either, err)
	}
	s.Set(either)
	if ttfb, _, status, _ = timed(t, c, req); status != 200 || ttfb > 4*time.Second {
		t.Fatalf("neither host nor URL matched, shaped: status %d, %v", status, ttfb)
	}
	s.Set(nil)
	if s.Profile() != nil {
		t.Fatal("profile still set")
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]string{
		"3G": "3G", "slow-3g": "Slow 3G", "Slow 4G": "Slow 4G", "offline": "Offline",
		"bw:2000,latency:80": "↓ 2 Mbit/s ↑ 2 Mbit/s +80 ms", "down:500,up:100": "↓ 500 kbit/s ↑ 100 kbit/s",
	} {
		p, err := netprofile.Parse(in)
		if err != nil || p.Name != want {
			t.Errorf("Parse(%q) = %+v, %v; want %q", in, p, err, want)
		}
	}
	for _, bad := range []string{"5G", "bw:-1", "bw:x", "speed:10", "bw:10,hosts:[", "bw:10,url:(", "bw:10,url:"} {
		p, err := netprofile.Parse(bad)
		if err == nil {
			err = p.Validate()
		}
		if err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	if p, err := netprofile.Parse("none"); p != nil || err != nil {
		t.Errorf("none: %v %v", p, err)
	}
}
