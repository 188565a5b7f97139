package launch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Var is one environment variable.
type Var struct{ Name, Value string }

// EnvFiles are the files the variables point at (MakeFiles writes them).
type EnvFiles struct {
	// CA is this CA alone (PEM); Bundle is the system roots plus this CA (PEM), so traffic
	// that bypasses the proxy still verifies.
	CA, Bundle string
	// TrustStore is a PKCS12 Java truststore of the same certificates ("" without keytool);
	// its password is TrustStorePassword.
	TrustStore string
}

// TrustStorePassword is the Java truststore's password; it protects nothing secret (the
// store holds public certificates only), Java just requires one.
const TrustStorePassword = "inspector"

// NoProxy are the hosts the variables exempt from the proxy.
const NoProxy = "localhost,127.0.0.1,::1"

// Env is the variables for a shell whose programs go through proxy (host:port of the HTTP
// listener) and trust files: see docs/launch.md for what each covers.
func Env(proxy string, f EnvFiles) []Var {
	u := "http://" + proxy
	vs := []Var{
		{"HTTP_PROXY", u}, {"HTTPS_PROXY", u}, {"ALL_PROXY", u}, {"NO_PROXY", NoProxy},
		{"http_proxy", u}, {"https_proxy", u}, {"all_proxy", u}, {"no_proxy", NoProxy},
		{"SSL_CERT_FILE", f.Bundle},      // OpenSSL, curl (OpenSSL builds), Go, Ruby, httpx, uv
		{"CURL_CA_BUNDLE", f.Bundle},     // curl
		{"REQUESTS_CA_BUNDLE", f.Bundle}, // Python requests
		{"PIP_CERT", f.Bundle},           // pip
		{"NODE_EXTRA_CA_CERTS", f.CA},    // Node (added to its own roots)
		{"NODE_USE_ENV_PROXY", "1"},      // Node 24+: fetch and https honour HTTP(S)_PROXY
		{"npm_config_cafile", f.Bundle},  // npm, yarn 1
		{"npm_config_proxy", u},          // npm, yarn 1
		{"npm_config_https_proxy", u},    // npm, yarn 1
		{"YARN_HTTPS_PROXY", u},          // yarn 2+
		{"YARN_HTTP_PROXY", u},           // yarn 2+
		{"YARN_CA_FILE_PATH", f.Bundle},  // yarn 2+
		{"DENO_CERT", f.CA},              // Deno
		{"GIT_SSL_CAINFO", f.Bundle},     // git
		{"AWS_CA_BUNDLE", f.Bundle},      // AWS CLI and SDKs
		{"CARGO_HTTP_CAINFO", f.Bundle},  // cargo
		{"INSPECTOR_PROXY", proxy},       // marks the shell as intercepted
	}
	if f.TrustStore != "" {
		host, port := splitHostPort(proxy)
		vs = append(vs, Var{"JAVA_TOOL_OPTIONS", strings.Join(append(javaTrust(f),
			"-Dhttp.proxyHost="+host, "-Dhttp.proxyPort="+port,
			"-Dhttps.proxyHost="+host, "-Dhttps.proxyPort="+port,
			"-Dhttp.nonProxyHosts=localhost|127.0.0.1|::1",
			"-Djava.net.useSystemProxies=false",
		), " ")})
	}
	return vs
}

// CAEnv is the trust half of Env alone, for programs whose traffic reaches Inspector
// without proxy settings (inspector run): the same CA variables, and no proxy.
func CAEnv(f EnvFiles) []Var {
	var vs []Var
	for _, v := range Env("", f) {
		if caVar[v.Name] {
			vs = append(vs, v)
		}
	}
	if f.TrustStore != "" {
		vs = append(vs, Var{"JAVA_TOOL_OPTIONS", strings.Join(javaTrust(f), " ")})
	}
	return vs
}

// caVar are the variables of Env that name trust files.
var caVar = map[string]bool{
	"SSL_CERT_FILE": true, "CURL_CA_BUNDLE": true, "REQUESTS_CA_BUNDLE": true, "PIP_CERT": true,
	"NODE_EXTRA_CA_CERTS": true, "npm_config_cafile": true, "YARN_CA_FILE_PATH": true,
	"DENO_CERT": true, "GIT_SSL_CAINFO": true, "AWS_CA_BUNDLE": true, "CARGO_HTTP_CAINFO": true,
}

// javaTrust are the JAVA_TOOL_OPTIONS that make Java trust the truststore.
func javaTrust(f EnvFiles) []string {
	return []string{
		"-Djavax.net.ssl.trustStore=" + f.TrustStore,
		"-Djavax.net.ssl.trustStorePassword=" + TrustStorePassword,
		"-Djavax.net.ssl.trustStoreType=PKCS12",
	}
}

