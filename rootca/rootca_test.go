package rootca

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCreateThenLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	ca, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("folder mode %v, want 0700", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Join(dir, KeyFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, want 0600", fi.Mode().Perm())
	}
	c := ca.Cert()
	if !c.IsCA || c.NotAfter.Sub(c.NotBefore) < 9*365*24*time.Hour {
		t.Errorf("CA: IsCA=%v validity %v", c.IsCA, c.NotAfter.Sub(c.NotBefore))
	}
	if k, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("CA key %T, want ECDSA P-256", c.PublicKey)
	}
	again, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.RootDER(), ca.RootDER()) || !bytes.Equal(again.PEM(), ca.PEM()) {
		t.Fatal("second Load returned a different CA")
	}
	other, err := Load(filepath.Join(t.TempDir(), "ca"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(other.RootDER(), ca.RootDER()) || other.Fingerprint() == ca.Fingerprint() {
		t.Fatal("two installs share a CA")
	}
}

func TestDamagedFilesAreErrorsNotReplaced(t *testing.T) {
	cases := map[string]func(dir string){
		"garbage key": func(dir string) { os.WriteFile(filepath.Join(dir, KeyFile), []byte("not a key"), 0o600) },
		"truncated cert": func(dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, CertFile))
			os.WriteFile(filepath.Join(dir, CertFile), b[:len(b)/2], 0o644)
		},
		"missing key":  func(dir string) { os.Remove(filepath.Join(dir, KeyFile)) },
		"missing cert": func(dir string) { os.Remove(filepath.Join(dir, CertFile)) },
		"key of other CA": func(dir string) {
			o := filepath.Join(t.TempDir(), "o")
			Load(o)
			b, _ := os.ReadFile(filepath.Join(o, KeyFile))
			os.WriteFile(filepath.Join(dir, KeyFile), b, 0o600)
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ca")
			if _, err := Load(dir); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(filepath.Join(dir, KeyFile))
			damage(dir)
			_, err := Load(dir)
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("Load after damage: %v, want ErrDamaged", err)
			}
			after, _ := os.ReadFile(filepath.Join(dir, KeyFile))
			if name != "garbage key" && name != "missing key" && name != "key of other CA" && !bytes.Equal(before, after) {
				t.Fatal("key file was replaced")
			}
		})
	}
}

func TestLeafVerifiesForNamesAndIPs(t *testing.T) {
	ca, err := Load(filepath.Join(t.TempDir(), "ca"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert())
	for _, host := range []string{"example.com", "127.0.0.1", "::1", "Sub.Example.ORG."} {
		leaf, err := ca.LeafFor(host)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: normalizeHost(host), Roots: roots}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
}

func TestLeafMintedOnceUnderConcurrency(t *testing.T) {
	ca, err := Load(filepath.Join(t.TempDir(), "ca"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]any, 32)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := ca.LeafFor("burst.example")
			if err != nil {
				t.Error(err)
			}
			got[i] = c
		}()
	}
	wg.Wait()
	for _, c := range got[1:] {
		if c != got[0] {
			t.Fatal("a burst to one host minted more than once")
		}
	}
}

func TestLeafRenewedBeforeExpiry(t *testing.T) {
	ca, err := Load(filepath.Join(t.TempDir(), "ca"))
	if err != nil {
		t.Fatal(err)
	}
	first, _ := ca.LeafFor("renew.example")
	if again, _ := ca.LeafFor("renew.example"); again != first {
		t.Fatal("cached leaf not reused")
	}
	ca.leaves.now = func() time.Time { return first.Leaf.NotAfter.Add(-time.Hour) }
	renewed, _ := ca.LeafFor("renew.example")
	if renewed == first {
		t.Fatal("a leaf about to expire was served from the cache")
	}
}

