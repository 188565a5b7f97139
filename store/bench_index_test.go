package store

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"inspector/content"
	"inspector/engine/session"
	"inspector/filter"
)

// The body index benchmarks build a real store through Put (the batched writer indexes
// as it commits) with realistic bodies: HTML, JSON and JS of 1–200 KB (log-uniform),
// a tenth of them br or zstd encoded. They are gated by an environment variable because
// the store takes minutes to build:
//
//	INSPECTOR_INDEX_BENCH_N=100000 go test ./store -run '^$' -bench BenchmarkBodyIndex -benchtime 5x -timeout 30m
//	INSPECTOR_INDEX_BENCH_N=1000000 INSPECTOR_INDEX_BENCH_MAXKB=8 go test ./store -run '^$' -bench BenchmarkBodyIndex -benchtime 5x -timeout 1h
//	INSPECTOR_INDEX_BENCH_INGEST_SECS=60 go test ./store -run '^$' -bench BenchmarkIndexIngestPaced -benchtime 1x
//
// INSPECTOR_INDEX_BENCH_FORMAT=1 writes format-1 segments (as files from before format 2
// hold them) for a before/after. See docs/perf.md for the figures.

type benchBody struct {
	data []byte
	enc  string // "" identity, "br" or "zstd"
	ct   string
}

// benchVocab is a Zipf-distributed vocabulary of pseudo-words.
type benchVocab struct {
	words []string
	zipf  *rand.Zipf
}

func newBenchVocab(r *rand.Rand, n int) *benchVocab {
	v := &benchVocab{zipf: rand.NewZipf(r, 1.1, 2, uint64(n-1))}
	for i := 0; i < n; i++ {
		w := make([]byte, 3+r.IntN(8))
		for j := range w {
			w[j] = "etaoinshrdlucmfwypvbgkqjxz"[min(25, int(r.ExpFloat64()*6))]
		}
		v.words = append(v.words, string(w))
	}
	return v
}

func (v *benchVocab) word() string { return v.words[v.zipf.Uint64()] }

func genBody(r *rand.Rand, v *benchVocab, kind string, size int) []byte {
	var b bytes.Buffer
	switch kind {
	case "json":
		b.WriteString(`{"items":[`)
		for i := 0; b.Len() < size; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":%d,"name":"%s %s","%s":"%s","price":%d.%02d,"tags":["%s","%s"],"active":%v}`,
				r.IntN(1e7), v.word(), v.word(), v.word(), v.word(), r.IntN(1000), r.IntN(100), v.word(), v.word(), r.IntN(2) == 0)
		}
		b.WriteString(`]}`)
	case "html":
		b.WriteString("<!doctype html><html><head><title>" + v.word() + "</title></head><body>\n")
		for b.Len() < size {
			fmt.Fprintf(&b, `<div class="%s-%s"><a href="/%s/%d">%s</a><p>`, v.word(), v.word(), v.word(), r.IntN(1e5), v.word())
			for i := 0; i < 8+r.IntN(30); i++ {
				b.WriteString(v.word())
				b.WriteByte(' ')
			}
			b.WriteString("</p></div>\n")
		}
		b.WriteString("</body></html>")
	default: // js
		for b.Len() < size {
			fmt.Fprintf(&b, "function %s_%d(%s, %s) {\n  var %s = \"%s %s\";\n  return %s.%s(%s) + %d;\n}\n",
				v.word(), r.IntN(1e4), v.word(), v.word(), v.word(), v.word(), v.word(), v.word(), v.word(), v.word(), r.IntN(1e6))
		}
	}
	return b.Bytes()
}