func splitHostPort(a string) (string, string) {
	i := strings.LastIndex(a, ":")
	if i < 0 {
		return a, ""
	}
	return strings.Trim(a[:i], "[]"), a[i+1:]
}

// Format writes vs for shell: "sh" (also bash, zsh: export lines for eval), "fish",
// "cmd" (set lines) or "powershell" ($env: lines).
func Format(shell string, vs []Var) (string, error) {
	switch shell {
	case "sh", "bash", "zsh", "", "fish", "cmd", "powershell", "pwsh":
	default:
		return "", fmt.Errorf("shell %q: want sh, fish, cmd or powershell", shell)
	}
	var b strings.Builder
	for _, v := range vs {
		switch shell {
		case "sh", "bash", "zsh", "":
			fmt.Fprintf(&b, "export %s=%s\n", v.Name, shQuote(v.Value))
		case "fish":
			fmt.Fprintf(&b, "set -gx %s %s\n", v.Name, shQuote(v.Value))
		case "cmd":
			fmt.Fprintf(&b, "set \"%s=%s\"\n", v.Name, v.Value)
		case "powershell", "pwsh":
			fmt.Fprintf(&b, "$env:%s = '%s'\n", v.Name, strings.ReplaceAll(v.Value, "'", "''"))
		}
	}
	return b.String(), nil
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// systemRootFiles are where Unix systems keep their root bundle (as crypto/x509 reads them).
var systemRootFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// SystemRootsPEM reads the system's root bundle; nil when none is found (Windows and
// macOS keep theirs in stores, so the bundle is then this CA alone).
func SystemRootsPEM() []byte {
	for _, f := range systemRootFiles {
		if b, err := os.ReadFile(f); err == nil && len(b) > 0 {
			return b
		}
	}
	return nil
}

// MakeFiles writes the CA, the bundle (systemPEM + the CA) and, when keytool is found, the
// Java truststore into dir (0700), replacing older ones.
func MakeFiles(ctx context.Context, dir string, caPEM, systemPEM []byte) (EnvFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return EnvFiles{}, err
	}
	f := EnvFiles{CA: filepath.Join(dir, "ca.pem"), Bundle: filepath.Join(dir, "bundle.pem")}
	ts := filepath.Join(dir, "truststore.p12")
	if old, err := os.ReadFile(f.CA); err != nil || !bytes.Equal(old, caPEM) {
		os.Remove(ts) // made for another CA
	}
	if err := os.WriteFile(f.CA, caPEM, 0o644); err != nil {
		return f, err
	}
	bundle := append(bytes.TrimRight(append([]byte(nil), systemPEM...), "\n"), '\n')
	if len(systemPEM) == 0 {
		bundle = nil
	}
	if err := os.WriteFile(f.Bundle, append(bundle, caPEM...), 0o644); err != nil {
		return f, err
	}
	if _, err := os.Stat(ts); err == nil {
		f.TrustStore = ts // keytool takes seconds: a store for this CA is reused
	} else if keytool, err := exec.LookPath("keytool"); err == nil {
		if err := javaTrustStore(ctx, keytool, ts, f.CA); err == nil {
			f.TrustStore = ts
		}
	}
	return f, nil
}

// javaTrustStore copies the JDK's own cacerts (when found next to keytool) into a PKCS12
// store and adds the CA.
func javaTrustStore(ctx context.Context, keytool, path, caFile string) error {
	tmp := path + ".tmp"
	os.Remove(tmp)
	defer os.Remove(tmp)
	if real, err := filepath.EvalSymlinks(keytool); err == nil {
		cacerts := filepath.Join(filepath.Dir(filepath.Dir(real)), "lib", "security", "cacerts")
		if _, err := os.Stat(cacerts); err == nil {
			out, err := exec.CommandContext(ctx, keytool, "-importkeystore", "-noprompt", "-srckeystore", cacerts,
				"-srcstorepass", "changeit", "-destkeystore", tmp, "-deststoretype", "PKCS12",
				"-deststorepass", TrustStorePassword).CombinedOutput()
			if err != nil {
				return fmt.Errorf("keytool -importkeystore: %v: %s", err, out)
			}
		}
	}
	out, err := exec.CommandContext(ctx, keytool, "-importcert", "-noprompt", "-alias", "inspector-ca", "-file", caFile,
		"-keystore", tmp, "-storetype", "PKCS12", "-storepass", TrustStorePassword).CombinedOutput()
	if err != nil {
		return fmt.Errorf("keytool -importcert: %v: %s", err, out)
	}
	return os.Rename(tmp, path)
}

// Names lists vs's names sorted, for docs and tests.
func Names(vs []Var) []string {
	var n []string
	for _, v := range vs {
		n = append(n, v.Name)
	}
	sort.Strings(n)
	return n
}
