package store

import (
	"cmp"
	"encoding/binary"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
)

// encodeSegmentV1 writes the builder's sessions as a format-1 segment blob, as stores
// written before format 2 hold them:
//
//	byte format (1) ‖ uvarint n ids ‖ uvarint n trigrams ‖ uvarint length of the id table
//	‖ id table: n zig-zag varint deltas (ids in the order added)
//	‖ directory: per gram, ascending, uint32 LE gram ‖ uint32 LE end of its postings
//	‖ postings: per trigram, uvarint deltas of ascending indexes into the id table (+1)
func (b *ixBuilder) encodeSegmentV1() (blob []byte, lo, hi session.ID) {
	b.sortPairs()
	idTab, lo, hi := b.idTable()
	ntri := 0
	for i := range b.pairs {
		if i == 0 || b.pairs[i]>>32 != b.pairs[i-1]>>32 {
			ntri++
		}
	}
	blob = make([]byte, 0, 16+len(idTab)+dirEntry*ntri+len(b.pairs)*2)
	blob = append(blob, segFormat)
	blob = binary.AppendUvarint(blob, uint64(len(b.ids)))
	blob = binary.AppendUvarint(blob, uint64(ntri))
	blob = binary.AppendUvarint(blob, uint64(len(idTab)))
	blob = append(blob, idTab...)
	dir := len(blob)
	blob = blob[:dir+dirEntry*ntri]
	post := len(blob)
	j := 0
	last := int64(-1)
	for i, p := range b.pairs {
		tri, local := uint32(p>>32), int64(uint32(p))
		if i == 0 || tri != uint32(b.pairs[i-1]>>32) {
			last = -1
		}
		blob = binary.AppendUvarint(blob, uint64(local-last))
		last = local
		if i == len(b.pairs)-1 || uint32(b.pairs[i+1]>>32) != tri {
			e := blob[dir+dirEntry*j:]
			binary.LittleEndian.PutUint32(e, tri)
			binary.LittleEndian.PutUint32(e[4:], uint32(len(blob)-post))
			j++
		}
	}
	return blob, lo, hi
}

// segBuilder is a builder full of benchmark sessions (bodies up to maxKB).
func segBuilder(t testing.TB, seed uint64, maxKB, sessions int) *ixBuilder {
	r := rand.New(rand.NewPCG(seed, seed+1))
	pool := benchPool(t, r, newBenchVocab(r, 5000), 30, 1<<10, maxKB<<10)
	b := &ixBuilder{}
	for i := 0; i < sessions; i++ {
		ss, _ := benchIndexSession(r, pool, session.ID(1000+3*i))
		b.add(ss.ID, indexSource(ss))
	}
	return b
}

// TestSegmentFormat2MatchesFormat1: every gram's posting list reads the same from a
// format-2 segment as from the format-1 segment of the same sessions (stores written
// before keep format-1 segments), grams absent from the segment are absent in both, and
// format 2 is smaller.
func TestSegmentFormat2MatchesFormat1(t *testing.T) {
	for _, c := range []struct{ maxKB, n int }{{2, 1}, {8, 300}, {64, 40}} {
		b := segBuilder(t, uint64(c.maxKB), c.maxKB, c.n)
		pairs := slices.Clone(b.pairs)
		ids := slices.Clone(b.ids)
		blob1, lo1, hi1 := b.encodeSegmentV1()
		b.pairs, b.ids = pairs, ids
		blob2, lo2, hi2 := b.encodeSegment()
		if lo1 != lo2 || hi1 != hi2 {
			t.Fatalf("bounds %d–%d vs %d–%d", lo1, hi1, lo2, hi2)
		}
		sg1, err1 := openSegment(blob1)
		sg2, err2 := openSegment(blob2)
		if err1 != nil || err2 != nil || sg2.format != segFormat2 {
			t.Fatalf("open: %v, %v", err1, err2)
		}
		if !slices.Equal(sg1.idTable(nil), sg2.idTable(nil)) {
			t.Fatal("id tables differ")
		}
		grams := 0
		for i := 0; i < len(sg1.dir)/dirEntry; i++ {
			g := binary.LittleEndian.Uint32(sg1.dir[dirEntry*i:])
			want, _ := sg1.list(g, nil)
			got, ok := sg2.list(g, nil)
			if !ok || !slices.Equal(got, want) {
				t.Fatalf("gram %#x: format 2 %v (%v), format 1 %v", g, got, ok, want)
			}
			// Neighbours not in the segment are absent in both.
			for _, x := range []uint32{g + 1, g - 1} {
				_, ok1 := sg1.list(x, nil)
				_, ok2 := sg2.list(x, nil)
				if ok1 != ok2 {
					t.Fatalf("gram %#x: present %v in format 1, %v in format 2", x, ok1, ok2)
				}
			}
			grams++
		}
		if _, ok := sg2.list(gramSpace+5, nil); ok {
			t.Error("a gram beyond the last found")
		}
		if _, ok := sg2.list(0, nil); ok != (binary.LittleEndian.Uint32(sg1.dir) == 0) {
			t.Error("gram 0")
		}
		t.Logf("%d sessions up to %d KB: %d grams, format 1 %d bytes, format 2 %d bytes (%.0f%%)",
			c.n, c.maxKB, grams, len(blob1), len(blob2), 100*float64(len(blob2))/float64(len(blob1)))
		if c.n > 1 && len(blob2) >= len(blob1)*7/10 {
			t.Errorf("format 2 is %d bytes, format 1 %d", len(blob2), len(blob1))
		}
	}
}

