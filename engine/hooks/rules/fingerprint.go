package rules

import "inspector/engine"

// FingerprintKind sets the TLS ClientHello policy of matching requests' origin
// connections: Fingerprint "mirror" (the client's) or "go" (Go's own). It comes before
// --fingerprint and --fingerprint-go, so a rule can exempt a host from mirroring or mirror
// one host while the rest get Go's hello; the session's upstream fingerprint names the
// rule. It lives in this file and in its own switch arms of compile and OnRequest.
const FingerprintKind Kind = "fingerprint"

func (c *compiledRule) compileFingerprint(fail func(string, ...any) (*compiledRule, error)) (*compiledRule, error) {
	switch c.Fingerprint {
	case "mirror", "go":
		return c, nil
	}
	return fail("fingerprint %q: want mirror or go", c.Fingerprint)
}

// applyFingerprint sets the flow's policy (the last matching rule wins).
func (c *compiledRule) applyFingerprint(f *engine.Flow) error {
	return f.SetFingerprint(c.Fingerprint, "rule "+c.name())
}
