package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"inspector/engine/session"
)

// Session records
//
// The sessions bucket holds each session without WebSocket messages (they live in the
// messages bucket). Three record formats exist:
//
//   - metaFormatInline (first byte 0x03): the current one (schema 2), written by
//     appendSessionMeta. The second byte is a place mask (placeRequestInline,
//     placeResponseInline, placeBodies, placeMessages); then the fields of
//     metaFormatBinary; then the bytes of each body whose inline bit is set (request, then
//     response), as uvarint length ‖ bytes. A body is inline when it was not spilled and
//     holds at most maxInlineBody bytes; the bytes of other bodies are in the bodies bucket
//     as before (placeBodies). placeMessages is set when the messages bucket holds the
//     session's messages. Deleting a session looks only in the buckets its mask names.
//     With placeCertRefs, a certificate table follows the mask: uvarint(n) ‖ n references
//     of certRefLen bytes (certs bucket keys, see certs.go), and each TLS certificate in
//     the fields is a uvarint index into that table instead of its bytes: a connection's
//     certificate chain is stored once, not in every session of it. With placeProcess,
//     uvarint(PID) ‖ process name of the client leg, then of the upstream leg (always
//     empty today), follow the comment; the bit is set only when one is known, so
//     records without process attribution are byte-identical to before. With
//     placeFingerprint, each leg's fingerprint follows (client, then upstream): a
//     presence byte, then JA3, JA3Raw, JA4, H2 and Mirror as strings. With placeExtras
//     (set only when one of them is not zero), uvarint(MessagesSeen) ‖ the request body's
//     NotCaptured ‖ the response body's follow.
//   - metaFormatBinary (first byte 0x02): schema 1 files. The fields in a fixed order:
//     strings and byte slices as uvarint length ‖ bytes, integers as (u)varints, booleans
//     as one byte, times as uvarint(nanosecond+1) ‖ varint(Unix seconds) or a single 0 for
//     the zero time, optional parts (TLS, Response, Error) behind a presence byte, headers
//     as uvarint(keys) then per key: name, uvarint(values), values. Bodies are in the
//     bodies bucket. Still read, never written.
//   - JSON (first byte '{'): what schema 1 stores wrote before the binary form existed;
//     bodies in the bodies bucket. Still read, never written.
//
// Decoding copies every string and byte slice, so the result does not alias bbolt's memory.
//
// A field added to session.Session must be added to both appendSessionFields and
// decodeSessionRecord (TestMetaCodecCoversEveryField fails until it is).
const (
	metaFormatBinary = 2
	metaFormatInline = 3
	// metaFormatMore (first byte 0x04) is metaFormatInline with a second mask byte
	// after the place mask (moreInterim); written only when that byte is not zero, so
	// records of sessions without 1xx responses stay byte-identical to metaFormatInline.
	metaFormatMore = 4
)

// Bits of the second mask byte of a metaFormatMore record.
const (
	// moreInterim: the session's 1xx responses follow the extras (before the inline
	// bodies): uvarint(n) ‖ n × (uvarint(status) ‖ time ‖ header).
	moreInterim = 1 << 0
	moreKnown   = moreInterim
)

// recordHead is the length of a record's format and mask bytes (0 for the older formats).
func recordHead(v []byte) int {
	switch {
	case len(v) >= 2 && v[0] == metaFormatInline:
		return 2
	case len(v) >= 3 && v[0] == metaFormatMore:
		return 3
	}
	return 0
}

// Place mask bits of a metaFormatInline record (its second byte).
const (
	placeRequestInline  = 1 << 0 // the request body's bytes are in the record
	placeResponseInline = 1 << 1 // the response body's bytes are in the record
	placeMessages       = 1 << 2 // the messages bucket holds the session's messages
	placeBodies         = 1 << 3 // the bodies bucket holds bytes of a body of the session
	placeCertRefs       = 1 << 4 // TLS certificates are references into the certs bucket
	placeProcess        = 1 << 5 // the client's PID and process name follow the comment
	placeFingerprint    = 1 << 6 // the legs' fingerprints follow (after the process part)
	placeExtras         = 1 << 7 // MessagesSeen and the bodies' NotCaptured follow (after the fingerprints)
	placeKnown          = placeRequestInline | placeResponseInline | placeMessages | placeBodies | placeCertRefs | placeProcess | placeFingerprint | placeExtras

	// placeLegacy is the mask of a record in an older format: any body bytes in the
	// bodies bucket, messages possibly in the messages bucket.
	placeLegacy = placeMessages | placeBodies
)

