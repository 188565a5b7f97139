package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
)

// fillAll sets every field reachable from v (strings, numbers, booleans, times, pointers,
// slices, maps) to a non-zero value derived from n, so a field the codec forgets shows.
func fillAll(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString("v" + string(rune('a'+*n%26)) + string(rune('A'+*n%26)))
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*n * 1000003))
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		v.SetUint(uint64(*n*7919 + 1))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(v.Elem(), n)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fillAll(s.Index(i), n)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			fillAll(k, n)
			e := reflect.New(v.Type().Elem()).Elem()
			fillAll(e, n)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 30, 7, 0, *n, *n*1001, time.FixedZone("X", 3600))))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i), n)
			}
		}
	}
}

// utcAll converts every time.Time reachable from v to UTC, so values decoded in
// different zones compare equal with reflect.DeepEqual.
func utcAll(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			utcAll(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			utcAll(v.Index(i))
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(v.Interface().(time.Time).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				utcAll(v.Field(i))
			}
		}
	}
}

// storedForm is what a record of ss must decode to: no body bytes, no messages, a
// spilled body's reference replaced by SpilledInStore.
func storedForm(t testing.TB, ss *session.Session) *session.Session {
	t.Helper()
	c := ss.Clone()
	c.Request.Body.Data = nil
	if c.Request.Body.Spilled != "" {
		c.Request.Body.Spilled = SpilledInStore
	}
	if c.Response != nil {
		c.Response.Body.Data = nil
		if c.Response.Body.Spilled != "" {
			c.Response.Body.Spilled = SpilledInStore
		}
	}
	c.Messages = nil
	utcAll(reflect.ValueOf(c))
	return c
}

// recordForm is what a metaFormatInline record of ss decodes to: storedForm, but the
// bytes of bodies small enough to be inline kept.
func recordForm(t testing.TB, ss *session.Session) *session.Session {
	t.Helper()
	c := storedForm(t, ss)
	if inlineBody(&ss.Request.Body) && len(ss.Request.Body.Data) > 0 {
		c.Request.Body.Data = append([]byte(nil), ss.Request.Body.Data...)
	}
	if ss.Response != nil && inlineBody(&ss.Response.Body) && len(ss.Response.Body.Data) > 0 {
		c.Response.Body.Data = append([]byte(nil), ss.Response.Body.Data...)
	}
	return c
}

// TestMetaCodecInlineBodies: small bodies travel in the record, larger or spilled ones
// do not, and the place mask says which.
func TestMetaCodecInlineBodies(t *testing.T) {
	for _, tc := range []struct {
		name      string
		req, resp int
		spilled   bool
		noResp    bool
		msgs      bool
		want      byte
	}{
		{name: "small", req: 64, resp: 512, want: placeRequestInline | placeResponseInline},
		{name: "empty", want: placeRequestInline | placeResponseInline},
		{name: "limit", req: maxInlineBody, resp: maxInlineBody + 1, want: placeRequestInline | placeBodies},
		{name: "spilled", resp: 10, spilled: true, want: placeRequestInline | placeBodies},
		{name: "no response", req: 3, noResp: true, want: placeRequestInline},
		{name: "messages", msgs: true, want: placeRequestInline | placeResponseInline | placeMessages},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := testSession(5, 200, tc.req, tc.resp)
			if tc.spilled {
				ss.Response.Body.Spilled = "/tmp/x"
			}
			if tc.noResp {
				ss.Response = nil
			}
			if tc.msgs {
				ss.Messages = []session.Message{{Opcode: 1, Data: []byte("hi"), Size: 2}}
			}
			rec := appendSessionMeta(nil, ss)
			if got := recordPlace(rec); got != tc.want {
				t.Fatalf("place mask %04b, want %04b", got, tc.want)
			}
			got, place, err := decodeSessionRecord(rec, nil)
			if err != nil || place != tc.want {
				t.Fatalf("decode: place %04b, err %v", place, err)
			}
			utcAll(reflect.ValueOf(got))
			want := recordForm(t, ss)
			want.Messages = nil
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
			}
		})
	}
	// A record whose mask names an inline response body but has no response, or
	// unknown mask bits, is malformed.
	ss := testSession(5, 200, 1, 1)
	ss.Response = nil
	rec := appendSessionMeta(nil, ss)
	rec[1] |= placeResponseInline
	if _, err := decodeSessionMeta(rec); !errors.Is(err, errBadMeta) {
		t.Fatalf("inline response without response: %v", err)
	}
	rec[1] = 1 << 6
	if _, err := decodeSessionMeta(rec); !errors.Is(err, errBadMeta) {
		t.Fatalf("unknown mask bit: %v", err)
	}
}

