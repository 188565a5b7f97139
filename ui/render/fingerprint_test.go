package render

import (
	"strings"
	"testing"

	"inspector/engine/session"
)

// The TLS tab shows each leg's fingerprints and says whether the origin saw the client's.
func TestTLSShowsFingerprints(t *testing.T) {
	const ja4 = "t13d1516h2_8daaf6152771_02713d6af862"
	s := &session.Session{
		Client: session.Conn{Addr: "127.0.0.1:5", TLS: &session.TLSInfo{Version: "TLS 1.3"},
			Fingerprint: &session.Fingerprint{JA4: ja4, JA3: "abc", H2: "1:65536|15663105|0|m,a,s,p"}},
		Upstream: session.Conn{Addr: "127.0.0.1:6", TLS: &session.TLSInfo{Version: "TLS 1.3"},
			Fingerprint: &session.Fingerprint{JA4: ja4, H2: "2:0|1073741824|0|a,m,p,s", Mirror: session.Mirrored}},
	}
	out := TLS(s)
	for _, want := range []string{"JA4       " + ja4, "JA3       abc", "HTTP/2    1:65536|15663105|0|m,a,s,p", "hello     mirrored",
		"another HTTP/2 fingerprint (fp:mismatch)"} {
		if !strings.Contains(out, want) {
			t.Errorf("TLS tab lacks %q:\n%s", want, out)
		}
	}
	s.Upstream.Fingerprint.H2 = s.Client.Fingerprint.H2
	if out := TLS(s); !strings.Contains(out, "fp:match") {
		t.Errorf("matching legs:\n%s", out)
	}
}
