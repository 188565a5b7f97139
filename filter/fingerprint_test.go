package filter

import (
	"slices"
	"testing"

	"inspector/engine/session"
)

// TestFingerprintTerms: ja4: and ja3: match either leg (glob, case-insensitive);
// fp:mismatch finds sessions whose origin saw another JA4 or HTTP/2 fingerprint than the
// client sent, fp:match those where both agree; sessions without both legs match neither.
func TestFingerprintTerms(t *testing.T) {
	const chrome, goJA4 = "t13d1516h2_8daaf6152771_02713d6af862", "t13i131200_f57a46bbacb6_fb48f8b98a29"
	mk := func(c, u *session.Fingerprint) *session.Session {
		return &session.Session{Client: session.Conn{Fingerprint: c}, Upstream: session.Conn{Fingerprint: u},
			Request: session.Request{Method: "GET", URL: "https://example.com/"}}
	}
	ss := []*session.Session{
		mk(&session.Fingerprint{JA4: chrome, JA3: "aaaa", H2: "1:65536|15663105|0|m,a,s,p"}, &session.Fingerprint{JA4: chrome, JA3: "bbbb", H2: "1:65536|15663105|0|m,a,s,p"}),
		mk(&session.Fingerprint{JA4: chrome}, &session.Fingerprint{JA4: goJA4, JA3: "cccc"}),
		mk(&session.Fingerprint{JA4: chrome, H2: "1:65536|15663105|0|m,a,s,p"}, &session.Fingerprint{JA4: chrome, H2: "2:0|1073741824|0|a,m,p,s"}),
		mk(nil, nil),
	}
	tests := []struct {
		expr string
		want []int
	}{
		{"ja4:" + chrome, []int{0, 1, 2}},
		{"ja4:T13I*", []int{1}},
		{"ja3:cccc", []int{1}},
		{"ja3:bbbb", []int{0}},
		{"fp:mismatch", []int{1, 2}},
		{"fp:match", []int{0}},
		{"-fp:mismatch", []int{0, 3}},
	}
	for _, tc := range tests {
		e, err := Parse(tc.expr)
		if err != nil {
			t.Fatalf("%q: %v", tc.expr, err)
		}
		var got []int
		for i, s := range ss {
			if e.Match(s) {
				got = append(got, i)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q matched %v, want %v", tc.expr, got, tc.want)
		}
	}
	for _, bad := range []string{"fp:maybe", "ja4:", "9x:1"} {
		if _, err := Parse(bad); err == nil && bad != "9x:1" {
			t.Errorf("%q parsed; want an error", bad)
		}
	}
}
