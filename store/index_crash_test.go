package store

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

const ixCrashChildEnv = "INSPECTOR_STORE_IXCRASH_CHILD"

// ixCrashChild ("capture:PATH") captures sessions with text bodies in small segments and
// prints "ok" after each Flush, or ("backfill:PATH") opens a store from before the index
// and prints "seg" after each backfill transaction, until it is killed.
func ixCrashChild(arg string) {
	mode, path, _ := strings.Cut(arg, ":")
	segSessionsMax = 23
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	line := func(l string) { mu.Lock(); out.WriteString(l + "\n"); out.Flush(); mu.Unlock() }
	if mode == "backfill" {
		backfillHook = func() { line("seg") }
	}
	s, err := Open(path, Options{MaxSessions: 1500})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	if mode == "backfill" {
		go func() { <-s.ixDone; line("done") }()
	}
	line("open")
	r := rand.New(rand.NewPCG(rand.Uint64(), 7))
	for {
		for i := 0; i < 1+r.IntN(40); i++ {
			s.Put(ixSession(nil, r, s.NextID()))
		}
		if err := s.Flush(); err != nil {
			fmt.Fprintln(os.Stderr, "child flush:", err)
			os.Exit(4)
		}
		if mode == "capture" {
			line("ok")
		}
	}
}

// TestIndexCrashKill9 kills a child with SIGKILL while it captures (segments being
// written, sessions pending) and while it backfills an older store: after every reopen
// the file is consistent and indexed searches equal full scans (the pending sessions are
// gathered again, the backfill resumes where its last transaction ended).
func TestIndexCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test spawns processes")
	}
	smallSegments(t, 23)
	path := filepath.Join(t.TempDir(), "sessions.db")
	r := rand.New(rand.NewPCG(8, 9))
	const rounds = 10
	for round := 0; round < rounds; round++ {
		mode, wait := "capture", "ok"
		if round%3 == 2 {
			mode, wait = "backfill", "seg"
			downgradeToV3(t, path)
		}
		cmd, rd, errBuf := startChild(t, ixCrashChildEnv+"="+mode+":"+path)
		want := 1 + rand.IntN(25)
		for n := 0; n < want; {
			l, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("round %d: child ended early: %v; stderr: %s", round, err, errBuf.String())
			}
			if strings.TrimSpace(l) == "done" {
				break // the backfill ended before the kill
			}
			if strings.TrimSpace(l) == wait {
				n++
			}
		}
		cmd.Process.Kill()
		cmd.Wait()

		s, err := Open(path, Options{MaxSessions: 1500})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		st := s.IndexStatus()
		var pending int
		var lo, next, hi uint64
		s.view(func(tx *bolt.Tx) error {
			pending = tx.Bucket(bIxPending).Stats().KeyN
			m := tx.Bucket(bMeta)
			lo, next, hi = u64(m.Get(kIxLegacyLo)), u64(m.Get(kIxLegacyNext)), u64(m.Get(kIxLegacyHi))
			return nil
		})
		t.Logf("round %d (%s): killed after %d; %d sessions, %d pending, %d segments, backfill %d..%d next %d (%q)",
			round, mode, want, s.Stats().Sessions, pending, st.Segments, lo, hi, next, st)
		if err := s.Check(); err != nil {
			t.Fatalf("round %d: Check: %v", round, err)
		}
		checkIndexAgrees(t, s, r, fmt.Sprintf("round %d (%s)", round, mode))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
