//go:build linux

package store

// Store faults: a full disk (simulated with RLIMIT_FSIZE in a child process), a read-only
// data directory, and files truncated at every page boundary.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
	"inspector/store/har"
)

const faultChildEnv = "INSPECTOR_STORE_FAULT_CHILD"

// diskFullReport is what the disk-full child prints (JSON) before exiting.
type diskFullReport struct {
	Acked     []session.ID // ids whose Flush succeeded
	FlushErrs int
	FirstErr  string
	Puts      int
	Dropped   uint64
	// BodiesDropped: sessions a failed commit stored without their bodies.
	BodiesDropped uint64
	LastError     string
	AfterFull     int // Put calls accepted after the first failed Flush (capture went on)
	CloseError    string
}

// TestFaultChild is the child half of the fault tests; it does nothing in a normal run.
func TestFaultChild(t *testing.T) {
	spec := os.Getenv(faultChildEnv)
	if spec == "" {
		t.Skip("child process of the store fault tests only")
	}
	mode, arg, _ := strings.Cut(spec, ":")
	switch mode {
	case "diskfull":
		diskFullChild(t, arg)
	case "diskfull-big":
		diskFullBigChild(t, arg)
	case "import-die":
		importDieChild(t, arg)
	case "har-import":
		harImportChild(t, arg)
	case "readonly":
		_, err := Open(filepath.Join(arg, "sessions.db"), Options{})
		fmt.Printf("open: %v\n", err)
	}
}

// diskFullChild opens a store, caps the process's file size a little above the file's
// current size, and captures until commits have failed a few times.
func diskFullChild(t *testing.T, path string) {
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	limit := uint64(fi.Size() + 2<<20)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatal(err)
	}
	var r diskFullReport
	for round := 0; round < 200 && r.FlushErrs < 5; round++ {
		var ids []session.ID
		for i := 0; i < 4; i++ {
			ss := testSession(s.NextID(), 200, 0, 48<<10)
			r.Puts++
			if s.Put(ss) {
				ids = append(ids, ss.ID)
				if r.FlushErrs > 0 {
					r.AfterFull++
				}
			}
		}
		if err := s.Flush(); err != nil {
			if r.FlushErrs == 0 {
				r.FirstErr = err.Error()
			}
			r.FlushErrs++
			continue
		}
		r.Acked = append(r.Acked, ids...)
	}
	st := s.Stats()
	r.Dropped, r.BodiesDropped, r.LastError = st.Dropped, st.BodiesDropped, st.LastError
	if err := s.Close(); err != nil {
		r.CloseError = err.Error()
	}
	json.NewEncoder(os.Stdout).Encode(r)
}

// bigReport is what the diskfull-big child prints (JSON).
type bigReport struct {
	Small, Big []session.ID // ids put: small sessions, sessions with a 3 MB body
	Failing    Health       // the health after the disk filled
	FlushErrs  int
	Stats      Stats  // after the disk filled
	Recovered  Health // after the limit was lifted and a commit succeeded
	RecStats   Stats
	Events     []Health // what a watcher received, in order
}

// diskFullBigChild caps the file size 12 MB above the store's, then puts rounds of one
// session with a 3 MB body and three small ones, flushing each round, until commits have
// failed three times; then it lifts the cap and stores one more small session.
func diskFullBigChild(t *testing.T, path string) {
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	watch, stop := s.WatchHealth()
	defer stop()
	var r bigReport
	events := make(chan []Health)
	quit := make(chan struct{})
	go func() {
		var got []Health
		for {
			select {
			case h := <-watch:
				got = append(got, h)
			case <-quit:
				for len(watch) > 0 {
					got = append(got, <-watch)
				}
				events <- got
				return
			}
		}
	}()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	limit := uint64(fi.Size() + 12<<20)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: rlimInfinity}); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 40 && r.FlushErrs < 3; round++ {
		big := testSession(s.NextID(), 200, 0, 3<<20)
		r.Big = append(r.Big, big.ID)
		s.Put(big)
		for i := 0; i < 3; i++ {
			ss := testSession(s.NextID(), 200, 100, 1000)
			r.Small = append(r.Small, ss.ID)
			s.Put(ss)
		}
		if s.Flush() != nil {
			r.FlushErrs++
		}
	}
	r.Failing, r.Stats = s.Health(), s.Stats()
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: rlimInfinity, Max: rlimInfinity}); err != nil {
		t.Fatal(err)
	}
	ss := testSession(s.NextID(), 200, 100, 1000)
	r.Small = append(r.Small, ss.ID)
	s.Put(ss)
	if err := s.Flush(); err != nil {
		t.Fatal("flush after the limit was lifted:", err)
	}
	r.Recovered, r.RecStats = s.Health(), s.Stats()
	close(quit)
	r.Events = <-events
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	json.NewEncoder(os.Stdout).Encode(r)
}

