package render

import (
	"crypto/x509"
	"fmt"
	"sort"
	"strings"
	"time"

	"inspector/engine/session"
)

// Phase is one bar of the timing waterfall, as offsets from the session's first instant.
type Phase struct {
	Name       string
	Start, End time.Duration
}

// Waterfall derives the phases of s from its Timings. Phases whose instants are missing
// (zero) are left out; the result is ordered by start. total is the span from the first
// to the last known instant.
func Waterfall(t session.Timings) (phases []Phase, total time.Duration) {
	type span struct {
		name     string
		from, to time.Time
	}
	first := func(ts ...time.Time) time.Time {
		for _, x := range ts {
			if !x.IsZero() {
				return x
			}
		}
		return time.Time{}
	}
	spans := []span{
		{"client TLS", t.ClientConnected, t.ClientTLSDone},
		{"request", first(t.RequestHeaders), t.RequestDone},
		{"DNS", t.DNSStart, t.DNSDone},
		{"connect", t.ConnectStart, t.ConnectDone},
		{"upstream TLS", first(t.ConnectDone), t.UpstreamTLSDone},
		{"send", first(t.UpstreamTLSDone, t.ConnectDone, t.RequestDone, t.RequestHeaders), t.RequestSent},
		{"wait", first(t.RequestSent), t.FirstByte},
		{"receive", first(t.FirstByte), t.ResponseDone},
	}
	var origin, end time.Time
	for _, x := range []time.Time{t.ClientConnected, t.ClientTLSDone, t.RequestHeaders, t.RequestDone,
		t.DNSStart, t.DNSDone, t.ConnectStart, t.ConnectDone, t.UpstreamTLSDone, t.RequestSent,
		t.FirstByte, t.ResponseDone} {
		if x.IsZero() {
			continue
		}
		if origin.IsZero() || x.Before(origin) {
			origin = x
		}
		if x.After(end) {
			end = x
		}
	}
	for _, s := range spans {
		if s.from.IsZero() || s.to.IsZero() || s.to.Before(s.from) {
			continue
		}
		phases = append(phases, Phase{Name: s.name, Start: s.from.Sub(origin), End: s.to.Sub(origin)})
	}
	sort.SliceStable(phases, func(i, j int) bool { return phases[i].Start < phases[j].Start })
	if !origin.IsZero() {
		total = end.Sub(origin)
	}
	return phases, total
}

// TLS renders the TLS details of both legs, with each certificate's subject, issuer,
// validity and names.
func TLS(s *session.Session) string {
	var sb strings.Builder
	leg := func(title string, c session.Conn) {
		fmt.Fprintf(&sb, "%s\n", title)
		if c.TLS == nil {
			if c.Addr == "" && title == "Upstream (proxy → origin)" {
				sb.WriteString("  no upstream connection\n\n")
			} else {
				sb.WriteString("  not TLS\n\n")
			}
			return
		}
		t := c.TLS
		fmt.Fprintf(&sb, "  version   %s\n  cipher    %s\n", t.Version, t.CipherSuite)
		if t.ServerName != "" {
			fmt.Fprintf(&sb, "  SNI       %s\n", t.ServerName)
		}
		if t.ALPN != "" {
			fmt.Fprintf(&sb, "  ALPN      %s\n", t.ALPN)
		}
		fmt.Fprintf(&sb, "  resumed   %v\n", t.Resumed)
		if c.Addr != "" {
			fmt.Fprintf(&sb, "  peer      %s\n", c.Addr)
		}
		if f := c.Fingerprint; f != nil {
			for _, kv := range [...][2]string{{"JA4", f.JA4}, {"JA3", f.JA3}, {"JA3 raw", f.JA3Raw}, {"HTTP/2", f.H2}, {"hello", f.Mirror}} {
				if kv[1] != "" {
					fmt.Fprintf(&sb, "  %-9s %s\n", kv[0], kv[1])
				}
			}
		}
		for i, der := range t.Certificates {
			cert, err := x509.ParseCertificate(der)
			if err != nil {
				fmt.Fprintf(&sb, "  certificate %d: unreadable (%v)\n", i, err)
				continue
			}
			fmt.Fprintf(&sb, "  certificate %d\n    subject  %s\n    issuer   %s\n    valid    %s – %s\n",
				i, cert.Subject, cert.Issuer,
				cert.NotBefore.UTC().Format("2006-01-02"), cert.NotAfter.UTC().Format("2006-01-02"))
			if len(cert.DNSNames) > 0 {
				fmt.Fprintf(&sb, "    names    %s\n", strings.Join(cert.DNSNames, ", "))
			}
		}
		sb.WriteByte('\n')
	}
	leg("Client (client → proxy)", s.Client)
	leg("Upstream (proxy → origin)", s.Upstream)
	if c, u := s.Client.Fingerprint, s.Upstream.Fingerprint; c != nil && u != nil && c.JA4 != "" && u.JA4 != "" {
		switch {
		case c.JA4 != u.JA4:
			sb.WriteString("Fingerprint: the origin saw another JA4 than the client sent (fp:mismatch)\n")
		case c.H2 != "" && u.H2 != "" && c.H2 != u.H2:
			sb.WriteString("Fingerprint: same JA4; the origin saw another HTTP/2 fingerprint (fp:mismatch)\n")
		default:
			sb.WriteString("Fingerprint: the origin saw the client's (fp:match)\n")
		}
	}
	return sb.String()
}
