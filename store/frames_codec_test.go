package store

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"inspector/engine/session"
)

func codecSample() []session.Frame {
	t0 := time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC)
	return []session.Frame{
		{Leg: "client", Dir: "in", Time: t0, Proto: session.HTTP2, ConnID: 3, Stream: 1, Type: "HEADERS", Flags: "END_STREAM|END_HEADERS", Length: 33,
			Headers: []session.HeaderField{{Name: ":method", Value: "GET"}, {Name: "cookie", Value: "a=1; b=ü"}}},
		{Leg: "upstream", Dir: "out", Time: t0.Add(-time.Millisecond), Proto: session.HTTP3, ConnID: 1 << 40, Stream: 8, Type: "DATA", Length: 1 << 24},
		{Leg: "upstream", Dir: "in", Time: t0.Add(time.Hour), Proto: session.HTTP2, Type: "SETTINGS", Detail: "MAX_FRAME_SIZE=16384"},
		{Leg: "client", Dir: "out", Time: time.Unix(0, 0).UTC(), Type: "UNKNOWN(0x21)"},
	}
}

func TestFrameCodecRoundTrip(t *testing.T) {
	in := codecSample()
	b := appendFrames(nil, in)
	out, err := decodeFrames(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip changed frames:\n%+v\n%+v", in, out)
	}
	js, _ := json.Marshal(in)
	if len(b) >= len(js)/2 {
		t.Errorf("binary batch %d bytes, JSON %d: not compact", len(b), len(js))
	}
	// Batches written as JSON still read.
	if out, err := decodeFrames(js); err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("JSON batch: %v", err)
	}
	if out, err := decodeFrames(appendFrames(nil, nil)); err != nil || len(out) != 0 {
		t.Fatalf("empty batch: %v %v", out, err)
	}
}

func TestFrameCodecRejectsDamage(t *testing.T) {
	good := appendFrames(nil, codecSample())
	bad := [][]byte{nil, {0x02}, {frameCodecV1}, {frameCodecV1, 0xff, 0xff, 0xff, 0xff, 0x0f}, good[:len(good)-1],
		append(append([]byte(nil), good...), 0), []byte("[{"), {frameCodecV1, 1, 0, 0}}
	for i := 1; i < len(good); i += 7 {
		bad = append(bad, good[:i])
	}
	for _, b := range bad {
		if _, err := decodeFrames(b); err == nil {
			t.Errorf("decodeFrames(%x) accepted damaged input", b)
		}
	}
}

func FuzzDecodeFrames(f *testing.F) {
	f.Add(appendFrames(nil, codecSample()))
	f.Add([]byte(`[{"leg":"client"}]`))
	f.Add([]byte{frameCodecV1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		fs, err := decodeFrames(b)
		if err != nil || len(b) == 0 || b[0] != frameCodecV1 {
			return
		}
		// What decodes re-encodes to the same bytes.
		if again := appendFrames(nil, fs); string(again) != string(b) {
			// Non-canonical varints may decode; re-decoding must agree.
			fs2, err := decodeFrames(again)
			if err != nil || !reflect.DeepEqual(fs, fs2) {
				t.Fatalf("re-encoding changed frames: %v", err)
			}
		}
	})
}

// BenchmarkFrameBatchEncode compares the stored form with JSON for a typical h2 batch
// (one stream's frames plus the connection's opening ones).
func BenchmarkFrameBatchEncode(b *testing.B) {
	var batch []session.Frame
	for range 3 {
		batch = append(batch, codecSample()...)
	}
	b.Run("binary", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = appendFrames(buf[:0], batch)
		}
		b.ReportMetric(float64(len(buf)), "bytes/batch")
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			js, _ := json.Marshal(batch)
			n = len(js)
		}
		b.ReportMetric(float64(n), "bytes/batch")
	})
}
