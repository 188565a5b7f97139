package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"inspector/engine/session"
)

// summaryFormat is the first byte of every summary record.
const summaryFormat = 1

var errBadRecord = errors.New("malformed summary record")

// idKey is the 8-byte big-endian key of id.
func idKey(id session.ID) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(id))
	return k[:]
}

func keyID(k []byte) session.ID { return session.ID(binary.BigEndian.Uint64(k[:8])) }

func u64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func u64Bytes(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// encodeSummary appends the record of sum (without its id, which is the key) and the
// session's stored size to dst.
func encodeSummary(dst []byte, sum *session.Summary, stored int64) []byte {
	dst = append(dst, summaryFormat)
	dst = binary.AppendUvarint(dst, uint64(stored))
	var started int64
	if !sum.Started.IsZero() {
		started = sum.Started.UnixNano()
	}
	dst = binary.AppendVarint(dst, started)
	for _, s := range [...]string{sum.Method, sum.URL, sum.Host, sum.Path, sum.ClientProto,
		sum.UpstreamProto, sum.Error, string(sum.ErrorPhase), sum.ContentType, sum.Mark} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	dst = binary.AppendUvarint(dst, uint64(sum.Status))
	dst = binary.AppendVarint(dst, sum.ReqBytes)
	dst = binary.AppendVarint(dst, sum.RespBytes)
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(sum.DurationMS))
	dst = binary.AppendUvarint(dst, uint64(sum.ReplayOf))
	tls := byte(0)
	if sum.TLS {
		tls = 1
	}
	dst = append(dst, tls)
	dst = binary.AppendUvarint(dst, uint64(sum.Flags))
	if sum.PID != 0 || sum.Process != "" {
		// Optional tail (older readers stop at Flags and ignore it; records without it
		// decode with PID 0).
		dst = binary.AppendUvarint(dst, uint64(sum.PID))
		dst = binary.AppendUvarint(dst, uint64(len(sum.Process)))
		dst = append(dst, sum.Process...)
	}
	return dst
}

// decodeSummary decodes the record v of id into sum and returns the stored size.
func decodeSummary(id session.ID, v []byte, sum *session.Summary, alias bool) (int64, error) {
	if len(v) == 0 || v[0] != summaryFormat {
		return 0, fmt.Errorf("session %d: %w", id, errBadRecord)
	}
	r := recReader{b: v[1:], alias: alias} // alias: strings point into v (see recReader)
	stored := int64(r.uvarint())
	*sum = session.Summary{ID: id}
	if ns := r.varint(); ns != 0 {
		sum.Started = time.Unix(0, ns)
	}
	sum.Method = r.str()
	sum.URL = r.str()
	sum.Host = r.str()
	sum.Path = r.str()
	sum.ClientProto = r.str()
	sum.UpstreamProto = r.str()
	sum.Error = r.str()
	sum.ErrorPhase = session.Phase(r.str())
	sum.ContentType = r.str()
	sum.Mark = r.str()
	sum.Status = int(r.uvarint())
	sum.ReqBytes = r.varint()
	sum.RespBytes = r.varint()
	if len(r.b) < 8 {
		return 0, fmt.Errorf("session %d: %w", id, errBadRecord)
	}
	sum.DurationMS = math.Float64frombits(binary.BigEndian.Uint64(r.b))
	r.b = r.b[8:]
	sum.ReplayOf = session.ID(r.uvarint())
	if len(r.b) < 1 {
		return 0, fmt.Errorf("session %d: %w", id, errBadRecord)
	}
	sum.TLS = r.b[0] == 1
	r.b = r.b[1:]
	sum.Flags = session.Flags(r.uvarint())
	if len(r.b) > 0 {
		sum.PID = int(r.uvarint())
		sum.Process = r.str()
	}
	if r.err {
		return 0, fmt.Errorf("session %d: %w", id, errBadRecord)
	}
	return stored, nil
}

// bodyKey is id ‖ part ‖ chunk.
func bodyKey(id session.ID, part byte, chunk uint32) []byte {
	k := make([]byte, 13)
	binary.BigEndian.PutUint64(k, uint64(id))
	k[8] = part
	binary.BigEndian.PutUint32(k[9:], chunk)
	return k
}

// Body parts in the bodies bucket.
const (
	PartRequest  byte = 'q'
	PartResponse byte = 's'
)

// chunkSize is the largest chunk of body bytes per key: 64 KiB less room for the leaf
// page header, element and key, so a chunk alone fills exactly 4 pages of 16 KiB
// (filePageSize) rather than spilling into a fifth. Readers take chunks of any size.
const chunkSize = 64<<10 - 64
