package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"inspector/content"
	"inspector/engine/session"
	"inspector/filter"
)

// ixWords is the vocabulary of the index tests' generated text: rare and common tokens.
var ixWords = func() []string {
	w := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"}
	for i := 0; i < 300; i++ {
		w = append(w, fmt.Sprintf("tok%03dz", i))
	}
	return w
}()

func ixText(r *rand.Rand, words int) string {
	var b strings.Builder
	for i := 0; i < words; i++ {
		// Skewed: the first words are common, the generated ones rare.
		w := ixWords[min(len(ixWords)-1, int(r.ExpFloat64()*40))]
		if r.IntN(3) == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		b.WriteString(w)
		b.WriteByte(" ,:\n"[r.IntN(4)])
	}
	return b.String()
}

// ixSession is a session whose URL, headers, bodies and messages hold generated text; some
// bodies are gzip, br or zstd encoded, some are images (not searched).
func ixSession(t testing.TB, r *rand.Rand, id session.ID) *session.Session {
	ss := testSession(id, 200+r.IntN(4)*100, 0, 0)
	ss.Request.URL = fmt.Sprintf("https://example.com/%s/%d", ixWords[r.IntN(len(ixWords))], id)
	ss.Request.Header.Set("X-Note", ixText(r, 2))
	body := func(h http.Header) session.Body {
		switch r.IntN(6) {
		case 0:
			return session.Body{}
		case 1:
			h.Set("Content-Type", "image/png")
			d := append([]byte("\x89PNG\r\n\x1a\n"), ixText(r, 20)...)
			return session.Body{Data: d, Size: int64(len(d))}
		}
		h.Set("Content-Type", []string{"application/json", "text/html", "application/javascript"}[r.IntN(3)])
		d := []byte(ixText(r, 5+r.IntN(400)))
		if enc := []string{"", "", "gzip", "br", "zstd"}[r.IntN(5)]; enc != "" {
			var err error
			if d, err = content.Encode([]string{enc}, d); err != nil {
				panic(err)
			}
			h.Set("Content-Encoding", enc)
		}
		return session.Body{Data: d, Size: int64(len(d))}
	}
	ss.Request.Body = body(ss.Request.Header)
	ss.Response.Body = body(ss.Response.Header)
	if r.IntN(10) == 0 {
		ss.Flags |= session.FlagWebSocket
		for i := 0; i < 3; i++ {
			ss.Messages = append(ss.Messages, session.Message{Opcode: 1, Data: []byte(ixText(r, 4)), Size: 10})
		}
	}
	return ss
}

// smallSegments makes segments of a few sessions for the test, so flushes happen often.
func smallSegments(t testing.TB, sessions int) {
	old := segSessionsMax
	segSessionsMax = sessions
	t.Cleanup(func() { segSessionsMax = old })
}

// ixQueries are the searches compared: rare and common tokens, text:, OR, AND with
// summary terms, a needle too short for the index and a negation.
func ixQueries(r *rand.Rand) []string {
	q := []string{"body:alpha", "text:bravo", "body:CHARLIE", "text:example.com/tok0", "text:x-note", "body:al",
		"body:alpha -body:bravo", "body:zzznotthere", "text:\"delta echo\"", "body:tok001z OR body:tok002z",
		"status:2xx body:golf", "body:png"}
	for i := 0; i < 8; i++ {
		q = append(q, "body:"+ixWords[12+r.IntN(len(ixWords)-12)], "text:"+ixWords[12+r.IntN(len(ixWords)-12)])
	}
	return q
}

