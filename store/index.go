package store

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
	"inspector/filter"
)

// The body index (schema 4; see doc.go "Body index").
//
// Every committed session's text (filter.SessionText: URL, header lines, decoded bodies up
// to filter.MaxSearchBody, WebSocket messages) is cut into trigrams of ASCII-lower-cased
// bytes. The writer gathers them in memory (ixBuilder) and, when about segTextMax bytes of
// text or segSessionsMax sessions are gathered (or the store closes), writes them as one
// immutable segment: an inverted list trigram → sessions, written once, appended at the
// end of the bucket, never rewritten, so the index costs one sequential write of its own
// size and no read-modify-write. Until then the session's id is in ixpending (written in
// the record's transaction): searches confirm pending sessions on their records, and Open
// gathers them again after a crash. Deleted sessions may keep postings in old segments;
// searches confirm every candidate on its record, so results are exact. Retention drops
// whole segments once all their sessions are evicted; Compact rebuilds the index.
var (
	bIxSegs    = []byte("ixsegs")    // seq → segment header (ixSegHeader)
	bIxData    = []byte("ixdata")    // seq → segment blob (encodeSegment)
	bIxPending = []byte("ixpending") // id → empty: committed, not yet in a segment (pendingBlooms)

	ixBuckets = [][]byte{bIxSegs, bIxData, bIxPending}

	kIxSeq        = []byte("ixseq")        // last segment number
	kIxLegacyLo   = []byte("ixlegacylo")   // first id of the range to backfill
	kIxLegacyNext = []byte("ixlegacynext") // backfill has indexed the ids below this
	kIxLegacyHi   = []byte("ixlegacyhi")   // last id of the range to backfill
	// Sessions of the backfill range when it began, and those indexed so far (progress).
	kIxLegacyTotal = []byte("ixlegacytotal")
	kIxLegacyDone  = []byte("ixlegacydone")
)

// Segment bounds (variables for tests, which use small segments).
var (
	segTextMax     = 8 << 20 // text bytes per segment
	segSessionsMax = 8192    // sessions per segment
	segPairsMax    = 2 << 20 // (gram, session) pairs per segment: bounds the builder's memory (2 × 16 MiB)
)

const (
	segFormat = 1
	dirEntry  = 8 // bytes per directory entry
	// backfillStep bounds the sessions read in one read transaction of the backfill, so
	// the writer (which waits for readers when the file grows) is never held up for long.
	backfillStep = 256
)

var asciiLower [256]byte

func init() {
	for i := range asciiLower {
		asciiLower[i] = lowerASCIIByte(byte(i))
	}
}

func lowerASCIIByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Grams: trigrams of ASCII-lower-cased bytes (0 … 1<<24-1), and, since trigrams of digits
// are in nearly every body and narrow a number (body:12345) little, digit grams: every
// five consecutive digits of a run of digits, 1<<24 | their value.
const (
	digitGram = 1 << 24
	gramSpace = digitGram + 100000
)

// digitGrams calls gram with the digit grams of p.
func digitGrams(p []byte, gram func(uint32)) {
	run, v := 0, uint32(0)
	for _, c := range p {
		if c < '0' || c > '9' {
			run, v = 0, 0
			continue
		}
		v = (v*10 + uint32(c-'0')) % 100000
		if run++; run >= 5 {
			gram(digitGram | v)
		}
	}
}

// ixBuilder gathers the grams of sessions for the next segment.
type ixBuilder struct {
	ids   []session.ID
	pairs []uint64 // gram<<32 | index into ids; one per distinct gram of a session
	sortb []uint64 // radix sort buffer
	text  int
	gs    gramSet  // for add
	gbuf  []uint32 // add's grams of one session

	// flushed: a segment of the builder was written in the current write transaction;
	// reset: Clear emptied the index in it. Applied when the transaction commits (settle).
	flushed, reset bool

	// blooms holds the Bloom filters of the builder's sessions for searches (the store's
	// builder; nil for the backfill's).
	blooms *pendingBlooms
}

// pendingBlooms are the Bloom filters of the sessions in ixpending (committed, not yet in
// a segment), in memory: searches test pending sessions with them instead of loading each
// one. They used to be ixpending's values, written with the session and deleted with its
// pending key when its segment was written: a third of the bytes a 1–16 KB session
// wrote, written only to be deleted. A session's filter is added when it is put (before
// its transaction commits: a search sees its pending key only after) and dropped once its
// segment's transaction has committed (a search of an older snapshot finds none and
// confirms the session on its record, as it does for a session whose filter is unknown).
// Their memory is bounded by the builder's: at most a segment's sessions, about a byte
// per gram. Safe for concurrent use; the methods of a nil *pendingBlooms do nothing.
type pendingBlooms struct {
	mu sync.RWMutex
	m  map[session.ID][]byte
}

