package main

import (
	"bytes"
	"os"
	"path/filepath"

	"inspector/internal/atomicfile"
	"inspector/rootca"
)

// systemBundles are the usual places of the system's CA bundle (Debian/Ubuntu, Fedora,
// openSUSE, Alpine).
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// CABundleFile is the bundle (the system's roots and Inspector's) that caEnv points
// programs at, in the data directory.
const CABundleFile = "ca-bundle.pem"

// caEnv writes DATA_DIR/ca-bundle.pem (the system's roots followed by Inspector's root)
// and returns the environment variables that make common TLS stacks trust it: OpenSSL and
// Go (SSL_CERT_FILE), curl, Python requests, Node (NODE_EXTRA_CA_CERTS takes the root
// alone, on top of its own), git, Deno and the AWS SDKs. The system's roots stay trusted,
// so connections Inspector tunnels without decrypting (--no-decrypt) still verify.
func caEnv(dataDir string, ca *rootca.CA) ([]string, error) {
	var b bytes.Buffer
	for _, p := range systemBundles {
		if data, err := os.ReadFile(p); err == nil {
			b.Write(data)
			if len(data) > 0 && data[len(data)-1] != '\n' {
				b.WriteByte('\n')
			}
			break
		}
	}
	b.Write(ca.PEM())
	bundle := filepath.Join(dataDir, CABundleFile)
	if err := atomicfile.WriteFile(bundle, b.Bytes(), 0o644); err != nil {
		return nil, err
	}
	root := filepath.Join(dataDir, "ca", rootca.CertFile)
	return []string{
		"SSL_CERT_FILE=" + bundle,
		"CURL_CA_BUNDLE=" + bundle,
		"REQUESTS_CA_BUNDLE=" + bundle,
		"GIT_SSL_CAINFO=" + bundle,
		"AWS_CA_BUNDLE=" + bundle,
		"DENO_CERT=" + root,
		"NODE_EXTRA_CA_CERTS=" + root,
	}, nil
}