func TestMetaCodecCoversEveryField(t *testing.T) {
	ss := new(session.Session)
	n := 0
	fillAll(reflect.ValueOf(ss).Elem(), &n)
	rec := appendSessionMeta(nil, ss)
	got, err := decodeSessionMeta(rec)
	if err != nil {
		t.Fatal(err)
	}
	utcAll(reflect.ValueOf(got))
	want := storedForm(t, ss)
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		t.Fatalf("round trip differs (a Session field missing from the codec?)\n got %s\nwant %s", gj, wj)
	}
	// The zero session (nil Response, TLS and Error, zero times) round-trips too.
	z := &session.Session{ID: 9}
	got, err = decodeSessionMeta(appendSessionMeta(nil, z))
	if err != nil || !reflect.DeepEqual(got, z) {
		t.Fatalf("zero session: %+v, %v", got, err)
	}
}

func TestMetaCodecReadsJSONRecords(t *testing.T) {
	ss := new(session.Session)
	n := 0
	fillAll(reflect.ValueOf(ss).Elem(), &n)
	want := storedForm(t, ss)
	old, err := json.Marshal(want) // the format stores wrote before the binary one
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeSessionMeta(old)
	if err != nil {
		t.Fatal(err)
	}
	utcAll(reflect.ValueOf(got))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("JSON record decoded differently:\n got %+v\nwant %+v", got, want)
	}
}

// TestMetaCodecDamage: every truncation and a wrong format byte fail with an error, never
// a panic or a half-filled session.
func TestMetaCodecDamage(t *testing.T) {
	ss := new(session.Session)
	n := 0
	fillAll(reflect.ValueOf(ss).Elem(), &n)
	rec := appendSessionMeta(nil, ss)
	for i := range len(rec) {
		if got, err := decodeSessionMeta(rec[:i]); err == nil {
			t.Fatalf("truncated to %d of %d bytes: decoded %+v", i, len(rec), got)
		}
	}
	if _, err := decodeSessionMeta(append(rec, 0)); !errors.Is(err, errBadMeta) {
		t.Fatalf("trailing byte: %v", err)
	}
	bad := append([]byte{7}, rec[1:]...)
	if _, err := decodeSessionMeta(bad); !errors.Is(err, errBadMeta) {
		t.Fatalf("unknown format byte: %v", err)
	}
}

