package content

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// Encode applies the codings encs in order (as Codings lists them) to data: the inverse
// of DecodeCodings, for HAR import and edited bodies that must travel encoded again. The
// output is deterministic for a given input. A coding Decode does not support is an
// error (errors.Is ErrUnsupportedEncoding) and data is returned untouched.
func Encode(encs []string, data []byte) ([]byte, error) {
	if !Supported(encs) {
		for _, e := range encs {
			if !Supported([]string{e}) {
				return data, fmt.Errorf("%w: %s", ErrUnsupportedEncoding, e)
			}
		}
	}
	out := data
	for _, e := range encs {
		var b bytes.Buffer
		var w io.WriteCloser
		switch e {
		case "deflate":
			w = zlib.NewWriter(&b)
		case "br":
			w = brotli.NewWriterLevel(&b, brotli.DefaultCompression)
		case "zstd":
			zw, err := zstd.NewWriter(&b, zstd.WithEncoderConcurrency(1))
			if err != nil {
				return data, err
			}
			w = zw
		default:
			w = gzip.NewWriter(&b)
		}
		w.Write(out)
		if err := w.Close(); err != nil {
			return data, err
		}
		out = b.Bytes()
	}
	return out, nil
}
