package engine

import (
	"crypto/sha256"
	"encoding/pem"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"strings"
)

// CertHost is the magic host name that serves the CA download page through the proxy.
const CertHost = "inspector.cert"

func isCertHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.EqualFold(strings.TrimSuffix(host, "."), CertHost)
}

var certPage = template.Must(template.New("p").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Inspector CA certificate</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46em;margin:2em auto;padding:0 1em;color:#222}
a.b{display:inline-block;padding:.5em 1em;margin:.2em;border-radius:.4em;background:#2563eb;color:#fff;text-decoration:none}
code{background:#f3f4f6;padding:0 .3em;border-radius:.2em}h2{margin-top:1.5em}</style></head>
<body>
<h1>Inspector CA certificate</h1>
<p>This device reaches the Inspector proxy. To let Inspector decrypt HTTPS from this device, trust this
per-install CA. It was created on the machine running Inspector and is not shared with anyone.
Remove it when you are done debugging.</p>
<p>SHA-256 fingerprint: <code>{{.Fingerprint}}</code></p>
<p><a class="b" href="/cert.pem">Download PEM (.pem)</a> <a class="b" href="/cert.crt">Download DER (.crt)</a></p>
<h2>Windows</h2><p>Open the .crt, <b>Install Certificate…</b>, Current User, <b>Place all certificates in the following
store</b> → <i>Trusted Root Certification Authorities</i>. Or on the Inspector machine: <code>inspector ca install</code>.</p>
<h2>macOS</h2><p>Open the .pem in Keychain Access (login keychain), double-click the certificate, <b>Trust</b> →
<i>Always Trust</i>. Or: <code>security add-trusted-cert -r trustRoot -k ~/Library/Keychains/login.keychain-db inspector-ca.pem</code>.</p>
<h2>Linux</h2><p>System: <code>sudo cp inspector-ca.pem /usr/local/share/ca-certificates/inspector-ca.crt &amp;&amp; sudo update-ca-certificates</code>.
Chromium: <code>certutil -d sql:$HOME/.pki/nssdb -A -t C,, -n Inspector -i inspector-ca.pem</code>. Firefox: Settings → Certificates → Import.</p>
<h2>Android</h2><p>Download the .crt, then Settings → Security → Encryption &amp; credentials → Install a certificate → CA certificate.
Apps targeting Android 7+ trust user CAs only when they opt in (network security config).</p>
<h2>iOS / iPadOS</h2><p>Download the .pem in Safari, allow the profile, then Settings → General → VPN &amp; Device Management → install it, and
Settings → General → About → Certificate Trust Settings → enable full trust for it.</p>
</body></html>
`))

// serveCertPage serves http://inspector.cert/ and its downloads.
func (e *Engine) serveCertPage(w http.ResponseWriter, r *http.Request) {
	if e.cfg.CA == nil {
		http.Error(w, "this Inspector runs without a CA (HTTPS is tunnelled, not decrypted)", http.StatusNotFound)
		return
	}
	der := e.cfg.CA.RootDER()
	w.Header().Set("Cache-Control", "no-store")
	switch r.URL.Path {
	case "/", "":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = certPage.Execute(w, struct{ Fingerprint string }{fingerprint(der)})
	case "/cert.pem":
		w.Header().Set("Content-Type", "application/x-pem-file")
		w.Header().Set("Content-Disposition", `attachment; filename="inspector-ca.pem"`)
		_ = pem.Encode(w, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	case "/cert.crt", "/cert.der", "/cert.cer":
		w.Header().Set("Content-Type", "application/x-x509-ca-cert")
		w.Header().Set("Content-Disposition", `attachment; filename="inspector-ca.crt"`)
		_, _ = w.Write(der)
	default:
		http.NotFound(w, r)
	}
}

func fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	var b strings.Builder
	for i, c := range sum {
		if i > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%02X", c)
	}
	return b.String()
}
