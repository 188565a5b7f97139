package store

import (
	"math/rand/v2"
	"net/http"
	"testing"

	"inspector/engine/session"
)

// BenchmarkSessionGrams finds the grams and Bloom filter of a small API exchange (URL,
// a dozen header lines, a 200-byte JSON body), as the writer's prep stage does for every
// session it takes.
func BenchmarkSessionGrams(b *testing.B) {
	ss := testSession(1, 200, 0, 200)
	ss.Request.Header = http.Header{}
	for _, kv := range [][2]string{{"User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0"}, {"Accept", "application/json"},
		{"Accept-Encoding", "gzip, br, zstd"}, {"Cookie", "sid=8d6a5c0f42; theme=dark"}, {"X-Request-Id", "4f1c2a9e-77b1-4a9e-9d1f-0c0ffee00001"}} {
		ss.Request.Header.Set(kv[0], kv[1])
	}
	ss.Response.Header = http.Header{}
	for _, kv := range [][2]string{{"Content-Type", "application/json"}, {"Cache-Control", "no-store"}, {"Date", "Wed, 02 Dec 2026 14:00:00 GMT"},
		{"Server", "origin/1.2"}, {"Vary", "Accept-Encoding"}, {"X-Trace", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}} {
		ss.Response.Header.Set(kv[0], kv[1])
	}
	ss.Response.Body.Data = []byte(`{"items":[{"id":123456,"name":"item-1f2e3d","price":12.50,"tags":["t1","t2"]},{"id":654321,"name":"item-4c5b6a","price":99.99,"tags":["t3"]}],"next":"/v1/items?page=2"}`)
	var gs gramSet
	b.ReportAllocs()
	for b.Loop() {
		gs.gramsOf(ss)
	}
}

// BenchmarkSessionGramsLarge finds the grams and Bloom filter of sessions with 1–200 KB
// JSON, HTML and JS bodies (a tenth br or zstd), the realistic mix.
func BenchmarkSessionGramsLarge(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	pool := benchPool(b, r, newBenchVocab(r, 20000), 60, 1<<10, 200<<10)
	sessions := make([]*session.Session, 60)
	bytes := 0
	for i := range sessions {
		var n int
		sessions[i], n = benchIndexSession(r, pool, session.ID(i+1))
		bytes += n
	}
	var gs gramSet
	b.SetBytes(int64(bytes / len(sessions)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		gs.gramsOf(sessions[i%len(sessions)])
		i++
	}
}
