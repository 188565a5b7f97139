package filter

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"inspector/engine/session"
)

// body: finds text inside brotli, zstd and stacked bodies (issue 15), not in the raw bytes.
func TestBodyFindsTextInBrotliAndZstd(t *testing.T) {
	// The needle spans two copies of the sentence, so every encoder writes it as a
	// back-reference: it is never in the encoded bytes.
	text := bytes.Repeat([]byte("hello from a modern CDN. "), 20)
	var bb bytes.Buffer
	bw := brotli.NewWriter(&bb)
	bw.Write(text)
	bw.Close()
	zenc, _ := zstd.NewWriter(nil)
	zb := zenc.EncodeAll(text, nil)
	zenc.Close()
	var stacked bytes.Buffer
	sw := brotli.NewWriter(&stacked)
	sw.Write(gz(t, string(text)))
	sw.Close()
	mk := func(enc string, body []byte) *session.Session {
		return &session.Session{Request: session.Request{Method: "GET", URL: "https://cdn.example/a"},
			Response: &session.Response{Status: 200, Header: http.Header{"Content-Encoding": {enc}, "Content-Type": {"application/json"}},
				Body: session.Body{Data: body, Size: int64(len(body))}}}
	}
	for _, c := range []struct {
		enc  string
		body []byte
	}{{"br", bb.Bytes()}, {"zstd", zb}, {"gzip, br", stacked.Bytes()}} {
		s := mk(c.enc, c.body)
		if bytes.Contains(c.body, []byte("CDN. hello")) {
			t.Fatalf("%s: the needle is visible in the encoded bytes; the test proves nothing", c.enc)
		}
		if !MustParse(`body:"CDN. hello"`).Match(s) {
			t.Errorf("%s: body: did not find text inside the decoded body", c.enc)
		}
		if MustParse(`body:absent-needle`).Match(s) {
			t.Errorf("%s: matched a needle that is nowhere", c.enc)
		}
	}
}