// TestRiceRoundTrip: lists of every density, every parameter, come back as written.
func TestRiceRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 7, 64, 1000, 70000} {
		for _, density := range []float64{0.001, 0.05, 0.5, 1} {
			var list []uint64
			var want []uint32
			for i := 0; i < n; i++ {
				if r.Float64() < density || (i == n-1 && len(list) == 0) {
					list = append(list, uint64(i))
					want = append(want, uint32(i))
				}
			}
			for k := uint(0); k < 16; k++ {
				var w bitWriter
				appendRice(&w, list, k)
				if got := decodeRice(w.out, k, nil); !slices.Equal(got, want) {
					t.Fatalf("n %d density %v k %d: %d values back of %d", n, density, k, len(got), len(want))
				}
			}
		}
	}
}

// TestSegment2RejectsGarbage: damaged format-2 headers are errors, and a directory cut
// short finds nothing rather than panicking.
func TestSegment2RejectsGarbage(t *testing.T) {
	for _, blob := range [][]byte{{segFormat2}, {segFormat2, 1, 1, 0, 0, 5}, {segFormat2, 1, 200, 1, 2, 0, 0, 0}, {segFormat2, 1, 1, 1, 9, 1}} {
		if _, err := openSegment(blob); err == nil {
			t.Errorf("openSegment(%v) accepted garbage", blob)
		}
	}
	b := segBuilder(t, 9, 4, 20)
	blob, _, _ := b.encodeSegment()
	sg, err := openSegment(blob)
	if err != nil {
		t.Fatal(err)
	}
	sg.dir = sg.dir[:len(sg.dir)/2]
	sg.post = sg.post[:len(sg.post)/3]
	for g := uint32(0); g < 1<<16; g += 7 {
		sg.list(g<<8|'e', nil)
	}
}

// TestIndexMixedFormats: a store whose older segments are format 1 (written before format
// 2) and newer ones format 2 answers searches exactly, across both, before and after a
// reopen; retention drops old-format segments as any other.
func TestIndexMixedFormats(t *testing.T) {
	smallSegments(t, 29)
	r := rand.New(rand.NewPCG(21, 22))
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openTest(t, path, Options{MaxSessions: 500})
	ixEncode = (*ixBuilder).encodeSegmentV1
	t.Cleanup(func() { ixEncode = (*ixBuilder).encodeSegment })
	for i := 0; i < 200; i++ {
		putAll(t, s, ixSession(t, r, s.NextID()))
	}
	ixEncode = (*ixBuilder).encodeSegment
	for i := 0; i < 200; i++ {
		putAll(t, s, ixSession(t, r, s.NextID()))
	}
	formats := map[byte]int{}
	s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bIxData).ForEach(func(k, v []byte) error { formats[v[0]]++; return nil })
	})
	if formats[segFormat] == 0 || formats[segFormat2] == 0 {
		t.Fatalf("segments by format: %v", formats)
	}
	checkIndexAgrees(t, s, r, "mixed formats")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, path, Options{MaxSessions: 300})
	for i := 0; i < 50; i++ {
		putAll(t, s, ixSession(t, r, s.NextID()))
	}
	checkIndexAgrees(t, s, r, "mixed formats after reopen and retention")
}

// sortPairs is a stable sort by gram (the session order within a gram kept), for small
// and segment-sized builders, and for pairs whose high gram bits are all equal.
func TestSortPairsIsStableByGram(t *testing.T) {
	check := func(name string, pairs []uint64) {
		want := slices.Clone(pairs)
		slices.SortStableFunc(want, func(a, b uint64) int { return cmp.Compare(a>>32, b>>32) })
		b := &ixBuilder{pairs: slices.Clone(pairs)}
		b.sortPairs()
		if !slices.Equal(b.pairs, want) {
			t.Fatalf("%s: sortPairs differs from a stable sort by gram", name)
		}
	}
	for _, c := range []struct{ maxKB, n int }{{2, 1}, {8, 300}, {64, 40}} {
		check("bodies", segBuilder(t, uint64(c.maxKB), c.maxKB, c.n).pairs)
	}
	r := rand.New(rand.NewPCG(7, 8))
	low := make([]uint64, 5000)
	for i := range low {
		low[i] = uint64(r.IntN(300))<<32 | uint64(i) // grams < 512: the upper passes find one bucket
	}
	check("low grams", low)
	check("one gram", []uint64{5 << 32, 5<<32 | 1, 5<<32 | 2})
	check("empty", nil)
}

// BenchmarkSortPairs sorts the pairs of a segment of 1-64 KB bodies.
func BenchmarkSortPairs(b *testing.B) {
	sb := segBuilder(b, 11, 64, 120)
	pairs := slices.Clone(sb.pairs)
	b.SetBytes(int64(8 * len(pairs)))
	for b.Loop() {
		copy(sb.pairs, pairs)
		sb.sortPairs()
	}
	b.ReportMetric(float64(len(pairs)), "pairs")
}
