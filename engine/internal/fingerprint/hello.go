// Package fingerprint reads what a client says about itself before any request: its TLS
// ClientHello (JA3, JA4) and the opening of its HTTP/2 connection (the Akamai HTTP/2
// fingerprint). The engine records the raw bytes on each leg (Recorder) and computes the
// fingerprints from them; both legs go through the same code, so a mirrored upstream
// leg is compared with the client leg by the same rules.
package fingerprint

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/crypto/cryptobyte"
)

// TLS extension numbers this package looks into.
const (
	ExtServerName          = 0x0000
	ExtSupportedGroups     = 0x000a
	ExtPointFormats        = 0x000b
	ExtSignatureAlgorithms = 0x000d
	ExtALPN                = 0x0010
	ExtSupportedVersions   = 0x002b
	ExtKeyShare            = 0x0033
	ExtECH                 = 0xfe0d
)

// MaxHello bounds a ClientHello kept for fingerprinting (the record layer allows 16 KiB
// per record; a hello with post-quantum key shares is about 2 KiB).
const MaxHello = 64 << 10

// Hello is a parsed ClientHello.
type Hello struct {
	// Record is the ClientHello as one TLS record: the 5-byte record header, then the
	// handshake message (reassembled when the client split it over several records).
	Record []byte

	Version      uint16 // legacy_version
	Ciphers      []uint16
	Compression  []byte
	Extensions   []uint16 // in wire order, GREASE included
	ServerName   string
	ALPN         []string
	Groups       []uint16
	PointFormats []byte
	SigAlgs      []uint16
	Versions     []uint16 // supported_versions
	KeyShares    []uint16 // groups of the key shares, in order
}

// ErrMalformed is returned for bytes that are not a well-formed ClientHello.
var ErrMalformed = errors.New("malformed ClientHello")

// IsGREASE reports whether v is one of the reserved GREASE values (RFC 8701).
func IsGREASE(v uint16) bool { return v&0x0f0f == 0x0a0a && v>>8 == v&0xff }

// ParseRecords parses the ClientHello at the start of b, TLS records as they travelled
// (one or more handshake records). It returns ErrMalformed (wrapped, with the reason)
// for anything else, and io-style "incomplete" as ErrIncomplete when b ends early.
func ParseRecords(b []byte) (*Hello, error) {
	msg, err := handshakeMessage(b)
	if err != nil {
		return nil, err
	}
	h, err := parseMessage(msg)
	if err != nil {
		return nil, err
	}
	rec := make([]byte, 0, 5+len(msg))
	rec = append(rec, 0x16, b[1], b[2], byte(len(msg)>>8), byte(len(msg)))
	h.Record = append(rec, msg...)
	return h, nil
}

// ErrIncomplete is returned when the bytes end before the ClientHello does.
var ErrIncomplete = errors.New("ClientHello incomplete")

func malformed(why string) error { return fmt.Errorf("%w: %s", ErrMalformed, why) }

// handshakeMessage reassembles the first handshake message from the records in b.
func handshakeMessage(b []byte) ([]byte, error) {
	var msg []byte
	need := -1
	for {
		if need >= 0 && len(msg) >= need {
			return msg[:need], nil
		}
		if len(b) < 5 {
			return nil, ErrIncomplete
		}
		if b[0] != 0x16 {
			return nil, malformed(fmt.Sprintf("record type %d, not handshake", b[0]))
		}
		if b[1] != 3 {
			return nil, malformed(fmt.Sprintf("record version %d.%d", b[1], b[2]))
		}
		n := int(b[3])<<8 | int(b[4])
		if n == 0 || n > 16384+2048 {
			return nil, malformed(fmt.Sprintf("record length %d", n))
		}
		if len(b) < 5+n {
			return nil, ErrIncomplete
		}
		msg = append(msg, b[5:5+n]...)
		b = b[5+n:]
		if need < 0 && len(msg) >= 4 {
			if msg[0] != 1 {
				return nil, malformed(fmt.Sprintf("handshake message type %d, not ClientHello", msg[0]))
			}
			need = 4 + (int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3]))
			if need > MaxHello {
				return nil, malformed(fmt.Sprintf("ClientHello of %d bytes", need))
			}
		}
	}
}

