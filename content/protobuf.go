package content

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// maxProtoDepth bounds nesting in the schemaless decoder (protobuf's own limit is 100;
// deeper "messages" are shown as bytes).
const maxProtoDepth = 32

// maxProtoFields bounds how many fields one schemaless decode lists, so a crafted body
// of a million one-byte fields cannot build a huge tree.
const maxProtoFields = 100000

// ProtoField is one field of a protobuf message decoded without a schema.
type ProtoField struct {
	Number protowire.Number `json:"field"`
	// Wire is the wire type: "varint", "i64", "len", "i32", "group".
	Wire string `json:"wire"`
	// Exactly one of the following is set, by Wire and the heuristics: Varint (varint),
	// Fixed (i64, i32), String (len that is printable UTF-8), Message (len that parses as
	// a message, and group), Packed (len that parses as packed varints), Bytes (any other
	// len).
	Varint  *uint64      `json:"varint,omitempty"`
	Fixed   *uint64      `json:"fixed,omitempty"`
	String  *string      `json:"string,omitempty"`
	Message []ProtoField `json:"message,omitempty"`
	Packed  []uint64     `json:"packed,omitempty"`
	Bytes   []byte       `json:"bytes,omitempty"`
	// IsMessage marks an empty nested message or group (Message nil).
	IsMessage bool `json:"-"`
}

// ErrNotProtobuf: the bytes are not a protobuf message (a bad tag, a length past the
// end, an unbalanced group).
var ErrNotProtobuf = errors.New("not a protobuf message")

// DecodeProtoRaw decodes a protobuf message without its schema, like `protoc
// --decode_raw`, guessing for each length-delimited field whether it is a string, a
// nested message, packed varints or bytes. The fields before a damage are returned with
// an error naming the offset.
func DecodeProtoRaw(b []byte) ([]ProtoField, error) {
	n := 0
	return decodeProto(b, 0, &n, 0)
}

func decodeProto(b []byte, depth int, count *int, endGroup protowire.Number) ([]ProtoField, error) {
	var out []ProtoField
	off := 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return out, fmt.Errorf("%w: bad tag at byte %d: %v", ErrNotProtobuf, off, protowire.ParseError(n))
		}
		if typ == protowire.EndGroupType {
			if num != endGroup {
				return out, fmt.Errorf("%w: unexpected end of group %d at byte %d", ErrNotProtobuf, num, off)
			}
			return out, nil
		}
		*count++
		if *count > maxProtoFields {
			return out, fmt.Errorf("%w: more than %d fields", ErrNotProtobuf, maxProtoFields)
		}
		f := ProtoField{Number: num}
		b = b[n:]
		off += n
		switch typ {
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return out, fmt.Errorf("%w: field %d: bad varint at byte %d", ErrNotProtobuf, num, off)
			}
			f.Wire, f.Varint, n = "varint", &v, m
		case protowire.Fixed64Type:
			v, m := protowire.ConsumeFixed64(b)
			if m < 0 {
				return out, fmt.Errorf("%w: field %d: short fixed64 at byte %d", ErrNotProtobuf, num, off)
			}
			f.Wire, f.Fixed, n = "i64", &v, m
		case protowire.Fixed32Type:
			v, m := protowire.ConsumeFixed32(b)
			if m < 0 {
				return out, fmt.Errorf("%w: field %d: short fixed32 at byte %d", ErrNotProtobuf, num, off)
			}
			v64 := uint64(v)
			f.Wire, f.Fixed, n = "i32", &v64, m
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return out, fmt.Errorf("%w: field %d: length past the end at byte %d", ErrNotProtobuf, num, off)
			}
			f.Wire, n = "len", m
			classifyLen(&f, v, depth, count)
		case protowire.StartGroupType:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return out, fmt.Errorf("%w: field %d: bad group at byte %d", ErrNotProtobuf, num, off)
			}
			f.Wire, f.IsMessage, n = "group", true, m
			if depth < maxProtoDepth {
				f.Message, _ = decodeProto(b[:m], depth+1, count, num)
			}
		default:
			return out, fmt.Errorf("%w: field %d: wire type %d at byte %d", ErrNotProtobuf, num, typ, off)
		}
		out = append(out, f)
		b = b[n:]
		off += n
	}
	if endGroup != 0 {
		return out, fmt.Errorf("%w: group %d not closed", ErrNotProtobuf, endGroup)
	}
	return out, nil
}

