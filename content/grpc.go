package content

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	_ "google.golang.org/genproto/googleapis/rpc/errdetails" // registers google.rpc.* detail types
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	_ "google.golang.org/protobuf/types/known/anypb"      // well-known types for details
	_ "google.golang.org/protobuf/types/known/wrapperspb" // well-known types for details
)

// Frame is one length-prefixed message of a gRPC, gRPC-Web or Connect stream.
type Frame struct {
	// Flags is the frame's first byte: 0x01 compressed; gRPC-Web 0x80 trailers;
	// Connect 0x02 end of stream.
	Flags byte `json:"flags"`
	// Data is the message as sent (still compressed when Compressed).
	Data []byte `json:"-"`
	// Size is the length the prefix declared; Partial says fewer bytes were there.
	Size    int  `json:"size"`
	Partial bool `json:"partial,omitempty"`
	// Compressed is flag 0x01; Trailer marks a gRPC-Web trailer frame (Data is an
	// HTTP/1-style header block) and EndStream a Connect end-of-stream frame (Data is
	// JSON).
	Compressed bool `json:"compressed,omitempty"`
	Trailer    bool `json:"trailer,omitempty"`
	EndStream  bool `json:"end_stream,omitempty"`
}

// ErrFraming: the body is not a sequence of length-prefixed messages.
var ErrFraming = errors.New("bad gRPC message framing")

// maxFrames bounds how many frames SplitFrames lists.
const maxFrames = 10000

// SplitFrames splits a gRPC / gRPC-Web / Connect streaming body into its length-prefixed
// messages (1 flag byte, 4 bytes big-endian length, the message). kind picks how flag
// bits are read (KindGRPC, KindGRPCWeb, KindConnect). A last frame cut by the capture is
// returned with Partial set; bytes that cannot start a frame are an ErrFraming error,
// with the frames before them.
func SplitFrames(kind Kind, body []byte) ([]Frame, error) {
	var out []Frame
	off := 0
	for len(body) > 0 {
		if len(out) >= maxFrames {
			return out, fmt.Errorf("%w: more than %d messages; the rest not listed", ErrFraming, maxFrames)
		}
		if len(body) < 5 {
			return out, fmt.Errorf("%w: %d stray bytes at offset %d (a frame header is 5)", ErrFraming, len(body), off)
		}
		fl := body[0]
		n := binary.BigEndian.Uint32(body[1:5])
		known := byte(0x01)
		switch kind {
		case KindGRPCWeb, KindGRPCWebText:
			known |= 0x80
		case KindConnect:
			known |= 0x02
		}
		if fl&^known != 0 {
			return out, fmt.Errorf("%w: flag byte 0x%02x at offset %d", ErrFraming, fl, off)
		}
		f := Frame{Flags: fl, Size: int(n), Compressed: fl&0x01 != 0,
			Trailer: kind != KindConnect && fl&0x80 != 0, EndStream: kind == KindConnect && fl&0x02 != 0}
		body = body[5:]
		off += 5
		if uint64(n) > uint64(len(body)) {
			f.Data, f.Partial = body, true
			out = append(out, f)
			return out, nil
		}
		f.Data = body[:n]
		out = append(out, f)
		body = body[n:]
		off += int(n)
	}
	return out, nil
}

// DecodeGRPCWebText undoes grpc-web-text's base64 (which may be several padded chunks
// one after another, as each message is encoded alone).
func DecodeGRPCWebText(body []byte) ([]byte, error) {
	body = bytes.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == ' ' {
			return -1
		}
		return r
	}, body)
	var out []byte
	for len(body) > 0 {
		end := len(body)
		if i := bytes.IndexByte(body, '='); i >= 0 {
			end = i
			for end < len(body) && body[end] == '=' {
				end++
			}
		}
		chunk := body[:end]
		enc := base64.StdEncoding
		if chunk[len(chunk)-1] != '=' && len(chunk)%4 != 0 {
			enc = base64.RawStdEncoding
		}
		dec, err := enc.DecodeString(string(chunk))
		if err != nil {
			return out, fmt.Errorf("grpc-web-text: %w", err)
		}
		out = append(out, dec...)
		body = body[end:]
	}
	return out, nil
}

