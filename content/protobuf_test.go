package content

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func buildMsg() []byte {
	var inner []byte
	inner = protowire.AppendTag(inner, 1, protowire.VarintType)
	inner = protowire.AppendVarint(inner, 7)
	inner = protowire.AppendTag(inner, 2, protowire.BytesType)
	inner = protowire.AppendString(inner, "nested")
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 150)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, "hello")
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	b = protowire.AppendBytes(b, inner)
	var packed []byte
	for _, v := range []uint64{1, 300, 70000} {
		packed = protowire.AppendVarint(packed, v)
	}
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	b = protowire.AppendBytes(b, packed)
	b = protowire.AppendTag(b, 5, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, 0x3ff0000000000000)
	b = protowire.AppendTag(b, 6, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, 0x3f800000)
	b = protowire.AppendTag(b, 7, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte{0xff, 0x00, 0xfe})
	b = protowire.AppendTag(b, 8, protowire.StartGroupType)
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	b = protowire.AppendTag(b, 8, protowire.EndGroupType)
	b = protowire.AppendTag(b, 9, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(1<<64-5)) // int64 -5
	return b
}

func TestDecodeProtoRaw(t *testing.T) {
	fields, err := DecodeProtoRaw(buildMsg())
	if err != nil {
		t.Fatal(err)
	}
	got := FormatProtoRaw(fields)
	for _, want := range []string{
		"1: 150\n",
		`2: "hello"` + "\n",
		"3 {\n  1: 7\n  2: \"nested\"\n}\n",
		"4: [1, 300, 70000]  // packed varints\n",
		"5: 0x3ff0000000000000  // i64 = 4607182418800017408, double 1\n",
		"6: 0x3f800000  // i32 = 1065353216, float 1\n",
		"7: <ff 00 fe>  // 3 bytes\n",
		"8 group {\n  1: 1\n}\n",
		"9: 18446744073709551611  // int64 -5\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}

func TestDecodeProtoRawBadInput(t *testing.T) {
	good := buildMsg()
	for name, b := range map[string][]byte{
		"cut":          good[:len(good)-1],
		"wire type 7":  {0x0f, 0x01},
		"field 0":      {0x00, 0x01},
		"long length":  {0x12, 0x7f, 'a'},
		"stray endgrp": {0x0c},
		"open group":   {0x0b, 0x08, 0x01},
	} {
		fields, err := DecodeProtoRaw(b)
		if !errors.Is(err, ErrNotProtobuf) {
			t.Errorf("%s: err %v", name, err)
		}
		if name == "cut" && len(fields) < 5 {
			t.Errorf("cut: only %d fields before the damage", len(fields))
		}
	}
	// Deep nesting stops at maxProtoDepth and shows bytes, without recursion blow-up.
	var b []byte
	for range 200 {
		var o []byte
		o = protowire.AppendTag(o, 1, protowire.BytesType)
		b = protowire.AppendBytes(o, b)
	}
	if _, err := DecodeProtoRaw(b); err != nil {
		t.Errorf("deep: %v", err)
	}
}
