package upstream

import (
	"testing"
	"time"
)

func TestParseAltSvcH3(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		in         string
		host, port string
		ma         time.Duration
		ok         bool
	}{
		{`h3=":443"; ma=3600`, "", "443", time.Hour, true},
		{`h3-29=":443", h3="alt.example:8443"`, "alt.example", "8443", 24 * time.Hour, true},
		{`h2=":443", h3=":4433";ma=60;persist=1`, "", "4433", time.Minute, true},
		{`h3=":443"; ma="120"`, "", "443", 2 * time.Minute, true},
		{`h3=":0"`, "", "", 0, false},
		{`h3=":99999"`, "", "", 0, false},
		{`h3="noport"`, "", "", 0, false},
		{`h3`, "", "", 0, false},
		{`clear`, "", "", 0, false},
		{``, "", "", 0, false},
		{`h3=":443"; ma=-5`, "", "443", 24 * time.Hour, true},
	}
	for _, c := range cases {
		got, ok := parseAltSvcH3(c.in, now)
		if ok != c.ok || (ok && (got.host != c.host || got.port != c.port || got.expires != now.Add(c.ma))) {
			t.Errorf("parseAltSvcH3(%q) = %+v %v, want host %q port %q ma %v ok %v", c.in, got, ok, c.host, c.port, c.ma, c.ok)
		}
	}
}

func TestAltSvcCacheRespectsMaxAgeBrokenAndClear(t *testing.T) {
	var c altSvcCache
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.learn("o.example:443", []string{`h3=":8443"; ma=60`}, t0)
	if addr, ok := c.lookup("o.example:443", t0.Add(59*time.Second)); !ok || addr != "o.example:8443" {
		t.Fatalf("within ma: %q %v", addr, ok)
	}
	if _, ok := c.lookup("o.example:443", t0.Add(61*time.Second)); ok {
		t.Fatal("after ma: still h3")
	}
	c.learn("o.example:443", []string{`h3=":8443"; ma=3600`}, t0)
	c.markBroken("o.example:443", t0)
	if _, ok := c.lookup("o.example:443", t0.Add(time.Minute)); ok {
		t.Fatal("broken origin still offered h3")
	}
	// A renewed advertisement for the same address keeps it broken.
	c.learn("o.example:443", []string{`h3=":8443"; ma=3600`}, t0.Add(2*time.Minute))
	if _, ok := c.lookup("o.example:443", t0.Add(3*time.Minute)); ok {
		t.Fatal("re-advertised broken origin offered h3 too soon")
	}
	if _, ok := c.lookup("o.example:443", t0.Add(brokenFor+time.Second)); !ok {
		t.Fatal("broken origin never retried")
	}
	c.learn("o.example:443", []string{"clear"}, t0)
	if _, ok := c.lookup("o.example:443", t0); ok {
		t.Fatal("Alt-Svc: clear kept the entry")
	}
	c.learn("bad authority", []string{`h3=":443"`}, t0)
	if len(c.m) != 0 {
		t.Fatalf("entries after clear and a bad authority: %v", c.m)
	}
}

func FuzzParseAltSvcH3(f *testing.F) {
	for _, s := range []string{`h3=":443"; ma=3600`, `h3="[::1]:443"`, `h3=":443";ma=1e99`, `,,;;==`} {
		f.Add(s)
	}
	now := time.Now()
	f.Fuzz(func(t *testing.T, v string) {
		a, ok := parseAltSvcH3(v, now)
		if ok && (a.port == "" || a.expires.Before(now)) {
			t.Fatalf("%q: accepted %+v", v, a)
		}
	})
}