// benchPool is a pool of generated response bodies the sessions draw from.
func benchPool(tb testing.TB, r *rand.Rand, v *benchVocab, n, minSize, maxSize int) []benchBody {
	var pool []benchBody
	for i := 0; i < n; i++ {
		size := int(math.Exp(math.Log(float64(minSize)) + r.Float64()*(math.Log(float64(maxSize))-math.Log(float64(minSize)))))
		kind := []string{"json", "html", "js"}[i%3]
		ct := map[string]string{"json": "application/json", "html": "text/html; charset=utf-8", "js": "application/javascript"}[kind]
		bb := benchBody{data: genBody(r, v, kind, size), ct: ct}
		if i%10 == 0 {
			bb.enc = []string{"br", "zstd"}[i/10%2]
			enc, err := content.Encode([]string{bb.enc}, bb.data)
			if err != nil {
				tb.Fatal(err)
			}
			bb.data = enc
		}
		pool = append(pool, bb)
	}
	return pool
}

// benchToken is a rare token of id: 12 base-36 characters derived from it, as request
// ids, order numbers or session tokens look.
func benchToken(id session.ID) string {
	x := uint64(id)*0x9E3779B97F4A7C15 ^ 0xD1B54A32D192ED03
	x ^= x >> 29
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 32
	t := strconv.FormatUint(x, 36)
	for len(t) < 12 {
		t = "0" + t
	}
	return t[:12]
}

// benchIndexSession is session id with a pool body; identity bodies carry the rare token
// "tk"+benchToken(id) (one session each), every session a header X-Request-Id with
// benchToken(id) and a header X-Seq with a digit-only id, rhdID.
func benchIndexSession(r *rand.Rand, pool []benchBody, id session.ID) (*session.Session, int) {
	ss := testSession(id, 200, 0, 0)
	ss.Request.Method = "GET"
	ss.Request.URL = fmt.Sprintf("https://shop.example.com/api/v2/items/%d?sort=price", id)
	ss.Request.Header.Set("X-Request-Id", benchToken(id))
	ss.Request.Header.Set("X-Seq", fmt.Sprintf("rhd%08d", id))
	pb := pool[r.IntN(len(pool))]
	data := pb.data
	if pb.enc == "" {
		at := r.IntN(len(data))
		data = append(append(append(make([]byte, 0, len(data)+20), data[:at]...), " tk"+benchToken(id)+" "...), data[at:]...)
	} else {
		ss.Response.Header.Set("Content-Encoding", pb.enc)
	}
	ss.Response.Header.Set("Content-Type", pb.ct)
	ss.Response.Body = session.Body{Data: data, Size: int64(len(data))}
	return ss, len(data)
}

func benchIndexN(b *testing.B) int {
	n, _ := strconv.Atoi(os.Getenv("INSPECTOR_INDEX_BENCH_N"))
	if n <= 0 {
		b.Skip("set INSPECTOR_INDEX_BENCH_N (sessions) to build the body index benchmark store")
	}
	return n
}