// parseMessage parses a ClientHello handshake message (type and length included).
func parseMessage(msg []byte) (*Hello, error) {
	s := cryptobyte.String(msg[4:])
	h := &Hello{}
	var random, sessionID, ciphers, comp cryptobyte.String
	if !s.ReadUint16(&h.Version) || !s.ReadBytes((*[]byte)(&random), 32) ||
		!s.ReadUint8LengthPrefixed(&sessionID) || !s.ReadUint16LengthPrefixed(&ciphers) ||
		!s.ReadUint8LengthPrefixed(&comp) {
		return nil, malformed("truncated before the extensions")
	}
	if len(ciphers)%2 != 0 || len(ciphers) == 0 {
		return nil, malformed("cipher suite list of odd or zero length")
	}
	for !ciphers.Empty() {
		var c uint16
		ciphers.ReadUint16(&c)
		h.Ciphers = append(h.Ciphers, c)
	}
	if len(comp) == 0 {
		return nil, malformed("no compression methods")
	}
	h.Compression = append([]byte(nil), comp...)
	if s.Empty() {
		return h, nil
	}
	var exts cryptobyte.String
	if !s.ReadUint16LengthPrefixed(&exts) || !s.Empty() {
		return nil, malformed("extensions block length")
	}
	seen := map[uint16]bool{}
	for !exts.Empty() {
		var id uint16
		var data cryptobyte.String
		if !exts.ReadUint16(&id) || !exts.ReadUint16LengthPrefixed(&data) {
			return nil, malformed("truncated extension")
		}
		if seen[id] && !IsGREASE(id) {
			return nil, malformed(fmt.Sprintf("extension %d twice", id))
		}
		seen[id] = true
		h.Extensions = append(h.Extensions, id)
		if err := h.extension(id, data); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (h *Hello) extension(id uint16, d cryptobyte.String) error {
	bad := func() error { return malformed(fmt.Sprintf("extension %d body", id)) }
	u16s := func(d cryptobyte.String, prefix8 bool) ([]uint16, bool) {
		var l cryptobyte.String
		ok := false
		if prefix8 {
			ok = d.ReadUint8LengthPrefixed(&l)
		} else {
			ok = d.ReadUint16LengthPrefixed(&l)
		}
		if !ok || len(l)%2 != 0 {
			return nil, false
		}
		var out []uint16
		for !l.Empty() {
			var v uint16
			l.ReadUint16(&v)
			out = append(out, v)
		}
		return out, true
	}
	var ok bool
	switch id {
	case ExtServerName:
		var list cryptobyte.String
		if !d.ReadUint16LengthPrefixed(&list) {
			return bad()
		}
		for !list.Empty() {
			var typ uint8
			var name cryptobyte.String
			if !list.ReadUint8(&typ) || !list.ReadUint16LengthPrefixed(&name) {
				return bad()
			}
			if typ == 0 && h.ServerName == "" {
				h.ServerName = string(name)
			}
		}
	case ExtALPN:
		var list cryptobyte.String
		if !d.ReadUint16LengthPrefixed(&list) {
			return bad()
		}
		for !list.Empty() {
			var p cryptobyte.String
			if !list.ReadUint8LengthPrefixed(&p) || len(p) == 0 {
				return bad()
			}
			h.ALPN = append(h.ALPN, string(p))
		}
	case ExtSupportedGroups:
		if h.Groups, ok = u16s(d, false); !ok {
			return bad()
		}
	case ExtPointFormats:
		var l cryptobyte.String
		if !d.ReadUint8LengthPrefixed(&l) {
			return bad()
		}
		h.PointFormats = append([]byte(nil), l...)
	case ExtSignatureAlgorithms:
		if h.SigAlgs, ok = u16s(d, false); !ok {
			return bad()
		}
	case ExtSupportedVersions:
		if h.Versions, ok = u16s(d, true); !ok {
			return bad()
		}
	case ExtKeyShare:
		var list cryptobyte.String
		if !d.ReadUint16LengthPrefixed(&list) {
			return bad()
		}
		for !list.Empty() {
			var g uint16
			var k cryptobyte.String
			if !list.ReadUint16(&g) || !list.ReadUint16LengthPrefixed(&k) {
				return bad()
			}
			h.KeyShares = append(h.KeyShares, g)
		}
	}
	return nil
}

// JA3 returns the JA3 string of h and its MD5 (hex), GREASE values left out.
func (h *Hello) JA3() (raw, hash string) {
	var b strings.Builder
	b.WriteString(strconv.Itoa(int(h.Version)))
	b.WriteByte(',')
	join16 := func(vs []uint16) {
		first := true
		for _, v := range vs {
			if IsGREASE(v) {
				continue
			}
			if !first {
				b.WriteByte('-')
			}
			first = false
			b.WriteString(strconv.Itoa(int(v)))
		}
	}
	join16(h.Ciphers)
	b.WriteByte(',')
	join16(h.Extensions)
	b.WriteByte(',')
	join16(h.Groups)
	b.WriteByte(',')
	for i, p := range h.PointFormats {
		if i > 0 {
			b.WriteByte('-')
		}
		b.WriteString(strconv.Itoa(int(p)))
	}
	raw = b.String()
	sum := md5.Sum([]byte(raw))
	return raw, hex.EncodeToString(sum[:])
}

// JA4 returns the JA4 fingerprint of h sent over TCP (FoxIO's specification: version,
// SNI, counts and first ALPN; the truncated SHA-256 of the sorted cipher suites; that of
// the sorted extensions without SNI and ALPN, then the signature algorithms in order).
func (h *Hello) JA4() string {
	var b strings.Builder
	b.WriteByte('t')
	v := h.Version
	for _, sv := range h.Versions {
		if !IsGREASE(sv) && sv > v {
			v = sv
		}
	}
	switch v {
	case 0x0304:
		b.WriteString("13")
	case 0x0303:
		b.WriteString("12")
	case 0x0302:
		b.WriteString("11")
	case 0x0301:
		b.WriteString("10")
	case 0x0300:
		b.WriteString("s3")
	default:
		b.WriteString("00")
	}
	if slices.Contains(h.Extensions, ExtServerName) {
		b.WriteByte('d')
	} else {
		b.WriteByte('i')
	}
	ciphers := noGREASE(h.Ciphers)
	exts := noGREASE(h.Extensions)
	fmt.Fprintf(&b, "%02d%02d", min(len(ciphers), 99), min(len(exts), 99))
	b.WriteString(alpnChars(h.ALPN))
	b.WriteByte('_')
	slices.Sort(ciphers)
	b.WriteString(hash12(hexList(ciphers)))
	b.WriteByte('_')
	var rest []uint16
	for _, e := range exts {
		if e != ExtServerName && e != ExtALPN {
			rest = append(rest, e)
		}
	}
	slices.Sort(rest)
	c := hexList(rest)
	if sigs := noGREASE(h.SigAlgs); len(sigs) > 0 {
		c += "_" + hexList(sigs)
	}
	if len(rest) == 0 {
		b.WriteString("000000000000")
	} else {
		b.WriteString(hash12(c))
	}
	return b.String()
}

func alpnChars(alpn []string) string {
	if len(alpn) == 0 || alpn[0] == "" {
		return "00"
	}
	p := alpn[0]
	f, l := p[0], p[len(p)-1]
	if alnum(f) && alnum(l) {
		return string([]byte{f, l})
	}
	x := hex.EncodeToString([]byte(p))
	return string([]byte{x[0], x[len(x)-1]})
}

func alnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

func noGREASE(vs []uint16) []uint16 {
	out := make([]uint16, 0, len(vs))
	for _, v := range vs {
		if !IsGREASE(v) {
			out = append(out, v)
		}
	}
	return out
}

func hexList(vs []uint16) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%04x", v)
	}
	return strings.Join(parts, ",")
}

