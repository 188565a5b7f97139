package contract_test

import (
	"bufio"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"inspector/contract"
	"inspector/engine/session"
	"inspector/store"
)

// BenchmarkInferStore streams N stored sessions (default 100,000; INSPECTOR_CONTRACT_N)
// of a 24-operation API through an Inferrer, as `inspector openapi` does, and reports
// sessions/s and the process's peak RSS (VmHWM). The store is built once per run in a
// temp dir (or INSPECTOR_CONTRACT_DIR, reused when it already holds the sessions).
//
//	go test ./contract -run '^$' -bench BenchmarkInferStore -benchtime 1x -v
func BenchmarkInferStore(b *testing.B) {
	n := 100000
	if v, err := strconv.Atoi(os.Getenv("INSPECTOR_CONTRACT_N")); err == nil && v > 0 {
		n = v
	}
	dir := os.Getenv("INSPECTOR_CONTRACT_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, "sessions.db")
	st, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if have, _ := st.Count(nil); have < n {
		t0 := time.Now()
		r := rand.New(rand.NewSource(1))
		spec := knownSpec()
		for i := have; i < n; i++ {
			op := spec[i%len(spec)]
			s := &session.Session{ID: st.NextID(), Started: time.Now()}
			u := "https://api.example" + op.path(r)
			if op.query != nil {
				if q := op.query(r); q != "" {
					u += "?" + q
				}
			}
			s.Request = session.Request{Method: op.method, URL: u, Header: http.Header{"Authorization": {"Bearer x"}}}
			st0 := op.status[i%len(op.status)]
			s.Response = &session.Response{Status: st0, Header: http.Header{}}
			if op.resp != nil && st0 != 204 && op.method != "HEAD" {
				body := mustMarshal(op.resp(r, st0))
				s.Response.Header.Set("Content-Type", "application/json")
				s.Response.Body = session.Body{Data: body, Size: int64(len(body))}
			}
			for !st.Put(s) {
				st.Flush()
			}
		}
		if err := st.Flush(); err != nil {
			b.Fatal(err)
		}
		b.Logf("built %d sessions in %s", n-have, time.Since(t0).Round(time.Millisecond))
	}
	st.Close()
	st, err = store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	runtime.GC()
	base := vmHWM()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		in := contract.NewInferrer()
		count := 0
		if err := st.Each(store.Query{}, func(s *session.Session) error { in.Add(s); count++; return nil }); err != nil {
			b.Fatal(err)
		}
		doc := in.Document(contract.Options{})
		d := time.Since(t0)
		b.ReportMetric(float64(count)/d.Seconds(), "sessions/s")
		b.Logf("%d sessions -> %d paths in %s (%.0f sessions/s); VmHWM %d MB (%d MB before the walk)",
			count, doc.Paths.Len(), d.Round(time.Millisecond), float64(count)/d.Seconds(), vmHWM()>>20, base>>20)
	}
}

func vmHWM() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &kb)
			return kb << 10
		}
	}
	return 0
}
