// Package netprofile emulates network conditions (bandwidth per direction and latency, per
// host glob or URL regular expression) for the exchanges going through the engine, with
// presets like "3G" and "Offline" and custom profiles ("bw:KBPS,latency:MS").
//
// # How it shapes
//
// Bodies are throttled through leaky buckets of github.com/google/martian/v3/trafficshape
// (trafficshape.Bucket), one per direction per profile, shared by every exchange the
// profile covers: like a real link, ten parallel downloads share the bandwidth. The
// buckets drain every 50 ms (capacity = rate × 50 ms), so rates are smooth at the scale
// of a request. Latency is added per request, half before the request goes upstream and
// half before the response head goes to the client, so time to first byte grows by the
// profile's latency on every protocol (HTTP/1.1, HTTP/2 and HTTP/3 alike).
//
// We use trafficshape's Bucket but not its Conn or Listener: Conn's FillThrottle spins on
// a full bucket without waiting (a core at 100% for as long as a transfer is throttled),
// and it adds latency only once per connection, which says nothing about requests on a
// kept-alive connection. Here a full bucket waits for its next drain.
//
// "Offline" fails matching requests before anything goes upstream (the client gets a 502
// that names the profile).
//
// # Concurrency
//
// A Shaper is safe for concurrent use; Set swaps the profile atomically. Exchanges already
// streaming keep the buckets of the profile they started with.
package netprofile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/martian/v3/log"
	"github.com/google/martian/v3/trafficshape"

	"inspector/engine"
)

func init() {
	// trafficshape logs every bucket event; Inspector reports through its own channels.
	log.SetLevel(log.Silent)
}

// Profile is one set of network conditions.
type Profile struct {
	Name      string   `json:"name"`
	DownKbps  int64    `json:"down_kbps,omitempty"`  // origin → client, kilobits per second; 0: unlimited
	UpKbps    int64    `json:"up_kbps,omitempty"`    // client → origin
	LatencyMS int      `json:"latency_ms,omitempty"` // added to each request's round trip
	Offline   bool     `json:"offline,omitempty"`    // matching requests fail
	Hosts     []string `json:"hosts,omitempty"`      // host globs the profile applies to
	// URLs are regular expressions (RE2, unanchored) of the full request URL the profile
	// applies to. A request is shaped when its host matches one of Hosts or its URL one
	// of URLs; with both empty, every request is.
	URLs []string `json:"urls,omitempty"`
}

// Presets are the named profiles (values as browsers' developer tools use them).
var Presets = []Profile{
	{Name: "Slow 3G", DownKbps: 400, UpKbps: 400, LatencyMS: 400},
	{Name: "3G", DownKbps: 1600, UpKbps: 768, LatencyMS: 150},
	{Name: "Slow 4G", DownKbps: 4000, UpKbps: 3000, LatencyMS: 100},
	{Name: "4G", DownKbps: 20000, UpKbps: 10000, LatencyMS: 40},
	{Name: "Lossy Wi-Fi", DownKbps: 2000, UpKbps: 1000, LatencyMS: 300},
	{Name: "Offline", Offline: true},
}

// Parse reads a profile name (case and spaces ignored: "slow-3g", "3g", "offline") or a
// custom "bw:KBPS[,up:KBPS][,latency:MS][,hosts:GLOB|GLOB][,url:REGEX]..." ("bw" sets both
// directions, "down" and "up" one each; "url" may repeat, and its regular expression may
// not hold a comma: the JSON form of the API has no such limit). "none" and "" return nil:
// no shaping.
func Parse(s string) (*Profile, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "none") || strings.EqualFold(s, "off") {
		return nil, nil
	}
	norm := func(v string) string {
		return strings.NewReplacer(" ", "", "-", "", "_", "").Replace(strings.ToLower(v))
	}
	for _, p := range Presets {
		if norm(p.Name) == norm(s) {
			p := p
			return &p, nil
		}
	}
	if !strings.Contains(s, ":") {
		var names []string
		for _, p := range Presets {
			names = append(names, p.Name)
		}
		return nil, fmt.Errorf("network profile %q: not one of %s, none, or bw:KBPS,latency:MS", s, strings.Join(names, ", "))
	}
	p := &Profile{Name: "Custom"}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("network profile: %q is not KEY:VALUE", part)
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if k == "hosts" {
			p.Hosts = strings.Split(v, "|")
			continue
		}
		if k == "url" {
			p.URLs = append(p.URLs, v)
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("network profile: %s: %q is not a non-negative number", k, v)
		}
		switch k {
		case "bw":
			p.DownKbps, p.UpKbps = n, n
		case "down":
			p.DownKbps = n
		case "up":
			p.UpKbps = n
		case "latency":
			p.LatencyMS = int(n)
		default:
			return nil, fmt.Errorf("network profile: unknown key %q (bw, down, up, latency, hosts, url)", k)
		}
	}
	p.Name = p.String()
	return p, nil
}