// TestDiskFullBigBodies: a file that can grow 12 MB more takes sessions with 3 MB bodies
// until it cannot: then each failed batch is retried in parts, so every small session is
// still stored, a session too big to fit is stored without its body, each such loss is
// counted, and the store's health turns unhealthy at once (a watcher sees it) and healthy
// again, with the error cleared, as soon as a commit succeeds.
func TestDiskFullBigBodies(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RLIMIT_FSIZE behaviour is checked on Linux")
	}
	path := filepath.Join(t.TempDir(), "sessions.db")
	// A store with something in it, so the cap sits above a real file.
	s := openTest(t, path, Options{})
	putAll(t, s, testSession(s.NextID(), 200, 10, 10))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var r bigReport
	runChild(t, "diskfull-big:"+path, &r)
	t.Logf("%d big, %d small, %d failed flushes; failing: %+v; dropped %d, bodies dropped %d",
		len(r.Big), len(r.Small), r.FlushErrs, r.Failing, r.Stats.Dropped, r.Stats.BodiesDropped)
	if r.FlushErrs == 0 {
		t.Fatal("the file never filled up")
	}
	if r.Failing.Healthy || r.Stats.Healthy || !strings.Contains(r.Failing.LastError, "file too large") || r.Stats.LastError == "" {
		t.Errorf("after the disk filled: health %+v, stats healthy %v error %q", r.Failing, r.Stats.Healthy, r.Stats.LastError)
	}
	if !r.Recovered.Healthy || r.Recovered.LastError != "" || !r.RecStats.Healthy || r.RecStats.LastError != "" ||
		!r.Recovered.Since.After(r.Failing.Since) {
		t.Errorf("after the disk had room again: health %+v, stats healthy %v error %q", r.Recovered, r.RecStats.Healthy, r.RecStats.LastError)
	}
	// The watcher saw the store start failing and recover, in that order.
	sawFail, sawRecover := false, false
	for _, h := range r.Events {
		if !h.Healthy {
			sawFail = true
		} else if sawFail {
			sawRecover = true
		}
	}
	if !sawFail || !sawRecover || !r.Events[len(r.Events)-1].Healthy {
		t.Errorf("health events: %+v", r.Events)
	}
	s = openTest(t, path, Options{})
	defer s.Close()
	if err := s.Check(); err != nil {
		t.Fatalf("consistency check: %v", err)
	}
	for _, id := range r.Small {
		got, err := s.Get(id)
		if err != nil {
			t.Fatalf("small session %d lost with its batch: %v", id, err)
		}
		if len(got.Response.Body.Data) != 1000 {
			t.Fatalf("small session %d: body of %d bytes", id, len(got.Response.Body.Data))
		}
	}
	// Every big session is stored whole, stored without its body (counted), or not stored
	// (counted).
	var whole, stripped, missing uint64
	for _, id := range r.Big {
		got, err := s.Get(id)
		switch {
		case errors.Is(err, ErrNotFound):
			missing++
		case err != nil:
			t.Fatal(err)
		case len(got.Response.Body.Data) == 3<<20:
			whole++
		case got.Response.Body.Truncated && got.Flags.Has(session.FlagRespTruncated):
			stripped++
		default:
			t.Fatalf("big session %d: %d bytes, not marked truncated", id, len(got.Response.Body.Data))
		}
	}
	t.Logf("big sessions: %d whole, %d without their body, %d not stored", whole, stripped, missing)
	if whole == 0 || stripped == 0 {
		t.Errorf("want some big sessions stored whole and some without their body")
	}
	if r.Stats.BodiesDropped != stripped || r.Stats.Dropped != missing ||
		r.Failing.BodiesLost != stripped || r.Failing.Lost != missing {
		t.Errorf("counted %d dropped, %d bodies dropped (health %d, %d); found %d missing, %d without body",
			r.Stats.Dropped, r.Stats.BodiesDropped, r.Failing.Lost, r.Failing.BodiesLost, missing, stripped)
	}
}