// checkIndexAgrees compares indexed searches with a full scan (every stored session
// loaded and matched) for every query: all results, newest-first pages and counts.
func checkIndexAgrees(t *testing.T, s *Store, r *rand.Rand, stage string) {
	t.Helper()
	all, err := s.List(Query{})
	if err != nil {
		t.Fatal(err)
	}
	var full []*session.Session
	for _, sum := range all {
		ss, err := s.Get(sum.ID)
		if err != nil {
			t.Fatal(err)
		}
		full = append(full, ss)
	}
	indexed := 0
	for _, q := range ixQueries(r) {
		f := filter.MustParse(q)
		if planFor(f) != nil {
			indexed++
		}
		var want []session.ID
		for _, ss := range full {
			if f.Match(ss) {
				want = append(want, ss.ID)
			}
		}
		got, err := s.List(Query{Filter: f})
		if err != nil {
			t.Fatalf("%s: %q: %v", stage, q, err)
		}
		if !slices.Equal(ids(got), want) {
			t.Fatalf("%s: %q: indexed %v, full scan %v", stage, q, ids(got), want)
		}
		n, err := s.Count(f)
		if err != nil || n != len(want) {
			t.Fatalf("%s: Count(%q) = %d, %v; want %d", stage, q, n, err, len(want))
		}
		page, err := s.List(Query{Filter: f, Newest: true, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		rev := slices.Clone(want)
		slices.Reverse(rev)
		if !slices.Equal(ids(page), rev[:min(5, len(rev))]) {
			t.Fatalf("%s: %q newest page %v, want %v", stage, q, ids(page), rev[:min(5, len(rev))])
		}
		if len(want) > 3 {
			mid := want[len(want)/2]
			after, _ := s.List(Query{Filter: f, After: mid, Limit: 2})
			i := slices.Index(want, mid)
			if !slices.Equal(ids(after), want[i+1:min(i+3, len(want))]) {
				t.Fatalf("%s: %q after %d: %v", stage, q, mid, ids(after))
			}
		}
	}
	if indexed < 10 {
		t.Fatalf("only %d queries used the index", indexed)
	}
}

// TestIndexAgreesWithScan: after puts, deletions, an import, retention, Clear, a compact
// and a reopen, indexed searches give exactly what a full scan gives.
func TestIndexAgreesWithScan(t *testing.T) {
	smallSegments(t, 37)
	r := rand.New(rand.NewPCG(1, 2))
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openTest(t, path, Options{MaxSessions: 600})
	put := func(n int) {
		for i := 0; i < n; i++ {
			putAll(t, s, ixSession(t, r, s.NextID()))
		}
	}
	put(300)
	if st := s.IndexStatus(); st.Segments == 0 || st.Building {
		t.Fatalf("index status %+v after 300 sessions in segments of 37", st)
	}
	checkIndexAgrees(t, s, r, "after puts")

	all, _ := s.List(Query{})
	var del []session.ID
	for i := 0; i < len(all); i += 5 {
		del = append(del, all[i].ID)
	}
	if err := s.Delete(del...); err != nil {
		t.Fatal(err)
	}
	checkIndexAgrees(t, s, r, "after delete")

	var imp []*session.Session
	for i := 0; i < 120; i++ {
		imp = append(imp, ixSession(t, r, 0))
	}
	if _, err := s.Import(imp); err != nil {
		t.Fatal(err)
	}
	checkIndexAgrees(t, s, r, "after import")

	put(400) // over MaxSessions: retention evicts the oldest
	if st := s.Stats(); st.Sessions != 600 {
		t.Fatalf("%d sessions after retention, want 600", st.Sessions)
	}
	// (the out-of-order stage below keeps the store at 600 too)
	checkIndexAgrees(t, s, r, "after retention")

	// Replacing a session's content: old postings stay, results follow the record.
	last, _ := s.List(Query{Newest: true, Limit: 1})
	re := ixSession(t, r, last[0].ID)
	putAll(t, s, re)
	checkIndexAgrees(t, s, r, "after replace")

	// Sessions commit in another order than their ids (as long and short exchanges do):
	// segments' id ranges overlap, and pages must still come in id order.
	var late []session.ID
	for i := 0; i < 150; i++ {
		late = append(late, s.NextID())
	}
	r.Shuffle(len(late), func(i, j int) { late[i], late[j] = late[j], late[i] })
	for _, id := range late {
		putAll(t, s, ixSession(t, r, id))
	}
	checkIndexAgrees(t, s, r, "after out-of-order commits")

	dst := filepath.Join(t.TempDir(), "compact.db")
	if err := s.Compact(dst); err != nil {
		t.Fatal(err)
	}
	c := openTest(t, dst, Options{ReadOnly: true})
	if st := c.IndexStatus(); st.Building || !st.Available {
		t.Fatalf("compacted copy's index %+v", st)
	}
	checkIndexAgrees(t, c, r, "compacted copy")
	// The copy's rebuilt index has no postings of deleted sessions and holds every
	// stored session once.
	indexedIDs := map[session.ID]int{}
	c.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bIxData).ForEach(func(k, v []byte) error {
			sg, err := openSegment(v)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range sg.idTable(nil) {
				indexedIDs[id]++
			}
			return nil
		})
	})
	if len(indexedIDs) != 600 {
		t.Fatalf("compacted index holds %d sessions, want 600", len(indexedIDs))
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, path, Options{MaxSessions: 600})
	checkIndexAgrees(t, s, r, "after reopen")

	if err := s.Clear(); err != nil {
		t.Fatal(err)
	}
	put(50)
	checkIndexAgrees(t, s, r, "after clear")
}

