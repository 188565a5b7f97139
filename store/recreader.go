package store

import (
	"encoding/binary"
	"unsafe"
)

// recReader decodes the store's binary records (session records, summaries, frame
// batches): varints and length-prefixed bytes. Any malformation sets err, empties what is
// left and makes every later read yield zero values, so decoders check err once at the
// end. With alias set, str returns strings that point into the record itself (no copy):
// valid only while the record's memory is (inside the bbolt transaction).
type recReader struct {
	b     []byte
	err   bool
	alias bool
}

func (r *recReader) fail() { r.err, r.b = true, nil }

func (r *recReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recReader) byte1() byte {
	if len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *recReader) bool() bool { return r.byte1() == 1 }

func (r *recReader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

// dataCopy reads a byte slice and returns a copy (nil when empty).
func (r *recReader) dataCopy() []byte {
	p := r.bytes()
	if len(p) == 0 {
		return nil
	}
	return append([]byte(nil), p...)
}

func (r *recReader) str() string {
	p := r.bytes()
	if len(p) == 0 {
		return ""
	}
	if r.alias {
		return unsafe.String(&p[0], len(p))
	}
	return string(p)
}

// count reads a length that must fit in what is left (each element takes ≥ 1 byte), so a
// damaged record cannot make the decoder allocate much.
func (r *recReader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return 0
	}
	return int(n)
}