// BenchmarkBodyIndex builds a store of INSPECTOR_INDEX_BENCH_N sessions with the index on
// and measures body:/text: searches on it, and the index's size.
func BenchmarkBodyIndex(b *testing.B) {
	n := benchIndexN(b)
	r := rand.New(rand.NewPCG(11, 12))
	v := newBenchVocab(r, 20000)
	maxKB := 200
	if x, _ := strconv.Atoi(os.Getenv("INSPECTOR_INDEX_BENCH_MAXKB")); x > 0 {
		maxKB = x
	}
	pool := benchPool(b, r, v, 300, 1<<10, maxKB<<10)
	dir := b.TempDir()
	if d := os.Getenv("INSPECTOR_INDEX_BENCH_DIR"); d != "" {
		dir = d
	}
	path := filepath.Join(dir, "sessions.db")
	if os.Getenv("INSPECTOR_INDEX_BENCH_FORMAT") == "1" { // segments as stores before format 2 hold them
		ixEncode = (*ixBuilder).encodeSegmentV1
		defer func() { ixEncode = (*ixBuilder).encodeSegment }()
	}
	s, err := Open(path, Options{MaxSessions: n + 1, MaxBytes: 1 << 50, QueueSize: 4096})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	var bodyBytes int64
	waits := 0
	for i := 0; i < n; i++ {
		ss, nb := benchIndexSession(r, pool, s.NextID())
		bodyBytes += int64(nb)
		// The build must not drop: wait for the writer when the queue is half full.
		if len(s.queue) > cap(s.queue)/2 || s.queuedBytes.Load()+int64(nb) > s.opts.QueueBytes/2 {
			waits++
			if err := s.Flush(); err != nil {
				b.Fatal(err)
			}
		}
		if !s.Put(ss) {
			b.Fatal("dropped")
		}
	}
	if err := s.Flush(); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	st := s.Stats()
	b.Logf("built %d sessions (%d MB of bodies as stored) in %v: %.0f sessions/s, %.1f MB/s; queue full %d times; dropped %d, bodies dropped %d",
		n, bodyBytes>>20, took.Round(time.Millisecond), float64(n)/took.Seconds(), float64(bodyBytes)/1e6/took.Seconds(), waits, st.Dropped, st.BodiesDropped)
	// What the index costs: its buckets' bytes against the text it indexed.
	var ixBytes, text, segs, pend int64
	s.view(func(tx *bolt.Tx) error {
		tx.Bucket(bIxData).ForEach(func(k, v []byte) error { ixBytes += int64(len(k) + len(v)); return nil })
		tx.Bucket(bIxSegs).ForEach(func(k, v []byte) error {
			ixBytes += int64(len(k) + len(v))
			text += int64(u64(v[24:32]))
			segs++
			return nil
		})
		pend = int64(tx.Bucket(bIxPending).Stats().KeyN)
		return nil
	})
	b.Logf("index: %d segments, %d MB (%.1f%% of the %d MB of text indexed, %.1f%% of the %d MB of bodies stored); %d sessions pending; file %d MB",
		segs, ixBytes>>20, 100*float64(ixBytes)/float64(text), text>>20, 100*float64(ixBytes)/float64(bodyBytes), bodyBytes>>20, pend, st.FileSize>>20)
	b.ReportMetric(100*float64(ixBytes)/float64(text), "index%text")

	// The store side of the window's start: anonymous RSS after a fresh open, the newest
	// page and one body search (the build's memory returned to the OS first).
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	debug.FreeOSMemory()
	before := procStatus("RssAnon")
	t0 := time.Now()
	if s, err = Open(path, Options{MaxSessions: n + 1, MaxBytes: 1 << 50, QueueSize: 4096}); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	newest, err := s.List(Query{Newest: true, Limit: 100})
	if err != nil || len(newest) != 100 {
		b.Fatalf("newest page: %d, %v", len(newest), err)
	}
	opened := time.Since(t0)
	hits, err := s.List(Query{Filter: filter.MustParse("body:tk" + benchToken(newest[50].ID)), Newest: true, Limit: 100})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("reopen + newest 100 rows %v, then one body search (%d hits) %v; RssAnon %d MB before the open, %d MB after; VmHWM %d MB",
		opened.Round(time.Microsecond), len(hits), (time.Since(t0) - opened).Round(time.Microsecond), before>>10, procStatus("RssAnon")>>10, procStatus("VmHWM")>>10)
	b.ReportMetric(float64(procStatus("RssAnon")>>10), "rss-anon-MB")

	mid := session.ID(n / 2)
	// A session with an identity body, so the rare body token is there.
	rareBody := mid
	for ; rareBody < mid+1000; rareBody++ {
		if ss, err := s.Get(rareBody); err == nil && ss.Response.Header.Get("Content-Encoding") == "" {
			break
		}
	}
	common := ""
	for _, w := range v.words[:20] { // the most frequent word of length ≥ 3
		if len(w) >= 4 {
			common = w
			break
		}
	}
	for _, c := range []struct {
		name, expr string
		count      bool
	}{
		{"rare-body-count+page", "body:tk" + benchToken(rareBody), true},
		{"rare-text-count+page", "text:" + benchToken(mid), true},
		{"rare-digits-text-count+page", fmt.Sprintf("text:rhd%08d", mid), true},
		{"absent-body-count+page", "body:zzqqxxjj", true},
		{"common-body-first-page", "body:" + common, false},
		{"common-text-first-page", "text:" + common, false},
	} {
		f := filter.MustParse(c.expr)
		b.Run(c.name, func(b *testing.B) {
			var cnt, page int
			for i := 0; i < b.N; i++ {
				if c.count {
					if cnt, err = s.Count(f); err != nil {
						b.Fatal(err)
					}
				}
				sums, err := s.List(Query{Filter: f, Newest: true, Limit: 100})
				if err != nil {
					b.Fatal(err)
				}
				page = len(sums)
			}
			b.ReportMetric(float64(cnt), "count")
			b.ReportMetric(float64(page), "page")
		})
	}
}