// Status is a gRPC call's outcome from its trailers (or trailers-only headers, or a
// gRPC-Web trailer frame, or a Connect end-of-stream message).
type Status struct {
	Code    int    `json:"code"`
	Name    string `json:"name"`
	Message string `json:"message,omitempty"`
	// Details are the google.rpc.Status details decoded from grpc-status-details-bin,
	// each as its type URL and the schemaless text of its value.
	Details []StatusDetail `json:"details,omitempty"`
}

// StatusDetail is one google.protobuf.Any of a google.rpc.Status.
type StatusDetail struct {
	TypeURL string `json:"type_url"`
	Value   string `json:"value"`
}

var grpcCodeNames = []string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// CodeName returns the canonical name of a gRPC status code.
func CodeName(code int) string {
	if code >= 0 && code < len(grpcCodeNames) {
		return grpcCodeNames[code]
	}
	return "CODE_" + strconv.Itoa(code)
}

// GRPCStatus reads grpc-status, grpc-message (percent-decoded) and
// grpc-status-details-bin from the first header that has grpc-status; ok is false when
// none does.
func GRPCStatus(hs ...http.Header) (st Status, ok bool) {
	for _, h := range hs {
		v := h.Get("Grpc-Status")
		if v == "" {
			continue
		}
		code, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return Status{Code: 2, Name: "UNKNOWN", Message: "unparsable grpc-status " + strconv.Quote(v)}, true
		}
		st = Status{Code: code, Name: CodeName(code), Message: percentDecode(h.Get("Grpc-Message"))}
		if d := h.Get("Grpc-Status-Details-Bin"); d != "" {
			st.Details = statusDetails(d)
		}
		return st, true
	}
	return Status{}, false
}

// ParseTrailerFrame parses a gRPC-Web trailer frame (an HTTP/1-style header block).
func ParseTrailerFrame(data []byte) http.Header {
	r := textproto.NewReader(bufioReader(append(bytes.TrimRight(data, "\r\n"), "\r\n\r\n"...)))
	mh, _ := r.ReadMIMEHeader()
	return http.Header(mh)
}

func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// statusDetails decodes google.rpc.Status {1 code, 2 message, 3 repeated Any details}
// from base64 (padded or not), schemaless for each Any value.
func statusDetails(v string) []StatusDetail {
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(v, "="))
	if err != nil {
		return []StatusDetail{{Value: "undecodable grpc-status-details-bin: " + err.Error()}}
	}
	var out []StatusDetail
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			break
		}
		raw = raw[n:]
		m := protowire.ConsumeFieldValue(num, typ, raw)
		if m < 0 {
			break
		}
		if num == 3 && typ == protowire.BytesType {
			anyMsg, _ := protowire.ConsumeBytes(raw)
			out = append(out, decodeAny(anyMsg))
		}
		raw = raw[m:]
	}
	return out
}

func decodeAny(b []byte) StatusDetail {
	var d StatusDetail
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			break
		}
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			break
		}
		switch num {
		case 1:
			d.TypeURL = string(v)
		case 2:
			d.Value = anyValueText(d.TypeURL, v)
		}
		b = b[n+m:]
	}
	return d
}

// anyValueText renders an Any's value: as protojson when its type is known (the
// google.rpc error details — BadRequest, ErrorInfo, RetryInfo, … — and the well-known
// types are linked in), else schemaless.
func anyValueText(typeURL string, v []byte) string {
	if typeURL != "" {
		if mt, err := protoregistry.GlobalTypes.FindMessageByURL(typeURL); err == nil {
			m := mt.New().Interface()
			if proto.Unmarshal(v, m) == nil {
				if b, err := (protojson.MarshalOptions{Multiline: true, Indent: "  "}).Marshal(m); err == nil {
					return string(b)
				}
			}
		}
	}
	f, err := DecodeProtoRaw(v)
	s := FormatProtoRaw(f)
	if err != nil {
		s += "// " + err.Error() + "\n"
	}
	return s
}
