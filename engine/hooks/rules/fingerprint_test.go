package rules_test

import (
	"io"
	"strings"
	"testing"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/engine/hooks/rules"
)

// A fingerprint rule sets the ClientHello policy per host, before the command line's:
// "go" exempts a host from mirroring, "mirror" mirrors one under --fingerprint go. The
// session names the rule; an unknown policy is refused.
func TestFingerprintRule(t *testing.T) {
	o := et.StartFPOrigin(t)
	for _, c := range []struct {
		global, rule, want string
	}{
		{"mirror", "go", "Go's ClientHello: rule bank"},
		{"go", "mirror", "mirrored"},
		{"go", "", "Go's ClientHello: --fingerprint go"},
		{"mirror", "", "mirrored"},
	} {
		p := et.StartProxy(t, func(cfg *engine.Config) { cfg.Fingerprint = c.global }, o.Origin())
		m, err := rules.New("")
		if err != nil {
			t.Fatal(err)
		}
		filter := "host:127.0.0.1"
		if c.rule == "" {
			filter = "host:elsewhere.example" // a rule that does not match changes nothing
			c.rule = "go"
		}
		if _, err := m.Replace([]rules.Rule{{Name: "bank", Kind: rules.FingerprintKind, Enabled: true, Filter: filter, Fingerprint: c.rule}}); err != nil {
			t.Fatal(err)
		}
		m.Install(p.Engine)
		hc := p.Client(t, et.ClientH2)
		resp, err := hc.Get(o.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		s := p.Next(t)
		if up := s.Upstream.Fingerprint; up == nil || up.Mirror != c.want || up.JA4 != resp.Header.Get("X-JA4") {
			t.Fatalf("--fingerprint %s, rule %s: upstream %+v, want %q (origin saw %s)", c.global, c.rule, up, c.want, resp.Header.Get("X-JA4"))
		}
		hc.CloseIdleConnections()
	}
	m, _ := rules.New("")
	for _, bad := range []string{"", "chrome"} {
		_, err := m.Replace([]rules.Rule{{Kind: rules.FingerprintKind, Enabled: true, Filter: "host:x", Fingerprint: bad}})
		if err == nil || !strings.Contains(err.Error(), "want mirror or go") {
			t.Fatalf("fingerprint %q: %v", bad, err)
		}
	}
}
