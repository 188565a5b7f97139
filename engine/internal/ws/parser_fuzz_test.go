package ws

import (
	"fmt"
	"testing"
)

// FuzzWSParser: the WebSocket parser never panics, keeps at most limit bytes per message,
// and gives the same messages however the stream is split.
func FuzzWSParser(f *testing.F) {
	f.Add([]byte("\x81\x05hello\x82\x83abcd\x01\x02\x03\x88\x00"), uint(3), int64(1<<10))
	f.Add([]byte("\x01\x03abc\x80\x02de"), uint(5), int64(2))
	f.Add([]byte("\x81\x7e\x00\x04abcd\x81\x7f\x00\x00\x00\x00\x00\x00\x00\x02xy"), uint(7), int64(16))
	f.Add([]byte("\x81\x7f\xff\xff\xff\xff\xff\xff\xff\xff"), uint(1), int64(16))
	f.Fuzz(func(t *testing.T, b []byte, split uint, limit int64) {
		if limit < 0 || limit > 1<<16 {
			return
		}
		type msg struct {
			op   int
			data string
			size int64
		}
		run := func(pieces ...[]byte) []msg {
			var got []msg
			var p wsParser
			p.emit = func(op int, data []byte, size int64) {
				if int64(len(data)) > limit {
					t.Fatalf("message kept %d bytes, limit %d", len(data), limit)
				}
				got = append(got, msg{op, string(data), size})
			}
			for _, piece := range pieces {
				p.feed(piece, limit)
			}
			return got
		}
		k := int(split % uint(len(b)+1))
		whole := run(b)
		halves := run(b[:k], b[k:])
		var bytewise [][]byte
		for i := range b {
			bytewise = append(bytewise, b[i:i+1])
		}
		single := run(bytewise...)
		if fmt.Sprint(whole) != fmt.Sprint(halves) || fmt.Sprint(whole) != fmt.Sprint(single) {
			t.Fatalf("split changes the messages:\n%v\n%v\n%v", whole, halves, single)
		}
	})
}