// downgradeToV3 turns a store into one written before the index existed (schema 3).
func downgradeToV3(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range ixBuckets {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bMeta)
		for _, k := range [][]byte{kIxSeq, kIxLegacyLo, kIxLegacyNext, kIxLegacyHi, kIxLegacyTotal, kIxLegacyDone} {
			meta.Delete(k)
		}
		return meta.Put(kVersion, u64Bytes(3))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}

// TestIndexBackfill: a store from before the index is indexed in the background on its
// first writable open; searches are exact meanwhile (the unindexed range is scanned), and
// the status reports the progress.
func TestIndexBackfill(t *testing.T) {
	smallSegments(t, 25)
	r := rand.New(rand.NewPCG(3, 4))
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openTest(t, path, Options{})
	for i := 0; i < 400; i++ {
		putAll(t, s, ixSession(t, r, s.NextID()))
	}
	s.Close()
	downgradeToV3(t, path)

	// Read-only, the old store has no index: searches scan everything.
	ro := openTest(t, path, Options{ReadOnly: true})
	if st := ro.IndexStatus(); st.Available {
		t.Fatalf("schema 3 store reports an index: %+v", st)
	}
	checkIndexAgrees(t, ro, r, "schema 3 read-only")
	ro.Close()

	// Opened and closed at once: the backfill stops part-way (or not at all), and what it
	// wrote is consistent.
	s = openTest(t, path, Options{})
	s.Close()
	ro = openTest(t, path, Options{ReadOnly: true})
	st := ro.IndexStatus()
	t.Logf("after an interrupted backfill: %+v (%s)", st, st)
	if !st.Available || st.Building != (st.Percent < 100) {
		t.Fatalf("status %+v", st)
	}
	checkIndexAgrees(t, ro, r, "interrupted backfill")
	ro.Close()

	s = openTest(t, path, Options{})
	checkIndexAgrees(t, s, r, "while building")
	for i := 0; i < 30; i++ { // capture goes on meanwhile
		putAll(t, s, ixSession(t, r, s.NextID()))
	}
	<-s.ixDone
	if st := s.IndexStatus(); st.Building || st.Percent != 100 || st.Error != "" || st.Segments < 400/25 {
		t.Fatalf("after the backfill: %+v", st)
	}
	if s := s.Stats().Index.String(); s != "" {
		t.Fatalf("status string %q after the backfill", s)
	}
	checkIndexAgrees(t, s, r, "after backfill")
}

func TestIndexStatusString(t *testing.T) {
	if got := (IndexStatus{Building: true, Percent: 42}).String(); got != "index building: 42%" {
		t.Fatalf("%q", got)
	}
}

// TestSegmentRejectsGarbage: a damaged segment is ErrCorrupt, not a panic or a silent
// empty result.
func TestSegmentRejectsGarbage(t *testing.T) {
	for _, blob := range [][]byte{nil, {9}, {segFormat}, {segFormat, 5, 200, 1}, {segFormat, 1, 1, 100, 0}} {
		if _, err := openSegment(blob); err == nil {
			t.Errorf("openSegment(%v) accepted garbage", blob)
		}
	}
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openTest(t, path, Options{})
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 5; i++ {
		putAll(t, s, ixSession(t, r, s.NextID()))
	}
	s.Close()
	db, _ := bolt.Open(path, 0o600, nil)
	db.Update(func(tx *bolt.Tx) error {
		tx.Bucket(bIxData).Put(u64Bytes(1), []byte{segFormat, 3})
		return nil
	})
	db.Close()
	s = openTest(t, path, Options{ReadOnly: true})
	if _, err := s.List(Query{Filter: filter.MustParse("body:alpha")}); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged segment: %v", err)
	}
}