// String describes the profile in words.
func (p *Profile) String() string {
	if p == nil {
		return "none"
	}
	if p.Offline {
		return "Offline"
	}
	var parts []string
	if p.DownKbps > 0 {
		parts = append(parts, fmt.Sprintf("↓ %s", kbps(p.DownKbps)))
	}
	if p.UpKbps > 0 {
		parts = append(parts, fmt.Sprintf("↑ %s", kbps(p.UpKbps)))
	}
	if p.LatencyMS > 0 {
		parts = append(parts, fmt.Sprintf("+%d ms", p.LatencyMS))
	}
	return strings.Join(parts, " ")
}

func kbps(n int64) string {
	if n >= 1000 && n%100 == 0 {
		return strconv.FormatFloat(float64(n)/1000, 'f', -1, 64) + " Mbit/s"
	}
	return strconv.FormatInt(n, 10) + " kbit/s"
}

// Validate checks the host globs and URL regular expressions.
func (p *Profile) Validate() error {
	_, err := p.compile()
	return err
}

func (p *Profile) compile() ([]*regexp.Regexp, error) {
	for _, h := range p.Hosts {
		if _, err := path.Match(h, "x"); err != nil || h == "" {
			return nil, fmt.Errorf("network profile: bad host glob %q", h)
		}
	}
	var res []*regexp.Regexp
	for _, u := range p.URLs {
		re, err := regexp.Compile(u)
		if err != nil || u == "" {
			return nil, fmt.Errorf("network profile: bad URL regular expression %q: %v", u, err)
		}
		res = append(res, re)
	}
	return res, nil
}

// covers reports whether the profile applies to f's request.
func (st *state) covers(f *engine.Flow) bool {
	if len(st.p.Hosts) == 0 && len(st.urls) == 0 {
		return true
	}
	if len(st.p.Hosts) > 0 {
		host := strings.ToLower(hostOf(f.Request))
		for _, g := range st.p.Hosts {
			if ok, _ := path.Match(strings.ToLower(g), host); ok {
				return true
			}
		}
	}
	if len(st.urls) > 0 {
		s := fullURL(f)
		for _, re := range st.urls {
			if re.MatchString(s) {
				return true
			}
		}
	}
	return false
}

// fullURL is the request's absolute URL as its session records it: a request inside a
// decrypted tunnel has only a path in its URL until it goes upstream.
func fullURL(f *engine.Flow) string {
	if f.Session != nil && f.Session.Request.URL != "" {
		return f.Session.Request.URL
	}
	if f.Request == nil || f.Request.URL == nil {
		return ""
	}
	return f.Request.URL.String()
}

// drain is how often the buckets empty.
const drain = 50 * time.Millisecond

type state struct {
	p        Profile
	urls     []*regexp.Regexp     // p.URLs compiled
	up, down *trafficshape.Bucket // nil: unlimited
}

// newState starts the buckets of p, which Validate accepted.
func newState(p Profile, urls []*regexp.Regexp) *state {
	st := &state{p: p, urls: urls}
	if p.UpKbps > 0 {
		st.up = trafficshape.NewBucket(perDrain(p.UpKbps), drain)
	}
	if p.DownKbps > 0 {
		st.down = trafficshape.NewBucket(perDrain(p.DownKbps), drain)
	}
	return st
}

// perDrain is the bytes a bucket lets through per drain interval at kbps.
func perDrain(kbps int64) int64 {
	return max(1, kbps*1000/8*int64(drain)/int64(time.Second))
}