// runChild runs this test binary as the fault child spec and decodes the JSON report it
// prints into report.
func runChild(t *testing.T, spec string, report any) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := childCmd(t, exe, spec).Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	start := strings.Index(string(out), "{")
	if start < 0 || json.NewDecoder(strings.NewReader(string(out[start:]))).Decode(report) != nil {
		t.Fatalf("child output: %s", out)
	}
}

func childCmd(t *testing.T, exe, spec string) *exec.Cmd {
	cmd := exec.Command(exe, "-test.run=^TestFaultChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), faultChildEnv+"="+spec)
	return cmd
}

// TestDiskFull: with the file size capped, commits fail with a clear error, the lost
// sessions are counted, capture goes on, and the file reopens clean with every
// acknowledged session.
func TestDiskFull(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RLIMIT_FSIZE behaviour is checked on Linux")
	}
	path := filepath.Join(t.TempDir(), "sessions.db")
	var r diskFullReport
	runChild(t, "diskfull:"+path, &r)
	t.Logf("acked %d, flush errors %d (first: %s), dropped %d, puts after full %d, close: %q",
		len(r.Acked), r.FlushErrs, r.FirstErr, r.Dropped, r.AfterFull, r.CloseError)
	if r.FlushErrs == 0 {
		t.Fatal("the file never filled up")
	}
	if !strings.Contains(r.FirstErr, "file too large") {
		t.Errorf("commit error does not say why: %q", r.FirstErr)
	}
	if r.Dropped+r.BodiesDropped == 0 || r.LastError == "" {
		t.Errorf("failed commits not counted: dropped %d, last error %q", r.Dropped, r.LastError)
	}
	if r.AfterFull == 0 {
		t.Error("Put stopped accepting sessions after the disk filled")
	}
	if len(r.Acked) == 0 {
		t.Fatal("nothing was committed before the disk filled")
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("reopen after the disk filled: %v", err)
	}
	defer s.Close()
	if err := s.Check(); err != nil {
		t.Fatalf("consistency check: %v", err)
	}
	for _, id := range r.Acked {
		if _, err := s.Get(id); err != nil {
			t.Fatalf("acknowledged session %d: %v", id, err)
		}
	}
	if n := s.Stats().Sessions; n < uint64(len(r.Acked)) {
		t.Errorf("%d sessions, %d acknowledged", n, len(r.Acked))
	}
	// The full disk is gone: capture works again.
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	id := s.NextID()
	if !s.Put(testSession(id, 200, 10, 10)) || s.Flush() != nil {
		t.Fatal("writing after the disk has room again")
	}
}

// TestReadOnlyDataDir: a store in a directory the user cannot write to gives a clear
// error naming the file. As root (which ignores permissions) the open runs in a child
// process as an unprivileged user.
func TestReadOnlyDataDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("directory permissions differ on Windows")
	}
	base, err := os.MkdirTemp("", "inspector-ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(base, 0o755); os.RemoveAll(base) })
	dir := filepath.Join(base, "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	check := func(msg string) {
		t.Helper()
		if !strings.Contains(msg, "sessions.db") || !strings.Contains(msg, "permission denied") {
			t.Errorf("read-only data dir: %q, want the file and \"permission denied\"", msg)
		}
	}
	if os.Geteuid() != 0 {
		_, err := Open(filepath.Join(dir, "sessions.db"), Options{})
		if err == nil {
			t.Fatal("opened a store in a read-only directory")
		}
		check(err.Error())
		return
	}
	// Root: copy the test binary where an unprivileged user can run it.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "store.test")
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(dst, src)
	src.Close()
	if cerr := dst.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	cmd := childCmd(t, bin, "readonly:"+dir)
	cmd.Dir = base
	cmd.Env = append(cmd.Env, "HOME="+base, "GOCOVERDIR=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil && !strings.Contains(string(out), "open:") {
		t.Fatalf("child as nobody: %v\n%s", err, out)
	}
	line := ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "open: ") {
			line = l
		}
	}
	if line == "" || line == "open: <nil>" {
		t.Fatalf("child: %s", out)
	}
	check(line)
}

