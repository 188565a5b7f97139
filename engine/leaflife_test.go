package engine_test

import (
	"crypto/tls"
	"net/url"
	"testing"
	"time"

	"inspector/rootca"

	et "inspector/engine/enginetest"
)

// TestLeafLifetimeOnTheWire: the certificate a client gets through the proxy lasts at most
// 47 days, backdate included (Chromium refuses longer ones under roots it treats as
// public), and a shorter setting is what the wire shows.
func TestLeafLifetimeOnTheWire(t *testing.T) {
	t.Parallel()
	origin := et.StartOrigin(t, et.OriginH1TLS, nil)
	p := et.StartProxy(t, nil, origin)
	u, _ := url.Parse(origin.URL)
	life := func() time.Duration {
		c, _ := p.Tunnel(t, u.Host, []string{"http/1.1"})
		leaf := c.(*tls.Conn).ConnectionState().PeerCertificates[0]
		return leaf.NotAfter.Sub(leaf.NotBefore)
	}
	if got := life(); got > rootca.MaxLeafDays*24*time.Hour || got < (rootca.MaxLeafDays-1)*24*time.Hour {
		t.Fatalf("leaf on the wire lasts %v, want at most %d days", got, rootca.MaxLeafDays)
	}
	if err := p.CA.SetLeafDays(10); err != nil {
		t.Fatal(err)
	}
	if got := life(); got != 10*24*time.Hour {
		t.Fatalf("with 10 days set the leaf on the wire lasts %v", got)
	}
}