func FuzzDecodeSessionMeta(f *testing.F) {
	ss := new(session.Session)
	n := 0
	fillAll(reflect.ValueOf(ss).Elem(), &n)
	f.Add(appendSessionMeta(nil, ss))
	f.Add(appendSessionMeta(nil, &session.Session{ID: 1}))
	f.Add([]byte(`{"id":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeSessionMeta(b)
		if err != nil || len(b) == 0 || (b[0] != metaFormatBinary && b[0] != metaFormatInline) {
			return
		}
		// What decodes re-encodes to a record that decodes to the same session.
		again, err := decodeSessionMeta(appendSessionMeta(nil, got))
		if err != nil {
			t.Fatalf("re-encoded record fails: %v", err)
		}
		want := recordForm(t, got)
		utcAll(reflect.ValueOf(again))
		if !reflect.DeepEqual(want, again) {
			t.Fatalf("re-encoding changed the session:\n%+v\n%+v", got, again)
		}
	})
}

// TestStoreReadsJSONSessionRecords: a file whose sessions bucket holds JSON records (as
// written before the binary form) still opens and Get returns them in full.
func TestStoreReadsJSONSessionRecords(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ss := smallSession(s.NextID())
	if !s.Put(ss) {
		t.Fatal("put refused")
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	want, err := s.Get(ss.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite the record the old way.
	old, err := json.Marshal(storedForm(t, want))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		// Bodies went to the bodies bucket then.
		b := txBuckets(tx)
		if _, err := putBody(b, ss.ID, PartRequest, &want.Request.Body); err != nil {
			return err
		}
		if _, err := putBody(b, ss.ID, PartResponse, &want.Response.Body); err != nil {
			return err
		}
		return b.sess.Put(idKey(ss.ID), old)
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Get(ss.ID)
	if err != nil {
		t.Fatal(err)
	}
	utcAll(reflect.ValueOf(got))
	utcAll(reflect.ValueOf(want))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("JSON record read back differently:\n got %+v\nwant %+v", got, want)
	}
}

// BenchmarkSessionMetaEncode compares the binary session record with the JSON one it
// replaced, for a typical small session.
func BenchmarkSessionMetaEncode(b *testing.B) {
	ss := smallSession(12345)
	b.Run("binary", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for range b.N {
			buf = appendSessionMeta(buf[:0], ss)
		}
		b.ReportMetric(float64(len(buf)), "bytes")
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for range b.N { // what the JSON encoder did: shallow copies without body bytes
			c := *ss
			c.Request.Body.Data = nil
			r := *ss.Response
			r.Body.Data = nil
			c.Response = &r
			buf, _ = json.Marshal(&c)
		}
		b.ReportMetric(float64(len(buf)), "bytes")
	})
}

// TestMetaCodecCertRefs: with a certificate table, certificates travel as references
// (each distinct one once) and decode through the lookup; a missing certificate or a
// bad index fails.
func TestMetaCodecCertRefs(t *testing.T) {
	ss := testSession(7, 200, 3, 3)
	leaf, inter := []byte("leaf"), []byte("intermediate")
	ss.Upstream.TLS.Certificates = [][]byte{leaf, inter}
	ss.Client.TLS.Certificates = [][]byte{inter}
	tbl := &certTable{}
	rec := appendSessionRecord(nil, ss, tbl)
	if recordPlace(rec)&placeCertRefs == 0 || len(tbl.refs) != 2 || !reflect.DeepEqual(tbl.index, []int{0, 1, 0}) {
		t.Fatalf("table %x index %v", tbl.refs, tbl.index)
	}
	if bytes.Contains(rec, []byte("intermediate")) {
		t.Fatal("certificate bytes in the record")
	}
	certs := map[certRef][]byte{certRefOf(leaf): leaf, certRefOf(inter): inter}
	lookup := func(ref []byte) []byte { return certs[certRef(ref)] }
	got, _, err := decodeSessionRecord(rec, lookup)
	if err != nil {
		t.Fatal(err)
	}
	utcAll(reflect.ValueOf(got))
	if want := recordForm(t, ss); !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	var refs []certRef
	if !recordCertRefs(rec, func(r []byte) { refs = append(refs, certRef(r)) }) || !reflect.DeepEqual(refs, tbl.refs) {
		t.Fatalf("recordCertRefs: %x", refs)
	}
	if _, err := decodeSessionMeta(rec); !errors.Is(err, errBadMeta) {
		t.Fatalf("decoded without a lookup: %v", err)
	}
	delete(certs, certRefOf(leaf))
	if _, _, err := decodeSessionRecord(rec, lookup); !errors.Is(err, errMissingCert) {
		t.Fatalf("missing certificate: %v", err)
	}
	certs[certRefOf(leaf)] = leaf
	for i := range len(rec) {
		if _, _, err := decodeSessionRecord(rec[:i], lookup); err == nil {
			t.Fatalf("truncated to %d bytes decoded", i)
		}
	}
	// Without certificates there is no table.
	ss.Upstream.TLS, ss.Client.TLS = nil, nil
	if rec := appendSessionRecord(nil, ss, tbl); recordPlace(rec)&placeCertRefs != 0 {
		t.Fatal("table without certificates")
	}
}
