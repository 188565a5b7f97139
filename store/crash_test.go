package store

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"inspector/engine/session"
)

const crashChildEnv = "INSPECTOR_STORE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if p := os.Getenv(crashChildEnv); p != "" {
		crashChild(p)
		return
	}
	if p := os.Getenv(ixCrashChildEnv); p != "" {
		ixCrashChild(p)
		return
	}
	code := m.Run()
	if millionDir != "" {
		os.RemoveAll(millionDir)
	}
	os.Exit(code)
}

// crashChild captures in a loop until it is killed: it allocates ids, queues sessions
// (some with bodies of several chunks, some ids never completed, as in-flight sessions at
// a crash would be), and after each Flush prints "ok ID…" for the ids now committed.
func crashChild(path string) {
	s, err := Open(path, Options{MaxSessions: 5000})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	for {
		n := 1 + rand.IntN(60)
		var line strings.Builder
		line.WriteString("ok")
		for i := 0; i < n; i++ {
			id := s.NextID()
			if rand.IntN(10) == 0 {
				continue // never completes
			}
			body := 0
			if rand.IntN(8) == 0 {
				body = rand.IntN(200 << 10)
			}
			if !s.Put(testSession(id, 200+rand.IntN(4)*100, rand.IntN(200), body)) {
				continue // dropped (counted): not acknowledged
			}
			fmt.Fprintf(&line, " %d", id)
		}
		if err := s.Flush(); err != nil {
			fmt.Fprintln(os.Stderr, "child flush:", err)
			os.Exit(4)
		}
		out.WriteString(line.String() + "\n")
		out.Flush()
	}
}

// TestCrashKill9 kills a capturing child process with SIGKILL at random moments: every
// reopen must succeed, bbolt's consistency check must be clean, every acknowledged
// session must be there, and ids must never be reused.
func TestCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test spawns processes")
	}
	path := filepath.Join(t.TempDir(), "sessions.db")
	acked := map[session.ID]bool{}
	var maxAcked session.ID
	const rounds = 24
	for round := 0; round < rounds; round++ {
		cmd, r, errBuf := startChild(t, crashChildEnv+"="+path)
		// Kill after a random number of acknowledged batches; 0 kills during start-up.
		want := rand.IntN(30)
		if round == 0 {
			want = 3
		}
		var lines []string
		for len(lines) < want {
			l, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("round %d: child ended early: %v; stderr: %s", round, err, errBuf.String())
			}
			lines = append(lines, l)
		}
		cmd.Process.Kill()
		// Lines already written were acknowledged before the kill too.
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatal(err)
				}
				break
			}
			lines = append(lines, l)
		}
		cmd.Wait()
		prevMax := maxAcked // every id of this run must be above the ids of earlier runs
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) == 0 || f[0] != "ok" {
				t.Fatalf("round %d: bad line %q", round, l)
			}
			for _, x := range f[1:] {
				v, err := strconv.ParseUint(x, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				id := session.ID(v)
				if acked[id] || id <= prevMax {
					t.Fatalf("round %d: id %d reused or not above earlier runs' %d", round, id, prevMax)
				}
				acked[id] = true
				maxAcked = max(maxAcked, id)
			}
		}

		s, err := Open(path, Options{MaxSessions: 5000})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		if err := s.Check(); err != nil {
			t.Fatalf("round %d: Check: %v", round, err)
		}
		stored, err := s.List(Query{})
		if err != nil {
			t.Fatalf("round %d: List: %v", round, err)
		}
		have := map[session.ID]bool{}
		for _, x := range stored {
			have[x.ID] = true
		}
		oldest := session.ID(0)
		if len(stored) > 0 {
			oldest = stored[0].ID
		}
		for id := range acked {
			if id >= oldest && !have[id] { // below oldest: evicted by retention
				t.Fatalf("round %d: acknowledged session %d missing after kill -9", round, id)
			}
		}
		for i, x := range stored { // every stored session reads in full (bodies, certificates)
			if i%7 != 0 && i != len(stored)-1 {
				continue
			}
			if _, err := s.Get(x.ID); err != nil {
				t.Fatalf("round %d: Get(%d): %v", round, x.ID, err)
			}
		}
		checkCertCounts(t, s)
		st := s.Stats()
		t.Logf("round %d: killed after %d acked batches; %d sessions stored, %d may be missing", round, len(lines), st.Sessions, st.Missing)
		if st.Sessions != uint64(len(stored)) {
			t.Fatalf("round %d: Stats.Sessions %d, listed %d", round, st.Sessions, len(stored))
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if len(acked) == 0 {
		t.Fatal("no session was acknowledged in any round")
	}
}

// startChild starts this test binary as a child with env set, and returns it, its stdout
// and what it writes on stderr.
func startChild(t *testing.T, env string) (*exec.Cmd, *bufio.Reader, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env)
	errBuf := &strings.Builder{}
	cmd.Stderr = errBuf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewReader(stdout), errBuf
}

// millionDir holds the generated 1,000,000-session store of the benchmarks, if built.
var millionDir string
