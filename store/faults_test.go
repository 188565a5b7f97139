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
)

const faultChildEnv = "INSPECTOR_STORE_FAULT_CHILD"

// diskFullReport is what the disk-full child prints (JSON) before exiting.
type diskFullReport struct {
	Acked      []session.ID // ids whose Flush succeeded
	FlushErrs  int
	FirstErr   string
	Puts       int
	Dropped    uint64
	LastError  string
	AfterFull  int // Put calls accepted after the first failed Flush (capture went on)
	CloseError string
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
	r.Dropped, r.LastError = st.Dropped, st.LastError
	if err := s.Close(); err != nil {
		r.CloseError = err.Error()
	}
	json.NewEncoder(os.Stdout).Encode(r)
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
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := childCmd(t, exe, "diskfull:"+path).Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	start := strings.Index(string(out), "{")
	var r diskFullReport
	if start < 0 || json.NewDecoder(strings.NewReader(string(out[start:]))).Decode(&r) != nil {
		t.Fatalf("child output: %s", out)
	}
	t.Logf("acked %d, flush errors %d (first: %s), dropped %d, puts after full %d, close: %q",
		len(r.Acked), r.FlushErrs, r.FirstErr, r.Dropped, r.AfterFull, r.CloseError)
	if r.FlushErrs == 0 {
		t.Fatal("the file never filled up")
	}
	if !strings.Contains(r.FirstErr, "file too large") {
		t.Errorf("commit error does not say why: %q", r.FirstErr)
	}
	if r.Dropped == 0 || r.LastError == "" {
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
