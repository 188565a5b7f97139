//go:build windows

package windows

import (
	"encoding/hex"
	"errors"
	"strings"

	"golang.org/x/sys/windows/registry"
)

// regStorePath is where crypt32's registry provider keeps a system store's certificates:
// one subkey per certificate, named by its upper-case hex SHA-1 thumbprint.
func regStorePath(name string) string {
	return `Software\Microsoft\SystemCertificates\` + name + `\Certificates`
}

// registryHas reports whether the registry backing a system store holds the certificate:
// a second read path, independent of CertFindCertificateInStore.
func registryHas(loc Location, name string, sha1 []byte) (bool, error) {
	root := registry.CURRENT_USER
	if loc == LocalMachine {
		root = registry.LOCAL_MACHINE
	}
	k, err := registry.OpenKey(root, regStorePath(name)+`\`+strings.ToUpper(hex.EncodeToString(sha1)), registry.QUERY_VALUE)
	if errors.Is(err, registry.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	k.Close()
	return true, nil
}