func (p *pendingBlooms) put(id session.ID, bloom []byte) {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.m == nil {
		p.m = map[session.ID][]byte{}
	}
	p.m[id] = bloom
	p.mu.Unlock()
}

// get returns id's filter, nil when there is none.
func (p *pendingBlooms) get(id session.ID) []byte {
	if p == nil {
		return nil
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.m[id]
}

func (p *pendingBlooms) drop(ids []session.ID) {
	if p == nil {
		return
	}
	p.mu.Lock()
	for _, id := range ids {
		delete(p.m, id)
	}
	p.mu.Unlock()
}

func (p *pendingBlooms) reset() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.m = nil
	p.mu.Unlock()
}

func (b *ixBuilder) empty() bool { return len(b.ids) == 0 }

func (b *ixBuilder) full() bool {
	return b.text >= segTextMax || len(b.ids) >= segSessionsMax || len(b.pairs) >= segPairsMax
}

func (b *ixBuilder) clear() {
	b.ids, b.pairs, b.text = b.ids[:0], b.pairs[:0], 0
	if cap(b.pairs) > segPairsMax*2 {
		b.pairs = nil
	}
}

// add gathers the grams of ss under id.
func (b *ixBuilder) add(id session.ID, ss *session.Session) {
	var text int
	b.gbuf, text = b.gs.of(ss, b.gbuf[:0])
	b.addGrams(id, b.gbuf, text)
}

// addPending is add for a session in ixpending: its Bloom filter goes to b.blooms.
func (b *ixBuilder) addPending(id session.ID, ss *session.Session) {
	b.add(id, ss)
	b.blooms.put(id, appendBloom(nil, b.gbuf)) // add leaves the grams in gbuf
}

// addGrams gathers grams, the distinct grams of a session of text bytes, under id.
func (b *ixBuilder) addGrams(id session.ID, grams []uint32, text int) {
	local := uint64(len(b.ids))
	b.ids = append(b.ids, id)
	b.text += text
	b.pairs = slices.Grow(b.pairs, len(grams))
	for _, t := range grams {
		b.pairs = append(b.pairs, uint64(t)<<32|local)
	}
}

// gramSet finds the distinct grams of one session at a time.
type gramSet struct {
	seen []uint64 // bit set of the grams seen in the current session
	// scratch is gramsOf's reused buffer.
	scratch []uint32
}

// of appends the distinct grams of ss's text (filter.SessionText) to dst, in the order
// first seen, and returns them with the number of text bytes.
func (g *gramSet) of(ss *session.Session, dst []uint32) (grams []uint32, text int) {
	if g.seen == nil {
		g.seen = make([]uint64, (gramSpace+63)/64)
	}
	from := len(dst)
	filter.SessionText(ss, func(p []byte) bool {
		text += len(p)
		if len(p) < 3 {
			return false
		}
		gram := func(t uint32) {
			w, m := &g.seen[t>>6], uint64(1)<<(t&63)
			if *w&m != 0 {
				return
			}
			*w |= m
			dst = append(dst, t)
		}
		t := uint32(asciiLower[p[0]])<<8 | uint32(asciiLower[p[1]])
		for _, c := range p[2:] {
			t = (t<<8 | uint32(asciiLower[c])) & 0xFFFFFF
			gram(t)
		}
		digitGrams(p, gram)
		return false
	})
	for _, t := range dst[from:] {
		g.seen[t>>6] = 0
	}
	return dst, text
}

// sessionGrams is what the writer's prep stage (writer.go) finds of a session before
// the writer takes it: its distinct grams, its text bytes and its pending Bloom filter.
type sessionGrams struct {
	grams []uint32
	text  int
	bloom []byte
}

// gramsOf finds the grams of a session about to be committed (indexSource: spilled
// bodies read back).
func (g *gramSet) gramsOf(ss *session.Session) *sessionGrams {
	var text int
	g.scratch, text = g.of(indexSource(ss), g.scratch[:0])
	grams := slices.Clone(g.scratch) // one allocation of the right size, not a slice grown
	if cap(g.scratch) > 1<<20 {
		g.scratch = nil // a huge session's buffer is not kept
	}
	return &sessionGrams{grams: grams, text: text, bloom: appendBloom(nil, grams)}
}

