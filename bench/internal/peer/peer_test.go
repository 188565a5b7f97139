package peer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"inspector/rootca"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if _, err := rootca.Load(filepath.Join(dir, "ca")); err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(dir, "ca", rootca.CertFile), filepath.Join(dir, "ca", rootca.KeyFile)
	c, err := load("127.0.0.1:0", cert, key, cert)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Listener.Close()
	if !c.CA.Leaf.IsCA || c.CA.PrivateKey == nil || c.UpstreamCA == nil {
		t.Fatalf("loaded %+v", c)
	}
	junk := filepath.Join(dir, "junk.pem")
	os.WriteFile(junk, []byte("not pem"), 0o600)
	for name, args := range map[string][4]string{
		"no CA":           {"127.0.0.1:0", "", "", ""},
		"missing files":   {"127.0.0.1:0", junk + ".x", key, ""},
		"key mismatch":    {"127.0.0.1:0", cert, junk, ""},
		"bad upstream CA": {"127.0.0.1:0", cert, key, junk},
		"bad listen":      {"256.0.0.1:0", cert, key, ""},
	} {
		c, err := load(args[0], args[1], args[2], args[3])
		if err == nil {
			c.Listener.Close()
			t.Errorf("%s: no error", name)
		} else if strings.TrimSpace(err.Error()) == "" {
			t.Errorf("%s: empty error", name)
		}
	}
}
