package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
)

// writeV1 writes sessions into a new file at path the way schema 1 builds did: version 1
// meta, session records in metaFormatBinary (or JSON when asJSON says so) without body
// bytes, every body in 64 KiB chunks in the bodies bucket, messages as JSON, frames in
// the frames bucket, summaries with the stored size. It returns the stored bytes total.
func writeV1(t *testing.T, path string, sessions []*session.Session, frames map[session.ID][]session.Frame, asJSON map[session.ID]bool) int64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var total int64
	err = db.Update(func(tx *bolt.Tx) error {
		if err := migrate0to1(tx); err != nil {
			return err
		}
		b := txBuckets(tx)
		var last uint64
		for _, ss := range sessions {
			key := idKey(ss.ID)
			var rec []byte
			if asJSON[ss.ID] {
				c := ss.Clone()
				c.Request.Body.Data = nil
				c.Response.Body.Data = nil
				c.Messages = nil
				if rec, err = json.Marshal(c); err != nil {
					return err
				}
			} else {
				rec = appendSessionFields([]byte{metaFormatBinary}, ss, nil)
			}
			stored := int64(len(rec)) + 8
			if err := b.sess.Put(key, rec); err != nil {
				return err
			}
			for part, body := range map[byte][]byte{PartRequest: ss.Request.Body.Data, PartResponse: ss.Response.Body.Data} {
				for i := uint32(0); len(body) > 0; i++ {
					c := body[:min(len(body), chunkSize)]
					body = body[len(c):]
					if err := b.bodies.Put(bodyKey(ss.ID, part, i), c); err != nil {
						return err
					}
					stored += int64(len(c)) + 13
				}
			}
			if len(ss.Messages) > 0 {
				m, _ := json.Marshal(ss.Messages)
				if err := b.msgs.Put(key, m); err != nil {
					return err
				}
				stored += int64(len(m)) + 8
			}
			if f := frames[ss.ID]; f != nil {
				if err := b.frames.Put(frameKey(key, 0), appendFrames(nil, f)); err != nil {
					return err
				}
			}
			sum := ss.Summarize()
			r := encodeSummary(nil, &sum, stored)
			stored += int64(len(r)) + 8
			if err := b.sums.Put(key, encodeSummary(nil, &sum, stored)); err != nil {
				return err
			}
			total += stored
			last = uint64(ss.ID)
		}
		return putMeta(b.meta, kCount, len(sessions), kBytes, total, kCommitted, last,
			kAllocated, last, kReserved, last, kClean, 1)
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// TestOpenSchema1File: a file written by a schema 1 build opens (and is upgraded to
// schema 2 without rewriting), every session reads back in full with Get and OpenBody
// (binary and JSON records, bodies of one and several chunks, messages, frames), its
// sessions delete cleanly, new sessions go in beside them, and the file checks clean.
func TestOpenSchema1File(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	small := testSession(1, 200, 10, 300)
	large := testSession(2, 200, 2000, 150<<10) // 3 chunks
	ws := testSession(3, 101, 0, 0)
	ws.Messages = []session.Message{{Time: time.Unix(1, 0).UTC(), FromClient: true, Opcode: 1, Data: []byte("hi"), Size: 2}}
	old := testSession(4, 404, 5, 7) // a JSON record
	h2 := testSession(5, 200, 0, 20)
	fr := testFrames("client", time.Unix(100, 0), 3)
	all := []*session.Session{small, large, ws, old, h2}
	total := writeV1(t, path, all, map[session.ID][]session.Frame{5: fr}, map[session.ID]bool{4: true})

	// Read-only, the file is read as it is (and left at schema 1).
	ro := openTest(t, path, Options{ReadOnly: true})
	for _, want := range all {
		got, err := ro.Get(want.ID)
		if err != nil || !bytes.Equal(got.Response.Body.Data, want.Response.Body.Data) {
			t.Fatalf("read-only Get(%d): %v", want.ID, err)
		}
	}
	if l, err := ro.List(Query{}); err != nil || len(l) != 5 {
		t.Fatalf("read-only List: %d, %v", len(l), err)
	}
	ro.view(func(tx *bolt.Tx) error {
		if v, _ := schemaVersion(tx); v != 1 {
			t.Errorf("read-only open changed the schema version to %d", v)
		}
		return nil
	})
	ro.Close()

	s := openTest(t, path, Options{})
	if st := s.Stats(); st.Sessions != 5 || st.Bytes != total || st.Missing != 0 {
		t.Fatalf("stats %+v, want 5 sessions, %d bytes", st, total)
	}
	var version uint64
	s.view(func(tx *bolt.Tx) error { version, _ = schemaVersion(tx); return nil })
	if version != SchemaVersion || SchemaVersion != 5 {
		t.Fatalf("schema version %d after open (package %d)", version, SchemaVersion)
	}
	for _, want := range all {
		got, err := s.Get(want.ID)
		if err != nil {
			t.Fatalf("Get(%d): %v", want.ID, err)
		}
		utcAll(reflect.ValueOf(got))
		w := want.Clone()
		utcAll(reflect.ValueOf(w))
		if !reflect.DeepEqual(got, w) {
			t.Fatalf("session %d:\n got %s\nwant %s", want.ID, jsonOf(t, got), jsonOf(t, w))
		}
		for part, data := range map[byte][]byte{PartRequest: want.Request.Body.Data, PartResponse: want.Response.Body.Data} {
			rc, err := s.OpenBody(want.ID, part)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(b, data) {
				t.Fatalf("OpenBody(%d, %c): %d bytes, want %d (%v)", want.ID, part, len(b), len(data), err)
			}
		}
	}
	if got, err := s.Frames(5); err != nil || len(got) != len(fr) {
		t.Fatalf("Frames: %d, %v", len(got), err)
	}
	if l, err := s.List(Query{}); err != nil || len(l) != 5 {
		t.Fatalf("List: %d, %v", len(l), err)
	}

	// New sessions (inline records) beside the old ones; then the old ones go.
	n1, n2 := testSession(s.NextID(), 200, 10, 10), testSession(s.NextID(), 200, 10, 100<<10)
	putAll(t, s, n1, n2)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(1, 2, 3, 4, 5); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Sessions != 2 {
		t.Fatalf("after delete: %+v", st)
	}
	s.view(func(tx *bolt.Tx) error {
		for _, name := range v1Buckets {
			c := tx.Bucket(name).Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if id := keyID(k); id <= 5 {
					t.Errorf("bucket %s still holds a key of deleted session %d", name, id)
				}
			}
		}
		return nil
	})
	if err := s.Delete(n1.ID, n2.ID); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Sessions != 0 || st.Bytes != 0 {
		t.Fatalf("after deleting everything: %+v (stored sizes out of step)", st)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestSchemaTooNew: a file at a version above SchemaVersion
// gives ErrSchemaTooNew (what schema 1 builds report for schema 2 files).
func TestSchemaTooNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openTest(t, path, Options{})
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bMeta).Put(kVersion, binary.BigEndian.AppendUint64(nil, SchemaVersion+1))
	})
	db.Close()
	if _, err := Open(path, Options{}); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open: %v, want ErrSchemaTooNew", err)
	}
}