// appendBloom appends the Bloom filter of grams (a pending session's, pendingBlooms) to dst:
// about a byte per gram, 3 probes: a few percent false positives, confirmed on the
// record, so searches test pending sessions without loading them.
func appendBloom(dst []byte, grams []uint32) []byte {
	size := 8
	for size < len(grams) {
		size *= 2
	}
	from := len(dst)
	dst = slices.Grow(dst, size)[:from+size]
	v := dst[from:]
	clear(v)
	for _, t := range grams {
		h := gramHash(t)
		for k := 0; k < 3; k++ {
			bit := (h >> (21 * k)) & uint64(size*8-1)
			v[bit>>3] |= 1 << (bit & 7)
		}
	}
	return dst
}

// ixEncode encodes a segment (a variable: tests and benchmarks write format-1 segments,
// as stores written before format 2 hold them).
var ixEncode = (*ixBuilder).encodeSegment

// encodeSegment writes the builder's sessions as a segment blob (format 2, segment2.go).
func (b *ixBuilder) encodeSegment() (blob []byte, lo, hi session.ID) {
	b.sortPairs()
	idTab, lo, hi := b.idTable()
	return b.encodeSegment2(idTab), lo, hi
}

// idTable encodes the builder's ids as zig-zag varint deltas, with the lowest and highest.
func (b *ixBuilder) idTable() (idTab []byte, lo, hi session.ID) {
	prev := int64(0)
	lo, hi = b.ids[0], b.ids[0]
	for _, id := range b.ids {
		idTab = binary.AppendVarint(idTab, int64(id)-prev)
		prev = int64(id)
		lo, hi = min(lo, id), max(hi, id)
	}
	return idTab, lo, hi
}

