package content

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

func frame(flag byte, msg []byte) []byte {
	b := []byte{flag, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

func TestSplitFrames(t *testing.T) {
	m1 := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "one")
	m2 := gz(m1)
	body := append(frame(0, m1), frame(1, m2)...)
	fs, err := SplitFrames(KindGRPC, body)
	if err != nil || len(fs) != 2 || fs[0].Compressed || !fs[1].Compressed || string(fs[0].Data) != string(m1) {
		t.Fatalf("frames %+v err %v", fs, err)
	}
	// A frame cut by the capture is Partial, not an error.
	fs, err = SplitFrames(KindGRPC, body[:len(body)-3])
	if err != nil || len(fs) != 2 || !fs[1].Partial {
		t.Fatalf("cut: %+v %v", fs, err)
	}
	// Stray bytes and unknown flags are clear errors with the frames before them.
	if fs, err := SplitFrames(KindGRPC, append(frame(0, m1), 0, 0)); !errors.Is(err, ErrFraming) || len(fs) != 1 {
		t.Errorf("stray: %v", err)
	}
	if _, err := SplitFrames(KindGRPC, frame(0x80, nil)); !errors.Is(err, ErrFraming) {
		t.Errorf("0x80 in plain gRPC: %v", err)
	}
	// gRPC-Web trailer frame and Connect end-of-stream.
	web := append(frame(0, m1), frame(0x80, []byte("grpc-status: 5\r\ngrpc-message: no%20such\r\n"))...)
	fs, err = SplitFrames(KindGRPCWeb, web)
	if err != nil || len(fs) != 2 || !fs[1].Trailer {
		t.Fatalf("web: %+v %v", fs, err)
	}
	st, ok := GRPCStatus(ParseTrailerFrame(fs[1].Data))
	if !ok || st.Code != 5 || st.Name != "NOT_FOUND" || st.Message != "no such" {
		t.Errorf("web status %+v", st)
	}
	fs, err = SplitFrames(KindConnect, append(frame(0, m1), frame(2, []byte(`{}`))...))
	if err != nil || !fs[1].EndStream {
		t.Errorf("connect: %+v %v", fs, err)
	}
}

func TestGRPCWebText(t *testing.T) {
	m := frame(0, []byte("abc"))
	tr := frame(0x80, []byte("grpc-status: 0\r\n"))
	// Each message base64-encoded on its own, padding between them.
	body := base64.StdEncoding.EncodeToString(m) + base64.StdEncoding.EncodeToString(tr)
	dec, err := DecodeGRPCWebText([]byte(body))
	if err != nil || string(dec) != string(append(m, tr...)) {
		t.Fatalf("%q %v", dec, err)
	}
	if _, err := DecodeGRPCWebText([]byte("!!!")); err == nil {
		t.Error("garbage base64 accepted")
	}
}

func TestGRPCStatusDetails(t *testing.T) {
	// google.rpc.Status{code 3, message, details [Any{type_url, value {1: "field"}}]}
	val := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "field")
	var anyMsg []byte
	anyMsg = protowire.AppendString(protowire.AppendTag(anyMsg, 1, protowire.BytesType), "type.googleapis.com/google.rpc.BadRequest")
	anyMsg = protowire.AppendBytes(protowire.AppendTag(anyMsg, 2, protowire.BytesType), val)
	var st []byte
	st = protowire.AppendVarint(protowire.AppendTag(st, 1, protowire.VarintType), 3)
	st = protowire.AppendBytes(protowire.AppendTag(st, 3, protowire.BytesType), anyMsg)
	h := http.Header{"Grpc-Status": {"3"}, "Grpc-Message": {"bad%20arg"},
		"Grpc-Status-Details-Bin": {base64.RawStdEncoding.EncodeToString(st)}}
	s, ok := GRPCStatus(nil, h)
	if !ok || s.Name != "INVALID_ARGUMENT" || s.Message != "bad arg" || len(s.Details) != 1 ||
		s.Details[0].TypeURL != "type.googleapis.com/google.rpc.BadRequest" || !strings.Contains(s.Details[0].Value, `1: "field"`) {
		t.Errorf("%+v", s)
	}
	if _, ok := GRPCStatus(http.Header{}); ok {
		t.Error("status without grpc-status")
	}
}

func TestGRPCStatusDetailsKnownTypes(t *testing.T) {
	br := &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "name", Description: "too short"}}}
	anyMsg, err := anypb.New(br)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := proto.Marshal(&spb.Status{Code: 3, Message: "bad", Details: []*anypb.Any{anyMsg}})
	s, ok := GRPCStatus(http.Header{"Grpc-Status": {"3"}, "Grpc-Status-Details-Bin": {base64.StdEncoding.EncodeToString(st)}})
	if !ok || len(s.Details) != 1 || s.Details[0].TypeURL != "type.googleapis.com/google.rpc.BadRequest" ||
		!strings.Contains(s.Details[0].Value, `"fieldViolations"`) || !strings.Contains(s.Details[0].Value, `"too short"`) {
		t.Errorf("%+v", s)
	}
}
