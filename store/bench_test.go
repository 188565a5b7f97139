package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
	"inspector/filter"
)

// smallSession is a typical API call: a few headers, small bodies.
func smallSession(id session.ID) *session.Session {
	return testSession(id, 200, 64, 512)
}

// BenchmarkIngest measures sustained ingest of small sessions through Put (with a Flush
// whenever the queue is full, so nothing is dropped) into a real file with fsync.
func BenchmarkIngest(b *testing.B) {
	benchIngest(b, Options{}, 0, nil)
}

// BenchmarkIngestTLS is BenchmarkIngest with sessions as MITM capture makes them: 64
// upstream connections, each with its own certificate chain (leaf and intermediate,
// about 2.3 KB) shared by every session on it.
func BenchmarkIngestTLS(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	chains := make([][][]byte, 64)
	for i := range chains {
		leaf, inter := make([]byte, 1200), make([]byte, 1100)
		for j := range leaf {
			leaf[j] = byte(rng.Uint32())
		}
		for j := range inter {
			inter[j] = byte(rng.Uint32())
		}
		chains[i] = [][]byte{leaf, inter}
	}
	benchIngest(b, Options{}, 0, chains)
}

// BenchmarkIngestAtLimit is BenchmarkIngest into a store at its MaxSessions limit, as
// capture runs once the store is full: every new session evicts the oldest one.
func BenchmarkIngestAtLimit(b *testing.B) {
	benchIngest(b, Options{MaxSessions: 20000}, 20000, nil)
}

func benchIngest(b *testing.B, opts Options, prefill int, chains [][][]byte) {
	s := openTest(b, filepath.Join(b.TempDir(), "sessions.db"), opts)
	pre := make([]*session.Session, 4096)
	for i := range pre {
		pre[i] = smallSession(0)
		if chains != nil {
			pre[i].Upstream.TLS.Certificates = chains[i%len(chains)]
		}
	}
	for i := 0; i < prefill; i++ {
		x := *pre[i%len(pre)]
		x.ID = s.NextID()
		for !s.Put(&x) {
			s.Flush()
		}
	}
	if err := s.Flush(); err != nil {
		b.Fatal(err)
	}
	base := s.Stats().Sessions
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		x := *pre[i%len(pre)] // shallow copy: only the id differs
		x.ID = s.NextID()
		for !s.Put(&x) {
			s.Flush()
		}
	}
	if err := s.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "sessions/s")
	// CPU of the whole process (writer, GC, the loop) per session: on a shared machine
	// this moves less with other load than the wall-clock ns/op.
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/session")
	if st, want := s.Stats(), min(base+uint64(b.N), uint64(s.opts.MaxSessions)); st.Sessions != want {
		b.Fatalf("stored %d sessions, want %d", st.Sessions, want)
	}
}

// Summary encodings compared (the choice for the summaries bucket).
func BenchmarkSummaryDecode(b *testing.B) {
	sum := testSession(12345, 404, 10, 10).Summarize()
	bin := encodeSummary(nil, &sum, 1000)
	js, _ := json.Marshal(&sum)
	b.Run("binary", func(b *testing.B) {
		var out session.Summary
		b.SetBytes(int64(len(bin)))
		for i := 0; i < b.N; i++ {
			decodeSummary(12345, bin, &out, false)
		}
	})
	b.Run("binary-alias", func(b *testing.B) {
		var out session.Summary
		b.SetBytes(int64(len(bin)))
		for i := 0; i < b.N; i++ {
			decodeSummary(12345, bin, &out, true)
		}
	})
	b.Run("json", func(b *testing.B) {
		var out session.Summary
		b.SetBytes(int64(len(js)))
		for i := 0; i < b.N; i++ {
			out = session.Summary{}
			json.Unmarshal(js, &out)
		}
	})
}

const millionN = 1_000_000

var millionOnce sync.Once

