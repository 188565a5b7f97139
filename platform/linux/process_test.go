package linux

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"inspector/platform/osapi"
)

func TestParseProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"0000000000000000FFFF00000100007F:0050": "[::ffff:127.0.0.1]:80",
		"00000000000000000000000001000000:01BB": "[::1]:443",
		"B80D0120000000000000000001000000:0016": "[2001:db8::1]:22",
	} {
		got, err := ParseProcAddr(in)
		if err != nil || got.String() != want {
			t.Errorf("%s: %v %v, want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "0100007F:zz", "0100007:1F90", "GG00007F:1F90"} {
		if _, err := ParseProcAddr(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestProcessOfFakeProc: a /proc tree with two processes; the connection's inode is found in
// tcp6 for a v4 client (mapped) and its owner by the fd link; a closed socket is ErrNoProcess;
// a damaged table is a clear error.
func TestProcessOfFakeProc(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hdr := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	write("net/tcp", hdr+"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0 100 0 0 10 0\n")
	write("net/tcp6", hdr+"   0: 0000000000000000FFFF00000100007F:D431 0000000000000000FFFF00000100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0 20 4 30 10 -1\n")
	for pid, comm := range map[string]string{"17": "bash", "99": "curl"} {
		write(pid+"/comm", comm+"\n")
		os.MkdirAll(filepath.Join(root, pid, "fd"), 0o755)
	}
	os.Symlink("/dev/null", filepath.Join(root, "17", "fd", "0"))
	os.Symlink("socket:[4242]", filepath.Join(root, "99", "fd", "5"))

	client := netip.MustParseAddrPort("127.0.0.1:54321")
	proxy := netip.MustParseAddrPort("127.0.0.1:8080")
	p, err := ProcessOf(root, client, proxy)
	if err != nil || p.PID != 99 || p.Name != "curl" {
		t.Fatalf("ProcessOf: %+v %v", p, err)
	}
	if _, err := ProcessOf(root, proxy, client); !errors.Is(err, osapi.ErrNoProcess) {
		t.Fatalf("reversed addresses: %v", err)
	}
	write("net/tcp", hdr+"   0: nonsense here 0A 0 0 0 0 0 0 0\n")
	if _, err := ProcessOf(root, netip.MustParseAddrPort("127.0.0.1:1"), proxy); err == nil || errors.Is(err, osapi.ErrNoProcess) {
		t.Fatalf("damaged table: %v", err)
	}
}