// TestTruncatedAtEveryPage: a store file cut at page boundaries inside its data either fails to open
// with ErrCorrupt or opens and reports the damage; it never panics, and MoveAsideCorrupt
// always yields a working store.
func TestTruncatedAtEveryPage(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	s, err := Open(good, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var batch []*session.Session
	for i := 0; i < 40; i++ {
		batch = append(batch, testSession(s.NextID(), 200, 100, 20<<10))
	}
	putAll(t, s, batch...)
	// bbolt grows the file ahead of its data; cuts past the data's end lose nothing.
	var used int64
	if err := s.view(func(tx *bolt.Tx) error { used = tx.Size(); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for cut := 4096; cut < int(used); cut += 4096 * 3 {
		p := filepath.Join(dir, fmt.Sprintf("cut-%d.db", cut))
		if err := os.WriteFile(p, content[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := Open(p, Options{})
		if err == nil {
			_, lerr := st.List(Query{})
			cerr := st.Check()
			st.Close()
			if lerr == nil && cerr == nil {
				t.Fatalf("cut at %d of %d: opened and read cleanly", cut, len(content))
			}
			continue
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut at %d: %v, want ErrCorrupt", cut, err)
		}
		st, err = Open(p, Options{MoveAsideCorrupt: true})
		if err != nil {
			t.Fatalf("cut at %d, MoveAsideCorrupt: %v", cut, err)
		}
		putAll(t, st, testSession(st.NextID(), 200, 0, 0))
		st.Close()
	}
}

const rlimInfinity = ^uint64(0) // RLIM_INFINITY on Linux

// importDieChild stores one session, then dies (as kill -9 would leave it: no Close) in
// the middle of an import that has written two chunks.
func importDieChild(t *testing.T, path string) {
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Put(testSession(s.NextID(), 200, 10, 10)) || s.Flush() != nil {
		t.Fatal("put")
	}
	s.ImportStream(func(add func(*session.Session) error) error {
		for i := 0; i < 2*importChunkSessions+5; i++ {
			if err := add(testSession(0, 201, 0, 100)); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Printf("stored %d\n", s.Stats().Sessions)
		os.Exit(0)
		return nil
	})
}

// TestImportKilled: an import killed after writing some of its chunks leaves nothing:
// the next Open removes its sessions.
func TestImportKilled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := childCmd(t, exe, "import-die:"+path).Output()
	if err != nil || !strings.Contains(string(out), "stored ") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var stored int
	fmt.Sscanf(string(out[strings.Index(string(out), "stored "):]), "stored %d", &stored)
	if stored < 2*importChunkSessions {
		t.Fatalf("the child had stored %d sessions before it died, want the import's chunks", stored)
	}
	s := openTest(t, path, Options{})
	defer s.Close()
	if st := s.Stats(); st.Sessions != 1 {
		t.Fatalf("%d sessions after the killed import, want the 1 stored before it", st.Sessions)
	}
	if sums, err := s.List(Query{}); err != nil || len(sums) != 1 || sums[0].Status != 200 {
		t.Fatalf("%v %v", sums, err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// harImportChild imports the HAR file arg (path of the store ‖ "|" ‖ HAR file) streaming,
// and prints the peak RSS.
func harImportChild(t *testing.T, arg string) {
	path, file, _ := strings.Cut(arg, "|")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := s.ImportStream(func(add func(*session.Session) error) error {
		_, err := har.Decode(f, har.DefaultLimits, func(ss *session.Session, _ session.ID) error { return add(ss) })
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("imported %d peak %.0f\n", len(ids), peakRSSMB())
}

// BenchmarkImportHAR200MB: `inspector har import` of a 200 MB HAR file (1,500 entries with
// 100 KB bodies, base64, and 20,000 small ones), in a child process so its peak RSS is the
// import's alone.
func BenchmarkImportHAR200MB(b *testing.B) {
	dir := b.TempDir()
	file := filepath.Join(dir, "big.har")
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	w, err := har.NewWriter(f, "bench")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 21500; i++ {
		body := 1000
		if i%15 == 0 {
			body = 100 << 10
		}
		ss := testSession(session.ID(i+1), 200, 0, body)
		ss.Response.Header.Set("Content-Type", "application/octet-stream")
		if err := w.Add(ss); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	fi, _ := os.Stat(file)
	b.Logf("HAR file: %d MB", fi.Size()>>20)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var peak float64
	for i := 0; i < b.N; i++ {
		path := filepath.Join(dir, fmt.Sprintf("sessions-%d.db", i))
		cmd := exec.Command(exe, "-test.run=^TestFaultChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), faultChildEnv+"=har-import:"+path+"|"+file)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("child: %v\n%s", err, out)
		}
		var n int
		if _, err := fmt.Sscanf(string(out[strings.Index(string(out), "imported "):]), "imported %d peak %f", &n, &peak); err != nil || n != 21500 {
			b.Fatalf("child output %q: %v", out, err)
		}
		os.Remove(path)
	}
	b.ReportMetric(peak, "peakRSS-MB")
}

// TestDiskFullTmpfs is the full disk of the issue on a real file system: a 20 MB tmpfs
// (mounted when the test may: root), 3 MB bodies. Small sessions are all stored, every
// big one is stored whole or without its body (counted), the health turns and turns back
// when the tmpfs grows (the disk freed).
func TestDiskFullTmpfs(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=20m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	path := filepath.Join(dir, "sessions.db")
	s := openTest(t, path, Options{})
	var small, big []session.ID
	for i := 0; i < 12; i++ {
		b := testSession(s.NextID(), 200, 0, 3<<20)
		big = append(big, b.ID)
		s.Put(b)
		x := testSession(s.NextID(), 200, 100, 1000)
		small = append(small, x.ID)
		s.Put(x)
		s.Flush()
	}
	h := s.Health()
	t.Logf("after 12 rounds: %+v", h)
	if h.Healthy || !strings.Contains(h.LastError, "no space left on device") {
		t.Fatalf("health on a full tmpfs: %+v", h)
	}
	for _, id := range small {
		if got, err := s.Get(id); err != nil || len(got.Response.Body.Data) != 1000 {
			t.Fatalf("small session %d: %v", id, err)
		}
	}
	var whole, stripped uint64
	for _, id := range big {
		got, err := s.Get(id)
		switch {
		case err != nil:
			t.Fatalf("big session %d: %v", id, err)
		case len(got.Response.Body.Data) == 3<<20:
			whole++
		case got.Response.Body.Truncated:
			stripped++
		}
	}
	t.Logf("big sessions: %d whole, %d without their body", whole, stripped)
	if st := s.Stats(); whole == 0 || stripped == 0 || st.BodiesDropped != stripped || st.Dropped != 0 {
		t.Fatalf("whole %d, stripped %d; stats %+v", whole, stripped, st)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size=80m"); err != nil {
		t.Fatal(err)
	}
	b := testSession(s.NextID(), 200, 0, 3<<20)
	putAll(t, s, b)
	if h := s.Health(); !h.Healthy || h.LastError != "" || h.BodiesLost != stripped {
		t.Fatalf("health after the tmpfs grew: %+v", h)
	}
	if got, err := s.Get(b.ID); err != nil || len(got.Response.Body.Data) != 3<<20 {
		t.Fatalf("session after the tmpfs grew: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, path, Options{})
	defer s.Close()
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}