// maxInlineBody is the largest body kept inside the session record instead of the bodies
// bucket: one bbolt Put (a B+tree search, a key and its page space) less per body.
const maxInlineBody = 1024

// inlineBody reports whether b's bytes go into the session record.
func inlineBody(b *session.Body) bool {
	return b.Spilled == "" && len(b.Data) <= maxInlineBody
}

var errBadMeta = errors.New("malformed session record")

// errMissingCert: a record refers to a certificate the certs bucket does not hold.
var errMissingCert = errors.New("session record refers to a missing certificate")

// errTimeRange: a time the JSON and HAR outputs could not write (RFC 3339 needs years
// 0–9999), refused when storing so every stored session can be exported.
var errTimeRange = errors.New("session has a time outside the years 0-9999")

const (
	minUnix = -62167219200 // 0000-01-01T00:00:00Z
	maxUnix = 253402300799 // 9999-12-31T23:59:59Z
)

func timeInRange(t time.Time) bool {
	u := t.Unix()
	return t.IsZero() || (u >= minUnix && u <= maxUnix)
}

// checkSessionMeta reports errTimeRange when a time of ss cannot be exported.
func checkSessionMeta(ss *session.Session) error {
	t := &ss.Timings
	for _, tm := range [...]time.Time{ss.Started, t.ClientConnected, t.ClientTLSDone,
		t.RequestHeaders, t.RequestDone, t.DNSStart, t.DNSDone, t.ConnectStart,
		t.ConnectDone, t.UpstreamTLSDone, t.RequestSent, t.FirstByte, t.ResponseDone} {
		if !timeInRange(tm) {
			return errTimeRange
		}
	}
	for _, in := range ss.Interim {
		if !timeInRange(in.At) {
			return errTimeRange
		}
	}
	return nil
}

// sessionPlace is the place mask of ss's record.
func sessionPlace(ss *session.Session) byte {
	var place byte
	if inlineBody(&ss.Request.Body) {
		place |= placeRequestInline
	} else {
		place |= placeBodies
	}
	if p := ss.Response; p != nil {
		if inlineBody(&p.Body) {
			place |= placeResponseInline
		} else {
			place |= placeBodies
		}
	}
	if len(ss.Messages) > 0 {
		place |= placeMessages
	}
	if hasProcess(&ss.Client) || hasProcess(&ss.Upstream) {
		place |= placeProcess
	}
	if ss.Client.Fingerprint != nil || ss.Upstream.Fingerprint != nil {
		place |= placeFingerprint
	}
	if hasExtras(ss) {
		place |= placeExtras
	}
	return place
}

// appendSessionMeta appends the record of ss (metaFormatInline: small bodies inline,
// messages left out, a spilled body's reference becomes SpilledInStore, certificates
// inline) to dst. Call checkSessionMeta first: this encodes any time, the readers of the
// store need years 0–9999. The bodies not inline (see sessionPlace) belong in the bodies
// bucket.
func appendSessionMeta(dst []byte, ss *session.Session) []byte {
	return appendSessionRecord(dst, ss, nil)
}

// appendSessionRecord is appendSessionMeta; with refs not nil, the certificates of ss
// are written as references to refs.refs, which it fills (the caller stores them).
func appendSessionRecord(dst []byte, ss *session.Session, refs *certTable) []byte {
	place := sessionPlace(ss)
	if refs != nil {
		refs.reset()
		refs.addConn(&ss.Client)
		refs.addConn(&ss.Upstream)
		if len(refs.refs) == 0 {
			refs = nil
		} else {
			place |= placeCertRefs
		}
	}
	if len(ss.Interim) > 0 {
		dst = append(dst, metaFormatMore, place, moreInterim)
	} else {
		dst = append(dst, metaFormatInline, place)
	}
	if refs != nil {
		dst = binary.AppendUvarint(dst, uint64(len(refs.refs)))
		for i := range refs.refs {
			dst = append(dst, refs.refs[i][:]...)
		}
	}
	dst = appendSessionFields(dst, ss, refs)
	if place&placeProcess != 0 {
		for _, c := range [...]*session.Conn{&ss.Client, &ss.Upstream} {
			dst = binary.AppendUvarint(dst, uint64(c.PID))
			dst = appendStr(dst, c.Process)
		}
	}
	if place&placeFingerprint != 0 {
		for _, f := range [...]*session.Fingerprint{ss.Client.Fingerprint, ss.Upstream.Fingerprint} {
			if f == nil {
				dst = append(dst, 0)
				continue
			}
			dst = append(dst, 1)
			for _, v := range [...]string{f.JA3, f.JA3Raw, f.JA4, f.H2, f.Mirror} {
				dst = appendStr(dst, v)
			}
		}
	}
	if place&placeExtras != 0 {
		dst = binary.AppendUvarint(dst, uint64(ss.MessagesSeen))
		dst = appendStr(dst, ss.Request.Body.NotCaptured)
		var why string
		if ss.Response != nil {
			why = ss.Response.Body.NotCaptured
		}
		dst = appendStr(dst, why)
	}
	if len(ss.Interim) > 0 {
		dst = binary.AppendUvarint(dst, uint64(len(ss.Interim)))
		for _, in := range ss.Interim {
			dst = binary.AppendUvarint(dst, uint64(in.Status))
			dst = appendTime(dst, in.At)
			dst = appendHeader(dst, in.Header)
		}
	}
	if place&placeRequestInline != 0 {
		dst = appendBytes(dst, ss.Request.Body.Data)
	}
	if place&placeResponseInline != 0 {
		dst = appendBytes(dst, ss.Response.Body.Data)
	}
	return dst
}