func classifyLen(f *ProtoField, v []byte, depth int, count *int) {
	text := utf8.Valid(v)
	ctrl := false
	if text {
		for _, c := range v {
			if c < 0x20 || c == 0x7f {
				ctrl = true
				if c != '\t' && c != '\n' && c != '\r' {
					text = false
					break
				}
			}
		}
	}
	if len(v) > 0 && text && !ctrl {
		s := string(v)
		f.String = &s
		return
	}
	if depth < maxProtoDepth && len(v) > 0 {
		save := *count
		if m, err := decodeProto(v, depth+1, count, 0); err == nil {
			f.Message, f.IsMessage = m, true
			return
		}
		*count = save
	}
	if text && len(v) > 0 {
		s := string(v)
		f.String = &s
		return
	}
	if p, ok := packedVarints(v); ok {
		f.Packed = p
		return
	}
	if len(v) == 0 {
		s := ""
		f.String = &s
		return
	}
	f.Bytes = v
}

func packedVarints(b []byte) ([]uint64, bool) {
	if len(b) == 0 {
		return nil, false
	}
	var out []uint64
	for len(b) > 0 {
		v, n := protowire.ConsumeVarint(b)
		if n < 0 || len(out) >= 4096 {
			return nil, false
		}
		out = append(out, v)
		b = b[n:]
	}
	return out, true
}

// FormatProtoRaw renders schemaless fields as indented text, one field a line:
//
//	1: 150
//	2: "hello"
//	3 {
//	  1: 1
//	}
//	4: [1, 2, 3]  // packed
//	5: 0x3ff0000000000000  // i64 = 1 (double)
//	6: <0a ff …>  // 12 bytes
func FormatProtoRaw(fields []ProtoField) string {
	var sb strings.Builder
	formatProto(&sb, fields, 0)
	return sb.String()
}

func formatProto(sb *strings.Builder, fields []ProtoField, indent int) {
	pad := strings.Repeat("  ", indent)
	for _, f := range fields {
		sb.WriteString(pad)
		sb.WriteString(strconv.Itoa(int(f.Number)))
		switch {
		case f.Varint != nil:
			v := *f.Varint
			fmt.Fprintf(sb, ": %d", v)
			if int64(v) < 0 {
				fmt.Fprintf(sb, "  // int64 %d", int64(v))
			}
		case f.Fixed != nil && f.Wire == "i32":
			v := uint32(*f.Fixed)
			fmt.Fprintf(sb, ": 0x%08x  // i32 = %d, float %g", v, int32(v), math.Float32frombits(v))
		case f.Fixed != nil:
			v := *f.Fixed
			fmt.Fprintf(sb, ": 0x%016x  // i64 = %d, double %g", v, int64(v), math.Float64frombits(v))
		case f.String != nil:
			sb.WriteString(": ")
			sb.WriteString(strconv.Quote(*f.String))
		case f.IsMessage:
			if f.Wire == "group" {
				sb.WriteString(" group")
			}
			sb.WriteString(" {\n")
			formatProto(sb, f.Message, indent+1)
			sb.WriteString(pad)
			sb.WriteString("}")
		case f.Packed != nil:
			sb.WriteString(": [")
			for i, v := range f.Packed {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString(strconv.FormatUint(v, 10))
			}
			sb.WriteString("]  // packed varints")
		default:
			show := f.Bytes
			more := ""
			if len(show) > 64 {
				show, more = show[:64], " …"
			}
			fmt.Fprintf(sb, ": <%s%s>  // %d bytes", spacedHex(show), more, len(f.Bytes))
		}
		sb.WriteByte('\n')
	}
}

func spacedHex(b []byte) string {
	h := hex.EncodeToString(b)
	var sb strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(h[i : i+2])
	}
	return sb.String()
}