// TestDeleteInlineAndChunked: deleting inline sessions leaves no keys behind, and a
// session with bodies in the bodies bucket and messages loses those too.
func TestDeleteInlineAndChunked(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "sessions.db"), Options{})
	a := testSession(s.NextID(), 200, 10, 10)
	b := testSession(s.NextID(), 200, 10, 70<<10)
	b.Messages = []session.Message{{Opcode: 1, Data: []byte("x"), Size: 1}}
	putAll(t, s, a, b)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if !s.PutFrames(a.ID, testFrames("client", time.Unix(100, 0), 2)) {
		t.Fatal("PutFrames refused")
	}
	if err := s.FlushFrames(); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(a.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	s.view(func(tx *bolt.Tx) error {
		for _, name := range dataBuckets { // certs too: no record refers to any
			if k, _ := tx.Bucket(name).Cursor().First(); k != nil {
				t.Errorf("bucket %s not empty after deleting everything", name)
			}
		}
		return nil
	})
	if st := s.Stats(); st.Sessions != 0 || st.Bytes != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestOpenSchema2File: a schema 2 file (records with inline bodies, certificates inside
// the records, no certs bucket) opens read-only as it is and is upgraded on a writable
// open; its sessions read back, and new ones with shared certificates go in beside them.
func TestOpenSchema2File(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	old := testSession(1, 200, 10, 300)
	writeV1(t, path, []*session.Session{old}, nil, nil)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := migrate1to2(tx); err != nil {
			return err
		}
		b := txBuckets(tx)
		if err := deletePrefix(b.bodies, idKey(1)); err != nil {
			return err
		}
		return b.sess.Put(idKey(1), appendSessionMeta(nil, old)) // as schema 2 wrote it
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	check := func(s *Store) {
		t.Helper()
		got, err := s.Get(1)
		if err != nil {
			t.Fatal(err)
		}
		utcAll(reflect.ValueOf(got))
		w := old.Clone()
		utcAll(reflect.ValueOf(w))
		if !reflect.DeepEqual(got, w) {
			t.Fatalf("session 1:\n got %s\nwant %s", jsonOf(t, got), jsonOf(t, w))
		}
	}
	ro := openTest(t, path, Options{ReadOnly: true})
	check(ro)
	ro.Close()
	s := openTest(t, path, Options{})
	check(s)
	putAll(t, s, testSession(s.NextID(), 200, 1, 1))
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	checkCertCounts(t, s)
	if err := s.Delete(1); err != nil {
		t.Fatal(err)
	}
	checkCertCounts(t, s)
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}
