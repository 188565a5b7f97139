package store

import (
	"encoding/binary"
	"math/bits"
)

// Segment format 2: the compact body index (format 1, the first, is still read).
//
//	byte format (2) ‖ uvarint n ids ‖ uvarint n grams ‖ uvarint length of the id table
//	‖ uvarint length of the directory ‖ uvarint n skip entries
//	‖ id table: n zig-zag varint deltas (ids in the order added)
//	‖ skip table: per block of skipEvery grams, 12 bytes: uint32 LE first gram of the
//	  block ‖ uint32 LE offset of its first directory entry ‖ uint32 LE offset of its first
//	  posting list
//	‖ directory: per gram, ascending: uvarint gram − previous gram of the block (0 for a
//	  block's first) ‖ uvarint (posting list bytes << 4 | Rice parameter k)
//	‖ postings: per gram, the gaps between ascending indexes into the id table, minus one,
//	  Rice-coded with parameter k (quotient in unary as 1-bits ended by a 0-bit, then k
//	  bits of remainder; bits in LSB-first order), padded to a byte with 1-bits.
//
// Rice codes take the gaps' entropy to within a few percent for the geometric-like gaps of
// posting lists (a gram in every session costs a bit per session, as a bitmap would),
// about half the bytes of varint gaps; the delta-coded directory takes 2–3 bytes per gram
// instead of 8. A lookup binary-searches the skip table and walks at most skipEvery
// directory entries.
const (
	segFormat2 = 2
	skipEvery  = 64
	skipEntry  = 12
)

// bitWriter appends bits LSB-first to a byte slice.
type bitWriter struct {
	out []byte
	acc uint64
	n   uint // bits held in acc, < 32 between calls
}

// write appends the low n bits of v (n ≤ 32, v has no higher bits set).
func (w *bitWriter) write(v uint64, n uint) {
	w.acc |= v << w.n
	if w.n += n; w.n >= 32 {
		w.out = binary.LittleEndian.AppendUint32(w.out, uint32(w.acc))
		w.acc >>= 32
		w.n -= 32
	}
}

// pad ends the list with 1-bits up to a byte (an unfinished quotient: no value) and
// flushes it.
func (w *bitWriter) pad() {
	if r := w.n % 8; r != 0 {
		w.write(1<<(8-r)-1, 8-r)
	}
	for ; w.n > 0; w.n -= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
	}
	w.acc = 0
}

// riceParam picks k for gaps whose sum is sum over n values: about log2 of the mean gap
// (times ln 2), the optimum for geometric gaps.
func riceParam(sum uint64, n int) uint {
	if n == 0 {
		return 0
	}
	m := sum * 69 / 100 / uint64(n) // mean × ln 2
	if m == 0 {
		return 0
	}
	return min(uint(bits.Len64(m)), 15)
}

// appendRice writes the ascending list (local indexes) Rice-coded with parameter k.
func appendRice(w *bitWriter, list []uint64, k uint) {
	last := int64(-1)
	for _, p := range list {
		x := int64(uint32(p))
		d := uint64(x - last - 1)
		last = x
		q := d >> k
		for ; q > 16; q -= 16 {
			w.write(1<<16-1, 16)
		}
		// q 1-bits, a 0-bit, k bits of remainder: at most 32 bits at once.
		w.write(1<<q-1|(d&(1<<k-1))<<(q+1), uint(q)+1+k)
	}
	w.pad()
}

// decodeRice appends the indexes of a Rice-coded posting list to dst.
func decodeRice(p []byte, k uint, dst []uint32) []uint32 {
	var buf uint64
	var n uint
	cur := int64(-1)
	refill := func() {
		for n <= 56 && len(p) > 0 {
			buf |= uint64(p[0]) << n
			p = p[1:]
			n += 8
		}
	}
	for {
		q := uint64(0)
		for {
			refill()
			if n == 0 {
				return dst
			}
			ones := uint(bits.TrailingZeros64(^buf))
			if ones < n {
				q += uint64(ones)
				buf >>= ones + 1
				n -= ones + 1
				break
			}
			q += uint64(n) // every bit held is a 1: the quotient goes on, or this is the padding
			buf, n = 0, 0
		}
		refill()
		if n < k {
			return dst // malformed: stop at what was whole
		}
		r := buf & (1<<k - 1)
		buf >>= k
		n -= k
		cur += int64(q<<k|r) + 1
		if cur > 1<<32-1 {
			return dst
		}
		dst = append(dst, uint32(cur))
	}
}