// BenchmarkIndexIngestPaced puts sessions at 5,000/s for INSPECTOR_INDEX_BENCH_INGEST_SECS
// seconds (API-sized bodies, 1–16 KB JSON/HTML/JS, a tenth br or zstd) with the index
// on, as capture does (Put never waits), and reports the sessions dropped.
func BenchmarkIndexIngestPaced(b *testing.B) {
	secs, _ := strconv.Atoi(os.Getenv("INSPECTOR_INDEX_BENCH_INGEST_SECS"))
	if secs <= 0 {
		b.Skip("set INSPECTOR_INDEX_BENCH_INGEST_SECS to run the paced ingest")
	}
	rate := 5000
	if x, _ := strconv.Atoi(os.Getenv("INSPECTOR_INDEX_BENCH_RATE")); x > 0 {
		rate = x
	}
	maxKB := 16
	if x, _ := strconv.Atoi(os.Getenv("INSPECTOR_INDEX_BENCH_MAXKB")); x > 0 {
		maxKB = x
	}
	r := rand.New(rand.NewPCG(13, 14))
	v := newBenchVocab(r, 20000)
	pool := benchPool(b, r, v, 300, 1<<10, maxKB<<10)
	for i := 0; i < b.N; i++ {
		s := openTest(b, filepath.Join(b.TempDir(), "sessions.db"), Options{MaxBytes: 1 << 50})
		tick := time.NewTicker(10 * time.Millisecond)
		per := rate / 100
		cpu0, written0 := processCPU(), procIO("write_bytes")
		start := time.Now()
		put, bodies := 0, int64(0)
		for time.Since(start) < time.Duration(secs)*time.Second {
			<-tick.C
			want := int(time.Since(start).Seconds()*float64(rate)) - put
			for j := 0; j < max(want, per); j++ {
				ss, nb := benchIndexSession(r, pool, s.NextID())
				s.Put(ss)
				put++
				bodies += int64(nb)
			}
		}
		tick.Stop()
		if err := s.Flush(); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		st := s.Stats()
		b.Logf("%d sessions in %v (%.0f/s, %.1f MB/s of bodies): dropped %d, bodies dropped %d, bodies via the overflow file %d; index %d segments",
			put, took.Round(time.Millisecond), float64(put)/took.Seconds(), float64(bodies)/1e6/took.Seconds(), st.Dropped, st.BodiesDropped, st.Overflowed, st.Index.Segments)
		stored := float64(put) - float64(st.Dropped)
		cpu, written := float64(processCPU()-cpu0), float64(procIO("write_bytes")-written0)
		b.Logf("per stored session: %.0f µs of CPU (the generator's included), %.1f KB written to disk (bodies %.1f KB on average)",
			cpu/1e3/stored, written/1e3/stored, float64(bodies)/1e3/float64(put))
		b.ReportMetric(float64(st.Dropped), "dropped")
		b.ReportMetric(float64(st.BodiesDropped), "bodies-dropped")
		b.ReportMetric(cpu/1e3/stored, "cpu-µs/stored")
		b.ReportMetric(written/1e3/stored, "KB-written/stored")
		b.ReportMetric(float64(put)/took.Seconds(), "sessions/s")
		s.Close()
	}
}

// procIO is a field of /proc/self/io in bytes (0 where there is none).
func procIO(field string) int64 { return procField("/proc/self/io", field) }

// procStatus is a field of /proc/self/status in KiB (0 where there is none).
func procStatus(field string) int64 { return procField("/proc/self/status", field) }

// procField is the number of a "field: N [kB]" line of a /proc file.
func procField(path, field string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}