func (st *state) close() {
	if st.up != nil {
		st.up.Close()
	}
	if st.down != nil {
		st.down.Close()
	}
}

// Shaper applies the current profile as engine hooks.
type Shaper struct {
	cur atomic.Pointer[state] // nil: no shaping
}

// New returns a Shaper with profile p (nil: none).
func New(p *Profile) (*Shaper, error) {
	s := &Shaper{}
	return s, s.Set(p)
}

// Set replaces the profile (nil: none).
func (s *Shaper) Set(p *Profile) error {
	var next *state
	if p != nil {
		urls, err := p.compile()
		if err != nil {
			return err
		}
		next = newState(*p, urls)
	}
	if old := s.cur.Swap(next); old != nil {
		// Exchanges streaming through the old buckets fall back to unlimited once closed.
		old.close()
	}
	return nil
}

// Profile returns the current profile, or nil.
func (s *Shaper) Profile() *Profile {
	st := s.cur.Load()
	if st == nil {
		return nil
	}
	p := st.p
	return &p
}

// Install adds the Shaper's hooks to eng.
func (s *Shaper) Install(eng *engine.Engine) {
	eng.AddRequestHook(s)
	eng.AddResponseHook(s)
}

// ErrOffline is the hook error of a request the Offline profile refused.
var ErrOffline = errors.New("network profile Offline: no network")

// OnRequest waits half the latency, fails offline requests and throttles the request body.
func (s *Shaper) OnRequest(ctx context.Context, f *engine.Flow) error {
	st := s.cur.Load()
	if st == nil || !st.covers(f) {
		return nil
	}
	if st.p.Offline {
		return ErrOffline
	}
	if err := wait(ctx, time.Duration(st.p.LatencyMS)*time.Millisecond/2); err != nil {
		return err
	}
	if st.up != nil && f.Request.Body != nil && f.Request.Body != http.NoBody {
		f.Request.Body = &Reader{ctx: ctx, r: f.Request.Body, b: st.up}
	}
	return nil
}

// OnResponse waits the other half of the latency and throttles the response body.
func (s *Shaper) OnResponse(ctx context.Context, f *engine.Flow) error {
	st := s.cur.Load()
	if st == nil || st.p.Offline || !st.covers(f) {
		return nil
	}
	if err := wait(ctx, time.Duration(st.p.LatencyMS)*time.Millisecond-time.Duration(st.p.LatencyMS)*time.Millisecond/2); err != nil {
		return err
	}
	if st.down != nil && f.Response.Body != nil && f.Response.Body != http.NoBody && f.Response.StatusCode != http.StatusSwitchingProtocols {
		f.Response.Body = &Reader{ctx: ctx, r: f.Response.Body, b: st.down}
	}
	return nil
}

// hostOf is r's host without the port: the URL's, or (a request inside a decrypted tunnel,
// whose URL is only a path) the Host header's.
func hostOf(r *http.Request) string {
	if r == nil {
		return ""
	}
	host := r.Host
	if r.URL != nil && r.URL.Host != "" {
		host = r.URL.Host
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Reader throttles r through a trafficshape bucket, waiting for the bucket's next drain
// while it is full (never spinning). When the bucket is closed (the profile changed) it
// reads unthrottled.
type Reader struct {
	ctx context.Context
	r   io.ReadCloser
	b   *trafficshape.Bucket
}

func (t *Reader) Read(p []byte) (int, error) {
	for {
		var n int
		var rerr error
		_, err := t.b.Fill(func(remaining int64) (int64, error) {
			m := int64(len(p))
			if remaining < m {
				m = remaining
			}
			n, rerr = t.r.Read(p[:m])
			return int64(n), nil
		})
		switch {
		case err == nil && (n > 0 || rerr != nil || len(p) == 0):
			return n, rerr
		case err != nil && !errors.Is(err, trafficshape.ErrBucketOverflow):
			return t.r.Read(p) // bucket closed: the profile was replaced
		}
		// Full: wait for the drain.
		select {
		case <-time.After(drain / 5):
		case <-t.ctx.Done():
			return 0, t.ctx.Err()
		}
	}
}

func (t *Reader) Close() error { return t.r.Close() }