func BenchmarkMintLeaf(b *testing.B) {
	ca, err := Load(filepath.Join(b.TempDir(), "ca"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ca.leaves.mint("bench.example"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLeafCached(b *testing.B) {
	ca, err := Load(filepath.Join(b.TempDir(), "ca"))
	if err != nil {
		b.Fatal(err)
	}
	ca.LeafFor("bench.example")
	b.ReportAllocs()
	for b.Loop() {
		ca.LeafFor("bench.example")
	}
}

func TestLeafLifetimeWithinBrowserRules(t *testing.T) {
	t.Parallel()
	ca, err := Load(filepath.Join(t.TempDir(), "ca"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.LeafFor("life.example")
	if err != nil {
		t.Fatal(err)
	}
	if life := leaf.Leaf.NotAfter.Sub(leaf.Leaf.NotBefore); life > MaxLeafDays*24*time.Hour || life < (MaxLeafDays-1)*24*time.Hour {
		t.Fatalf("leaf lasts %v, want at most %d days backdate included", life, MaxLeafDays)
	}
	if !leaf.Leaf.NotBefore.Before(time.Now()) {
		t.Fatalf("leaf not backdated: NotBefore %v", leaf.Leaf.NotBefore)
	}
	for _, bad := range []int{0, -1, MaxLeafDays + 1, 397} {
		if err := ca.SetLeafDays(bad); err == nil || !strings.Contains(err.Error(), "1 to 47 days") {
			t.Errorf("SetLeafDays(%d): %v, want a clear refusal", bad, err)
		}
	}
	if ca.LeafLifetime() != MaxLeafDays*24*time.Hour {
		t.Fatal("a refused setting changed the lifetime")
	}
	if err := ca.SetLeafDays(7); err != nil {
		t.Fatal(err)
	}
	short, _ := ca.LeafFor("life.example")
	if short == leaf {
		t.Fatal("a leaf longer than the new setting was served from the cache")
	}
	if life := short.Leaf.NotAfter.Sub(short.Leaf.NotBefore); life != 7*24*time.Hour {
		t.Fatalf("leaf lasts %v after SetLeafDays(7)", life)
	}
}

func TestLeafClippedByRootIsNotMintedEveryTime(t *testing.T) {
	t.Parallel()
	ca, err := Load(filepath.Join(t.TempDir(), "ca"))
	if err != nil {
		t.Fatal(err)
	}
	// Ten days before the root expires, a leaf ends with the root and is reused until then.
	ca.leaves.now = func() time.Time { return ca.Cert().NotAfter.Add(-10 * 24 * time.Hour) }
	first, _ := ca.LeafFor("end.example")
	if !first.Leaf.NotAfter.Equal(ca.Cert().NotAfter) {
		t.Fatalf("leaf NotAfter %v outlives root %v", first.Leaf.NotAfter, ca.Cert().NotAfter)
	}
	if again, _ := ca.LeafFor("end.example"); again != first {
		t.Fatal("a leaf clipped by the root's expiry was minted again")
	}
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	ca, err := Load(filepath.Join(t.TempDir(), "ca"))
	if err != nil {
		t.Fatal(err)
	}
	end := ca.Cert().NotAfter
	cases := []struct {
		now        time.Time
		warn, gone bool
		want       string
	}{
		{time.Now(), false, false, "root CA valid until " + end.UTC().Format("2006-01-02")},
		{end.Add(-31 * 24 * time.Hour), false, false, "(31 days left)"},
		{end.Add(-30 * 24 * time.Hour), true, false, "warning: the root CA expires on " + end.UTC().Format("2006-01-02") + " (in 30 days): run 'inspector ca renew'"},
		{end.Add(time.Hour), true, true, "expired on"},
	}
	for _, c := range cases {
		e := ExpiryOf(ca.Cert(), c.now)
		if e.Warn != c.warn || e.Expired != c.gone || !strings.Contains(e.String(), c.want) {
			t.Errorf("at %v: %+v %q, want warn=%v expired=%v and %q", c.now, e, e.String(), c.warn, c.gone, c.want)
		}
	}
}

func TestRenewalCommitAndAbort(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ca")
	old, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := BeginRenewal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.New.Fingerprint() == old.Fingerprint() {
		t.Fatal("renewal made the same CA")
	}
	if err := r.Abort(); err != nil {
		t.Fatal(err)
	}
	if again, err := Load(dir); err != nil || again.Fingerprint() != old.Fingerprint() {
		t.Fatalf("after Abort: %v, CA changed: %v", err, again != nil && again.Fingerprint() != old.Fingerprint())
	}
	if _, err := os.Stat(dir + ".new"); !os.IsNotExist(err) {
		t.Fatalf("Abort left %s.new: %v", dir, err)
	}
	r, err = BeginRenewal(dir)
	if err != nil {
		t.Fatal(err)
	}
	retired, err := r.Commit()
	if err != nil {
		t.Fatal(err)
	}
	now, err := Load(dir)
	if err != nil || now.Fingerprint() != r.New.Fingerprint() {
		t.Fatalf("after Commit: %v; in use is not the new CA", err)
	}
	if was, err := Load(retired); err != nil || was.Fingerprint() != old.Fingerprint() {
		t.Fatalf("retired CA in %s: %v", retired, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, KeyFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("new key mode %v", fi.Mode().Perm())
	}
	none := filepath.Join(t.TempDir(), "none")
	if _, err := BeginRenewal(none); err == nil || !strings.Contains(err.Error(), "no root CA") {
		t.Fatalf("renewal without a CA: %v", err)
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Fatal("a renewal without a CA created one")
	}
}