func hash12(s string) string {
	if s == "" {
		return "000000000000"
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

// Without returns h's record with the extensions ids left out (the lengths adjusted),
// or the record itself when it has none of them.
func (h *Hello) Without(ids ...uint16) []byte {
	if !slices.ContainsFunc(h.Extensions, func(e uint16) bool { return slices.Contains(ids, e) }) {
		return h.Record
	}
	msg := h.Record[5:]
	s := cryptobyte.String(msg[4:])
	var skip cryptobyte.String
	s.Skip(2 + 32)
	s.ReadUint8LengthPrefixed(&skip)
	s.ReadUint16LengthPrefixed(&skip)
	s.ReadUint8LengthPrefixed(&skip)
	head := msg[4 : len(msg)-len(s)] // version … compression methods
	var exts cryptobyte.String
	s.ReadUint16LengthPrefixed(&exts)
	var kept []byte
	for !exts.Empty() {
		var id uint16
		var data cryptobyte.String
		exts.ReadUint16(&id)
		exts.ReadUint16LengthPrefixed(&data)
		if !slices.Contains(ids, id) {
			kept = append(kept, byte(id>>8), byte(id), byte(len(data)>>8), byte(len(data)))
			kept = append(kept, data...)
		}
	}
	body := append(append([]byte(nil), head...), byte(len(kept)>>8), byte(len(kept)))
	body = append(body, kept...)
	out := []byte{0x16, h.Record[1], h.Record[2], byte((len(body) + 4) >> 8), byte(len(body) + 4),
		1, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}
	return append(out, body...)
}
