package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// proxyAuthFile holds the generated proxy credentials ("user:password"), 0600.
const proxyAuthFile = "proxy-auth"

// proxyAuthUser is the user name of generated credentials.
const proxyAuthUser = "inspector"

// resolveProxyAuth returns the credentials the proxy listener demands ("" for none).
//
//   - flagVal "none" (or "off"): no authentication, even with --allow-remote.
//   - flagVal "USER:PASSWORD": those credentials.
//   - flagVal "": none on loopback; with allowRemote the credentials kept in
//     DIR/proxy-auth, generated (random password, file 0600) on first use and then
//     printed once to w, so they are shown exactly when they are new.
func resolveProxyAuth(dir, flagVal string, allowRemote bool, w io.Writer) (string, error) {
	switch flagVal {
	case "none", "off":
		return "", nil
	case "":
	default:
		user, pass, ok := strings.Cut(flagVal, ":")
		if !ok || user == "" || pass == "" {
			return "", usagef("--proxy-auth wants USER:PASSWORD or none, got %q", flagVal)
		}
		return flagVal, nil
	}
	if !allowRemote {
		return "", nil
	}
	path := filepath.Join(dir, proxyAuthFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		cred := strings.TrimSpace(string(b))
		if user, pass, ok := strings.Cut(cred, ":"); !ok || user == "" || pass == "" {
			return "", fmt.Errorf("%s: not USER:PASSWORD; fix or delete it to generate new credentials", path)
		}
		return cred, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("proxy credentials: %w", err)
	}
	var raw [18]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	cred := proxyAuthUser + ":" + base64.RawURLEncoding.EncodeToString(raw[:])
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("proxy credentials: %w", err)
	}
	if _, err := f.WriteString(cred + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("proxy credentials: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	fmt.Fprintf(w, "inspector: remote access is on, so the proxy asks for credentials: %s (kept in %s; --proxy-auth none turns this off)\n", cred, path)
	return cred, nil
}