// TestListContextCancel: a search whose context is done ends with its error.
func TestListContextCancel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	s := openTest(t, filepath.Join(t.TempDir(), "sessions.db"), Options{})
	for i := 0; i < 200; i++ {
		putAll(t, s, ixSession(t, r, s.NextID()))
	}
	ctx, cancel := context.WithCancel(context.Background())
	if got, err := s.ListContext(ctx, Query{Filter: filter.MustParse("body:alpha"), Limit: 10}); err != nil || len(got) == 0 {
		t.Fatalf("live context: %d results, %v", len(got), err)
	}
	cancel()
	for _, expr := range []string{"body:alpha", "body:al", "status:200"} {
		if _, err := s.ListContext(ctx, Query{Filter: filter.MustParse(expr)}); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s with a cancelled context: %v", expr, err)
		}
		if _, err := s.CountContext(ctx, filter.MustParse(expr)); !errors.Is(err, context.Canceled) {
			t.Fatalf("count %s with a cancelled context: %v", expr, err)
		}
	}
}

func (p *pendingBlooms) len() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.m)
}

// Pending sessions (committed, not yet in a segment) are tested by Bloom filters kept in
// memory, not stored: ixpending holds only their ids, a rare token's candidates among
// them are the session that has it, a search finds it, and a store reopened after a
// crash (a copy of the committed file) rebuilds the filters. Filters stored as ixpending
// values by earlier files still narrow the candidates.
func TestPendingBloomsInMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	dir := t.TempDir()
	s := openTest(t, filepath.Join(dir, "sessions.db"), Options{})
	var rare session.ID
	for i := 0; i < 200; i++ {
		ss := ixSession(t, r, s.NextID())
		if i == 77 {
			ss.Response.Header.Del("Content-Encoding")
			ss.Response.Header.Set("Content-Type", "application/json")
			ss.Response.Body = session.Body{Data: []byte(`{"code":"zqxjkvunique"}`), Size: 23}
			rare = ss.ID
		}
		s.Put(ss)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	plan := planFor(filter.MustParse("body:zqxjkvunique"))
	check := func(s *Store, stage string) {
		t.Helper()
		if n := s.blooms.len(); n != 200 {
			t.Fatalf("%s: %d pending filters in memory, want 200", stage, n)
		}
		var cand []session.ID
		stored := 0
		s.view(func(tx *bolt.Tx) error {
			tx.Bucket(bIxPending).ForEach(func(_, v []byte) error {
				stored += len(v)
				return nil
			})
			cand = extraCandidates(tx, &Query{blooms: &s.blooms}, plan)
			return nil
		})
		if stored != 0 {
			t.Errorf("%s: ixpending values hold %d bytes, want only ids", stage, stored)
		}
		if !slices.Equal(cand, []session.ID{rare}) {
			t.Errorf("%s: pending candidates %v, want [%d]", stage, cand, rare)
		}
		got, err := s.List(Query{Filter: filter.MustParse("body:zqxjkvunique")})
		if err != nil || !slices.Equal(ids(got), []session.ID{rare}) {
			t.Errorf("%s: List = %v, %v", stage, ids(got), err)
		}
	}
	check(s, "after Flush")

	// A kill -9 now leaves the committed file: a copy of it is what Open finds.
	crashed := filepath.Join(dir, "crashed.db")
	if err := s.view(func(tx *bolt.Tx) error { return tx.CopyFile(crashed, 0o600) }); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.db")
	if err := s.view(func(tx *bolt.Tx) error { return tx.CopyFile(old, 0o600) }); err != nil {
		t.Fatal(err)
	}
	c := openTest(t, crashed, Options{})
	check(c, "reopened")
	c.Close()

	// A file that kept the filters as ixpending values: they decide, with or without
	// filters in memory.
	db, err := bolt.Open(old, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var gs gramSet
	var others int
	err = db.Update(func(tx *bolt.Tx) error {
		pending := tx.Bucket(bIxPending)
		return pending.ForEach(func(k, _ []byte) error {
			ss, err := loadSession(tx, keyID(k))
			if err != nil {
				return err
			}
			others++
			return pending.Put(k, gs.gramsOf(ss).bloom)
		})
	})
	db.Close()
	if err != nil || others != 200 {
		t.Fatalf("writing old-style values: %v (%d)", err, others)
	}
	o := openTest(t, old, Options{})
	o.view(func(tx *bolt.Tx) error {
		if cand := extraCandidates(tx, &Query{}, plan); !slices.Equal(cand, []session.ID{rare}) {
			t.Errorf("stored filters: candidates %v, want [%d]", cand, rare)
		}
		return nil
	})

	// Once the segment is written (Close writes the last one), no filter is left.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := s.blooms.len(); n != 0 {
		t.Errorf("%d filters kept after the segment was written", n)
	}
}

