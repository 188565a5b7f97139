package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"inspector/engine/session"
)

// Frame batches are stored in a compact binary form (JSON cost 16% of the proxy's CPU
// under keep-alive load):
//
//	value   = 0x01 ‖ uvarint n ‖ n × frame
//	frame   = byte bits ‖ zigzag-varint Δtime ‖ uvarint conn ‖ uvarint stream ‖ uvarint length
//	          ‖ str type ‖ str flags ‖ str detail ‖ uvarint h ‖ h × (str name ‖ str value)
//	bits    = leg (bit 0: upstream) | dir (bit 1: out) | proto (bits 2–3: 0 other, 1 h2, 2 h3)
//	Δtime   = Unix nanoseconds minus the previous frame's (the first: minus 0)
//	str     = uvarint length ‖ bytes
//
// Values starting with '[' are JSON []session.Frame (written before the binary form).
const frameCodecV1 = 0x01

// maxFramesPerValue bounds what a decoder accepts, so a damaged length cannot make it
// allocate without limit.
const maxFramesPerValue = 1 << 20

var errFrameCodec = errors.New("malformed frame batch")

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendFrames encodes frames onto b.
func appendFrames(b []byte, frames []session.Frame) []byte {
	b = append(b, frameCodecV1)
	b = binary.AppendUvarint(b, uint64(len(frames)))
	var prev int64
	for i := range frames {
		f := &frames[i]
		var bits byte
		if f.Leg == "upstream" {
			bits |= 1
		}
		if f.Dir == "out" {
			bits |= 2
		}
		switch f.Proto {
		case session.HTTP2:
			bits |= 1 << 2
		case session.HTTP3:
			bits |= 2 << 2
		}
		b = append(b, bits)
		t := f.Time.UnixNano()
		b = binary.AppendVarint(b, t-prev)
		prev = t
		b = binary.AppendUvarint(b, f.ConnID)
		b = binary.AppendUvarint(b, f.Stream)
		b = binary.AppendUvarint(b, uint64(max(f.Length, 0)))
		b = appendStr(b, f.Type)
		b = appendStr(b, f.Flags)
		b = appendStr(b, f.Detail)
		b = binary.AppendUvarint(b, uint64(len(f.Headers)))
		for _, h := range f.Headers {
			b = appendStr(b, h.Name)
			b = appendStr(b, h.Value)
		}
	}
	return b
}

// decodeFrames decodes one stored batch, binary or JSON.
func decodeFrames(v []byte) ([]session.Frame, error) {
	if len(v) == 0 {
		return nil, errFrameCodec
	}
	if v[0] == '[' {
		var fs []session.Frame
		if err := jsonUnmarshal(v, &fs); err != nil {
			return nil, err
		}
		return fs, nil
	}
	if v[0] != frameCodecV1 {
		return nil, fmt.Errorf("%w: unknown encoding 0x%02x", errFrameCodec, v[0])
	}
	d := &recReader{b: v[1:]}
	n := d.uvarint()
	// Every frame takes at least 9 bytes.
	if d.err || n > maxFramesPerValue || n > uint64(len(d.b))/9 {
		return nil, errFrameCodec
	}
	out := make([]session.Frame, n)
	var t int64
	for i := range out {
		if len(d.b) == 0 {
			return nil, errFrameCodec
		}
		bits := d.b[0]
		d.b = d.b[1:]
		f := &out[i]
		f.Leg, f.Dir = "client", "in"
		if bits&1 != 0 {
			f.Leg = "upstream"
		}
		if bits&2 != 0 {
			f.Dir = "out"
		}
		switch bits >> 2 & 3 {
		case 1:
			f.Proto = session.HTTP2
		case 2:
			f.Proto = session.HTTP3
		}
		t += d.varint()
		f.Time = time.Unix(0, t).UTC()
		f.ConnID = d.uvarint()
		f.Stream = d.uvarint()
		l := d.uvarint()
		if l > 1<<40 {
			d.fail()
		}
		f.Length = int(l)
		f.Type = d.str()
		f.Flags = d.str()
		f.Detail = d.str()
		h := d.uvarint()
		if d.err || h > uint64(len(d.b))/2 {
			return nil, errFrameCodec
		}
		if h > 0 {
			f.Headers = make([]session.HeaderField, h)
			for j := range f.Headers {
				f.Headers[j] = session.HeaderField{Name: d.str(), Value: d.str()}
			}
		}
		if d.err {
			return nil, errFrameCodec
		}
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errFrameCodec, len(d.b))
	}
	return out, nil
}