// sortPairs sorts the pairs by gram, and by session within a gram: pairs are added session
// by session, so a stable sort by gram is enough: a radix sort of the gram's 25 bits in
// passes of 9, 8 and 8 bits (few buckets: the scattered writes stay in cache). The
// sorted pairs end in b.pairs.
func (b *ixBuilder) sortPairs() {
	if cap(b.sortb) < len(b.pairs) {
		b.sortb = make([]uint64, len(b.pairs))
	}
	src, dst := b.pairs, b.sortb[:len(b.pairs)]
	var count [1 << 9]int
	for _, pass := range [][2]uint{{32, 9}, {41, 8}, {49, 8}} {
		shift, mask := pass[0], uint64(1)<<pass[1]-1
		clear(count[:])
		for _, p := range src {
			count[(p>>shift)&mask]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, p := range src {
			d := (p >> shift) & mask
			dst[count[d]] = p
			count[d]++
		}
		src, dst = dst, src
	}
	b.pairs, b.sortb = src, dst
}

// segment is a decoded view of a segment blob (no copy: valid during its transaction).
type segment struct {
	format byte
	n      int
	ngrams int    // format 2
	ids    []byte // id table
	skip   []byte // format 2: the directory's skip table
	dir    []byte
	post   []byte
}

var errBadSegment = errors.New("malformed index segment")

func openSegment(blob []byte) (segment, error) {
	if len(blob) >= 1 && blob[0] == segFormat2 {
		return openSegment2(blob[1:])
	}
	if len(blob) < 1 || blob[0] != segFormat {
		return segment{}, errBadSegment
	}
	var v [3]uint64
	p, ok := uvarints(blob[1:], v[:])
	if !ok {
		return segment{}, errBadSegment
	}
	n, ntri, idLen := v[0], v[1], v[2]
	if idLen > uint64(len(p)) || ntri > uint64(len(p)) || ntri*dirEntry > uint64(len(p))-idLen {
		return segment{}, errBadSegment
	}
	return segment{format: segFormat, n: int(n), ids: p[:idLen], dir: p[idLen : idLen+dirEntry*ntri], post: p[idLen+dirEntry*ntri:]}, nil
}

// plist is a posting list found in a segment, still encoded.
type plist struct {
	p []byte
	k uint // Rice parameter (format 2)
}

// find returns the encoded posting list of gram; ok is false when the segment lacks it.
func (sg segment) find(gram uint32) (plist, bool) {
	if sg.format == segFormat2 {
		p, k, ok := sg.find2(gram)
		return plist{p, k}, ok
	}
	p := sg.posting(gram)
	return plist{p: p}, p != nil
}

// decode appends the list's indexes (into the id table, ascending) to dst.
func (sg segment) decode(l plist, dst []uint32) []uint32 {
	if sg.format == segFormat2 {
		return decodeRice(l.p, l.k, dst)
	}
	return decodePosting(l.p, dst)
}

// uvarints reads len(v) uvarints from p into v and returns the rest of p.
func uvarints(p []byte, v []uint64) ([]byte, bool) {
	for i := range v {
		x, k := binary.Uvarint(p)
		if k <= 0 {
			return nil, false
		}
		v[i], p = x, p[k:]
	}
	return p, true
}

// list appends the posting list of gram to dst; ok is false when the segment lacks it.
func (sg segment) list(gram uint32, dst []uint32) ([]uint32, bool) {
	l, ok := sg.find(gram)
	if !ok {
		return dst, false
	}
	return sg.decode(l, dst), true
}

// posting returns the encoded posting list of tri in a format-1 segment, nil when the
// segment lacks it.
func (sg segment) posting(tri uint32) []byte {
	n := len(sg.dir) / dirEntry
	lo, hi := 0, n
	for lo < hi {
		m := (lo + hi) / 2
		e := sg.dir[dirEntry*m:]
		t := binary.LittleEndian.Uint32(e)
		switch {
		case t < tri:
			lo = m + 1
		case t > tri:
			hi = m
		default:
			start := uint32(0)
			if m > 0 {
				start = binary.LittleEndian.Uint32(sg.dir[dirEntry*m-4:])
			}
			end := binary.LittleEndian.Uint32(e[4:])
			if start > end || int(end) > len(sg.post) {
				return nil
			}
			return sg.post[start:end]
		}
	}
	return nil
}

func decodePosting(p []byte, dst []uint32) []uint32 {
	cur := int64(-1)
	for len(p) > 0 {
		d, k := binary.Uvarint(p)
		if k <= 0 {
			break
		}
		p = p[k:]
		cur += int64(d)
		dst = append(dst, uint32(cur))
	}
	return dst
}

// idTable decodes the segment's ids.
func (sg segment) idTable(dst []session.ID) []session.ID {
	p := sg.ids
	prev := int64(0)
	for len(p) > 0 {
		d, k := binary.Varint(p)
		if k <= 0 {
			break
		}
		p = p[k:]
		prev += d
		dst = append(dst, session.ID(prev))
	}
	return dst
}

func intersect(a, b []uint32) []uint32 {
	out := a[:0]
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// union merges two sorted lists without duplicates.
func union[T cmp.Ordered](a, b []T) []T {
	out := make([]T, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i] < b[j]:
			out = append(out, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// ixPlan is the index's part of a query: clauses of needles as trigram lists (see
// filter.Expr.TextClauses); every clause holds for a matching session.
type ixPlan [][][]uint32

// planFor returns the index plan of f, or nil when the index cannot narrow f (no body: or
// text: term with an indexable needle: at least 3 bytes, ASCII only, since the matcher
// folds non-ASCII text with Unicode rules the trigrams do not follow).
func planFor(f *filter.Expr) ixPlan {
	if f == nil || !f.NeedsSession() {
		return nil
	}
	var plan ixPlan
clauses:
	for _, clause := range f.TextClauses() {
		var c [][]uint32
		for _, needle := range clause {
			tris := needleTrigrams(needle)
			if tris == nil {
				continue clauses // one needle the index cannot look up: the clause narrows nothing
			}
			c = append(c, tris)
		}
		plan = append(plan, c)
	}
	return plan
}

func needleTrigrams(n string) []uint32 {
	if len(n) < 3 {
		return nil
	}
	for i := 0; i < len(n); i++ {
		if n[i] >= 0x80 {
			return nil
		}
	}
	var out []uint32
	for i := 0; i+3 <= len(n); i++ {
		out = append(out, uint32(asciiLower[n[i]])<<16|uint32(asciiLower[n[i+1]])<<8|uint32(asciiLower[n[i+2]]))
	}
	// The needle's runs of five digits or more are inside runs of the text where it occurs.
	digitGrams([]byte(n), func(g uint32) { out = append(out, g) })
	slices.Sort(out)
	return slices.Compact(out)
}

// match returns the indexes (into the id table) of the segment's sessions that may have
// every clause of the plan. A needle's lists are looked up first (a gram the segment
// lacks ends the needle without decoding any), then decoded shortest first; once a few
// candidates remain, long lists are left undecoded: confirmation on the record is
// cheaper than decoding them.
func (sg segment) match(plan ixPlan, scratch []uint32) []uint32 {
	var res []uint32
	var lists []plist
	for ci, clause := range plan {
		var u []uint32
	needles:
		for _, tris := range clause {
			lists = lists[:0]
			for _, tri := range tris {
				l, ok := sg.find(tri)
				if !ok {
					continue needles
				}
				lists = append(lists, l)
			}
			slices.SortFunc(lists, func(a, b plist) int { return len(a.p) - len(b.p) })
			got := sg.decode(lists[0], nil)
			for _, l := range lists[1:] {
				if len(got) == 0 || len(got) <= fewCandidates && len(l.p) > longList {
					break
				}
				scratch = sg.decode(l, scratch[:0])
				got = intersect(got, scratch)
			}
			if len(got) > 0 {
				u = union(u, got)
			}
		}
		if ci == 0 {
			res = u
		} else {
			res = intersect(res, u)
		}
		if len(res) == 0 {
			return nil
		}
	}
	return res
}

// match stops narrowing a needle's candidates once at most fewCandidates remain and the
// next list is longer than longList bytes.
const (
	fewCandidates = 4
	longList      = 64
)

// ixSegHeader is a segment's entry in ixsegs: lowest and highest session id, sessions,
// text bytes indexed.
func ixSegHeader(lo, hi session.ID, n, text int) []byte {
	v := binary.BigEndian.AppendUint64(nil, uint64(lo))
	v = binary.BigEndian.AppendUint64(v, uint64(hi))
	v = binary.BigEndian.AppendUint64(v, uint64(n))
	return binary.BigEndian.AppendUint64(v, uint64(text))
}

// writeSegment writes the builder's sessions as the next segment and deletes their ids
// from ixpending.
func writeSegment(tx *bolt.Tx, b *ixBuilder) error {
	if b.empty() {
		return nil
	}
	meta := tx.Bucket(bMeta)
	segs, data, pending := tx.Bucket(bIxSegs), tx.Bucket(bIxData), tx.Bucket(bIxPending)
	seq := u64(meta.Get(kIxSeq)) + 1
	blob, lo, hi := ixEncode(b)
	segs.FillPercent, data.FillPercent = 1, 1
	key := u64Bytes(seq)
	if err := data.Put(key, blob); err != nil {
		return err
	}
	if err := segs.Put(key, ixSegHeader(lo, hi, len(b.ids), b.text)); err != nil {
		return err
	}
	for _, id := range b.ids {
		if err := pending.Delete(idKey(id)); err != nil {
			return err
		}
	}
	return meta.Put(kIxSeq, u64Bytes(seq))
}

// ixPut records a session just put: pending in the file, gathered by the builder. pre
// is what the writer's prep stage found of ss (nil: found here).
func ixPut(b *buckets, key []byte, ss *session.Session, pre *sessionGrams) error {
	if b.pending == nil {
		return nil
	}
	if b.ix == nil {
		return b.pending.Put(key, nil) // grams unknown: searches confirm it on the record
	}
	if pre != nil {
		b.ix.addGrams(ss.ID, pre.grams, pre.text)
		b.ix.blooms.put(ss.ID, pre.bloom)
	} else {
		b.ix.addPending(ss.ID, indexSource(ss))
	}
	return b.pending.Put(key, nil)
}

func gramHash(g uint32) uint64 {
	x := uint64(g) * 0x9E3779B97F4A7C15
	return x ^ x>>29
}

// pendingMatch reports whether the grams of a pending session (v, its Bloom filter: from
// pendingBlooms, or its ixpending value in files written before those were kept in
// memory) may satisfy plan; a session without a filter (nil) may match.
func pendingMatch(v []byte, plan ixPlan) bool {
	if len(v) < 8 || len(v)&(len(v)-1) != 0 {
		return true // no grams (or not a filter): the record decides
	}
	has := func(g uint32) bool {
		h := gramHash(g)
		for k := 0; k < 3; k++ {
			bit := (h >> (21 * k)) & uint64(len(v)*8-1)
			if v[bit>>3]&(1<<(bit&7)) == 0 {
				return false
			}
		}
		return true
	}
	for _, clause := range plan {
		ok := false
		for _, needle := range clause {
			all := true
			for _, t := range needle {
				if !has(t) {
					all = false
					break
				}
			}
			if all {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// ixFlush writes the writer's builder as a segment when it is full (or force and not
// empty). The builder is emptied when the transaction commits (Store.writeTx).
func ixFlush(b *buckets, force bool) error {
	ix := b.ix
	if ix == nil || ix.empty() || !(force || ix.full()) {
		return nil
	}
	if err := writeSegment(b.meta.Tx(), ix); err != nil {
		return err
	}
	ix.flushed = true
	return nil
}

// settle applies what the committed transaction did to the builder.
func (b *ixBuilder) settle(committed bool) {
	switch {
	case committed && b.reset:
		b.blooms.reset()
	case committed && b.flushed:
		b.blooms.drop(b.ids)
	}
	if committed && (b.flushed || b.reset) {
		b.clear()
	}
	b.flushed, b.reset = false, false
}

// indexSource is ss with each body the engine spilled to a file read back (up to
// MaxInlineBody, as Get returns it), so the index sees what searches of the record see.
func indexSource(ss *session.Session) *session.Session {
	req := ss.Request.Body.Spilled
	var resp string
	if ss.Response != nil {
		resp = ss.Response.Body.Spilled
	}
	spilled := func(p string) bool { return p != "" && p != SpilledInStore }
	if !spilled(req) && !spilled(resp) {
		return ss
	}
	cp := *ss
	if spilled(req) {
		cp.Request.Body.Data = withSpill(ss.Request.Body.Data, req)
	}
	if spilled(resp) {
		r := *ss.Response
		r.Body.Data = withSpill(r.Body.Data, resp)
		cp.Response = &r
	}
	return &cp
}

func withSpill(data []byte, path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return data
	}
	defer f.Close()
	rest, _ := io.ReadAll(io.LimitReader(f, int64(MaxInlineBody-len(data))))
	return append(append(make([]byte, 0, len(data)+len(rest)), data...), rest...)
}

// evictIndex drops what retention removed through last: whole segments whose sessions
// are all evicted, pending ids, and the part of the backfill range.
func evictIndex(b *buckets, last session.ID) error {
	if b.pending == nil {
		return nil
	}
	if err := deleteThrough(b.pending, last, nil); err != nil {
		return err
	}
	segs, data := b.meta.Tx().Bucket(bIxSegs), b.meta.Tx().Bucket(bIxData)
	c := segs.Cursor()
	for k, v := c.First(); k != nil; {
		if len(v) >= 16 && session.ID(binary.BigEndian.Uint64(v[8:16])) <= last {
			if err := data.Delete(k); err != nil {
				return err
			}
			if err := c.Delete(); err != nil {
				return err
			}
			k, v = c.Seek(k) // bbolt's cursor after Delete: seek to the next key
			continue
		}
		k, v = c.Next()
	}
	if next := u64(b.meta.Get(kIxLegacyNext)); next <= uint64(last) && next <= u64(b.meta.Get(kIxLegacyHi)) {
		return b.meta.Put(kIxLegacyNext, u64Bytes(uint64(last)+1))
	}
	return nil
}

// resetIndex empties the index and starts a backfill of the ids lo..hi (none when hi < lo)
// of which there are total sessions.
func resetIndex(tx *bolt.Tx, lo, hi, total uint64) error {
	for _, name := range ixBuckets {
		if tx.Bucket(name) != nil {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	return putMeta(tx.Bucket(bMeta), kIxSeq, 0, kIxLegacyLo, lo, kIxLegacyNext, lo, kIxLegacyHi, hi,
		kIxLegacyTotal, total, kIxLegacyDone, 0)
}

// migrate3to4: schema 4 adds the body index. The sessions already stored are indexed in
// the background (backfill) from the next writable Open on.
func migrate3to4(tx *bolt.Tx) error {
	if err := reindexAll(tx); err != nil {
		return err
	}
	return tx.Bucket(bMeta).Put(kVersion, u64Bytes(4))
}

// reindexAll empties the index and makes every stored session the backfill range.
func reindexAll(tx *bolt.Tx) error {
	meta := tx.Bucket(bMeta)
	lo, hi := uint64(1), u64(meta.Get(kCommitted))
	if k, _ := tx.Bucket(bSummaries).Cursor().First(); k != nil {
		lo = uint64(keyID(k))
	} else {
		hi = 0
	}
	return resetIndex(tx, lo, hi, u64(meta.Get(kCount)))
}

// IndexStatus is the state of the body index.
type IndexStatus struct {
	// Building: sessions stored before the index existed (an older store, or a compact)
	// are still being indexed; searches scan those (correct, slower).
	Building bool `json:"building"`
	// Percent of those indexed so far (100 when not building).
	Percent int `json:"percent"`
	// Segments written; Pending sessions committed but not in a segment yet.
	Segments uint64 `json:"segments"`
	// Available is false for stores without an index (older schema opened read-only):
	// body: and text: scan every session.
	Available bool `json:"available"`
	// Error is why the backfill stopped ("" when it did not): searches stay correct,
	// scanning what it did not index.
	Error string `json:"error,omitempty"`
}

// String is "index building: N%" while building, "" otherwise.
func (st IndexStatus) String() string {
	if !st.Building {
		return ""
	}
	return fmt.Sprintf("index building: %d%%", st.Percent)
}

func indexStatusTx(tx *bolt.Tx) IndexStatus {
	if tx.Bucket(bIxSegs) == nil {
		return IndexStatus{Percent: 100}
	}
	meta := tx.Bucket(bMeta)
	lo, next, hi := u64(meta.Get(kIxLegacyLo)), u64(meta.Get(kIxLegacyNext)), u64(meta.Get(kIxLegacyHi))
	st := IndexStatus{Available: true, Percent: 100, Segments: u64(meta.Get(kIxSeq))}
	if next <= hi && hi >= lo {
		st.Building = true
		st.Percent = 99
		if total := u64(meta.Get(kIxLegacyTotal)); total > 0 {
			st.Percent = int(min(99, u64(meta.Get(kIxLegacyDone))*100/total))
		}
	}
	return st
}

// IndexStatus reports the body index's state (a field the CLI, control API and window
// show while it builds).
func (s *Store) IndexStatus() IndexStatus {
	var st IndexStatus
	if err := s.view(func(tx *bolt.Tx) error { st = indexStatusTx(tx); return nil }); err != nil {
		return IndexStatus{Percent: 100, Error: err.Error()}
	}
	if p := s.ixErr.Load(); p != nil {
		st.Error = (*p).Error()
	}
	return st
}

// segRef is a segment a query visits: its key and id range.
type segRef struct {
	key    []byte
	lo, hi session.ID
}

// querySegments lists the segments whose id range meets q's bounds, in the order q walks
// them: by highest id descending (Newest) or by lowest id ascending.
func querySegments(tx *bolt.Tx, q Query) ([]segRef, error) {
	var out []segRef
	c := tx.Bucket(bIxSegs).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(v) < 16 {
			return nil, fmt.Errorf("%w: index segment header of %d bytes", ErrCorrupt, len(v))
		}
		lo, hi := session.ID(binary.BigEndian.Uint64(v)), session.ID(binary.BigEndian.Uint64(v[8:]))
		if q.After != 0 && hi <= q.After || q.Before != 0 && lo >= q.Before {
			continue
		}
		out = append(out, segRef{key: k, lo: lo, hi: hi})
	}
	if q.Newest {
		slices.SortFunc(out, func(a, b segRef) int { return cmpID(b.hi, a.hi) })
	} else {
		slices.SortFunc(out, func(a, b segRef) int { return cmpID(a.lo, b.lo) })
	}
	return out, nil
}

func cmpID(a, b session.ID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// inQuery reports whether id is within q's bounds.
func inQuery(q *Query, id session.ID) bool {
	return (q.After == 0 || id > q.After) && (q.Before == 0 || id < q.Before)
}

// segmentCandidates appends the ids of segment ref that may match plan, within q's
// bounds, to dst, sorted.
func segmentCandidates(tx *bolt.Tx, q *Query, ref segRef, plan ixPlan, dst []session.ID, idTab *[]session.ID) ([]session.ID, error) {
	sg, err := openSegment(tx.Bucket(bIxData).Get(ref.key))
	if err != nil {
		return nil, fmt.Errorf("%w: index segment %d: %v", ErrCorrupt, u64(ref.key), err)
	}
	locals := sg.match(plan, nil)
	if len(locals) == 0 {
		return dst, nil
	}
	*idTab = sg.idTable((*idTab)[:0])
	for _, l := range locals {
		if int(l) < len(*idTab) && inQuery(q, (*idTab)[l]) {
			dst = append(dst, (*idTab)[l])
		}
	}
	slices.Sort(dst)
	return slices.Compact(dst), nil
}

// extraCandidates returns the ids outside the segments that may match plan, sorted: the
// pending sessions whose grams match, and the whole backfill range not indexed yet.
func extraCandidates(tx *bolt.Tx, q *Query, plan ixPlan) []session.ID {
	var out []session.ID
	walk := func(bk *bolt.Bucket, from, to uint64, test bool) {
		pc := bk.Cursor()
		for k, v := pc.Seek(idKey(session.ID(from))); k != nil && len(k) == 8 && uint64(keyID(k)) <= to; k, v = pc.Next() {
			if id := keyID(k); inQuery(q, id) {
				if test && len(v) == 0 {
					v = q.blooms.get(id)
				}
				if test && !pendingMatch(v, plan) {
					continue
				}
				out = append(out, id)
			}
		}
	}
	walk(tx.Bucket(bIxPending), uint64(q.After)+1, ^uint64(0), true)
	meta := tx.Bucket(bMeta)
	if next, hi := u64(meta.Get(kIxLegacyNext)), u64(meta.Get(kIxLegacyHi)); next <= hi {
		walk(tx.Bucket(bSummaries), max(next, uint64(q.After)+1), hi, false)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// scanIndexed is scan for filters the index narrows. It visits the segments in q's order
// and confirms each candidate on its record as soon as no segment left can hold an id
// before it, so a first page of a common token reads only the newest (or oldest)
// segments.
func scanIndexed(tx *bolt.Tx, q Query, plan ixPlan, emit func(*session.Summary) bool) error {
	segs, err := querySegments(tx, q)
	if err != nil {
		return err
	}
	cand := extraCandidates(tx, &q, plan) // sorted ascending
	sums := tx.Bucket(bSummaries)
	var sum session.Summary
	var idTab, segIDs []session.ID
	steps := 0
	// confirm loads id and emits it if it matches; it reports false when the walk ends.
	confirm := func(id session.ID) (bool, error) {
		if err := q.cancelled(steps); err != nil {
			return false, err
		}
		steps++
		v := sums.Get(idKey(id))
		if v == nil {
			return true, nil // deleted: postings stay in old segments
		}
		ss, err := loadSession(tx, id)
		if errors.Is(err, ErrNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if !q.Filter.Match(ss) {
			return true, nil
		}
		if _, err := decodeSummary(id, v, &sum, false); err != nil {
			return false, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return emit(&sum), nil
	}
	for i := 0; i <= len(segs); i++ {
		if i < len(segs) {
			if segIDs, err = segmentCandidates(tx, &q, segs[i], plan, segIDs[:0], &idTab); err != nil {
				return err
			}
			if len(segIDs) > 0 {
				cand = union(cand, segIDs)
			}
		}
		// Candidates no later segment can precede are final: confirm them in order.
		for len(cand) > 0 {
			var id session.ID
			if q.Newest {
				id = cand[len(cand)-1]
				if i+1 < len(segs) && id <= segs[i+1].hi {
					break
				}
				cand = cand[:len(cand)-1]
			} else {
				id = cand[0]
				if i+1 < len(segs) && id >= segs[i+1].lo {
					break
				}
				cand = cand[1:]
			}
			if more, err := confirm(id); err != nil || !more {
				return err
			}
		}
	}
	return nil
}

// backfillHook, when set (tests), runs after each backfill transaction.
var backfillHook func()

// backfill indexes the sessions of the backfill range (ixlegacynext..ixlegacyhi) in
// segments, each written with the advance of ixlegacynext in one transaction, so a kill
// leaves a consistent index and the next Open resumes. It stops when stop closes.
func backfill(view, update func(func(*bolt.Tx) error) error, stop <-chan struct{}) error {
	var b ixBuilder
	for {
		var next, hi, first uint64
		done := false
		for !b.full() && !done {
			select {
			case <-stop:
				return nil
			default:
			}
			err := view(func(tx *bolt.Tx) error {
				meta := tx.Bucket(bMeta)
				if next == 0 {
					next = u64(meta.Get(kIxLegacyNext))
					first = next
				}
				hi = u64(meta.Get(kIxLegacyHi))
				if next > hi {
					done = true
					return nil
				}
				c := tx.Bucket(bSummaries).Cursor()
				n := 0
				k, _ := c.Seek(idKey(session.ID(next)))
				for ; k != nil && uint64(keyID(k)) <= hi && n < backfillStep && !b.full(); k, _ = c.Next() {
					id := keyID(k)
					ss, err := loadSession(tx, id)
					if err == nil {
						b.add(id, ss)
					} else if !errors.Is(err, ErrNotFound) {
						return err
					}
					next = uint64(id) + 1
					n++
				}
				if k == nil || uint64(keyID(k)) > hi {
					done, next = true, hi+1
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		if b.empty() && next == first {
			return nil // nothing (left) to index: no write
		}
		err := update(func(tx *bolt.Tx) error {
			if err := writeSegment(tx, &b); err != nil {
				return err
			}
			meta := tx.Bucket(bMeta)
			if cur := u64(meta.Get(kIxLegacyNext)); cur > next || u64(meta.Get(kIxLegacyHi)) != hi {
				return nil // retention or a Clear moved on meanwhile
			}
			return putMeta(meta, kIxLegacyNext, next, kIxLegacyDone, u64(meta.Get(kIxLegacyDone))+uint64(len(b.ids)))
		})
		if err != nil {
			return err
		}
		b.clear()
		if backfillHook != nil {
			backfillHook()
		}
		if done {
			return nil
		}
	}
}

// openIndex (writable Open) gathers the pending sessions a crash left out of a segment
// into the writer's builder, and starts the backfill of sessions stored before the
// index existed.
func (s *Store) openIndex() error {
	s.ixStop, s.ixDone = make(chan struct{}), make(chan struct{})
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bIxPending).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) != 8 {
				continue
			}
			ss, err := loadSession(tx, keyID(k))
			if errors.Is(err, ErrNotFound) {
				continue // deleted: its key goes with the next segment
			}
			if err != nil {
				return err
			}
			s.ix.addPending(ss.ID, ss)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("body index: %w", err)
	}
	go func() {
		defer close(s.ixDone)
		if err := backfill(s.view, s.writeTx, s.ixStop); err != nil {
			err = fmt.Errorf("indexing stored sessions: %w", err)
			s.ixErr.Store(&err)
		}
	}()
	return nil
}