// refGrams is the distinct grams of ss's text found plainly (every window of three
// bytes; every five digits ending a run of at least five, read with strconv), sorted.
func refGrams(ss *session.Session) (grams []uint32, text int) {
	seen := map[uint32]bool{}
	add := func(g uint32) {
		if !seen[g] {
			seen[g] = true
			grams = append(grams, g)
		}
	}
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	filter.SessionText(ss, func(p []byte) bool {
		text += len(p)
		if len(p) < 3 {
			return false
		}
		for i := 0; i+3 <= len(p); i++ {
			add(uint32(lowerASCIIByte(p[i]))<<16 | uint32(lowerASCIIByte(p[i+1]))<<8 | uint32(lowerASCIIByte(p[i+2])))
		}
		for j := 4; j < len(p); j++ {
			if all := !slices.ContainsFunc(p[j-4:j+1], func(c byte) bool { return !isDigit(c) }); all {
				n, _ := strconv.Atoi(string(p[j-4 : j+1]))
				add(digitGram | uint32(n))
			}
		}
		return false
	})
	slices.Sort(grams)
	return grams, text
}

// The gramSet finds exactly the grams of the reference, session after session (its set
// cleared between them), for ASCII text, UTF-8, binary bytes, capitals, digit runs
// and short pieces.
func TestGramSetMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	var gs gramSet
	texts := []string{"ab", "abc", "ABC abc", "12345", "1234", "x123456789012y", "naïve café – ünïcödé ☃",
		"\x00\x01\x02\xff\xfe", "\t\n\r~ }{|", strings.Repeat("0", 40), "Mixed CASE and 98765 4321 00000"}
	for i := 0; i < 200; i++ {
		b := make([]byte, r.IntN(300))
		for j := range b {
			switch r.IntN(4) {
			case 0:
				b[j] = byte(r.IntN(256))
			case 1:
				b[j] = '0' + byte(r.IntN(10))
			default:
				b[j] = 0x20 + byte(r.IntN(95))
			}
		}
		texts = append(texts, string(b))
	}
	for i, text := range texts {
		ss := testSession(session.ID(i+1), 200, 0, 0)
		ss.Request.URL = "https://example.com/p"
		ss.Response.Header.Set("Content-Type", "text/plain")
		ss.Response.Body = session.Body{Data: []byte(text), Size: int64(len(text))}
		if i%3 == 0 {
			ss = ixSession(t, r, session.ID(i+1))
		}
		want, wantText := refGrams(ss)
		got, gotText := gs.of(ss, nil)
		slices.Sort(got)
		if !slices.Equal(got, want) || gotText != wantText {
			t.Fatalf("text %d %q: %d grams (%d bytes), reference %d (%d bytes)", i, text, len(got), gotText, len(want), wantText)
		}
	}
	for _, w := range gs.seen {
		if w != 0 {
			t.Fatal("the gram set was not cleared after its session")
		}
	}
}
