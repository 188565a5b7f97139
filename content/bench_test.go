package content

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func benchText() []byte {
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20; i++ {
		fmt.Fprintf(&sb, `{"id":%d,"name":"item %d","tags":["a","b"],"ok":true}`+"\n", i, i*7919)
	}
	return []byte(sb.String())
}

// Decoding 1 MiB of JSON-ish text per coding (MB/s is of decoded bytes).
func BenchmarkDecode(b *testing.B) {
	text := benchText()
	for _, enc := range []string{"gzip", "br", "zstd"} {
		data, err := Encode([]string{enc}, text)
		if err != nil {
			b.Fatal(err)
		}
		h := http.Header{"Content-Encoding": {enc}}
		b.Run(enc, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, _, _, err := Decode(h, data, DefaultLimit); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The schemaless decoder on a 1 MiB stream of 1000 gRPC messages.
func BenchmarkViewsGRPCStream(b *testing.B) {
	var body []byte
	for i := range 1000 {
		var m []byte
		m = protowire.AppendVarint(protowire.AppendTag(m, 1, protowire.VarintType), uint64(i))
		m = protowire.AppendString(protowire.AppendTag(m, 2, protowire.BytesType), strings.Repeat("payload ", 120))
		body = append(body, 0, 0, 0, 0, 0)
		n := len(m)
		body[len(body)-4], body[len(body)-3], body[len(body)-2], body[len(body)-1] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
		body = append(body, m...)
	}
	h := http.Header{"Content-Type": {"application/grpc"}}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		Views(h, body, Options{URL: "/a.B/C"})
	}
}

func BenchmarkParseSSE(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20; i++ {
		fmt.Fprintf(&sb, "id: %d\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"}}]}\n\n", i, i)
	}
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		LLMText(ParseSSE(body))
	}
}