// appendSessionFields appends the fields of ss common to the binary formats (everything
// but body bytes and messages); certificates as indexes into refs, or their bytes when
// refs is nil.
func appendSessionFields(dst []byte, ss *session.Session, refs *certTable) []byte {
	dst = binary.AppendUvarint(dst, uint64(ss.ID))
	dst = binary.AppendUvarint(dst, uint64(ss.ReplayOf))
	dst = appendTime(dst, ss.Started)
	next := 0 // refs.index walks the certificates in the order addConn saw them
	dst = appendConn(dst, &ss.Client, refs, &next)
	dst = appendConn(dst, &ss.Upstream, refs, &next)
	r := &ss.Request
	dst = appendStr(dst, r.Method)
	dst = appendStr(dst, r.URL)
	dst = appendStr(dst, r.Proto)
	dst = appendHeader(dst, r.Header)
	dst = appendHeader(dst, r.Trailer)
	dst = appendBodyMeta(dst, &r.Body)
	dst = binary.AppendVarint(dst, r.HeadSize)
	if p := ss.Response; p == nil {
		dst = append(dst, 0)
	} else {
		dst = append(dst, 1)
		dst = binary.AppendVarint(dst, int64(p.Status))
		dst = appendStr(dst, p.Reason)
		dst = appendStr(dst, p.Proto)
		dst = appendHeader(dst, p.Header)
		dst = appendHeader(dst, p.Trailer)
		dst = appendBodyMeta(dst, &p.Body)
		dst = binary.AppendVarint(dst, p.HeadSize)
	}
	t := &ss.Timings
	for _, tm := range [...]time.Time{t.ClientConnected, t.ClientTLSDone, t.RequestHeaders,
		t.RequestDone, t.DNSStart, t.DNSDone, t.ConnectStart, t.ConnectDone,
		t.UpstreamTLSDone, t.RequestSent, t.FirstByte, t.ResponseDone} {
		dst = appendTime(dst, tm)
	}
	if e := ss.Error; e == nil {
		dst = append(dst, 0)
	} else {
		dst = append(dst, 1)
		dst = appendStr(dst, string(e.Phase))
		dst = appendStr(dst, string(e.Side))
		dst = appendStr(dst, e.Proto)
		dst = appendStr(dst, e.Message)
	}
	dst = binary.AppendUvarint(dst, uint64(ss.Flags))
	dst = appendStr(dst, ss.Mark)
	dst = appendStr(dst, ss.Comment)
	return dst
}

func hasProcess(c *session.Conn) bool { return c.PID != 0 || c.Process != "" }

// hasExtras reports whether ss has a field of placeExtras set.
func hasExtras(ss *session.Session) bool {
	return ss.MessagesSeen != 0 || ss.Request.Body.NotCaptured != "" || (ss.Response != nil && ss.Response.Body.NotCaptured != "")
}

func appendBytes(dst []byte, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func appendTime(dst []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(t.Nanosecond())+1)
	return binary.AppendVarint(dst, t.Unix())
}