// millionStore builds, once per test process, a store of 1,000,000 sessions: summaries
// and meta written directly in big transactions (the sessions bucket holds only every
// 1000th session, enough for Get; summary-only queries never read it). TestMain removes it.
func millionStore(b *testing.B) string {
	if testing.Short() {
		b.Skip("builds a 1,000,000-session store")
	}
	millionOnce.Do(func() {
		dir, err := os.MkdirTemp("", "inspector-store-bench")
		if err != nil {
			b.Fatal(err)
		}
		millionDir = dir
		path := filepath.Join(dir, "sessions.db")
		s, err := Open(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
		start := time.Now()
		db, err := bolt.Open(path, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType})
		if err != nil {
			b.Fatal(err)
		}
		hosts := []string{"example.com", "api.example.com", "cdn.example.net", "tracker.example.org"}
		statuses := []int{200, 200, 200, 204, 301, 304, 404, 500}
		t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.Local)
		const perTx = 100_000
		var total int64
		for base := 1; base <= millionN; base += perTx {
			err := db.Update(func(tx *bolt.Tx) error {
				bk := txBuckets(tx)
				bk.sums.FillPercent, bk.sess.FillPercent = 1, 1
				var rec []byte
				for id := base; id < base+perTx; id++ {
					h := hosts[id%len(hosts)]
					sum := session.Summary{
						ID: session.ID(id), Started: t0.Add(time.Duration(id) * time.Millisecond),
						Method: "GET", URL: fmt.Sprintf("https://%s/api/v1/items/%d?page=2", h, id),
						Host: h, Path: fmt.Sprintf("/api/v1/items/%d?page=2", id),
						Status: statuses[id%len(statuses)], ClientProto: session.HTTP2, UpstreamProto: session.HTTP1,
						ReqBytes: 0, RespBytes: int64(id % 5000), DurationMS: float64(id%300) + 0.5,
						TLS: true, ContentType: "application/json",
					}
					if id%1000 == 0 {
						x := smallSession(session.ID(id))
						n, err := putSession(bk, x)
						if err != nil {
							return err
						}
						total += n
						continue
					}
					rec = encodeSummary(rec[:0], &sum, 200)
					if err := bk.sums.Put(idKey(session.ID(id)), append([]byte(nil), rec...)); err != nil {
						return err
					}
					total += 200
				}
				return putMeta(bk.meta, kCount, base+perTx-1, kBytes, total, kCommitted, base+perTx-1,
					kAllocated, base+perTx-1, kReserved, base+perTx-1, kClean, 1)
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		db.Close()
		fi, _ := os.Stat(path)
		b.Logf("built %d-session store in %v (%d MB)", millionN, time.Since(start).Round(time.Millisecond), fi.Size()>>20)
	})
	if millionDir == "" {
		b.Fatal("million store not built")
	}
	return filepath.Join(millionDir, "sessions.db")
}

// BenchmarkMillionOpenNewestPage: open the store (as the app does at start) and list
// the newest 100 summaries. Close is outside the timing.
func BenchmarkMillionOpenNewestPage(b *testing.B) {
	path := millionStore(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := Open(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		page, err := s.List(Query{Newest: true, Limit: 100})
		if err != nil || len(page) != 100 || page[0].ID != millionN {
			b.Fatalf("newest page: %d rows, err %v", len(page), err)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(peakRSSMB(), "peakRSS-MB")
}

// BenchmarkMillionFilter: a summary-field filter over all sessions (status:4xx), via
// Count and via List.
func BenchmarkMillionFilter(b *testing.B) {
	path := millionStore(b)
	s, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, expr := range []string{"status:4xx", "host:api.example.com dur:>200ms"} {
		f, err := filter.Parse(expr)
		if err != nil {
			b.Skipf("filter.Parse(%q): %v", expr, err)
		}
		b.Run("Count/"+expr, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				n, err := s.Count(f)
				if err != nil || n == 0 {
					b.Fatalf("Count = %d, %v", n, err)
				}
			}
		})
		b.Run("List/"+expr, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				l, err := s.List(Query{Filter: f})
				if err != nil || len(l) == 0 {
					b.Fatalf("List = %d, %v", len(l), err)
				}
			}
		})
	}
	b.ReportMetric(peakRSSMB(), "peakRSS-MB")
}

// peakRSSMB is the process's peak resident set (VmHWM) in MB, or 0 where unknown.
func peakRSSMB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}
