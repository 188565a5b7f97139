package store

import (
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"inspector/engine/session"
)

// SchemaVersion is the schema this package writes (see doc.go).
const SchemaVersion = 5

var (
	bMeta      = []byte("meta")
	bSummaries = []byte("summaries")
	bSessions  = []byte("sessions")
	bBodies    = []byte("bodies")
	bMessages  = []byte("messages")
	bFrames    = []byte("frames")
	bCerts     = []byte("certs")

	// dataBuckets hold per-session data; Clear empties them.
	dataBuckets = [][]byte{bSummaries, bSessions, bBodies, bMessages, bFrames, bCerts}
	// v1Buckets are the data buckets of schema 1.
	v1Buckets = [][]byte{bSummaries, bSessions, bBodies, bMessages, bFrames}

	kVersion   = []byte("version")
	kReserved  = []byte("reserved")
	kAllocated = []byte("allocated")
	kCommitted = []byte("committed")
	kCount     = []byte("count")
	kBytes     = []byte("bytes")
	kClean     = []byte("clean")
)

// migrations[v] upgrades a file at schema version v to v+1, inside one write
// transaction (so a failed migration leaves the file as it was). Version 0 is a bbolt
// file without a meta bucket: a brand-new file, or one written by something else that
// happens to have no buckets yet.
var migrations = map[uint64]func(tx *bolt.Tx) error{
	0: migrate0to1,
	1: migrate1to2,
	2: migrate2to3,
	3: migrate3to4,
	4: migrate4to5,
}

func migrate0to1(tx *bolt.Tx) error {
	// A version-0 file must not already hold foreign data: refuse rather than guess.
	if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		return fmt.Errorf("unexpected bucket %q in a file without schema version", name)
	}); err != nil {
		return err
	}
	meta, err := tx.CreateBucket(bMeta)
	if err != nil {
		return err
	}
	for _, b := range v1Buckets {
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	for _, k := range [][]byte{kReserved, kAllocated, kCommitted, kCount, kBytes} {
		if err := meta.Put(k, u64Bytes(0)); err != nil {
			return err
		}
	}
	if err := meta.Put(kClean, u64Bytes(1)); err != nil {
		return err
	}
	return meta.Put(kVersion, u64Bytes(1))
}

// migrate1to2: schema 2 adds the session record format metaFormatInline (small bodies
// inside the record, meta_codec.go). Records of schema 1 (metaFormatBinary and JSON, bodies
// in the bodies bucket) are read as they are, so nothing is rewritten: the version mark
// only keeps earlier builds, which cannot read the new records, from opening the file
// (they report ErrSchemaTooNew).
func migrate1to2(tx *bolt.Tx) error {
	return tx.Bucket(bMeta).Put(kVersion, u64Bytes(2))
}

// migrate2to3: schema 3 adds the certs bucket (certs.go), which records with
// placeCertRefs refer to. Older records keep their certificates inline and are read as
// they are.
func migrate2to3(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bCerts); err != nil {
		return err
	}
	return tx.Bucket(bMeta).Put(kVersion, u64Bytes(3))
}

// migrate4to5: schema 5 adds the placeProcess part of session records (the client's PID
// and process name, meta_codec.go) and the process tail of summaries. Older records read
// as they are; the version mark keeps earlier builds, which would take the new records for
// damaged ones, from opening the file.
func migrate4to5(tx *bolt.Tx) error {
	return tx.Bucket(bMeta).Put(kVersion, u64Bytes(5))
}

// schemaVersion reads the version of the file in tx (0 when there is no meta bucket).
func schemaVersion(tx *bolt.Tx) (uint64, error) {
	meta := tx.Bucket(bMeta)
	if meta == nil {
		return 0, nil
	}
	v := meta.Get(kVersion)
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: meta has no valid schema version", ErrCorrupt)
	}
	return u64(v), nil
}

// migrate brings the file up to SchemaVersion. It fails with ErrSchemaTooNew for a file
// written by a newer Inspector.
func migrate(tx *bolt.Tx) error {
	v, err := schemaVersion(tx)
	if err != nil {
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w: file has schema version %d, this Inspector supports up to %d", ErrSchemaTooNew, v, SchemaVersion)
	}
	for v < SchemaVersion {
		m, ok := migrations[v]
		if !ok {
			return fmt.Errorf("no migration from schema version %d", v)
		}
		if err := m(tx); err != nil {
			return fmt.Errorf("migrating schema %d→%d: %w", v, v+1, err)
		}
		if v, err = schemaVersion(tx); err != nil {
			return err
		}
	}
	return nil
}

// validate checks the layout cheaply: every bucket of the file's version and meta value
// present and the last summary decodes. Writable stores are migrated to SchemaVersion
// first; read-only ones are read at any version from 1 on.
func validate(tx *bolt.Tx) error {
	v, err := schemaVersion(tx)
	if err != nil {
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w: file has schema version %d, this Inspector supports up to %d", ErrSchemaTooNew, v, SchemaVersion)
	}
	if v < 1 {
		return fmt.Errorf("session store has schema version %d and needs an upgrade: open it once without --read-only (start Inspector)", v)
	}
	meta := tx.Bucket(bMeta)
	for _, k := range [][]byte{kReserved, kAllocated, kCommitted, kCount, kBytes, kClean} {
		if len(meta.Get(k)) != 8 {
			return fmt.Errorf("%w: meta key %q missing or malformed", ErrCorrupt, k)
		}
	}
	// A read-only store may be of an older schema: every version since 1 reads as it is.
	want := dataBuckets
	if v < 3 {
		want = v1Buckets
	}
	if v >= 4 {
		want = append(slices.Clip(want), ixBuckets...)
		for _, k := range [][]byte{kIxSeq, kIxLegacyLo, kIxLegacyNext, kIxLegacyHi, kIxLegacyTotal, kIxLegacyDone} {
			if len(meta.Get(k)) != 8 {
				return fmt.Errorf("%w: meta key %q missing or malformed", ErrCorrupt, k)
			}
		}
	}
	for _, b := range want {
		if tx.Bucket(b) == nil {
			return fmt.Errorf("%w: bucket %q missing", ErrCorrupt, b)
		}
	}
	c := tx.Bucket(bSummaries).Cursor()
	for _, pos := range []func() ([]byte, []byte){c.First, c.Last} {
		k, v := pos()
		if k == nil {
			continue
		}
		if len(k) != 8 {
			return fmt.Errorf("%w: summary key of %d bytes", ErrCorrupt, len(k))
		}
		var sum session.Summary
		if _, err := decodeSummary(keyID(k), v, &sum, false); err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	return nil
}