func appendConn(dst []byte, c *session.Conn, refs *certTable, next *int) []byte {
	dst = appendStr(dst, c.Addr)
	dst = appendStr(dst, c.Proto)
	dst = binary.AppendUvarint(dst, c.ConnID)
	dst = appendBool(dst, c.Reused)
	dst = appendStr(dst, c.ProtoReason)
	if c.TLS == nil {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	t := c.TLS
	dst = appendStr(dst, t.Version)
	dst = appendStr(dst, t.CipherSuite)
	dst = appendStr(dst, t.ServerName)
	dst = appendStr(dst, t.ALPN)
	dst = appendBool(dst, t.Resumed)
	dst = binary.AppendUvarint(dst, uint64(len(t.Certificates)))
	for _, c := range t.Certificates {
		if refs != nil {
			dst = binary.AppendUvarint(dst, uint64(refs.index[*next]))
			*next++
		} else {
			dst = appendBytes(dst, c)
		}
	}
	return dst
}

func appendHeader(dst []byte, h http.Header) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(h)))
	for k, vs := range h {
		dst = appendStr(dst, k)
		dst = binary.AppendUvarint(dst, uint64(len(vs)))
		for _, v := range vs {
			dst = appendStr(dst, v)
		}
	}
	return dst
}

func appendBodyMeta(dst []byte, b *session.Body) []byte {
	dst = binary.AppendVarint(dst, b.Size)
	dst = appendBool(dst, b.Truncated)
	spilled := b.Spilled
	if spilled != "" {
		spilled = SpilledInStore
	}
	return appendStr(dst, spilled)
}

// metaReader decodes a binary session record (recReader plus the record's compound
// fields).
type metaReader struct{ recReader }

func (r *metaReader) time() time.Time {
	ns := r.uvarint()
	if ns == 0 {
		return time.Time{}
	}
	sec := r.varint()
	if ns > 1e9 {
		r.fail()
		return time.Time{}
	}
	return time.Unix(sec, int64(ns-1))
}

func (r *metaReader) conn(c *session.Conn, certs [][]byte) {
	c.Addr = r.str()
	c.Proto = r.str()
	c.ConnID = r.uvarint()
	c.Reused = r.bool()
	c.ProtoReason = r.str()
	if !r.bool() {
		return
	}
	t := &session.TLSInfo{}
	t.Version = r.str()
	t.CipherSuite = r.str()
	t.ServerName = r.str()
	t.ALPN = r.str()
	t.Resumed = r.bool()
	if n := r.count(); n > 0 {
		t.Certificates = make([][]byte, n)
		for i := range t.Certificates {
			if certs == nil {
				t.Certificates[i] = append([]byte(nil), r.bytes()...)
				continue
			}
			if x := r.uvarint(); x < uint64(len(certs)) {
				t.Certificates[i] = append([]byte(nil), certs[x]...)
			} else {
				r.fail()
			}
		}
	}
	c.TLS = t
}

func (r *metaReader) header() http.Header {
	n := r.count()
	if n == 0 {
		return nil
	}
	h := make(http.Header, n)
	for range n {
		k := r.str()
		m := r.count()
		var vs []string
		if m > 0 {
			vs = make([]string, m)
			for j := range vs {
				vs[j] = r.str()
			}
		}
		h[k] = vs
	}
	return h
}

func (r *metaReader) body(b *session.Body) {
	b.Size = r.varint()
	b.Truncated = r.bool()
	b.Spilled = r.str()
}

// decodeSessionMeta decodes a sessions-bucket record of any format, without certificate
// references, into a fresh Session; it never aliases v. Inline bodies are in Body.Data;
// the others are not read.
func decodeSessionMeta(v []byte) (*session.Session, error) {
	ss, _, err := decodeSessionRecord(v, nil)
	return ss, err
}

// recordPlace is the place mask of a record without decoding it.
func recordPlace(v []byte) byte {
	if recordHead(v) > 0 {
		return v[1]
	}
	return placeLegacy
}

// recordCertRefs calls fn with each certificate reference of a record (none for records
// without placeCertRefs); it reports whether the table is well-formed.
func recordCertRefs(v []byte, fn func(ref []byte)) bool {
	if recordPlace(v)&placeCertRefs == 0 {
		return true
	}
	r := &metaReader{recReader{b: v[recordHead(v):]}}
	n := r.count()
	for range n {
		if len(r.b) < certRefLen {
			return false
		}
		fn(r.b[:certRefLen])
		r.b = r.b[certRefLen:]
	}
	return !r.err
}