// encodeSegment2 writes the builder's sorted pairs as a format-2 segment.
func (b *ixBuilder) encodeSegment2(idTab []byte) []byte {
	var dir, skip []byte
	w := bitWriter{out: make([]byte, 0, len(b.pairs)/3)}
	ngrams := 0
	prevGram := uint32(0)
	for i := 0; i < len(b.pairs); {
		gram := uint32(b.pairs[i] >> 32)
		j := i + 1
		for j < len(b.pairs) && uint32(b.pairs[j]>>32) == gram {
			j++
		}
		list := b.pairs[i:j]
		// Sum of the gaps: the last index minus the first-order offset.
		last := uint64(uint32(list[len(list)-1]))
		k := riceParam(last+1-uint64(len(list)), len(list))
		if ngrams%skipEvery == 0 {
			skip = binary.LittleEndian.AppendUint32(skip, gram)
			skip = binary.LittleEndian.AppendUint32(skip, uint32(len(dir)))
			skip = binary.LittleEndian.AppendUint32(skip, uint32(len(w.out)))
			prevGram = gram
		}
		start := len(w.out)
		appendRice(&w, list, k)
		dir = binary.AppendUvarint(dir, uint64(gram-prevGram))
		dir = binary.AppendUvarint(dir, uint64(len(w.out)-start)<<4|uint64(k))
		prevGram = gram
		ngrams++
		i = j
	}
	blob := make([]byte, 0, 32+len(idTab)+len(skip)+len(dir)+len(w.out))
	blob = append(blob, segFormat2)
	for _, v := range []int{len(b.ids), ngrams, len(idTab), len(dir), len(skip) / skipEntry} {
		blob = binary.AppendUvarint(blob, uint64(v))
	}
	blob = append(blob, idTab...)
	blob = append(blob, skip...)
	blob = append(blob, dir...)
	return append(blob, w.out...)
}

// openSegment2 decodes the header of a format-2 blob (after its format byte).
func openSegment2(p []byte) (segment, error) {
	var v [5]uint64
	p, ok := uvarints(p, v[:])
	if !ok {
		return segment{}, errBadSegment
	}
	n, ngrams, idLen, dirLen, nskip := v[0], v[1], v[2], v[3], v[4]
	rest := uint64(len(p))
	if idLen > rest || dirLen > rest || nskip > rest/skipEntry || ngrams > dirLen ||
		idLen+dirLen+nskip*skipEntry > rest || nskip != (ngrams+skipEvery-1)/skipEvery {
		return segment{}, errBadSegment
	}
	sk := idLen + nskip*skipEntry
	return segment{format: segFormat2, n: int(n), ngrams: int(ngrams), ids: p[:idLen], skip: p[idLen:sk],
		dir: p[sk : sk+dirLen], post: p[sk+dirLen:]}, nil
}

// find2 returns the encoded posting list of gram and its Rice parameter; ok is false
// when the segment lacks the gram (or its directory is damaged).
func (sg segment) find2(gram uint32) (p []byte, k uint, ok bool) {
	nskip := len(sg.skip) / skipEntry
	// The last block whose first gram is ≤ gram.
	lo, hi := 0, nskip
	for lo < hi {
		m := (lo + hi) / 2
		if binary.LittleEndian.Uint32(sg.skip[skipEntry*m:]) <= gram {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return nil, 0, false
	}
	e := sg.skip[skipEntry*(lo-1):]
	g := binary.LittleEndian.Uint32(e)
	d, post := int(binary.LittleEndian.Uint32(e[4:])), int(binary.LittleEndian.Uint32(e[8:]))
	if d > len(sg.dir) || post > len(sg.post) {
		return nil, 0, false
	}
	dir := sg.dir[d:]
	count := min(skipEvery, sg.ngrams-skipEvery*(lo-1))
	for i := 0; i < count; i++ {
		delta, k1 := binary.Uvarint(dir)
		if k1 <= 0 {
			return nil, 0, false
		}
		lk, k2 := binary.Uvarint(dir[k1:])
		if k2 <= 0 {
			return nil, 0, false
		}
		dir = dir[k1+k2:]
		g += uint32(delta)
		size := int(lk >> 4)
		if size > len(sg.post)-post {
			return nil, 0, false
		}
		switch {
		case g == gram:
			return sg.post[post : post+size], uint(lk & 15), true
		case g > gram:
			return nil, 0, false
		}
		post += size
	}
	return nil, 0, false
}
