package windows

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"inspector/platform/internal/testca"
	"inspector/platform/osapi"
)

// fakeKey is an in-memory registry key.
type fakeKey struct {
	dw  map[string]uint32
	sz  map[string]string
	log []string
}

func newFakeKey() *fakeKey { return &fakeKey{dw: map[string]uint32{}, sz: map[string]string{}} }

func (k *fakeKey) GetDWORD(n string) (uint32, bool, error)  { v, ok := k.dw[n]; return v, ok, nil }
func (k *fakeKey) GetString(n string) (string, bool, error) { v, ok := k.sz[n]; return v, ok, nil }
func (k *fakeKey) SetDWORD(n string, v uint32) error {
	k.log = append(k.log, "dword "+n)
	k.dw[n] = v
	return nil
}
func (k *fakeKey) SetString(n, v string) error {
	k.log = append(k.log, "sz "+n+"="+v)
	k.sz[n] = v
	return nil
}
func (k *fakeKey) Delete(n string) error {
	k.log = append(k.log, "delete "+n)
	delete(k.dw, n)
	delete(k.sz, n)
	return nil
}

func TestWinINetApplyRestore(t *testing.T) {
	k := newFakeKey()
	k.dw["ProxyEnable"] = 0
	k.sz["ProxyServer"] = "corp:3128"
	k.sz["AutoConfigURL"] = "http://wpad/proxy.pac"
	// ProxyOverride and AutoDetect absent.
	orig := map[string]any{"dw": copyMap(k.dw), "sz": copyMap(k.sz)}
	refreshes := 0
	w := &WinINet{Key: k, Refresh: func() error { refreshes++; return nil }}
	ctx := context.Background()

	snap, err := w.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Apply(ctx, "127.0.0.1:8080"); err != nil {
		t.Fatal(err)
	}
	if k.dw["ProxyEnable"] != 1 || k.sz["ProxyServer"] != "http=127.0.0.1:8080;https=127.0.0.1:8080" ||
		k.sz["ProxyOverride"] != "localhost;127.0.0.1;::1;<local>" || k.dw["AutoDetect"] != 0 {
		t.Fatalf("applied values %v %v", k.dw, k.sz)
	}
	if _, ok := k.sz["AutoConfigURL"]; ok {
		t.Fatal("AutoConfigURL still set: a PAC would override the proxy")
	}
	if refreshes != 1 {
		t.Fatalf("%d refreshes after Apply, want 1", refreshes)
	}
	if d, _ := w.Describe(ctx); !strings.Contains(d, "proxy http=127.0.0.1:8080") {
		t.Fatalf("describe %q", d)
	}
	if err := w.Restore(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if got := map[string]any{"dw": copyMap(k.dw), "sz": copyMap(k.sz)}; !reflect.DeepEqual(got, orig) {
		t.Fatalf("restored %v, want %v", got, orig)
	}
	if refreshes != 2 {
		t.Fatalf("%d refreshes, want 2", refreshes)
	}
	if err := w.Restore(ctx, []byte("{")); err == nil {
		t.Fatal("damaged journal accepted")
	}
}

func copyMap[V any](m map[string]V) map[string]V {
	out := map[string]V{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// fakeStore is an in-memory certificate store. With staged set it behaves like Wine's
// registry provider: Delete only stages, Commit applies, Close drops what is staged.
type fakeStore struct {
	certs  map[string][]byte // sha1 hex-ish key
	closed int
	staged bool
	doomed []string
}

func (s *fakeStore) Add(der []byte) error {
	c := &fakeCert{der}
	s.certs[string(c.sha1())] = der
	return nil
}
func (s *fakeStore) Has(h []byte) (bool, error) { _, ok := s.certs[string(h)]; return ok, nil }
func (s *fakeStore) Delete(h []byte) (int, error) {
	if _, ok := s.certs[string(h)]; !ok {
		return 0, nil
	}
	if s.staged {
		s.doomed = append(s.doomed, string(h))
		return 1, nil
	}
	delete(s.certs, string(h))
	return 1, nil
}
func (s *fakeStore) Commit() error {
	for _, h := range s.doomed {
		delete(s.certs, h)
	}
	s.doomed = nil
	return nil
}
func (s *fakeStore) Close() error { s.closed++; s.doomed = nil; return nil }

type fakeCert struct{ der []byte }

func (c *fakeCert) sha1() []byte {
	cert := testCertFromDER(c.der)
	return osapi.SHA1(cert)
}

func TestTrustStoreCurrentUser(t *testing.T) {
	cert := testca.New(t)
	stores := map[Location]*fakeStore{CurrentUser: {certs: map[string][]byte{}}, LocalMachine: {certs: map[string][]byte{}}}
	var opened []string
	profile := filepath.Join(t.TempDir(), "Profiles", "x.default")
	os.MkdirAll(profile, 0o700)
	os.WriteFile(filepath.Join(profile, "prefs.js"), []byte("// prefs\n"), 0o600)
	os.WriteFile(filepath.Join(profile, "user.js"), []byte(`user_pref("a", 1);`), 0o600)
	os.WriteFile(filepath.Join(filepath.Dir(filepath.Dir(profile)), "profiles.ini"),
		[]byte("[Profile0]\r\nName=default\r\nIsRelative=1\r\nPath=Profiles/x.default\r\n"), 0o600)
	ts := &TrustStore{
		Open: func(loc Location, name string) (CertStore, error) {
			opened = append(opened, loc.String()+"/"+name)
			return stores[loc], nil
		},
		Elevated: func() bool { return false },
		Firefox:  osapi.FirefoxEnterpriseRoots{Roots: []string{filepath.Dir(filepath.Dir(profile))}},
	}
	ctx := context.Background()
	if err := ts.Install(ctx, cert); err != nil {
		t.Fatal(err)
	}
	if err := ts.Install(ctx, cert); err != nil {
		t.Fatal(err)
	}
	if opened[0] != "CurrentUser/ROOT" || len(stores[CurrentUser].certs) != 1 || len(stores[LocalMachine].certs) != 0 {
		t.Fatalf("opened %v, stores %v", opened, stores)
	}
	if !bytes.Equal(stores[CurrentUser].certs[string(osapi.SHA1(cert))], cert.Raw) {
		t.Fatal("stored DER differs")
	}
	userJS, _ := os.ReadFile(filepath.Join(profile, "user.js"))
	if strings.Count(string(userJS), "security.enterprise_roots.enabled") != 1 {
		t.Fatalf("user.js:\n%s", userJS)
	}
	st, _ := ts.Status(ctx, cert)
	if len(st.Places) != 3 || !st.Places[0].Trusted || st.Places[1].Trusted || !st.Places[2].Trusted {
		t.Fatalf("status %v", st)
	}

	// A copy in the machine store, unelevated: removal says how to do it by hand.
	stores[LocalMachine].Add(cert.Raw)
	err := ts.Remove(ctx, cert)
	var nr *osapi.NeedsRootError
	if !errors.As(err, &nr) || !strings.HasPrefix(nr.Command, "certutil -delstore Root ") {
		t.Fatalf("remove: %v", err)
	}
	if len(stores[CurrentUser].certs) != 0 {
		t.Fatal("CurrentUser copy not removed")
	}
	userJS, _ = os.ReadFile(filepath.Join(profile, "user.js"))
	if string(userJS) != "user_pref(\"a\", 1);\n" {
		t.Fatalf("user.js after remove: %q", userJS)
	}
	ts.Elevated = func() bool { return true }
	if err := ts.Remove(ctx, cert); err != nil || len(stores[LocalMachine].certs) != 0 {
		t.Fatalf("elevated remove: %v", err)
	}
	for loc, s := range stores {
		if s.closed == 0 {
			t.Fatalf("%v never closed", loc)
		}
	}
}

// TestTrustStoreRemoveCommits: a store that stages deletions (Wine's crypt32) loses the
// certificate only on Commit; Remove commits and proves the removal through Persisted.
func TestTrustStoreRemoveCommits(t *testing.T) {
	cert := testca.New(t)
	stores := map[Location]*fakeStore{
		CurrentUser:  {certs: map[string][]byte{}, staged: true},
		LocalMachine: {certs: map[string][]byte{}, staged: true},
	}
	ts := &TrustStore{
		Open:     func(loc Location, _ string) (CertStore, error) { return stores[loc], nil },
		Elevated: func() bool { return true },
		Persisted: func(loc Location, h []byte) (bool, error) {
			_, ok := stores[loc].certs[string(h)]
			return ok, nil
		},
	}
	ctx := context.Background()
	if err := ts.Install(ctx, cert); err != nil {
		t.Fatal(err)
	}
	if len(stores[CurrentUser].certs) != 1 || len(stores[LocalMachine].certs) != 1 {
		t.Fatalf("installed in %d/%d stores", len(stores[CurrentUser].certs), len(stores[LocalMachine].certs))
	}
	if err := ts.Remove(ctx, cert); err != nil {
		t.Fatal(err)
	}
	st, _ := ts.Status(ctx, cert)
	if st.Trusted() {
		t.Fatalf("still trusted after Remove:\n%v", st)
	}

	// A store that ignores the commit: Remove must say so, not report success.
	stuck := &stuckStore{fakeStore: stores[CurrentUser]}
	stores[CurrentUser].Add(cert.Raw)
	ts.Open = func(loc Location, _ string) (CertStore, error) {
		if loc == CurrentUser {
			return stuck, nil
		}
		return stores[loc], nil
	}
	err := ts.Remove(ctx, cert)
	if err == nil || !strings.Contains(err.Error(), `HKCU\Software\Microsoft\SystemCertificates\ROOT\Certificates\`) {
		t.Fatalf("remove with a store that keeps the certificate: %v", err)
	}
}

// stuckStore never applies deletions.
type stuckStore struct{ *fakeStore }

func (s *stuckStore) Commit() error { s.doomed = nil; return nil }

// TestWinINetRefreshFailureIsAWarning: Wine's InternetSetOptionW(INTERNET_OPTION_REFRESH)
// returns 12018. The registry values are written all the same and the error is only a
// warning, on Apply and on Restore.
func TestWinINetRefreshFailureIsAWarning(t *testing.T) {
	k := newFakeKey()
	k.dw["ProxyEnable"] = 1
	k.sz["ProxyServer"] = "corp:3128"
	k.sz["ProxyOverride"] = "*.corp;<local>"
	orig := map[string]any{"dw": copyMap(k.dw), "sz": copyMap(k.sz)}
	w := &WinINet{Key: k, Refresh: func() error { return errors.New("InternetSetOptionW(37): error 12018") }}
	ctx := context.Background()
	snap, err := w.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = w.Apply(ctx, "127.0.0.1:8899")
	if !osapi.IsWarning(err) || !strings.Contains(err.Error(), "12018") {
		t.Fatalf("apply: %v (want a warning naming 12018)", err)
	}
	if k.dw["ProxyEnable"] != 1 || k.sz["ProxyServer"] != ProxyServerValue("127.0.0.1:8899") {
		t.Fatalf("registry not set: %v %v", k.dw, k.sz)
	}
	if err := w.Restore(ctx, snap); !osapi.IsWarning(err) {
		t.Fatalf("restore: %v (want a warning)", err)
	}
	if got := map[string]any{"dw": copyMap(k.dw), "sz": copyMap(k.sz)}; !reflect.DeepEqual(got, orig) {
		t.Fatalf("restored %v, want %v", got, orig)
	}
}
