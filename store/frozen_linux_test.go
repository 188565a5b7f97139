package store_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"inspector/engine"
	et "inspector/engine/enginetest"
	"inspector/store"
)

// mountExt4 loop-mounts a fresh ext4 image of size MiB under a temporary folder and
// returns the mount point; it skips the test, saying why, where that cannot be done.
func mountExt4(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to loop-mount and freeze a filesystem (mount -o loop, fsfreeze)")
	}
	for _, tool := range []string{"mkfs.ext4", "mount", "umount", "fsfreeze"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (make deps installs e2fsprogs, util-linux, mount)", tool)
		}
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "disk.img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(img)
	if err == nil {
		err = f.Truncate(int64(size) << 20)
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4: %v: %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Skipf("no loop mounts here (mount -o loop): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Logf("umount: %v: %s; lazily", err, out)
			exec.Command("umount", "-l", mnt).Run()
		}
	})
	return mnt
}

// freeze freezes the filesystem at mnt until the test ends (always thawed in a cleanup).
func freeze(t *testing.T, mnt string) {
	t.Helper()
	if out, err := exec.Command("fsfreeze", "-f", mnt).CombinedOutput(); err != nil {
		t.Skipf("fsfreeze -f: %v: %s", err, out)
	}
	t.Cleanup(func() { thaw(t, mnt) })
}

func thaw(t *testing.T, mnt string) {
	if out, err := exec.Command("fsfreeze", "-u", mnt).CombinedOutput(); err != nil {
		t.Logf("fsfreeze -u: %v: %s", err, out) // already thawed
	}
}

// TestFrozenDiskNeverStopsTraffic (issue 26): the data directory's filesystem is frozen
// (fsfreeze) while clients download 500 KB bodies, whose capture goes beyond memory into
// spill files, and send 5 KB requests, with the store's queue bound small so that its
// overflow file is used too. Every exchange completes; the bodies beyond memory are
// marked "disk stalled"; once the disk is thawed the store takes sessions again.
func TestFrozenDiskNeverStopsTraffic(t *testing.T) {
	mnt := mountExt4(t, 256)
	st, err := store.Open(filepath.Join(mnt, "sessions.db"), store.Options{QueueBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("store close after the thaw: %v", err)
		}
	})
	spill := filepath.Join(mnt, "spill")
	if err := os.Mkdir(spill, 0o700); err != nil {
		t.Fatal(err)
	}
	o := et.StartOrigin(t, et.OriginH1Plain, nil)
	p := et.StartProxy(t, func(c *engine.Config) {
		c.CaptureLimit, c.SpillDir, c.SpillLimit, c.NewID = 128<<10, spill, 64<<20, st.NextID
	}, o)
	p.Engine.Observe(engine.ObserverFunc(func(ev engine.Event) {
		if ev.Kind == engine.EventComplete {
			st.Put(ev.Session)
		}
	}))
	c := p.Client(t, et.ClientH1)
	c.Timeout = 2 * time.Minute
	get := func(n int) error {
		resp, err := c.Get(fmt.Sprintf("%s/bytes?n=%d", o.URL, n))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		got, err := io.Copy(io.Discard, resp.Body)
		if err != nil || got != int64(n) || resp.StatusCode != 200 {
			return fmt.Errorf("GET %d bytes: %s, %d bytes, %v", n, resp.Status, got, err)
		}
		return nil
	}
	// Warm up: sessions stored, spill files used.
	for i := 0; i < 8; i++ {
		if err := get(500_000); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 8; i++ {
		p.Next(t)
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}

	freeze(t, mnt)
	const clients, each, small = 8, 25, 50
	var wg sync.WaitGroup
	errs := make(chan error, clients*each+small)
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := get(500_000); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	for i := 0; i < small; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := get(5_000); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed++; failed <= 5 {
			t.Error(err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d exchanges failed while the disk was frozen", failed, clients*each+small)
	}
	stalled := 0
	for i := 0; i < clients*each+small; i++ {
		s := p.Next(t)
		if r := s.Response; r != nil && r.Body.NotCaptured == "disk stalled" {
			if !r.Body.Truncated || len(r.Body.Data) == 0 {
				t.Errorf("session %d: not captured but truncated %v, %d bytes kept", s.ID, r.Body.Truncated, len(r.Body.Data))
			}
			stalled++
		}
	}
	if stalled == 0 {
		t.Error("no session says its body beyond memory was not captured (disk stalled)")
	}
	t.Logf("%d of %d downloads during the freeze: body beyond memory not captured (disk stalled)", stalled, clients*each)

	thaw(t, mnt)
	if err := st.Flush(); err != nil {
		t.Fatalf("store after the thaw: %v", err)
	}
	if err := get(500_000); err != nil {
		t.Fatal(err)
	}
	s := p.Next(t)
	if s.Response.Body.NotCaptured != "" || s.Response.Body.Truncated || s.Response.Body.Spilled == "" {
		t.Errorf("after the thaw: truncated %v, %q, spilled %q", s.Response.Body.Truncated, s.Response.Body.NotCaptured, s.Response.Body.Spilled)
	}
}