// decodeSessionRecord is decodeSessionMeta that also returns the record's place mask
// (placeLegacy for the older formats). cert looks a certificate reference up (the certs
// bucket); a record with references fails without it.
func decodeSessionRecord(v []byte, cert func(ref []byte) []byte) (*session.Session, byte, error) {
	ss := new(session.Session)
	if len(v) > 0 && v[0] == '{' {
		if err := json.Unmarshal(v, ss); err != nil {
			return nil, 0, err
		}
		return ss, placeLegacy, nil
	}
	place, more := byte(placeLegacy), byte(0)
	switch {
	case len(v) >= 1 && v[0] == metaFormatBinary:
		v = v[1:]
	case len(v) >= 2 && v[0] == metaFormatInline && v[1]&^placeKnown == 0:
		place = v[1]
		v = v[2:]
	case len(v) >= 3 && v[0] == metaFormatMore && v[1]&^placeKnown == 0 && v[2]&^moreKnown == 0:
		place, more = v[1], v[2]
		v = v[3:]
	default:
		return nil, 0, errBadMeta
	}
	r := &metaReader{recReader{b: v}}
	var certs [][]byte
	if place&placeCertRefs != 0 {
		n := r.count()
		if n == 0 || cert == nil {
			return nil, 0, errBadMeta
		}
		certs = make([][]byte, n)
		for i := range certs {
			if len(r.b) < certRefLen {
				return nil, 0, errBadMeta
			}
			if certs[i] = cert(r.b[:certRefLen]); certs[i] == nil {
				return nil, 0, errMissingCert
			}
			r.b = r.b[certRefLen:]
		}
	}
	ss.ID = session.ID(r.uvarint())
	ss.ReplayOf = session.ID(r.uvarint())
	ss.Started = r.time()
	r.conn(&ss.Client, certs)
	r.conn(&ss.Upstream, certs)
	q := &ss.Request
	q.Method = r.str()
	q.URL = r.str()
	q.Proto = r.str()
	q.Header = r.header()
	q.Trailer = r.header()
	r.body(&q.Body)
	q.HeadSize = r.varint()
	if r.bool() {
		p := &session.Response{}
		p.Status = int(r.varint())
		p.Reason = r.str()
		p.Proto = r.str()
		p.Header = r.header()
		p.Trailer = r.header()
		r.body(&p.Body)
		p.HeadSize = r.varint()
		ss.Response = p
	}
	t := &ss.Timings
	for _, tm := range [...]*time.Time{&t.ClientConnected, &t.ClientTLSDone, &t.RequestHeaders,
		&t.RequestDone, &t.DNSStart, &t.DNSDone, &t.ConnectStart, &t.ConnectDone,
		&t.UpstreamTLSDone, &t.RequestSent, &t.FirstByte, &t.ResponseDone} {
		*tm = r.time()
	}
	if r.bool() {
		ss.Error = &session.Error{
			Phase:   session.Phase(r.str()),
			Side:    session.Side(r.str()),
			Proto:   r.str(),
			Message: r.str(),
		}
	}
	ss.Flags = session.Flags(r.uvarint())
	ss.Mark = r.str()
	ss.Comment = r.str()
	if place&placeProcess != 0 {
		for _, c := range [...]*session.Conn{&ss.Client, &ss.Upstream} {
			c.PID = int(r.uvarint())
			c.Process = r.str()
		}
	}
	if place&placeFingerprint != 0 {
		for _, c := range [...]*session.Conn{&ss.Client, &ss.Upstream} {
			if r.bool() {
				c.Fingerprint = &session.Fingerprint{JA3: r.str(), JA3Raw: r.str(), JA4: r.str(), H2: r.str(), Mirror: r.str()}
			}
		}
	}
	if place&placeExtras != 0 {
		ss.MessagesSeen = int64(r.uvarint())
		ss.Request.Body.NotCaptured = r.str()
		if why := r.str(); why != "" {
			if ss.Response == nil {
				return nil, 0, errBadMeta
			}
			ss.Response.Body.NotCaptured = why
		}
	}
	if more&moreInterim != 0 {
		n := r.count()
		if n == 0 {
			return nil, 0, errBadMeta
		}
		ss.Interim = make([]session.Interim, n)
		for i := range ss.Interim {
			in := &ss.Interim[i]
			in.Status = int(r.uvarint())
			in.At = r.time()
			in.Header = r.header()
		}
	}
	if place&placeRequestInline != 0 {
		ss.Request.Body.Data = r.dataCopy()
	}
	if place&placeResponseInline != 0 {
		if ss.Response == nil {
			return nil, 0, errBadMeta
		}
		ss.Response.Body.Data = r.dataCopy()
	}
	if r.err || len(r.b) != 0 {
		return nil, 0, errBadMeta
	}
	return ss, place, nil
}
