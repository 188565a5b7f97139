package ui

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"inspector/content"
	"inspector/engine/hooks/breakpoint"
)

// protoBody is a paused gRPC, Connect or protobuf body shown as editable JSON: the
// messages decoded with the schema of the :path method, one JSON object each (a JSON
// array when there are several), encoded again when the session continues edited.
type protoBody struct {
	protos *content.Protos
	md     protoreflect.MessageDescriptor
	framed bool // length-prefixed messages (gRPC, gRPC-Web, Connect streaming)
	text   string
}

// newProtoBody returns the JSON form of a paused body when it is protobuf and protos
// know its method; nil when the body is kept as it is (another type, no schema, a body
// only partly shown, trailer frames, or messages that do not decode as the schema says).
func newProtoBody(protos *content.Protos, p breakpoint.Paused) *protoBody {
	if protos == nil || p.BodyTruncated || len(p.Body) == 0 {
		return nil
	}
	mt, _, err := mime.ParseMediaType(p.Header.Get("Content-Type"))
	if err != nil || strings.HasSuffix(mt, "+json") {
		return nil
	}
	kind, _ := content.KindOfType(mt)
	framed := kind == content.KindGRPC || kind == content.KindGRPCWeb || kind == content.KindConnect
	if !framed && kind != content.KindProtobuf {
		return nil
	}
	u, err := url.Parse(p.URL)
	if err != nil {
		return nil
	}
	m, ok := protos.Method(u.Path)
	if !ok {
		return nil
	}
	pb := &protoBody{protos: protos, md: m.Input(), framed: framed}
	if p.Phase == breakpoint.PhaseResponse {
		pb.md = m.Output()
	}
	msgs := [][]byte{p.Body}
	if framed {
		frames, err := content.SplitFrames(kind, p.Body)
		if err != nil {
			return nil
		}
		msgs = msgs[:0]
		enc := strings.ToLower(strings.TrimSpace(p.Header.Get("Grpc-Encoding")))
		if kind == content.KindConnect {
			enc = strings.ToLower(strings.TrimSpace(p.Header.Get("Connect-Content-Encoding")))
		}
		for _, f := range frames {
			if f.Partial || f.Trailer || f.EndStream {
				return nil
			}
			data := f.Data
			if f.Compressed {
				if data, _, err = content.DecodeCodings([]string{enc}, f.Data, content.DefaultLimit); err != nil {
					return nil
				}
			}
			msgs = append(msgs, data)
		}
	}
	texts := make([]string, len(msgs))
	for i, b := range msgs {
		if texts[i], err = protos.MessageJSON(pb.md, b); err != nil {
			return nil
		}
	}
	if len(texts) == 1 {
		pb.text = texts[0]
	} else {
		pb.text = "[\n" + strings.Join(texts, ",\n") + "\n]"
	}
	return pb
}

// encode turns the edited JSON back into the body: each message encoded with the
// schema and, for framed kinds, given its 5-byte prefix (compression flag 0: the
// messages go uncompressed, which every gRPC peer accepts whatever grpc-encoding says).
func (pb *protoBody) encode(text string) ([]byte, error) {
	msgs := []json.RawMessage{json.RawMessage(text)}
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "[") {
		if !pb.framed {
			return nil, errors.New("a protobuf body holds one message: edit one JSON object, not an array")
		}
		if err := json.Unmarshal([]byte(t), &msgs); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
	}
	var out bytes.Buffer
	for i, m := range msgs {
		wire, err := pb.protos.EncodeJSON(pb.md, string(m))
		if err != nil {
			if len(msgs) > 1 {
				return nil, fmt.Errorf("message %d: %w", i+1, err)
			}
			return nil, err
		}
		if pb.framed {
			var prefix [5]byte
			binary.BigEndian.PutUint32(prefix[1:], uint32(len(wire)))
			out.Write(prefix[:])
		}
		out.Write(wire)
	}
	return out.Bytes(), nil
}

// useProtos shows the body as JSON when it is protobuf with a known schema.
func (e *PausedEditor) useProtos(protos *content.Protos) {
	pb := newProtoBody(protos, e.p)
	if pb == nil {
		return
	}
	e.proto, e.heldBody = pb, nil
	e.Body.Wrapping = entryWrapping([]byte(pb.text))
	e.Body.SetText(pb.text)
	e.Info.SetText(e.Info.Text + fmt.Sprintf(" The messages are shown as JSON (%s) and encoded again when you continue edited.", pb.md.FullName()))
}

// editedBody returns the body to send when the user changed it: the typed bytes, or
// for a protobuf body shown as JSON its messages encoded again.
func (e *PausedEditor) editedBody() ([]byte, bool, error) {
	if e.proto != nil {
		if e.Body.Text == e.proto.text {
			return nil, false, nil
		}
		b, err := e.proto.encode(e.Body.Text)
		return b, err == nil, err
	}
	b := bodyOf(e.Body, e.heldBody)
	return b, string(b) != string(e.p.Body), nil
}
